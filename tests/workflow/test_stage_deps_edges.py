"""Edge cases of :mod:`vlrl.workflow.stage_deps` on tiny fake source trees (no copy of the real
one): every function honours its ``root``, relative and guarded imports resolve exactly, FILES
are read in order and re-read when their module changes, and each malformed declaration is an
error naming the file at fault."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import vlrl
from vlrl.core.errors import ConfigError
from vlrl.workflow import stage_deps

# A minimal project: the entry command, one module it runs first, two stages (one using the
# rewards) and a reward registry with two families. Its
# names do not exist in the real package, so a function that ignored ``root`` fails here.
BASE = {
    "__init__.py": "",
    "cli/__init__.py": "",
    "cli/commands.py": (
        "from vlrl import boot\nfrom vlrl.stages import alpha\nfrom vlrl.workflow import tool\n"
    ),
    "boot.py": "",
    "workflow/__init__.py": "",
    "workflow/tool.py": "",
    "stages/__init__.py": "",
    "stages/alpha.py": "",
    "stages/gamma.py": "from vlrl import rewards\n",
    "stages/notes.txt": "not a stage",
    "rewards/__init__.py": "",  # finds its families by name, imports none
    "rewards/fam_a.py": "REWARDS = {}\n",
    "rewards/fam_b.py": "REWARDS: dict = {}\n",
    "rewards/_helper.py": "REWARDS = {}\n",  # private: not a family
    "rewards/helper.py": "X = 1\n",  # no table: not a family
}


def _tree(root: Path, extra: dict[str, str] | None = None) -> Path:
    """Write :data:`BASE` (updated with ``extra``) under ``root/workflow_scripts/vlrl``."""
    for name, text in {**BASE, **(extra or {})}.items():
        path = root / "workflow_scripts" / "vlrl" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _rewrite(path: Path, text: str) -> None:
    """Rewrite ``path`` with a surely different modification time (the parse caches' key)."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))


def test_source_root_is_the_local_tree_else_the_imported_package(tmp_path: Path) -> None:
    root = _tree(tmp_path / "project")
    assert stage_deps.source_root(root) == root / "workflow_scripts"
    fallback = stage_deps.source_root(tmp_path / "elsewhere")
    assert fallback == Path(vlrl.__file__).resolve().parents[1]
    assert (fallback / "vlrl" / "__init__.py").is_file()


def test_stages_are_the_modules_of_the_stages_package(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    assert stage_deps.stages(root) == ["alpha", "gamma"]


def test_imports_resolve_exactly(tmp_path: Path) -> None:
    """Absolute, relative (one and two levels), lazy and guarded imports of one module."""
    root = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "from . import sub\n",
            "pkg/sub.py": "",
            "pkg/sib.py": "",
            "pkg/lazy.py": "",
            "top.py": "",
            "shown.py": "",
            "hidden_a.py": "",
            "hidden_b.py": "",
            "pkg/mod.py": (
                "import os\nimport typing\nimport vlrl\nimport helper\n"
                "from typing import TYPE_CHECKING\n"
                "from vlrl import boot\nfrom .sub import thing\nfrom . import sib\n"
                "from .. import top\n"
                "if TYPE_CHECKING:\n    from vlrl import hidden_a\n"
                "if typing.TYPE_CHECKING:\n    from vlrl import hidden_b\n"
                "else:\n    from vlrl import shown\n"
                "def f():\n    from vlrl.pkg import lazy\n"
            ),
        },
    )
    # a module beside the package, not of it: never a dependency
    (root / "workflow_scripts" / "helper.py").write_text("")
    assert stage_deps.imported_modules("vlrl.pkg.mod", root) == {
        "vlrl",
        "vlrl.boot",
        "vlrl.pkg",
        "vlrl.pkg.sub",
        "vlrl.pkg.sib",
        "vlrl.pkg.lazy",
        "vlrl.top",
        "vlrl.shown",
    }
    # in a package's __init__, `.` is the package itself
    assert stage_deps.imported_modules("vlrl.pkg", root) == {"vlrl.pkg", "vlrl.pkg.sub"}


def test_a_missing_module_or_stage_names_the_source_tree(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    where = re.escape(str(root / "workflow_scripts"))
    with pytest.raises(ConfigError, match=rf"^no source file for module vlrl\.nope under {where}$"):
        stage_deps.imported_modules("vlrl.nope", root)
    with pytest.raises(ConfigError, match=rf"^no source file for module vlrl\.nope under {where}$"):
        stage_deps.data_files("vlrl.nope", root)
    with pytest.raises(ConfigError, match=rf"^stage 'nope' has no module {where}/vlrl/stages/$"):
        stage_deps.code_modules("nope", root)


def test_a_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"broken.py": "a = 1\nb = 1 +\n"})
    path = re.escape(str(root / "workflow_scripts" / "vlrl" / "broken.py"))
    with pytest.raises(ConfigError, match=rf"^{path}:2: cannot parse: invalid syntax$"):
        stage_deps.imported_modules("vlrl.broken", root)


