"""The package's shape: rooms whose imports point down, no import cycle, small modules.

A *room* is a top-level package of ``vlrl`` (``vlrl.serving``) or a loose top-level module
(``vlrl.sharing``). Each room's docstring says what it may import (a ``May import:`` paragraph);
every import of its modules must be on that list, and the rooms' imports form no cycle, so they
stack into floors with every arrow pointing down. Imports are read from the source
(:func:`vlrl.workflow.stage_deps.imported_modules`, the reader that derives each stage's code),
lazy imports inside functions included, ``if TYPE_CHECKING:`` ones not (they never run).
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

from vlrl.workflow import stage_deps

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workflow_scripts" / "vlrl"
MODULES = sorted(
    ".".join(("vlrl", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
    for p in PACKAGE.rglob("*.py")
)
MAX_LINES = 400
"""Past it a module is a sign to split. Data generation is exempt."""
EXEMPT = {"vlrl.data.shapes"}
MAX_LOOSE_MODULES = 5
"""Loose modules at the top level beside the packages: a handful, so the top reads at a glance."""


def _imports(module: str) -> set[str]:
    """What ``module`` imports, package faces (``vlrl.x`` for ``vlrl.x.__init__``) left out
    when the import names a module below them. A module named to import when it runs (a
    configured reward's builder, ``"vlrl.rewards.thinking:get_thinking_reward"``) is code of
    the stage but no import: the registry resolves it at run time, after both are loaded."""
    found = stage_deps.imported_modules(module, ROOT, by_name=False)
    return {m for m in found if not any(o.startswith(m + ".") for o in found)} - {module}


GRAPH = {m: _imports(m) for m in MODULES}


def room_of(module: str) -> str:
    """``vlrl.serving.gpus`` → ``vlrl.serving``; the root package is a room of its own."""
    return ".".join(module.split(".")[:2])


ROOMS = sorted({room_of(m) for m in MODULES})


def room_imports() -> dict[str, dict[str, list[str]]]:
    """Room → the rooms it imports → the module-level imports that make each arrow."""
    arrows: dict[str, dict[str, list[str]]] = {room: {} for room in ROOMS}
    for module, targets in GRAPH.items():
        for target in targets:
            here, there = room_of(module), room_of(target)
            if here != there and there != "vlrl":
                arrows[here].setdefault(there, []).append(f"{module} -> {target}")
    return arrows


ARROWS = room_imports()


def may_import(room: str) -> set[str] | None:
    """The rooms ``room``'s docstring allows it to import; None when it says nothing.

    ``May import: :mod:`vlrl.core`, :mod:`vlrl.config`.`` lists them; ``every room but …``
    allows all the others (``every room``: all); ``nothing of vlrl``: none.
    """
    source = stage_deps.module_file(room, ROOT)
    doc = ast.get_docstring(ast.parse(source.read_text())) or ""
    found = re.search(r"^May import:(.*?)(?:\n\s*\n|\Z)", doc, re.M | re.S)
    if found is None:
        return None
    named = {room_of(m) for m in re.findall(r"\bvlrl(?:\.\w+)+", found.group(1))}
    if "every room" in found.group(1):
        return set(ROOMS) - named - {room, "vlrl"}
    return named


def test_every_room_says_what_it_owns_and_may_import() -> None:
    silent = [room for room in ROOMS if may_import(room) is None]
    assert not silent, f"add a 'May import:' paragraph to the docstring of {silent}"
    unknown = {room: sorted(may_import(room) - set(ROOMS)) for room in ROOMS}
    assert not {r: u for r, u in unknown.items() if u}, "names a room that does not exist"


@pytest.mark.parametrize("room", ROOMS)
def test_room_imports_only_what_its_docstring_allows(room: str) -> None:
    allowed = may_import(room) or set()
    beyond = {t: why for t, why in ARROWS[room].items() if t not in allowed}
    assert not beyond, f"{room} imports rooms its docstring does not allow: {beyond}"


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for target in sorted(graph.get(node, ())):
            found = visit(target, [*path, node])
            if found:
                return found
        done.add(node)
        return None

    for node in sorted(graph):
        found = visit(node, [])
        if found:
            return found
    return None


def test_no_import_cycle_between_rooms() -> None:
    arrows = ARROWS
    cycle = _cycle({room: set(targets) for room, targets in arrows.items()})
    if cycle:
        why = [arrows[a][b][0] for a, b in itertools.pairwise(cycle)]
        pytest.fail(f"rooms import each other: {' -> '.join(cycle)} ({'; '.join(why)})")


def test_no_import_cycle_between_modules() -> None:
    cycle = _cycle(GRAPH)
    assert cycle is None, f"import cycle: {' -> '.join(cycle or [])}"


def test_the_top_level_is_a_handful_of_loose_modules() -> None:
    loose = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert len(loose) <= MAX_LOOSE_MODULES, f"group these into packages: {loose}"
    for package in (p for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()):
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
        assert doc, f"{package.name}/__init__.py: say what the package owns"


def test_no_module_imports_an_old_path() -> None:
    """The old paths of moved modules are for users' own modules (vlrl.core.moved), not ours."""
    from vlrl.core import moved

    old = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in [*PACKAGE.rglob("*.py"), *ROOT.glob("rules/*.smk"), ROOT / "Snakefile"]
        for name in re.findall(r"^\s*(?:from|import) (vlrl(?:\.\w+)+)", path.read_text(), re.M)
        + [f"vlrl.{n}" for n in re.findall(r"^\s*from vlrl import (\w+)", path.read_text(), re.M)]
        if name in moved.MOVED
    )
    assert not old, old


