"""VLMEvalKit's rule-based scoring (github.com/open-compass/VLMEvalKit), in two versions:

- ``vlmevalkit_2505``: as of c026693a, the parent of c3371551 (2025-08-04): the matching in force
  when SophiaVL-R1's and SATORI-R1's tables were scored (May 2025; SATORI-R1's fork,
  justairr/SATORI-R1 @ 8857b30, vendors the same functions);
- ``vlmevalkit_2608``: as of e8e78f05 (Aug 2026): ``can_infer`` with the last-words window and
  the option-text length limit (c3371551) and "the answer is X" (a67ace50); ChartQA's relaxed
  accuracy relative to the gold.

DynaMath (``family: dynamath``) by its own rule (``vlmeval/dataset/dynamath.py``, the same in
both: :mod:`vlrl.scoring.dynamath`). Per problem type: multiple choice by ``can_infer``
(:mod:`vlrl.scoring.choice`); yes/no by ``YOrN_Extraction`` (``vlmeval/dataset/utils/yorn.py``,
the same in both); ChartQA (``relaxed_tolerance``) by its relaxed accuracy (``vqa_eval.py``);
MathVista (``family: mathvista``) by ``mathvista.py::post_check`` (typed equality of the whole
answer, no rounding); other numbers and expressions by equality of value (MATH-Vision's
``mathv.py::is_equal``: string, number, latex2sympy; here Math-Verify); grounding by IoU ≥ the
threshold.

- ``vlmevalkit_logicvista``: LogicVista as VLMEvalKit scores it (``vlmeval/dataset/image_vqa.py::
  LogicVista``, ``vlmeval/dataset/utils/logicvista.py`` at e8e78f05, which has no exact-matching
  mode: without a judge it scores nothing): the judge extracts the letters every answer chose
  (the benchmark's ``judge.prompt: logicvista``, :data:`vlrl.scoring.judge_prompts.
  LOGICVISTA_EXTRACTOR`) and an item is right when they are the answer's.

The first two are VLMEvalKit's *exact matching* mode: where VLMEvalKit would ask a GPT model to
extract an option letter or an answer, nothing is asked (judge ``none``) and the rule's miss is
wrong; ``score.judge.benchmarks`` can add a judge for a benchmark. The answer span
(:func:`vlrl.scoring.rules.answer_span`: the last ``<answer>``, reasoning stripped) is what the
rules read, as VLMEvalKit's R1-model wrappers pass it (``VLMR1Chat``; SATORI-R1's Qwen2-VL
wrapper keeps the first single-line ``<answer>``).
"""

from __future__ import annotations

from collections.abc import Callable

from vlrl.items.answers import normalize_text
from vlrl.scoring import choice, maths
from vlrl.scoring.candidate import Candidate, Verdict, verdict
from vlrl.scoring.dynamath import dynamath_vlmevalkit
from vlrl.scoring.protocols.base import ScoringProtocol
from vlrl.scoring.protocols.vlrl import match as vlrl_match
from vlrl.scoring.rules import answer_span, yes_or_no

COVERS = frozenset({"multiple_choice", "yes_no", "numerical", "free_form", "ocr", "grounding"})


def _yes_no(candidate: Candidate) -> Verdict:
    span = answer_span(candidate.response)
    word = yes_or_no(span)
    golds = {normalize_text(gold) for gold in candidate.golds}
    return verdict(span or None, word is not None and word in golds)


def _matcher(
    read_choice: Callable[[Candidate], Verdict],
    mathvista: Callable[[Candidate], Verdict],
    relaxed: Callable[[Candidate], Verdict],
) -> Callable[[Candidate], Verdict]:
    def match(candidate: Candidate) -> Verdict:
        kind = candidate.problem_type
        if candidate.family == "dynamath":
            return dynamath_vlmevalkit(candidate)
        if candidate.family == "mathvista" and kind != "yes_no":
            return mathvista(candidate)
        if kind == "multiple_choice":
            return read_choice(candidate)
        if kind == "yes_no":
            return _yes_no(candidate)
        if candidate.relaxed_tolerance is not None and kind in {"numerical", "free_form", "ocr"}:
            return relaxed(candidate)
        if kind in {"numerical", "free_form", "ocr"}:  # is_equal: equality of value
            return maths.equivalent_match(candidate)
        return vlrl_match(candidate)  # grounding: IoU ≥ the threshold

    return match


PROTOCOLS = (
    ScoringProtocol(
        name="vlmevalkit_2505",
        title="VLMEvalKit as of May 2025 (exact matching)",
        source="open-compass/VLMEvalKit@c026693a vlmeval/utils/matching_util.py, "
        "vlmeval/dataset/utils/{yorn,mathvista,vqa_eval,mathv}.py, vlmeval/dataset/dynamath.py",
        judge="none",
        covers=COVERS,
        match=_matcher(
            choice.vlmevalkit_2505, maths.mathvista_vlmevalkit, maths.relaxed_vlmevalkit
        ),
    ),
    ScoringProtocol(
        name="vlmevalkit_2608",
        title="VLMEvalKit as of Aug 2026 (exact matching)",
        source="open-compass/VLMEvalKit@e8e78f05 vlmeval/utils/matching_util.py, "
        "vlmeval/dataset/utils/{yorn,mathvista,vqa_eval,mathv}.py, vlmeval/dataset/dynamath.py",
        judge="none",
        covers=COVERS,
        match=_matcher(
            choice.vlmevalkit_2608, maths.mathvista_vlmevalkit_2608, maths.relaxed_chartqa
        ),
    ),
    # The rules' verdict is only the starting point the judge replaces on every item.
    ScoringProtocol(
        name="vlmevalkit_logicvista",
        title="VLMEvalKit's LogicVista (GPT letter extraction)",
        source="open-compass/VLMEvalKit@e8e78f05 vlmeval/dataset/utils/logicvista.py, "
        "vlmeval/dataset/image_vqa.py (LogicVista)",
        judge="always",
        covers=frozenset({"free_form"}),
        match=vlrl_match,
    ),
)
