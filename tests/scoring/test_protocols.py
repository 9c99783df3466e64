"""Scoring protocols: the registry, what each benchmark supports, and where they differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlrl.benchmarks import load_benchmark
from vlrl.errors import ConfigError
from vlrl.scoring.candidate import Candidate
from vlrl.scoring.protocols import PROTOCOLS, get_protocol, judge_mode

BENCHMARKS = sorted(p.stem for p in Path("config/benchmarks").glob("*.yaml"))


@pytest.mark.parametrize("bench", BENCHMARKS)
def test_every_benchmark_names_known_protocols(bench: str) -> None:
    cfg = load_benchmark(bench)
    assert all(name in PROTOCOLS for name in cfg.protocols), cfg.protocols


def test_every_protocol_cites_its_source_and_is_used() -> None:
    used = {name for bench in BENCHMARKS for name in load_benchmark(bench).protocols}
    for name, protocol in PROTOCOLS.items():
        assert protocol.source and protocol.title, name
        assert name in used, f"{name} is supported by no benchmark"


def test_an_unknown_protocol_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown scoring protocol 'vlmevalkit'; known: .*vlrl"):
        get_protocol("vlmevalkit")


def test_a_rules_only_reference_is_never_judged_unless_asked() -> None:
    """ChartQA, MME, HallusionBench, MATH-Vision, MMBench: their references are rules (an LLM at
    most extracts the letter), so a semantic judge would change the protocol."""
    for bench in ("chartqa", "mme", "hallusionbench", "mathvision_test", "mmbench_en_dev"):
        protocol = get_protocol(load_benchmark(bench).protocol)
        assert judge_mode(protocol, bench, "fallback", {}) is None, bench
        assert judge_mode(protocol, bench, "fallback", {bench: "always"}) == "always"
    mmvet = get_protocol(load_benchmark("mmvet").protocol)
    assert judge_mode(mmvet, "mmvet", "fallback", {}) == "always"
    assert judge_mode(mmvet, "mmvet", None, {}) is None  # no judge: the stage refuses (test_score)


# protocol, candidate, correct
CASES = [
    # MathVista: the authors round a float to the row's precision; VLMEvalKit does not
    ("mathvista_official", Candidate("<answer>1.449</answer>", "1.45", "numerical",
                                     precision=2), 1),
    ("vlmevalkit_2505", Candidate("<answer>1.449</answer>", "1.45", "numerical", precision=2,
                                  family="mathvista"), 0),
    # ChartQA's 5%: of the gold (pix2struct, lmms-eval) or of the prediction (VLMEvalKit 2505)
    ("chartqa_official", Candidate("<answer>95.1</answer>", "100", "numerical",
                                   relaxed_tolerance=0.05), 1),
    ("vlmevalkit_2505", Candidate("<answer>95.1</answer>", "100", "numerical",
                                  relaxed_tolerance=0.05), 0),
    # a letter in prose: the 2025 rule reads it anywhere, the 2026 one only among the last words
    ("vlmevalkit_2505", Candidate("<answer>B is right because the figure shows two red circles "
                                  "on the left</answer>", "B", "multiple_choice",
                                  ("red", "blue", "green")), 1),
    ("vlmevalkit_2608", Candidate("<answer>B is right because the figure shows two red circles "
                                  "on the left</answer>", "B", "multiple_choice",
                                  ("red", "blue", "green")), 0),
    # a gold letter is used as it is, even when an option's text is a letter
    ("vlrl", Candidate("<answer>B</answer>", "B", "multiple_choice", ("B", "A")), 1),
    # a repeated choice text: either letter is right
    ("vlrl", Candidate("<answer>C</answer>", "A", "multiple_choice", ("7", "8", "7"),
                       accepted=("C",)), 1),
    # equivalent LaTeX in free form; prose stays text
    ("vlrl", Candidate("<answer>$2n+1$</answer>", "2 n+1", "free_form"), 1),
    ("vlrl", Candidate("<answer>\\frac{\\sqrt{3}}{2}</answer>", "$\\frac{\\sqrt 3}{2}$",
                       "free_form"), 1),
    ("vlrl", Candidate("<answer>3 blue circles</answer>", "3 red circles", "free_form"), 0),
    # MMMU: every accepted answer of a list gold
    ("mmmu_official", Candidate("<answer>3.429</answer>", "24/7", "free_form",
                                accepted=("3.429",)), 1),
    # VLM-R1: the first <answer>, and IoU > 0.5 strictly
    ("vlm_r1_rec", Candidate('<answer>{"bbox_2d": [0, 0, 10, 5]}</answer><answer>[0, 0, 10, 20]'
                             "</answer>", "", "grounding", boxes=((0, 0, 10, 20),)), 0),
    ("vlrl", Candidate('<answer>{"bbox_2d": [0, 0, 10, 5]}</answer><answer>[0, 0, 10, 20]'
                       "</answer>", "", "grounding", boxes=((0, 0, 10, 20),)), 1),
]  # fmt: skip


@pytest.mark.parametrize(("name", "candidate", "correct"), CASES)
def test_protocols_differ_where_their_references_do(name, candidate, correct) -> None:
    assert get_protocol(name).score(candidate).correct == correct


def test_a_protocol_refuses_a_problem_type_it_has_no_rule_for() -> None:
    with pytest.raises(ValueError, match=r"protocol 'vlm_r1_rec' has no rule for .*numerical"):
        get_protocol("vlm_r1_rec").score(Candidate("<answer>3</answer>", "3", "numerical"))
