"""`vlrl check`: every config file validated at once, each problem naming its file and key."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vlrl.core.errors import ConfigError
from vlrl.workflow.check import check_all

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _variant(project: Path, name: str, old: str, new: str) -> Path:
    """A copy of tiny_shapes with the first match of the regex ``old`` replaced by ``new``."""
    text = (project / "config" / "experiments" / "tiny_shapes.yaml").read_text()
    changed, count = re.subn(old, new, text, count=1, flags=re.MULTILINE)
    assert count == 1, f"{old!r} not found in tiny_shapes.yaml"
    path = project / "config" / "experiments" / f"{name}.yaml"
    path.write_text(changed)
    return path


def test_the_project_config_is_valid():
    check_all()


@pytest.mark.parametrize(
    ("old", "new", "key", "why"),
    [
        ("seed: 0", "seed: 0\nlearnig_rate: 1.0e-5", "learnig_rate", "unknown top-level key"),
        (r"^  max_steps: \d+", "  max_step: 1", "grpo.max_step", "unknown nested key"),
        ("seed: 0", "seed: zero", "seed", "wrong type"),
        (
            r"^  num_generations: \d+",
            "  num_generations: many",
            "grpo.num_generations",
            "wrong type",
        ),
    ],
)
def test_bad_experiment_names_file_and_key(project, old, new, key, why):
    path = _variant(project, "bad", old, new)
    with pytest.raises(ConfigError) as info:
        check_all()
    message = str(info.value)
    assert str(path) in message, why
    assert f"{key}:" in message, why


def test_all_problems_are_listed_at_once(project):
    _variant(project, "bad_a", "seed: 0", "seed: zero")
    _variant(project, "bad_b", "seed: 0", "seed: 0\nextra: 1")
    (project / "params.yaml").write_text("experiments: [tiny_shapes, missing]\nverbose: true\n")
    with pytest.raises(ConfigError) as info:
        check_all()
    message = str(info.value)
    assert "bad_a.yaml: seed:" in message
    assert "bad_b.yaml: extra:" in message
    assert "'verbose' was unexpected" in message
    assert "'missing' has no file" in message


# Problems of several files at once: (file under the project, regex on its text, replacement),
# and the ``<file>: <dotted key>: `` each problem line must start with.
SEVERAL = [
    (
        "config/experiments/bad_a.yaml",
        r"^  batch_size: \d+",
        "  batch_size: -1",
        "infer.batch_size",
    ),
    (
        "config/experiments/bad_a.yaml",
        r"^  max_steps: \d+",
        "  max_steps: 90\n  tasks: [cuont, arithmetic]",
        "grpo.tasks",
    ),
    ("config/experiments/bad_a.yaml", r"^  num_train_epochs: .*", "  num_train_epochs: -1", None),
    ("config/experiments/bad_b.yaml", r"^  num_generations: \d+", "  num_generations: 1", None),
    ("config/experiments/bad_b.yaml", r"^  beta: .*", "  beta: 0.04\n  temperature: -1", None),
    ("config/experiments/bad_b.yaml", r"^  confidence: .*", "  confidence: 1.5", None),
    ("config/experiments/bad_b.yaml", r"^prompt: .*", "prompt: think_answr", "prompt"),
    ("config/experiments/bad_c.yaml", r"^seed: 0", "seed: 0\nseed: 1", "seed"),
    ("config/experiments/bad_c.yaml", r"^score:", "score:\n  iou_threshold: 0", None),
    (
        "config/experiments/bad_c.yaml",
        r"^benchmarks:",
        "infer:\n  top_p: 1.5\nbenchmarks:",
        "infer",  # a second infer section: a duplicate key (and its top_p is validated)
    ),
    (
        "config/models/tiny-qwen2.5-vl.yaml",
        r"^builder: tiny",
        "builder: hf\nhf: {repo_id: Qwen/Qwen2.5-VL-3B-Instruct, revision: main}",
        "hf.revision",
    ),
    ("config/benchmarks/shapes_test.yaml", r"^split: test", "split: test\nprompt: nope", "prompt"),
    ("params.yaml", r"^experiments:", "experiments: [tiny_shapes]\nexperiments:", "experiments"),
]
SEVERAL_KEYS = {
    "config/experiments/bad_a.yaml": ["infer.batch_size", "grpo.tasks", "sft.num_train_epochs"],
    "config/experiments/bad_b.yaml": [
        "grpo.num_generations",
        "grpo.temperature",
        "score.confidence",
        "prompt",
    ],
    "config/experiments/bad_c.yaml": ["seed", "infer", "infer.top_p", "score.iou_threshold"],
    "config/models/tiny-qwen2.5-vl.yaml": ["hf.revision"],
    "config/benchmarks/shapes_test.yaml": ["prompt"],
    "params.yaml": ["experiments"],
}


def _break_several(project: Path) -> list[str]:
    """Apply SEVERAL (experiments start as copies of tiny_shapes); the expected line prefixes."""
    source = (project / "config" / "experiments" / "tiny_shapes.yaml").read_text()
    texts: dict[str, str] = {}
    for file, old, new, _ in SEVERAL:
        text = texts.get(file) or (
            source if file.startswith("config/experiments/") else (project / file).read_text()
        )
        texts[file], count = re.subn(old, new, text, count=1, flags=re.MULTILINE)
        assert count == 1, f"{old!r} not found for {file}"
    for file, text in texts.items():
        (project / file).write_text(text)
    return [f"{project / file}: {key}: " for file, keys in SEVERAL_KEYS.items() for key in keys]


def test_every_problem_of_every_file_is_listed_at_once(project):
    expected = _break_several(project)
    with pytest.raises(ConfigError) as info:
        check_all()
    header, *lines = str(info.value).splitlines()
    assert header == f"{len(expected)} problem(s):", lines
    for prefix in expected:
        assert [line for line in lines if line.startswith(prefix)], (prefix, lines)


def test_cli_lists_every_problem_and_exits_2(project):
    expected = _break_several(project)
    env = {**os.environ, "COLUMNS": "80", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run([str(BIN / "vlrl"), "check"], env=env, capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    for prefix in expected:  # one line each, unwrapped, [lists] not taken for markup
        assert any(line.startswith(prefix) for line in out.stderr.splitlines()), out.stderr
    assert "['color', 'count', 'grounding', 'caption', 'arithmetic']" in out.stderr


def test_cli_exits_2_and_names_file_and_key(project):
    path = _variant(project, "bad", "seed: 0", "seed: 0\nlearnig_rate: 1.0e-5")
    env = {**os.environ, "COLUMNS": "500", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run([str(BIN / "vlrl"), "check"], env=env, capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    assert str(path) in out.stderr and "learnig_rate" in out.stderr


def test_datasets_and_the_benchmarks_naming_them_are_checked(project):
    datasets = project / "config" / "datasets"
    datasets.mkdir(exist_ok=True)
    (datasets / "pinned.yaml").write_text("repo_id: org/name\nrevision: " + "a" * 40 + "\n")
    (datasets / "moving.yaml").write_text("repo_id: org/name\nrevision: main\n")
    benchmarks = project / "config" / "benchmarks"
    (benchmarks / "on_hub.yaml").write_text("loader: records\ndataset: pinned\nfile: t.jsonl\n")
    (benchmarks / "on_nothing.yaml").write_text("loader: records\ndataset: absent\nfile: t.jsonl\n")

    with pytest.raises(ConfigError) as info:
        check_all()

    header, *lines = str(info.value).splitlines()
    assert header == "2 problem(s):", lines
    assert lines[0].startswith(f"{datasets / 'moving.yaml'}: revision: "), lines
    assert lines[1].startswith(
        f"{benchmarks / 'on_nothing.yaml'}: dataset: 'absent' has no file "
        "config/datasets/absent.yaml; known: ["
    ), lines
    assert "'moving'" in lines[1] and "'pinned'" in lines[1], lines


BAD_REFERENCE = """\
paper: {title: T, url: "https://x", arxiv: "not-an-id"}
columns:
  Shapes: {benchmark: shapes_test, scale: percent}
  Nope: {benchmark: no_such_bench, scale: percent}
  Wrong: {benchmark: shapes_test, metric: fAcc, scale: percent}
  Raw: {benchmark: shapes_test, scale: raw}
