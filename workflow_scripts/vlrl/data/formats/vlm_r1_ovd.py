"""VLM-R1's open-vocabulary detection (OVD) training data: :mod:`vlrl.data.formats.vlm_r1_jsonl`
rows, every one a detection row, as a file trained with ``--reward_method odLength`` is.

VLM-R1's OVD training set (built from D³, om-ai-lab's Described Object Detection data) was never
released (``om-ai-lab/VLM-R1`` issues #284 "请问有计划开源D3的训练样例吗？" and #301 "ovd data"
ask for it or its construction script; no release, script or hub file followed), so this format
reads user-provided files laid out as :mod:`vlrl.data.formats.vlm_r1_jsonl` says
(``<split>.jsonl`` + ``images/``). The row format is the one a VLM-R1 author posted in issue
#246 (2025-04-28), here wrapped (one line in the file)::

    {"id": 1, "image": "equestrian/006_14295751692.jpg", "conversations": [
      {"from": "human", "value": "Please carefully check the image and detect the following
        objects: ['railings being crossed by horses', ...]. Output the bbox coordinates of
        detected objects in JSON format in <answer></answer>. The bbox coordinate format
        should be: \\n```json\\n[{\\"bbox_2d\\": [x1, y1, x2, y2], \\"label\\":
        \\"object name\\"}]\\n```\\n. If no targets are detected in the image, simply
        respond with \\"None\\"."},
      {"from": "gpt", "value": "```json\\n[{\\"bbox_2d\\": [3, 218, 799, 533],
        \\"label\\": \\"railings being crossed by horses\\"}, ...]\\n```"}]}

Mapping: as :mod:`vlrl.data.formats.vlm_r1_jsonl`, with ``problem_type`` = ``detection`` for
every row and ``answer`` = the gpt turn (answer tags removed, stripped): the text VLM-R1's od
rewards read as the solution (``grpo_jsonl.py`` at ``90052f478646e38bc67363862f699b7afca6b337``,
``od_reward`` / ``odLength_reward`` / ``detection_score``; vlrl's ports,
:mod:`vlrl.rewards.vlm_r1` ``vlm_r1.odlength`` / ``ap`` / ``ap50`` / ``weighted_sum``, read the
``answer`` column the same way). It must be exactly ``None`` or one ```` ```json ```` block
holding a list of ``{"bbox_2d": [x1, y1, x2, y2], "label": str}``, x1 < x2, y1 < y2, in pixels of
the original picture, each inside it (:data:`vlrl.data.formats.refcoco.EDGE_TOLERANCE` px of slack,
clamped in ``boxes``); ``boxes`` = those boxes (``[]`` for ``None``). A row whose
``accu_reward_method`` is not a detection reward is an error.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from vlrl.data.formats import ImageStore, RowError
from vlrl.data.formats.vlm_r1_jsonl import convert_folder
from vlrl.items.records import Record


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record | RowError]]:
    """Yield (split, record) for every row of the folder's jsonl files, each a detection row (a
    row that cannot be converted as its error)."""
    yield from convert_folder(source, images, detection=True)
