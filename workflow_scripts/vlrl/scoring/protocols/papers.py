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
- ``vlm_r1_ovd``: VLM-R1's open-vocabulary detection tables (Tables 3-5; no script released):
  the first ```` ```json ```` block's list of labelled boxes, as ``src/eval/test_od_r1.py``
  reads it, the boxes whose label the item asked about kept; per item VLM-R1's greedy matching
  (``grpo_jsonl.py`` ``detection_score``), and the benchmark's corpus metrics (COCO AP,
  OVDEval's NMS-AP, greedy precision / recall) over every item
  (:mod:`vlrl.scoring.detection`, :mod:`vlrl.scoring.detection_ap`);
- ``vision_sr1``: Vision-SR1's evaluation (zli12321/Vision-SR1@4480e08 ``Evaluation/``):
  MathRuler ``grade_answer`` on the last ``\\boxed{}``, and the judge (Gemini there) on what
  that rule marks wrong when the experiment has one (:func:`vlrl.scoring.maths.vision_sr1`);
- ``olympiadbench_satori``: OlympiadBench's ``MathJudger`` as SATORI-R1's VLMEvalKit fork ran
  it (justairr/SATORI-R1@8857b30 ``VLMEvalKit/vlmeval/dataset/utils/olympiadbench.py``;
  :mod:`vlrl.scoring.olympiad`).
"""

from __future__ import annotations

from vlrl.scoring import detection, grounding, maths
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
        name="vlm_r1_ovd",
        title="VLM-R1 OVD tables (json box list, greedy match; COCO AP / NMS-AP over the set)",
        source="om-ai-lab/VLM-R1@90052f4 src/eval/test_od_r1.py, "
        "src/open-r1-multimodal/src/open_r1/grpo_jsonl.py detection_score; "
        "om-ai-lab/OVDEval@2ba0aa9 eval.py",
        judge="none",
        covers=frozenset({"detection"}),
        match=detection.vlm_r1_ovd,
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
