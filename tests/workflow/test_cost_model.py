"""How the estimate reports itself: a figure's text, a stage's lines, the total that adds up and
says what it leaves out, the summary; stages built by hand."""

from __future__ import annotations

import pytest

from vlrl.workflow import cost
from vlrl.workflow import cost_model as cm
from vlrl.workflow.cost_model import CostEstimate, Figure, StageEstimate


def stage(
    label: str,
    hours: float | None,
    memory: float | None = 2**31,
    on_gpu: bool = True,
    devices: int = 8,
    notes: tuple[str, ...] = (),
    extra: tuple = (),
) -> StageEstimate:
    figures = [*extra, Figure(cm.GPU_HOURS, hours, "h basis", "h"),
               Figure(cm.WALL_HOURS, None if hours is None else hours / devices, "w", "h"),
               Figure(cm.MEMORY, memory, "m", "B")]  # fmt: skip
    return StageEstimate(label.split()[0], label, devices, on_gpu, tuple(figures), notes)


SHARED = ("N = 1", "FLOPs: ...", "GPU: H100, 989 TFLOPS dense bf16, 80 GB; MFU ...")


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (None, "", "unknown"),
        (3 * 2**30, "B", "3.00 GiB"),
        (1.234e18, "FLOP", "1.23e+18 FLOP"),
        (1234.5678, "h", "1,234.57 h"),
        (1234567.0, "", "1,234,567"),
        (2.5, "", "2.50"),
    ],
)
def test_a_figures_text(value, unit, text) -> None:
    assert Figure("x", value, "b", unit).text() == text


def test_a_stages_figures_where_and_lines() -> None:
    s = stage("grpo", 4.0, notes=("a note",))
    assert s.get(cm.GPU_HOURS) == 4.0
    with pytest.raises(KeyError) as info:
        s.get("steps")
    assert info.value.args[0] == (
        "grpo: no figure 'steps'; known: ['GPU-hours', 'wall-clock hours', 'memory/device']"
    )
    assert s.get_or_none("steps") is None
    assert s.where == "8 GPU(s)"
    assert stage("infer", None, on_gpu=False, devices=3).where == "3 CPU process(es)"
    assert s.lines() == [
        "**grpo** on 8 GPU(s)",
        "- GPU-hours: 4.00 h — h basis",
        "- wall-clock hours: 0.50 h — w",
        "- memory/device: 2.00 GiB — m",
        "- assumes: a note",
    ]


def test_why_a_gpu_stage_has_no_hours() -> None:
    assert stage("grpo", 4.0).unknown() is None
    assert stage("sft", None, on_gpu=False).unknown() is None  # CPU: no hours to have
    items = Figure("items", None, "item count: not known before the download")
    assert stage("infer b", None, extra=(items,)).unknown() == (
        "items unknown: item count: not known before the download"
    )
    no_n = StageEstimate("grpo", "grpo", 8, True, (Figure("steps", 1, "s"),), ("x", cm.UNKNOWN_N))
    assert no_n.unknown() == cm.UNKNOWN_N
    bare = StageEstimate("grpo", "grpo", 8, True, (Figure("steps", 1, "s"),), ("x",))
    assert bare.unknown() == "not estimated"


def test_the_total_adds_up_and_says_what_it_leaves_out() -> None:
    items = Figure("items", None, "unknown count")
    est = CostEstimate(1, (
        stage("sft", 2.0),
        stage("grpo", 4.0, memory=2**33),
        stage("infer base x a", None, extra=(items,)),
        stage("infer base x b", None, extra=(items,)),
        stage("infer sft x c", None, memory=None, extra=(Figure("items", None, "other"),)),
        stage("merge", None, on_gpu=False),
    ), SHARED)  # fmt: skip
    assert est.gpu_hours is None
    hours, wall, missing = est.known_hours()
    assert (hours, wall, [s.label for s in missing]) == (
        6.0, 0.75, ["infer base x a", "infer base x b", "infer sft x c"]
    )  # fmt: skip
    total = (
        "at least 6.00 GPU-hours (sft 2.00, grpo 4.00), at least 0.75 h wall-clock one after "
        "another; not estimated: infer x 2 (items unknown: unknown count); infer (items "
        "unknown: other)"
    )
    assert est.summary() == [
        f"compute: {total}",
        "hardware assumed: GPU: H100, 989 TFLOPS dense bf16, 80 GB; MFU ...",
        "peak memory/device: 8.00 GiB (grpo)",
    ]
    assert est.lines()[-1] == f"total: {total}"
    complete = CostEstimate(1, (stage("sft", 2.0), stage("grpo", 4.0)), SHARED)
    assert complete.gpu_hours == 6.0
    assert complete.summary()[0] == (
        "compute: 6.00 GPU-hours (sft 2.00, grpo 4.00), 0.75 h wall-clock one after another"
    )
    unknown = CostEstimate(None, (stage("grpo", None, memory=None),), SHARED)
    assert unknown.summary() == [
        "compute: at least 0.00 GPU-hours, at least 0.00 h wall-clock one after another; not "
        "estimated: grpo (GPU-hours unknown: h basis)",
        "hardware assumed: GPU: H100, 989 TFLOPS dense bf16, 80 GB; MFU ...",
    ]