rows:
  - {id: a, model: M, source: {table: T1, row: M}, values: {Shapes: 1.0, Typo: 2.0},
     protocol: {toolkit: x, prompt: y, judge: z}}
  - {id: a, model: N, source: {table: T1, row: N}, values: {Shapes: 1.0}}
  - {id: b, model: O, source: {table: T1, row: O, page: 3}, values: {Shapes: 1.0},
     protocol: {toolkit: x, prompt: y, judge: z}}
extra: 1
"""
FIXES = [  # each step fixes the problems the one before names
    ({"paper.arxiv", "extra", "rows.2.source.page"},
     [(', arxiv: "not-an-id"', ""), ("extra: 1\n", ""), (", page: 3", "")]),
    ({"rows.0.values.Typo", "rows.1.id", "rows.1.protocol"},
     [(", Typo: 2.0", ""), ("id: a, model: N", "id: c, model: N"),
      ("values: {Shapes: 1.0}}\n  - {id: b",
       "values: {Shapes: 1.0}, protocol: {toolkit: x, prompt: y, judge: z}}\n  - {id: b")]),
]  # fmt: skip


def test_reference_files_are_checked_naming_file_and_key(project):
    path = project / "config" / "reference" / "bad.yaml"
    text = BAD_REFERENCE
    for keys, fixes in FIXES:
        path.write_text(text)
        with pytest.raises(ConfigError) as info:
            check_all()
        header, *lines = str(info.value).splitlines()
        assert header == f"{len(keys)} problem(s):", lines
        assert {line.removeprefix(f"{path}: ").split(": ")[0] for line in lines} == keys, lines
        for old, new in fixes:
            assert old in text, old
            text = text.replace(old, new)

    # Once the schema holds, the columns are checked against the benchmarks.
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        check_all()
    header, *lines = str(info.value).splitlines()
    assert header == "3 problem(s):", lines
    assert lines[0].startswith(f"{path}: columns.Nope.benchmark: 'no_such_bench' has no file")
    assert lines[1].startswith(f"{path}: columns.Wrong.metric: 'fAcc' is not a metric of ")
    assert lines[2].startswith(f"{path}: columns.Raw.scale: 'raw' does not fit shapes_test's")


def _linked(project, links: str) -> Path:
    return _variant(project, "linked", r"^score:", f"report:\n  published:\n{links}score:")


def test_published_links_name_the_reference_and_the_row(project):
    path = _linked(
        project,
        "    - {reference: vlm_r1, rows: {base: qwen2_5_vl_3b, grpo: rl_step601}}\n"
        "    - {reference: no_such_paper, rows: {sft: x}}\n",
    )
    with pytest.raises(ConfigError) as info:
        check_all()
    header, *lines = str(info.value).splitlines()
    assert header == "2 problem(s):", lines
    assert lines[0].startswith(f"{path}: report.published.0.rows.grpo: no row 'rl_step601' in ")
    assert lines[1].startswith(f"{path}: report.published.1.reference: 'no_such_paper' has no")

    path.write_text(path.read_text().replace("{base: qwen2_5_vl_3b,", "{rl: qwen2_5_vl_3b,"))
    with pytest.raises(ConfigError, match=r"report\.published\.0\.rows\.rl\.\[key\]: Input"):
        check_all()


def test_the_shipped_references_link_from_an_experiment(project):
    _linked(
        project,
        "    - {reference: vlm_r1, rows: {base: qwen2_5_vl_3b, grpo: rl_step600}}\n"
        "    - {reference: sophiavl_r1, rows: {base: qwen2_5_vl_7b, grpo: sophiavl_r1_7b}}\n",
    )
    check_all()


def test_a_judge_graded_benchmark_needs_the_experiments_judge(project):
    """MM-Vet's metric is its grader's: listing it without score.judge is refused before any
    stage runs, naming the benchmark; with a judge it passes."""
    _variant(project, "no_judge", r"^  - shapes_test$", "  - shapes_test\n  - mmvet")
    with pytest.raises(ConfigError) as info:
        check_all()
    assert re.search(
        r"no_judge\.yaml: benchmarks\.1: 'mmvet' is scored by protocol 'mmvet_official', an "
        r"LLM judge's, but score\.judge is not set",
        str(info.value),
    ), str(info.value)
    path = _variant(project, "no_judge", r"^  - shapes_test$", "  - shapes_test\n  - mmvet")
    path.write_text(
        path.read_text().replace(
            "score:\n", "score:\n  judge: {base_url: 'http://127.0.0.1:8001/v1', model: j}\n"
        )
    )
    check_all()


def test_a_benchmarks_judge_prompt_must_exist(project):
    bench = project / "config" / "benchmarks" / "mmvet.yaml"
    bench.write_text(bench.read_text().replace("prompt: mmvet", "prompt: mm_vet"))
    with pytest.raises(ConfigError) as info:
        check_all()
    assert "mmvet.yaml: judge.prompt: 'mm_vet' is not one of" in str(info.value)


@pytest.mark.parametrize(
    ("overrides", "key", "sizes"),
    [
        # Qwen2.5-VL-7B: 28 heads, 4 key/value, 16 in the vision encoder
        (["infer.backend=vllm", "resources.infer.gpus=8"], "resources.infer.gpus", "1, 2, 4"),
        (["grpo.use_vllm=true", "grpo.vllm_tensor_parallel_size=3"], None, "1, 2, 4"),
        (
            ["grpo.use_vllm=true", "grpo.vllm_mode=server", "grpo.vllm_server_gpus=6"],
            "grpo.vllm_server_gpus",
            "1, 2, 4",
        ),
    ],
)
def test_vllm_tensor_parallelism_must_split_the_models_heads(
    overrides: list[str], key: str | None, sizes: str
) -> None:
    """Qwen2.5-VL-7B on 3, 6 or 8 GPUs of one vLLM engine fails at start, after every job
    before it ran: `vlrl check` says so first, naming the key and the sizes that work."""
    from vlrl.workflow.check import experiment_problems

    key = key or "grpo.vllm_tensor_parallel_size"
    cfg, problems = experiment_problems("sophiavl_r1", overrides)
    assert cfg is None
    (problem,) = [p for p in problems if "tensor parallelism" in p]
    assert problem.startswith(f"{Path('config/experiments/sophiavl_r1.yaml')}: {key}: ") or (
        f": {key}: tensor parallelism over" in problem
    ), problem
    assert "28 attention heads (4 key/value, 16 in the vision encoder)" in problem
    assert problem.endswith(f"Sizes that can: {sizes} (base model qwen2.5-vl-7b-instruct)")
    fine = [o.rsplit("=", 1)[0] + "=4" if o[-1].isdigit() else o for o in overrides]
    assert not [p for p in experiment_problems("sophiavl_r1", fine)[1] if "tensor" in p]


def test_a_mistyped_protocol_of_a_benchmark_gets_a_suggestion(project):
    """One line per unknown protocol, the closest names first, not the list of all eleven."""
    bench = project / "config" / "benchmarks" / "shapes_test.yaml"
    bench.write_text(bench.read_text().replace("protocols: [vlrl,", "protocols: [vlrll,"))
    with pytest.raises(ConfigError) as info:
        check_all()
    problems = [line for line in str(info.value).splitlines() if "vlrll" in line]
    assert problems, str(info.value)
    assert all(
        line.endswith("protocols: 'vlrll' is not a scoring protocol; did you mean 'vlrl'?")
        for line in problems
    ), problems
