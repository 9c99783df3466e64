"""The package's shape: no import cycle, imports that point down, small modules.

Imports are read from the source (:func:`vlrl.workflow.stage_deps.imported_modules`, the reader
that derives each stage's code), lazy imports inside functions included.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vlrl.workflow import stage_deps

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workflow_scripts" / "vlrl"
MODULES = sorted(
    ".".join(("vlrl", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
    for p in PACKAGE.rglob("*.py")
)
MAX_LINES = 430
"""About 400: past it a module is a sign to split. Data generation is exempt."""
EXEMPT = {"vlrl.data.shapes"}


def _imports(module: str) -> set[str]:
    """What ``module`` imports, package faces (``vlrl.x`` for ``vlrl.x.__init__``) left out
    when the import names a module below them."""
    found = stage_deps.imported_modules(module, ROOT)
    return {m for m in found if not any(o.startswith(m + ".") for o in found)} - {module}


GRAPH = {m: _imports(m) for m in MODULES}


def test_no_import_cycle() -> None:
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            cycle = [*path[path.index(module) :], module]
            pytest.fail(f"import cycle: {' -> '.join(cycle)}")
        if module in done:
            return
        for target in GRAPH.get(module, ()):
            visit(target, [*path, module])
        done.add(module)

    for module in MODULES:
        visit(module, [])


@pytest.mark.parametrize(
    ("importer", "imported", "why"),
    [
        ("vlrl.config", "vlrl.rewards", "config is below the code it configures"),
        ("vlrl.config", "vlrl.stages", "config is below the code it configures"),
        ("vlrl.config", "vlrl.workflow", "config is below the code it configures"),
        ("vlrl.reporting", "vlrl.workflow", "the report stage's pieces sit below the workflow"),
        ("vlrl.scoring", "vlrl.benchmarks", "scoring sits below the benchmark registry"),
        ("vlrl.rewards", "vlrl.stages", "rewards sit below the stages"),
        ("vlrl.algorithms", "vlrl.stages", "algorithms sit below the stages"),
    ],
)
def test_imports_point_down(importer: str, imported: str, why: str) -> None:
    up = sorted(
        f"{m} -> {t}"
        for m, targets in GRAPH.items()
        if m == importer or m.startswith(importer + ".")
        for t in targets
        if t == imported or t.startswith(imported + ".")
    )
    assert not up, f"{why}: {up}"


def test_no_stage_imports_another_stage() -> None:
    stages = {f"vlrl.stages.{s}" for s in stage_deps.stages(ROOT)}
    crossing = sorted(f"{s} -> {t}" for s in stages for t in GRAPH[s] & stages)
    assert not crossing


def test_rules_call_no_stage_internals() -> None:
    rules = [*ROOT.glob("rules/*.smk"), ROOT / "Snakefile"]
    assert not [str(r) for r in rules if "vlrl.stages" in r.read_text()]


def test_no_module_is_too_large() -> None:
    sizes = {m: len(stage_deps.module_file(m, ROOT).read_text().splitlines()) for m in MODULES}
    large = {m: n for m, n in sizes.items() if n > MAX_LINES and m not in EXEMPT}
    assert not large, f"split these (over {MAX_LINES} lines): {large}"
