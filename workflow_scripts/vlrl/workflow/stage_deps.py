"""What each stage depends on, derived from its code rather than listed by hand.

- **Code**: the stage's module ``vlrl/stages/<stage>.py`` and every module of the ``vlrl``
  package it imports, directly or through other modules, at module level or inside a function
  (a lazy import is still code the stage runs), with the ``__init__.py`` of every package on
  the way (Python runs those too); plus the modules the ``vlrl`` command runs before any stage
  (what ``vlrl/cli/commands.py`` imports, other than the stages and the workflow tools).
  Imports under ``if TYPE_CHECKING:`` are skipped: they never run.
- **Data files**: files a module reads at run time rather than imports (templates, say),
  declared next to its code as ``FILES = ("templates/*.j2",)``: glob patterns relative to the
  module's directory. They are code of every stage that imports the module, so an edited
  template reruns the stages that render it. A pattern matching no file is an error (a typo
  would silently drop the dependency).
- **Config**: the keys :mod:`vlrl.config.reads` declares for the stage (``"sft"`` for a whole
  section, ``"sft.enabled"`` for one value). The stage's params are the *resolved* values of
  those keys (defaults included, see :mod:`vlrl.workflow.resolve`), so the ``vlrl/config/``
  package is not code of any stage: a changed default reaches exactly the stages that read that
  key.

Both are read from the source with :mod:`ast`, without importing anything, so Snakemake can
call them while it parses the rules. A stage that reads a key it does not declare is caught by
:mod:`vlrl.workflow.reads` (the CLI checks it when ``VLRL_CHECK_READS=1``, as the tests set).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import re
from collections.abc import Iterable
from pathlib import Path

from vlrl.core import moved, paths
from vlrl.core.errors import ConfigError

PACKAGE = "vlrl"
SOURCE_DIR = Path("workflow_scripts")
"""Where the package's source lives, relative to the project root."""
NOT_CODE = ("vlrl.config", "vlrl.sharing")
"""What is not code of any stage, with its modules: the config package, whose effect on a stage
is captured by the resolved config values it reads, and :mod:`vlrl.sharing`, whose effect (where
a stage's inputs live) is captured by the stage's input paths and its params file."""
ENTRY = "vlrl.cli.commands"
"""The command every stage runs under; what it imports besides stages and tools runs first."""
ENTRY_SKIPS = ("vlrl.stages.", "vlrl.workflow.", "vlrl.cli.", "vlrl.sharing.")
"""Not code of every stage though the command imports them: the stages (each its own), the
tools, the command line's own plumbing (the ``vlrl.cli`` package itself: it parses, the stage
computes) and :data:`NOT_CODE`'s sharing."""
REWARDS = "vlrl.rewards"
"""The reward registry's package (see :func:`reward_families`)."""
REWARDS_TABLE = "REWARDS"
"""What a reward family module assigns: its table of rewards."""
FILES_NAME = "FILES"


def source_root(root: Path | None = None) -> Path:
    """The directory holding the ``vlrl`` package's source: ``<root>/workflow_scripts``, or,
    in a directory without one, that of the package this process imported."""
    local = Path(root or paths.root()) / SOURCE_DIR
    if (local / PACKAGE / "__init__.py").is_file():
        return local
    import vlrl

    return Path(vlrl.__file__).resolve().parents[1]


def stages(root: Path | None = None) -> list[str]:
    """The stages: the modules of ``vlrl/stages/`` (each one a rule and a CLI command).

    >>> stages()[:3]
    ['base_model', 'data', 'download']
    """
    folder = source_root(root) / PACKAGE / "stages"
    return sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")


def module_file(module: str, root: Path | None = None) -> Path | None:
    """The source file of a ``vlrl`` module, or None when there is no such module.

    >>> module_file("vlrl.stages.sft").relative_to(source_root()).as_posix()
    'vlrl/stages/sft.py'
    >>> module_file("vlrl.no_such_module") is None
    True
    """
    return _module_file(source_root(root), module)


def _module_file(source: Path, module: str) -> Path | None:
    base = source.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")
"""The fields of a node that hold statements (or handlers and match cases, which hold them): an
import is a statement, so only these are searched, not the expressions (most of a tree)."""


def _import_nodes(tree: ast.AST) -> Iterable[ast.Import | ast.ImportFrom]:
    r"""Every import statement, at any depth (functions, classes, ``try``, ``with`` …),
    skipping the bodies of ``if TYPE_CHECKING:``.

    >>> tree = ast.parse("import a\ndef f():\n    try:\n        import b\n    except E:\n"
    ...                  "        from c import d\nif TYPE_CHECKING:\n    import e\nelse:\n"
    ...                  "    import g")
    >>> sorted(ast.unparse(n) for n in _import_nodes(tree))
    ['from c import d', 'import a', 'import b', 'import g']
    """
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
            continue
        for field in STATEMENT_LISTS:
            stack.extend(getattr(node, field, ()))