@pytest.mark.parametrize(
    ("importer", "imported", "why"),
    [
        ("vlrl.config", "vlrl.rewards", "config is below the code it configures"),
        ("vlrl.config", "vlrl.stages", "config is below the code it configures"),
        ("vlrl.config", "vlrl.workflow", "config is below the code it configures"),
        ("vlrl.config", "vlrl.cluster", "config is below the code it configures"),
        ("vlrl.sharing", "vlrl.workflow", "the keys a stage reads live in vlrl.config.reads"),
        ("vlrl.reporting", "vlrl.workflow", "the report stage's pieces sit below the workflow"),
        ("vlrl.scoring", "vlrl.benchmarks", "scoring sits below the benchmark registry"),
        ("vlrl.rewards", "vlrl.stages", "rewards sit below the stages"),
        ("vlrl.algorithms", "vlrl.stages", "algorithms sit below the stages"),
        ("vlrl.serving", "vlrl.algorithms", "GRPO's servers are the algorithm's; serving is below"),
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


def test_old_import_paths_still_work_with_a_warning() -> None:
    """A user's module that imports a moved module by its old path gets the new one's names."""
    import importlib
    import sys

    from vlrl.cluster import threads
    from vlrl.core import moved
    from vlrl.serving import commands, servers

    for name in ("vlrl.threads", "vlrl.servers"):
        sys.modules.pop(name, None)
    with pytest.warns(moved.MovedWarning, match="vlrl.threads moved to vlrl.cluster.threads"):
        old = importlib.import_module("vlrl.threads")
    assert old.pin_cpu_kernels is threads.pin_cpu_kernels
    with pytest.warns(moved.MovedWarning):
        from vlrl.servers import running, serve_command  # a module split in two
    assert (running, serve_command) == (servers.running, commands.serve_command)
    with pytest.raises(ImportError, match="no_such_name"):
        from vlrl.servers import no_such_name  # noqa: F401
    for new_modules in moved.MOVED.values():
        for new in new_modules:
            assert stage_deps.module_file(new, ROOT), f"{new}: vlrl.core.moved points nowhere"