def test_entry_modules_and_code_modules_of_the_given_tree(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    assert stage_deps.entry_modules(root) == {"vlrl", "vlrl.boot"}
    assert stage_deps.code_modules("alpha", root) == {
        "vlrl",
        "vlrl.boot",
        "vlrl.stages",
        "vlrl.stages.alpha",
    }


def test_code_follows_edits_added_and_removed_modules_in_one_process(tmp_path: Path) -> None:
    """The imports are cached per version of the source tree: an edited import, a module added
    (its importer unchanged) or removed changes the answer at once, in the same process."""
    root = _tree(tmp_path, {"stages/alpha.py": "from vlrl import extra\n"})
    package = root / "workflow_scripts" / "vlrl"
    base = {"vlrl", "vlrl.boot", "vlrl.stages", "vlrl.stages.alpha"}
    assert stage_deps.code_modules("alpha", root) == base  # vlrl.extra does not exist yet
    (package / "extra.py").write_text("")
    assert stage_deps.code_modules("alpha", root) == base | {"vlrl.extra"}
    _rewrite(package / "extra.py", "from vlrl import more\n")
    (package / "more.py").write_text("")
    assert stage_deps.imported_modules("vlrl.extra", root) == {"vlrl", "vlrl.more"}
    assert stage_deps.code_modules("alpha", root) == base | {"vlrl.extra", "vlrl.more"}
    (package / "more.py").unlink()
    assert stage_deps.code_modules("alpha", root) == base | {"vlrl.extra"}
    assert stage_deps.imported_modules("vlrl.extra", root) == {"vlrl"}
    # a rewrite of the same size (the parse cache's key is the file's time and size)
    (package / "moro.py").write_text("")
    _rewrite(package / "extra.py", "from vlrl import moro\n")
    assert stage_deps.imported_modules("vlrl.extra", root) == {"vlrl", "vlrl.moro"}
    # a rewrite that keeps the file's time (as a tool putting back times does): its size tells
    kept = (package / "extra.py").stat()
    (package / "extra.py").write_text("import vlrl.moro\n")
    os.utime(package / "extra.py", ns=(kept.st_atime_ns, kept.st_mtime_ns))
    assert stage_deps.imported_modules("vlrl.extra", root) == {"vlrl.moro"}
    _rewrite(package / "stages" / "alpha.py", "")
    assert stage_deps.code_modules("alpha", root) == base


def test_compiled_files_leave_the_source_version_alone(tmp_path: Path) -> None:
    """Python writing its bytecode caches is no edit of the source: the imports read stay
    cached (:func:`stage_deps._version`)."""
    source = _tree(tmp_path) / "workflow_scripts"
    before = stage_deps._version(source)
    (source / "vlrl" / "stages" / "__pycache__").mkdir()
    (source / "vlrl" / "stages" / "__pycache__" / "alpha.cpython-311.pyc").write_bytes(b"x")
    assert stage_deps._version(source) == before
    (source / "vlrl" / "stages" / "beta.py").write_text("")
    assert stage_deps._version(source) != before


def test_a_named_import_is_code_of_the_stage(tmp_path: Path) -> None:
    """A ``"vlrl.module:function"`` string is followed like an import: by the stage's code and
    by :func:`stage_deps.imported_modules` unless ``by_name=False``."""
    root = _tree(tmp_path, {"stages/alpha.py": 'BUILD = "vlrl.builder:make"\n', "builder.py": ""})
    assert stage_deps.imported_modules("vlrl.stages.alpha", root) == {"vlrl.builder"}
    assert stage_deps.imported_modules("vlrl.stages.alpha", root, by_name=False) == set()
    assert "vlrl.builder" in stage_deps.code_modules("alpha", root)


def test_reward_families_of_the_given_tree_narrow_the_code(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    assert stage_deps.reward_families(root) == {"vlrl.rewards.fam_a", "vlrl.rewards.fam_b"}
    common = {"vlrl", "vlrl.boot", "vlrl.stages", "vlrl.stages.gamma", "vlrl.rewards"}
    assert stage_deps.code_modules("gamma", root) == common | {
        "vlrl.rewards.fam_a",
        "vlrl.rewards.fam_b",
    }
    assert stage_deps.code_modules("gamma", root, ["fam_a.format"]) == common | {
        "vlrl.rewards.fam_a"
    }
    # a name whose module is no family (no REWARDS table) adds nothing
    assert stage_deps.code_modules("gamma", root, ["helper.x", "fam_b.y"]) == common | {
        "vlrl.rewards.fam_b"
    }
    (root / "workflow_scripts" / "vlrl" / "rewards" / "__init__.py").unlink()
    (root / "workflow_scripts" / "vlrl" / "rewards" / "fam_a.py").unlink()
    (root / "workflow_scripts" / "vlrl" / "rewards" / "fam_b.py").unlink()
    assert stage_deps.reward_families(root) == set()


def test_files_of_every_pattern_in_order_and_reread_on_change(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "mod.py": 'FILES = ("a/*.j2", "b/*.txt")\n',
            "a/x.j2": "",
            "a/w.j2": "",
            "b/y.txt": "",
        },
    )
    pkg = root / "workflow_scripts" / "vlrl"
    assert stage_deps.data_files("vlrl.mod", root) == [
        pkg / "a/w.j2",
        pkg / "a/x.j2",
        pkg / "b/y.txt",
    ]
    _rewrite(pkg / "mod.py", 'FILES = ("b/*.txt",)\n')
    assert stage_deps.data_files("vlrl.mod", root) == [pkg / "b/y.txt"]


def test_files_that_is_not_a_literal_is_an_error(tmp_path: Path) -> None:
    """Not silently no files: a computed FILES would drop the dependency."""
    root = _tree(tmp_path, {"mod.py": 'FILES = tuple(["a/*.j2"])\n', "a/x.j2": ""})
    with pytest.raises(ConfigError, match=r"mod\.py: FILES must be a tuple of strings"):
        stage_deps.data_files("vlrl.mod", root)