def _parse(path: Path) -> ast.Module:
    """The module's syntax tree, parsed once per version of the file (its time and size): the
    Snakefile asks for every stage's code, and the stages share most modules."""
    stat = path.stat()
    return _parsed(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _parsed(path: Path, mtime_ns: int, size: int) -> ast.Module:
    try:
        return ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: cannot parse: {exc.msg}") from None


def imported_modules(module: str, root: Path | None = None, by_name: bool = True) -> set[str]:
    """The ``vlrl`` modules that ``module``'s source imports (one level, names that exist; an
    old path that moved counts as the modules it moved to, :mod:`vlrl.core.moved`), and, with
    ``by_name``, those it names to import when it runs (:data:`NAMED_IMPORT`)."""
    source = source_root(root)
    return set(_imported_modules(module, source, by_name, _version(source)))


def _version(source: Path) -> str:
    """A fingerprint of the package's source under ``source``: the path, time and size of
    every file and folder, so that an edited, added or removed module changes it."""
    entries = []
    for folder, dirs, files in os.walk(source / PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            stat = os.stat(os.path.join(folder, name))
            entries.append((folder, name, stat.st_mtime_ns, stat.st_size))
    return hashlib.sha256(repr(entries).encode()).hexdigest()


@functools.cache
def _imported_modules(module: str, source: Path, by_name: bool, version: str) -> frozenset[str]:
    """:func:`imported_modules` of one version of the source (:func:`_version`), read once: the
    stages share most modules, and the Snakefile asks for every stage's code."""
    return frozenset(_read_imports(module, source, by_name))


def _read_imports(module: str, source: Path, by_name: bool) -> set[str]:
    path = _module_file(source, module)
    if path is None:
        raise ConfigError(f"no source file for module {module} under {source}")
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _import_nodes(_parse(path)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            # `from vlrl.x import y`: y is a submodule, or a name defined in vlrl.x
            names = [target, *(f"{target}.{alias.name}" for alias in node.names)]
        for name in (new for old in names for new in moved.current(old)):
            if (name == PACKAGE or name.startswith(PACKAGE + ".")) and _module_file(source, name):
                found.add(name)
    for name in _named_imports(path) if by_name else ():
        if _module_file(source, name):
            found.add(name)
    return found


NAMED_IMPORT = re.compile(rf"^({PACKAGE}(?:\.\w+)+):\w+$")
"""A ``"vlrl.module:function"`` string, which code imports by name when it runs
(:func:`pkgutil.resolve_name`; a configured reward's builder): a dependency like an import."""


def _named_imports(path: Path) -> set[str]:
    """The modules of the ``"vlrl.module:function"`` strings in the module at ``path``.

    >>> sorted(_named_imports(module_file("vlrl.rewards.sophiavl")))
    ['vlrl.rewards.thinking']
    """
    return {
        match.group(1)
        for node in ast.walk(_parse(path))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if (match := NAMED_IMPORT.match(node.value))
    }


def is_not_code(module: str) -> bool:
    """Whether ``module`` is one of :data:`NOT_CODE` or one of their modules.

    >>> is_not_code("vlrl.config.training"), is_not_code("vlrl.config"), is_not_code("vlrl.configs")
    (True, True, False)
    """
    return any(module == name or module.startswith(name + ".") for name in NOT_CODE)


def _with_parents(module: str) -> list[str]:
    """``a.b.c`` → ``[a, a.b, a.b.c]``: importing a module runs its packages' ``__init__``."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def entry_modules(root: Path | None = None) -> set[str]:
    """What the ``vlrl`` command imports to run any stage (not the stages, not the tools)."""
    return {m for m in imported_modules(ENTRY, root) if not f"{m}.".startswith(ENTRY_SKIPS)}


def reward_families(root: Path | None = None) -> set[str]:
    """The reward family modules, ``vlrl.rewards.<family>``, home of the rewards named
    ``<family>.<name>``: the registry's public modules that assign a ``REWARDS`` table (the
    registry finds them by name, :func:`vlrl.rewards.entry`; no file lists them).

    >>> sorted(reward_families())[:2]
    ['vlrl.rewards.common', 'vlrl.rewards.satori']
    """
    path = module_file(REWARDS, root)
    if path is None:
        return set()
    return {
        f"{REWARDS}.{module.stem}"
        for module in path.parent.glob("*.py")
        if not module.stem.startswith("_") and _literal_or_any(module, REWARDS_TABLE)
    }


def _literal_or_any(path: Path, name: str) -> bool:
    """Whether the module at ``path`` assigns ``name`` at module level."""
    return any(
        isinstance(node, ast.Assign | ast.AnnAssign)
        and any(
            isinstance(target, ast.Name) and target.id == name
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        for node in _parse(path).body
    )


def code_modules(
    stage: str, root: Path | None = None, rewards: Iterable[str] | None = None
) -> set[str]:
    """Every ``vlrl`` module the stage runs (see the module docstring), config excluded.

    A stage that reads rewards by name (one that imports the registry, :data:`REWARDS`) runs
    the families of the rewards it uses: those of ``rewards`` (an experiment's ``grpo.rewards``
    names), or every family when ``rewards`` is None. The registry imports no family itself, so
    an edited or added family is code of only the runs that use one of its rewards (a family
    that other code of the stage imports is still code through that import).
    """
    start = f"{PACKAGE}.stages.{stage}"
    if module_file(start, root) is None:
        raise ConfigError(f"stage {stage!r} has no module {source_root(root)}/vlrl/stages/")
    source = source_root(root)
    version = _version(source)  # once: the stages' walks share one version's imports
    families = reward_families(root)
    if rewards is not None:
        families &= {f"{REWARDS}.{name.split('.')[0]}" for name in rewards}
    seen: set[str] = set()
    todo = [start, *entry_modules(root)]
    while todo:
        module = todo.pop()
        for name in _with_parents(module):
            if name in seen or is_not_code(name):
                continue
            seen.add(name)
            todo.extend(_imported_modules(name, source, True, version) - seen)
            if name == REWARDS:
                todo.extend(families - seen)
    return seen


def data_files(module: str, root: Path | None = None) -> list[Path]:
    """The files ``module`` declares in ``FILES`` (glob patterns relative to its directory),
    sorted; none when it declares none.

    >>> "index.html.j2" in [f.name for f in data_files("vlrl.reporting.render")]
    True
    >>> data_files("vlrl.core.paths")
    []
    """
    path = module_file(module, root)
    if path is None:
        raise ConfigError(f"no source file for module {module} under {source_root(root)}")
    found: list[Path] = []
    for pattern in _files(path, path.stat().st_mtime_ns):
        # Globbed on every call, not cached: a new template is a new dependency at once.
        matches = sorted(p for p in path.parent.glob(pattern) if p.is_file())
        if not matches:
            raise ConfigError(
                f"{path}: {FILES_NAME} pattern {pattern!r} matches no file under {path.parent}"
            )
        found += matches
    return found


def code_files(
    stage: str, root: Path | None = None, rewards: Iterable[str] | None = None
) -> list[str]:
    """The source files of :func:`code_modules` and the data files they declare
    (:func:`data_files`), relative to the project root, sorted.

    >>> "workflow_scripts/vlrl/rewards/vlm_r1.py" in code_files("grpo")
    True
    >>> [f for f in code_files("merge") if "rewards" in f or "stages/grpo" in f]
    []
    >>> "workflow_scripts/vlrl/reporting/templates/index.html.j2" in code_files("report")
    True
    >>> "workflow_scripts/vlrl/rewards/vlm_r1.py" in code_files("grpo", rewards=["common.format"])
    False
    """
    base = Path(root or paths.root())
    files: set[Path] = set()
    for module in code_modules(stage, root, rewards):
        source = module_file(module, root)
        if source is not None:
            files.add(source)
            files.update(data_files(module, root))
    return sorted(str(f.relative_to(base)) for f in files)


def _literal(path: Path, name: str) -> tuple[bool, object]:
    """Whether the module at ``path`` assigns ``name`` at module level, and the literal value
    (None when it is not a literal)."""
    for node in _parse(path).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                try:
                    return True, ast.literal_eval(node.value)
                except ValueError:
                    return True, None
    return False, None


def _strings(value: object) -> bool:
    return isinstance(value, tuple) and all(isinstance(k, str) for k in value)


@functools.cache
def _files(path: Path, mtime_ns: int) -> tuple[str, ...]:
    found, value = _literal(path, FILES_NAME)
    if not found:
        return ()
    if not _strings(value):
        raise ConfigError(f"{path}: {FILES_NAME} must be a tuple of strings (glob patterns)")
    for pattern in value:
        if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            raise ConfigError(
                f"{path}: {FILES_NAME} pattern {pattern!r} must stay inside the module's "
                "directory (relative, no '..')"
            )
    return value
