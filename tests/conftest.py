"""Shared fixtures, built once per test session: the tiny Qwen2.5-VL (built the way the
base_model stage builds it), a small shapes dataset, and a project directory to run stages in."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Under pytest-xdist several workers train at once; torch's default of one thread per core in each
# (and in the LLaMA-Factory and dvc subprocesses they start) oversubscribes the CPU, which slowed
# two concurrent SFT runs about 25x on 2 cores. One thread each; set before torch is imported.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

# Every stage the tests run through the `vlrl` command (the pipeline tests) fails if it reads a
# config key its module's READS does not declare (vlrl.workflow.reads).
os.environ.setdefault("VLRL_CHECK_READS", "1")
# The content hashes of served models' weights (vlrl.serving.served_models) are remembered in a
# folder of this test session's, not in the user's ~/.cache/vlrl.
os.environ.setdefault("VLRL_HASH_CACHE", tempfile.mkdtemp(prefix="vlrl-hash-cache-"))

from vlrl.config import TinyModelConfig
from vlrl.models.tiny import build_tiny_model
from vlrl.stages.base_model import TINY_SEED, tiny_corpus


@pytest.fixture(scope="session")
def tiny_corpus_texts() -> list[str]:
    return tiny_corpus()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, tiny_corpus_texts: list[str]) -> Path:
    """A directory holding the tiny model, tokenizer, processor and ``vlrl_model.json``."""
    out = tmp_path_factory.mktemp("tiny-qwen2.5-vl")
    build_tiny_model(TinyModelConfig(), tiny_corpus_texts, out, seed=TINY_SEED)
    return out


@pytest.fixture(scope="session")
def tiny_processor(tiny_model_dir: Path):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="session")
def tiny_model(tiny_model_dir: Path):
    from transformers import AutoModelForImageTextToText

    return AutoModelForImageTextToText.from_pretrained(tiny_model_dir).eval()


REPO = Path(__file__).resolve().parents[1]


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch project: a copy of config/ and params.yaml, used as CWD and ``$VLRL_ROOT``."""
    shutil.copytree(REPO / "config", tmp_path / "config")
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VLRL_ROOT", str(tmp_path))
    return tmp_path


@pytest.fixture()
def ascii_locale():
    """The C locale for this test: a text file read or written without ``encoding="utf-8"``
    then uses ASCII, so a non-ASCII field fails where the code left the encoding to the locale
    (as it would on a machine whose locale is not UTF-8)."""
    import locale

    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, before)


@pytest.fixture(scope="session")
def shapes_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small generated shapes dataset (train 40 / val 5 / test 20) in canonical form."""
    from vlrl.config import ShapesConfig
    from vlrl.core.files import write_jsonl
    from vlrl.data.shapes import generate_split

    out = tmp_path_factory.mktemp("shapes")
    cfg = ShapesConfig(n_train=40, n_val=5, n_test=20)
    for split, n in (("train", 40), ("val", 5), ("test", 20)):
        records = generate_split(cfg, split, n, seed=0, out_dir=out)
        write_jsonl(out / f"{split}.jsonl", [r.model_dump() for r in records])
    return out


def _length_reward(completions, **kwargs):
    """Varies even for a random model's output, so advantages are non-zero from step one."""
    from vlrl.rewards.common import completion_text

    return [min(len(completion_text(c)), 100) / 100 for c in completions]


@pytest.fixture()
def length_reward(monkeypatch: pytest.MonkeyPatch) -> str:
    """Registers ``test.length`` (a reward in [0, 1] that varies with the completion's length)
    for one test and returns its name."""
    from vlrl import rewards

    monkeypatch.setitem(rewards.REGISTERED, "test.length", _length_reward)
    return "test.length"


@pytest.fixture(scope="module")
def endpoint_server():
    """A real OpenAI-compatible server on 127.0.0.1 that can be told to misbehave
    (``tests/fake_openai_server.py``: FastAPI under uvicorn, in a thread); one per module."""
    from fake_openai_server import FakeRewardModel

    with FakeRewardModel() as server:
        yield server


@pytest.fixture()
def endpoint(endpoint_server):
    """:func:`endpoint_server`, well-behaved and with its counters reset for this test."""
    endpoint_server.state.reset()
    return endpoint_server


# The longest test file first: under `--dist loadfile` each file runs on one worker, so starting
# it first lets the other files run beside it instead of after it. Not every long file first:
# that pairs the multi-process pipeline tests with each other (docs/performance.md).
# The Slurm test waits mostly on the cluster's jobs (which CI's cluster runs on the same cores).
LONGEST_FIRST = (
    "tests/pipeline/test_slurm.py",
    "tests/pipeline/test_invalidation.py",
    "tests/algorithms/test_recipes.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.relative_to(REPO).as_posix(), len(rank)))
