"""Where the report's numbers come from: the experiment and the config values the report read,
the base model and dataset revisions, the library versions, the judge, and a fingerprint of the
report's code.

The report is a DVC output that a fresh clone reproduces byte for byte, so none of this varies
between machines, checkouts or runs: no commit id (the commit is the one whose ``dvc.lock``
records the report), no times, no absolute paths, no host names. Everything shown is read from
the report's declared inputs (:func:`inputs` lists those beyond the scores and predictions), so
a change to any of it reruns the report.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.reporting.labels import label

if TYPE_CHECKING:  # the rules import this module to list the report's inputs: keep it light
    from vlrl.reporting.frames import Evaluation

log = logging.getLogger(__name__)

LIBRARIES = (
    "torch", "torchvision", "transformers", "trl", "peft", "accelerate", "datasets", "dvc",
    "dvclive", "snakemake", "numpy", "scipy", "pandas", "pillow", "matplotlib", "jinja2",
    "pydantic", "openai", "math-verify", "mathruler",
)  # fmt: skip
"""Libraries of the main environment (all pinned in envs/main.txt) whose versions are shown."""
SFT_LIBRARIES = ("llamafactory", "transformers", "trl", "datasets", "peft", "accelerate", "torch")
"""Pins of the LLaMA-Factory environment shown, as envs/sft.txt has them."""
MAIN_PINS = Path("envs", "main.txt")
SFT_PINS = Path("envs", "sft.txt")
COMMIT = "the commit whose dvc.lock records this report: `git log -1 -- dvc.lock`"
FAILURES = {"unscored": "left unscored", "score_zero": "scored 0", "error": "the stage failed"}
"""What became of the items a judge failed on, by ``score.judge.on_failure``."""
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s;#]+)")


def inputs(base_model: str, datasets: list[str]) -> list[str]:
    """Files the provenance reads besides the scores (rule inputs, relative to the root): the
    resolved params of the base model and of the datasets (the values base_model and download
    read, so an edit of a description reruns nothing, a new revision reruns the report).

    The pinned environments (envs/*.txt) are inputs of no stage: like every stage's results, the
    library versions are the commit's (a pin change means rerunning the pipeline).

    >>> inputs("tiny-qwen2.5-vl", ["refcoco", "refcoco"])
    ['resources/params/tiny-qwen2.5-vl.yaml', 'resources/params/datasets/refcoco.yaml']
    """
    files = [
        paths.model_params_file(base_model),
        *(paths.dataset_params_file(name) for name in dict.fromkeys(datasets)),
    ]
    return [f.as_posix() for f in files]


def _params(path: Path) -> dict[str, Any]:
    """A resolved params file (written by vlrl resolve before any stage runs)."""
    full = paths.root() / path
    if not full.is_file():
        raise StageError(f"report: {path} does not exist; run `vlrl resolve` (dvc repro does)")
    return yaml.safe_load(full.read_text()) or {}


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def resolved(cfg: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """The resolved values of the dotted config keys (the report's params, defaults included).

    >>> from vlrl.config import load_experiment
    >>> resolved(load_experiment("tiny_shapes"), ("seed", "score.confidence"))
    {'seed': 0, 'score.confidence': 0.95}
    """
    values = {}
    for key in keys:
        node = cfg
        for part in key.split("."):
            node = getattr(node, part)
        values[key] = _plain(node)
    return values


def model_info(name: str) -> dict[str, Any]:
    """The base model: how it is built, and for a hub model its repository and revision."""
    model = _params(paths.model_params_file(name))
    hub = model.get("hf") or {}
    if model.get("builder") == "hf" and hub:
        return {"name": name, "source": "hub", "repo_id": hub.get("repo_id"),
                "revision": hub.get("revision")}  # fmt: skip
    return {"name": name, "source": "built locally (builder: tiny, random init)",
            "repo_id": None, "revision": None}  # fmt: skip


def data_info(evaluations: list[Evaluation]) -> list[dict[str, Any]]:
    """Per benchmark: the dataset its items come from, with its hub repository (or git URL)
    and revision."""
    rows = []
    for ev in evaluations:
        bench = ev.config
        row = {"benchmark": ev.bench, "dataset": bench.dataset, "file": bench.file,
               "subsample": bench.subsample.model_dump() if bench.subsample else None,
               "repo_id": None, "git": None, "revision": None}  # fmt: skip
        if bench.dataset is None:
            row["dataset"] = f"the experiment's own data ({bench.split} split of the data stage)"
        else:
            dataset = _params(paths.dataset_params_file(bench.dataset))
            row.update(
                repo_id=dataset.get("repo_id"),
                git=dataset.get("git"),
                revision=dataset.get("revision"),
            )
        rows.append(row)
    return rows


def pins(path: Path) -> dict[str, str]:
    """``{name: version}`` of a pinned requirements file (``name==version`` lines), names
    lower-cased; empty when there is no such file.

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "r.txt"
    >>> _ = f.write_text("# c\\nJinja2==3.1.6\\ntransformers[serving]==5.19.0  # via x\\n")
    >>> pins(f)
    {'jinja2': '3.1.6', 'transformers': '5.19.0'}
    """
    if not path.is_file():
        log.warning("report: %s does not exist: its pins are shown as unknown", path)
        return {}
    found = {}
    for line in path.read_text().splitlines():
        match = _PIN.match(line.strip())
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def libraries(root: Path) -> list[dict[str, str]]:
    """The main environment's versions (as installed) and the LLaMA-Factory environment's pins
    (envs/sft.txt: that environment is another interpreter). An installed version that is not
    the pin is logged: the environment is not the one the commit pins."""
    main_pins = pins(root / MAIN_PINS)
    rows = []
    for name in LIBRARIES:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"
        pinned = main_pins.get(name)
        if pinned is not None and pinned != version:
            log.warning("report: %s %s is installed, envs/main.txt pins %s", name, version, pinned)
        rows.append({"environment": "main (installed)", "library": name, "version": version})
    sft_pins = pins(root / SFT_PINS)
    for name in SFT_LIBRARIES:
        version = sft_pins.get(name, "not pinned" if sft_pins else "unknown (no envs/sft.txt)")
        rows.append({"environment": "sft (envs/sft.txt)", "library": name, "version": version})
    return rows


def judges(evaluations: list[Evaluation], sft_enabled: bool) -> list[dict[str, Any]]:
    """Per benchmark × checkpoint: the scoring protocol, and rules only or the judge's model,
    endpoint, mode, prompt versions and calls, as the scores file records them."""
    rows = []
    for ev in evaluations:
        for checkpoint, scores in ev.scores.items():
            judge = scores.judge
            rows.append(
                {
                    "benchmark": ev.bench,
                    "model": label(checkpoint, sft_enabled),
                    "protocol": scores.protocol,
                    "judge": judge.model if judge else None,
                    "base_url": judge.base_url if judge else None,
                    "mode": judge.mode if judge else None,
                    "prompt_version": judge.prompt_version if judge else None,
                    "calls": judge.calls if judge else None,
                    "cache_hits": judge.cache_hits if judge else None,
                    "failures": judge.failures if judge else None,
                    "on_failure": FAILURES.get(_extra(judge, "on_failure"), "failures")
                    if judge
                    else None,
                    "unscored": sum(not item.scored for item in scores.items),
                }
            )
    return rows


def _extra(judge: Any, key: str) -> Any:
    """A field the judge metadata records beyond its declared ones (``on_failure``)."""
    return (judge.model_extra or {}).get(key)


def fingerprint(files: list[str], root: Path) -> str:
    """SHA-256 over each file's path (relative, as given) and content, in the given order."""
    digest = hashlib.sha256()
    for name in files:
        digest.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
    return digest.hexdigest()


def code(stage: str, files: list[str], root: Path) -> dict[str, Any]:
    """The stage's code files (relative to ``root``) and their fingerprint.

    The files are those :func:`vlrl.workflow.stage_deps.code_files` derives (its modules, what
    they import and the templates they declare), the report rule's ``code`` input: the ``vlrl``
    command passes them in (the orchestration layer lists them; this module does not import it).
    """
    return {"stage": stage, "files": files, "sha256": fingerprint(files, root)}


def collect(
    exp: str,
    cfg: Any,
    reads: tuple[str, ...],
    evaluations: list[Evaluation],
    code_files: list[str],
    code_root: Path,
) -> dict[str, Any]:
    """Everything the provenance section shows (see the module docstring); ``code_files``
    (relative to ``code_root``) are the report stage's code (:func:`code`)."""
    return {
        "experiment": exp,
        "experiment_file": f"config/experiments/{exp}.yaml",
        "config": resolved(cfg, reads),
        "params_file": paths.stage_params_file(exp, "report").as_posix(),
        "model": model_info(cfg.base_model),
        "data": data_info(evaluations),
        "libraries": libraries(paths.root()),
        "judges": judges(evaluations, cfg.sft.enabled),
        "code": code("report", code_files, code_root),
        "commit": COMMIT,
    }