def test_an_estimate_on_cpus_only() -> None:
    flops = (Figure(cm.FLOPS, 1.5e15, "f", "FLOP"),)
    est = CostEstimate(1, (
        StageEstimate("sft", "sft", 2, False, flops),
        StageEstimate("grpo", "grpo", 3, False, flops),
        StageEstimate("infer", "infer base x b", 1, False, ()),
    ), SHARED)  # fmt: skip
    assert est.gpu_hours == 0
    assert est.summary() == [
        "compute: on CPUs only (3 process(es) at most), no GPU-hours; 3e+15 FLOP in all"
    ]
    assert est.lines()[-1] == "total: no GPU stage (every stage runs on CPUs)"
    assert CostEstimate(1, (), SHARED).summary()[0].startswith("compute: on CPUs only (0 process")


def test_jobs_with_the_same_figures_share_a_heading() -> None:
    same = (Figure("items", 10, "n"),)
    est = CostEstimate(1, (
        StageEstimate("infer", "infer base x a", 1, True, same),
        StageEstimate("infer", "infer sft x a", 1, True, same),
        StageEstimate("infer", "infer grpo x a", 1, True, (Figure("items", 11, "n"),)),
        StageEstimate("infer", "infer merged x a", 2, True, same),
    ), ("s1", "s2", "s3"))  # fmt: skip
    assert est.lines()[:12] == [
        "- assumes: s1",
        "- assumes: s2",
        "- assumes: s3",
        "",
        "**infer x 2: base x a, sft x a** on 1 GPU(s)",
        "- items: 10 — n",
        "",
        "**infer grpo x a** on 1 GPU(s)",
        "- items: 11 — n",
        "",
        "**infer merged x a** on 2 GPU(s)",
        "- items: 10 — n",
    ]


def test_the_shared_assumptions_and_an_unknown_gpu(project) -> None:
    from vlrl.config import load_experiment, load_model

    cfg = load_experiment("tiny_shapes")
    model = load_model(cfg.base_model)
    n = cm.tiny_parameter_count(model.tiny)
    est = cost.estimate(cfg, model, benchmarks=[cm.Benchmark("shapes_test", 20)],
                        assumptions=cm.Assumptions(gpu="a100", mfu_train=0.4))  # fmt: skip
    assert est.parameters == n
    assert est.assumptions == (
        f"N = {n:,} parameters (counted from the tiny model's shape)",
        "FLOPs: 2N per token forward, 6N forward+backward (Kaplan et al. 2020 §2.1; Hoffmann "
        "et al. 2022 App. F), 8N with gradient checkpointing; attention FLOPs left out",
        "GPU: A100, 312 TFLOPS dense bf16, 80 GB; MFU 0.4 training, 0.03 transformers generate, "
        "0.15 vLLM (assumed)",
    )
    stages = [s.label for s in est.stages]
    assert stages == ["sft", "grpo", *[f"infer {c} x shapes_test" for c in cfg.checkpoints]]
    hub = load_model("qwen2.5-vl-3b-instruct")
    assert cost.estimate(cfg, hub).assumptions[0] == (
        f"N = {hub.parameters:,} parameters (the model card's, config/models)"
    )
    unknown = cost.estimate(cfg, hub.model_copy(update={"parameters": None}))
    assert unknown.assumptions[0] == cm.UNKNOWN_N
    with pytest.raises(ValueError) as info:
        cost.estimate(cfg, model, assumptions=cm.Assumptions(gpu="v100"))
    assert str(info.value) == "Assumptions.gpu 'v100' is not one of ['a100', 'h100', 'h200']"


def test_a_stage_of_no_hours_adds_none() -> None:
    est = CostEstimate(1, (stage("sft", 0.0), stage("grpo", 4.0)), SHARED)
    assert est.known_hours() == (4.0, 0.5, [])
    assert est.summary()[0] == (
        "compute: 4.00 GPU-hours (sft 0.00, grpo 4.00), 0.50 h wall-clock one after another"
    )
    assert est.lines()[-2:] == ["", "total: 4.00 GPU-hours (sft 0.00, grpo 4.00), 0.50 h "
                                "wall-clock one after another"]  # fmt: skip


def test_cpu_stages_without_flops_add_none() -> None:
    est = CostEstimate(None, (StageEstimate("sft", "sft", 2, False, ()),), SHARED)
    assert est.summary() == [
        "compute: on CPUs only (2 process(es) at most), no GPU-hours; 0 FLOP in all"
    ]
