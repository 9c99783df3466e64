"""``report.combined``: benchmarks the report also shows as one number. The errors a user sees,
word for word (each names the file and the dotted key), how an ``extends:`` child replaces the
parent's, and the recipe that declares one (Vision-SR1's MMMU-Pro)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlrl.config import ConfigProblems, load_experiment

EXTRA = "Extra inputs are not permitted"
#: Two benchmarks to combine.
REQUIRED = "base_model: tiny-qwen2.5-vl\nbenchmarks: [shapes_test, shapes_test_blank]\n"


def _experiment(project: Path, name: str, text: str) -> Path:
    path = project / "config" / "experiments" / f"{name}.yaml"
    path.write_text(text)
    return path


def _problems(name: str) -> list[str]:
    with pytest.raises(ConfigProblems) as caught:
        load_experiment(name)
    return caught.value.problems


def test_a_combined_number_names_its_benchmarks(project: Path) -> None:
    text = "report:\n  combined:\n    both: {benchmarks: [shapes_test_blank, shapes_test]}\n"
    _experiment(project, "ok", REQUIRED + text)
    combined = load_experiment("ok").report.combined
    assert list(combined) == ["both"]
    assert combined["both"].benchmarks == ["shapes_test_blank", "shapes_test"]
    assert combined["both"].weights == "items", "the default, and the one rule"
    _experiment(project, "none", REQUIRED)
    assert load_experiment("none").report.combined == {}


@pytest.mark.parametrize(
    ("combined", "expected"),
    [
        (
            "both: {benchmarks: [shapes_test, shapes_tset]}",
            [
                "report.combined.both.benchmarks.1: 'shapes_tset' is not one of the experiment's "
                "benchmarks ['shapes_test', 'shapes_test_blank']"
            ],
        ),
        (
            "shapes_test: {benchmarks: [shapes_test, shapes_test_blank]}",
            [
                "report.combined.shapes_test: is one of the experiment's benchmarks; name the "
                "combined number otherwise"
            ],
        ),
        (
            "one: {benchmarks: [shapes_test]}",
            [
                "report.combined.one.benchmarks: List should have at least 2 items after "
                "validation, not 1 (got ['shapes_test'])"
            ],
        ),
        (
            "twice: {benchmarks: [shapes_test, shapes_test]}",
            [
                "report.combined.twice.benchmarks: Value error, lists ['shapes_test'] more than "
                "once (got ['shapes_test', 'shapes_test'])"
            ],
        ),
        (
            "mean: {benchmarks: [shapes_test, shapes_test_blank], weights: equal}",
            ["report.combined.mean.weights: Input should be 'items' (got 'equal')"],
        ),
        (
            "both: {benchmarks: [shapes_test, shapes_test_blank], weight: items}",
            [
                f"report.combined.both.weight: {EXTRA} (got 'items'); did you mean "
                "'report.combined.both.weights'?"
            ],
        ),
        (
            "both: {}",
            ["report.combined.both.benchmarks: Field required"],
        ),
        (
            "'a b': {benchmarks: [shapes_test, shapes_test_blank]}",
            [
                "report.combined.a b.[key]: String should match pattern "
                "'^[A-Za-z0-9][A-Za-z0-9_.-]*$' (got 'a b')"
            ],
        ),
    ],
)
def test_a_bad_combined_number_names_file_and_key(
    project: Path, combined: str, expected: list[str]
) -> None:
    path = _experiment(project, "bad", REQUIRED + f"report:\n  combined:\n    {combined}\n")
    assert _problems("bad") == [f"{path}: {line}" for line in expected]


def test_every_benchmark_not_evaluated_is_named(project: Path) -> None:
    path = _experiment(
        project,
        "bad",
        "base_model: tiny-qwen2.5-vl\nbenchmarks: [shapes_test]\n"
        "report:\n  combined:\n    both: {benchmarks: [shapes_test_blank, other]}\n",
    )
    assert _problems("bad") == [
        f"{path}: report.combined.both.benchmarks.{i}: {name!r} is not one of the experiment's "
        "benchmarks ['shapes_test']"
        for i, name in enumerate(["shapes_test_blank", "other"])
    ]


PARENT = (
    REQUIRED + "report:\n  combined:\n    both: {benchmarks: [shapes_test, shapes_test_blank]}\n"
)


def test_a_child_replaces_the_parents_combined_numbers_whole(project: Path) -> None:
    parent = _experiment(project, "parent", PARENT)
    # on other benchmarks, the parent's combined number is named where the parent set it
    _experiment(project, "child", "extends: parent\nbenchmarks: [shapes_test]\n")
    assert _problems("child") == [
        f"{parent}: report.combined.both.benchmarks.1: 'shapes_test_blank' is not one of the "
        "experiment's benchmarks ['shapes_test']"
    ]
    # an empty mapping drops it (merged key by key, it would keep the parent's)
    _experiment(
        project, "child", "extends: parent\nbenchmarks: [shapes_test]\nreport: {combined: {}}\n"
    )
    assert load_experiment("child").report.combined == {}
    # another one replaces it; a child that says nothing keeps it
    _experiment(
        project,
        "child",
        "extends: parent\nreport:\n  combined:\n    ab: {benchmarks: [shapes_test_blank, "
        "shapes_test]}\n",
    )
    assert list(load_experiment("child").report.combined) == ["ab"]
    _experiment(project, "child", "extends: parent\nseed: 2\n")
    assert list(load_experiment("child").report.combined) == ["both"]


def test_vision_sr1_combines_its_three_mmmu_pro_settings() -> None:
    """Table 2's one MMMU-Pro number (Evaluation/eval_result.py's weighted_mmmu_pro), in the
    recipe and the variants on its benchmarks; a smoke variant, on its own split, has none."""
    for name in ("vision_sr1", "vision_sr1_cold_start", "vision_sr1_no_self_reward"):
        cfg = load_experiment(name)
        (combined,) = cfg.report.combined.values()
        assert list(cfg.report.combined) == ["mmmu_pro"]
        assert combined.benchmarks == [
            "mmmu_pro_standard4",
            "mmmu_pro_standard10",
            "mmmu_pro_vision",
        ]
        assert combined.weights == "items"
    for name in ("vision_sr1_smoke", "tiny_shapes", "qwen2.5_vl_3b_benchmarks"):
        assert load_experiment(name).report.combined == {}, name
