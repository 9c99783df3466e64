"""The papers' own evaluation code, where it is not a toolkit's.

- ``vlm_r1_rec``: VLM-R1's REC evaluation (om-ai-lab/VLM-R1@90052f4 ``src/eval/
  test_rec_r1.py``): the first ``<answer>``, its ``{…[x1, y1, x2, y2]…}`` box (else
  ``[0, 0, 0, 0]``), rescaled from the model-input frame, correct iff IoU > the threshold
  (:func:`vlrl.scoring.grounding.vlm_r1_rec`);
- ``vlm_r1_rec_baseline``: the script that scored VLM-R1's SFT and base models (its Table 2 SFT
  rows; om-ai-lab/VLM-R1@90052f4 ``src/eval/test_rec_baseline.py``): the first ``[a, b, c, d]``
  of signed decimals anywhere in the output (else ``[0, 0, 0, 0]``), rescaled the same way,
  correct iff IoU > the threshold (:func:`vlrl.scoring.grounding.vlm_r1_rec_baseline`);
- ``vlm_r1_od``: VLM-R1's OVD evaluation (om-ai-lab/VLM-R1@90052f4 ``src/eval/test_od_r1.py``):
  the first ```` ```json ``` ```` block's ``[0]["bbox_2d"]`` (else ``[0, 0, 0, 0]``), not
  rescaled, correct iff IoU > the threshold (:func:`vlrl.scoring.grounding.vlm_r1_od`);
- ``vision_sr1``: Vision-SR1's evaluation (zli12321/Vision-SR1@4480e08 ``Evaluation/``):
  MathRuler ``grade_answer`` on the last ``\\boxed{}``, and the judge (Gemini there) on what
  that rule marks wrong when the experiment has one (:func:`vlrl.scoring.maths.vision_sr1`);
- ``olympiadbench_satori``: OlympiadBench's ``MathJudger`` as SATORI-R1's VLMEvalKit fork ran
  it (justairr/SATORI-R1@8857b30 ``VLMEvalKit/vlmeval/dataset/utils/olympiadbench.py``;
  :mod:`vlrl.scoring.olympiad`).
"""

from __future__ import annotations

from vlrl.scoring import grounding, maths
from vlrl.scoring.protocols.base import ScoringProtocol

PROTOCOLS = (
    ScoringProtocol(
        name="vlm_r1_rec",
        title="VLM-R1 REC evaluation",
        source="om-ai-lab/VLM-R1@90052f4 src/eval/test_rec_r1.py",
        judge="none",
        covers=frozenset({"grounding"}),
        match=grounding.vlm_r1_rec,
    ),
    ScoringProtocol(
        name="vlm_r1_rec_baseline",
        title="VLM-R1 REC evaluation of SFT and base models (box anywhere)",
        source="om-ai-lab/VLM-R1@90052f4 src/eval/test_rec_baseline.py",
        judge="none",
        covers=frozenset({"grounding"}),
        match=grounding.vlm_r1_rec_baseline,
    ),
    ScoringProtocol(
        name="vlm_r1_od",
        title="VLM-R1 OVD evaluation (first json block, no rescale)",
        source="om-ai-lab/VLM-R1@90052f4 src/eval/test_od_r1.py",
        judge="none",
        covers=frozenset({"grounding"}),
        match=grounding.vlm_r1_od,
    ),
    ScoringProtocol(
        name="vision_sr1",
        title="Vision-SR1 evaluation (rule, then judge on failures)",
        source="zli12321/Vision-SR1@4480e08 Evaluation/ (LLM_eval.py, eval_result.py)",
        judge="optional",
        covers=frozenset({"multiple_choice", "yes_no", "numerical", "free_form", "ocr"}),
        match=maths.vision_sr1,
    ),
    ScoringProtocol(
        name="olympiadbench_satori",
        title="OlympiadBench MathJudger as SATORI-R1's VLMEvalKit fork ran it",
        source="justairr/SATORI-R1@8857b30 VLMEvalKit/vlmeval/dataset/utils/olympiadbench.py",
        judge="none",
        covers=frozenset({"numerical", "free_form"}),
        match=maths.olympiad_satori,
    ),
)
