"""The benchmark authors' own scorers.

- ``mathvista_official``: lupantech/MathVista ``evaluation/calculate_score.py``
  (``normalize_extracted_answer``, ``safe_equal``): a float rounded to the row's precision, an
  option by its letter or the nearest text; the authors' GPT extraction step is the answer span
  here (:func:`vlrl.scoring.maths.mathvista_official`);
- ``mmmu_official``: MMMU-Benchmark/MMMU ``mmmu/utils/eval_utils.py`` (``parse_multi_choice_
  response``, ``parse_open_response``, ``eval_open``), every accepted answer kept
  (:func:`vlrl.scoring.mmmu.official`);
- ``chartqa_official``: ChartQA's relaxed accuracy relative to the gold (google-research/
  pix2struct ``pix2struct/metrics.py``, as lmms-eval ``tasks/chartqa/utils.py`` at 75571cfe);
- ``mmvet_official``: MM-Vet's GPT grader on every item (yuweihao/MM-Vet ``mm-vet_evaluator.py``;
  the benchmark names the prompt, ``judge.prompt: mmvet``): the rules' verdict is only the
  starting point the judge replaces.
"""

from __future__ import annotations

from vlrl.scoring import maths, mmmu
from vlrl.scoring.candidate import Candidate, Verdict
from vlrl.scoring.protocols.base import ScoringProtocol
from vlrl.scoring.protocols.vlrl import match as vlrl_match
from vlrl.scoring.rules import TYPES


def _chartqa(candidate: Candidate) -> Verdict:
    if candidate.problem_type in {"numerical", "free_form", "ocr"}:
        return maths.relaxed_chartqa(candidate)
    return vlrl_match(candidate)


PROTOCOLS = (
    ScoringProtocol(
        name="mathvista_official",
        title="MathVista authors' calculate_score.py",
        source="lupantech/MathVista evaluation/calculate_score.py",
        judge="none",
        covers=frozenset({"multiple_choice", "numerical", "free_form"}),
        match=maths.mathvista_official,
    ),
    ScoringProtocol(
        name="mmmu_official",
        title="MMMU authors' eval_utils.py",
        source="MMMU-Benchmark/MMMU@bb0b95a9 mmmu/utils/eval_utils.py",
        judge="none",
        covers=frozenset({"multiple_choice", "numerical", "free_form"}),
        match=mmmu.official,
    ),
    ScoringProtocol(
        name="chartqa_official",
        title="ChartQA relaxed accuracy (pix2struct, lmms-eval)",
        source="google-research/pix2struct pix2struct/metrics.py; "
        "EvolvingLMMs-Lab/lmms-eval@75571cfe lmms_eval/tasks/chartqa/utils.py",
        judge="none",
        covers=frozenset({"numerical", "free_form", "ocr", "multiple_choice", "yes_no"}),
        match=_chartqa,
    ),
    ScoringProtocol(
        name="mmvet_official",
        title="MM-Vet's GPT grader",
        source="yuweihao/MM-Vet mm-vet_evaluator.py",
        judge="always",
        covers=TYPES,
        match=vlrl_match,
    ),
)
