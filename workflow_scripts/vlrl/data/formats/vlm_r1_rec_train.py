"""VLM-R1's REC training data, read as the ``omlab/VLM-R1`` hub dataset stores it: RefCOCO,
RefCOCO+ and RefCOCOg train (``refcoco_train.jsonl``, ``refcocop_train.jsonl``,
``refcocog_train.jsonl`` inside ``rec_jsons_processed.zip``, the archive that also holds the val
files :mod:`vlrl.data.formats.vlm_r1_rec` reads) over the COCO train2014 pictures of
``train2014.zip``. One grounding record per row.

What VLM-R1 trains on: ``om-ai-lab/VLM-R1`` at HEAD ``90052f478646e38bc67363862f699b7afca6b337``,
``run_scripts/run_grpo_rec.sh`` lines 5-6 pass ``--data_file_paths``
``.../rec_jsonsl_train/refcoco_train.jsonl:.../refcocop_train.jsonl:.../refcocog_train.jsonl``
and ``--image_folders`` ``/training/shz/dataset/coco`` (three times) to
``src/open-r1-multimodal/src/open_r1/grpo_jsonl.py`` (``--task_type rec``, with the REC rewards
of ``vlm_modules/qwen_module.py``). Its README ("Referring Expression Comprehension", commits
``5d29631`` / ``15d87c4``, 2025-04-16): "These jsonl files are included in the annotation files"
(``rec_jsons_processed.zip``) and "please use jsonl files instead of json files" (the zip's older
``*_train.json`` lists, read by the retired ``grpo_rec.py`` through ``data_config/rec.yaml``,
are not read here). The hub's member list could not be read here: members are found by file
name, wherever they lie, as :func:`vlrl.data.formats.vlm_r1_rec.read_member` does.

Row: the conversation jsonl of :mod:`vlrl.data.formats.vlm_r1_jsonl` (``id``, ``image``,
``conversations`` human / gpt). ``image`` is a path under the COCO folder
(``train2014/COCO_train2014_<id>.jpg``, found in ``train2014.zip`` as
:class:`vlrl.data.formats.vlm_r1_rec.ImageArchive` finds it); the gpt turn is the box, which
``qwen_module.py`` ``iou_reward`` reads with ``json.loads`` as ``[x1, y1, x2, y2]`` in pixels of
the original picture (a JSON string of it, or the list itself: ``grpo_jsonl.py`` ``str()``-s a
non-string value). No released line of these files could be read here: the field names are
``grpo_jsonl.py``'s, the box is what ``iou_reward`` needs.

Row counts. Each file must hold the rows (non-blank lines) of its standard split, checked before
any picture is read: RefCOCO (UNC) train 120,624 (the FlagEval RefCOCO page: train 120,624 /
validation 10,834 / testA 5,657 / testB 5,095); RefCOCO+ (UNC) train 120,191, its 141,564
expressions (Yu et al. 2016, as codesota.com's RefCOCO page sums them) less val 10,758, testA
5,726 and testB 4,889 (the Ref-L4 card :mod:`vlrl.data.formats.vlm_r1_rec` cites); RefCOCOg (UMD)
train 80,512, the UMD split's train size (Nagaraja et al. 2016; no page read here states it).
321,327 in all. That the released files hold exactly these is not verified: a file of another
size fails naming itself, the count expected and the count found.

Mapping to :class:`vlrl.items.records.Record`, one per row, in the file's order: ``id`` =
``<split>-<line number, from 0>``; ``problem`` = the human turn with ``<image>`` removed (not
stripped: ``grpo_jsonl.py`` does not); ``boxes`` = ``[the gpt box]``, clamped to the picture
when it leaves it by at most :data:`vlrl.data.formats.refcoco.EDGE_TOLERANCE` px; ``answer`` =
:func:`vlrl.items.answers.dumps_box`; ``problem_type`` = ``grounding``; ``image_sizes`` = the
picture's; ``task`` = the split (the file's stem: ``refcoco_train``, ``refcocop_train``,
``refcocog_train``, also the records file name);
``data_source`` = ``refcoco``. A row's ``accu_reward_method``, if any, only has to be one VLM-R1
knows: the REC rewards come from the VLM module. A malformed row (not JSON, no picture, a box
that is not four numbers or leaves the picture, an empty turn) is yielded as an error naming its
file, line and id, and the dataset's ``bad_rows`` decides.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

from vlrl.data.formats import ImageStore, Row, RowError, record
from vlrl.data.formats.vlm_r1_jsonl import (
    Pictures,
    convert_rows,
    finite_box,
    fitted_box,
    jsonl_lines,
    read_sample,
    rows,
)
from vlrl.data.formats.vlm_r1_rec import (
    ANNOTATIONS,
    IMAGE_ARCHIVES,
    ImageArchive,
    check_rows,
    find_archive,
    read_member,
)
from vlrl.items.answers import dumps_box
from vlrl.items.records import Record

DATA_SOURCE = "refcoco"
#: Split → member file name of :data:`vlrl.data.formats.vlm_r1_rec.ANNOTATIONS`.
FILES = {
    "refcoco_train": "refcoco_train.jsonl",
    "refcocop_train": "refcocop_train.jsonl",
    "refcocog_train": "refcocog_train.jsonl",
}
#: Member → the rows it must hold (one per expression of the standard split; module docstring).
ROWS = {
    "refcoco_train.jsonl": 120_624,
    "refcocop_train.jsonl": 120_191,
    "refcocog_train.jsonl": 80_512,
}
#: Member → what it is, for the row-count error.
ABOUT = {
    "refcoco_train.jsonl": "RefCOCO (UNC) train",
    "refcocop_train.jsonl": "RefCOCO+ (UNC) train",
    "refcocog_train.jsonl": "RefCOCOg (UMD) train",
}


def convert(
    source: Path, images: ImageStore, expected_rows: Mapping[str, int] | None = None
) -> Iterator[tuple[str, Record | RowError]]:
    """Yield (split, record) for every row of the three train files, each in its file's order (a
    row that cannot be converted as its error). ``expected_rows`` (the dataset config's
    ``expected_rows``, member → rows) replaces the released counts of :data:`ROWS`: a fixture
    in the released layout, or a later release."""
    counts = {**ROWS, **(expected_rows or {})}
    loaded = []
    for split, name in FILES.items():
        label, data = read_member(source / ANNOTATIONS, name)
        lines = jsonl_lines(label, data)
        check_rows(label, lines, counts[name], ABOUT[name])
        loaded.append((split, label, lines))
    archive = ImageArchive(find_archive(source, IMAGE_ARCHIVES))
    try:
        for split, label, lines in loaded:
            one = functools.partial(convert_row, split=split, images=images, pictures=archive)
            yield from convert_rows(split, rows(label, lines), one)
    finally:
        archive.close()


def convert_row(row: Row, split: str, images: ImageStore, pictures: Pictures) -> Record:
    """One REC training row as a canonical grounding record (module docstring)."""
    sample = read_sample(row, box_list=True)
    if len(sample.images) != 1:
        raise row.error(f"a REC row needs exactly one image, not {len(sample.images)}")
    box = finite_box(row, _box_value(row, sample.solution), "the gpt box")
    rel, width, height = pictures.save(sample.images[0], row, images)
    fitted = fitted_box(row, box, (width, height), "the gpt box")
    return record(
        row,
        id=f"{split}-{row.index}",
        images=[rel],
        image_sizes=[[width, height]],
        problem=sample.problem,
        answer=dumps_box(fitted),
        problem_type="grounding",
        boxes=[fitted],
        data_source=DATA_SOURCE,
        task=split,
    )


def _box_value(row: Row, solution: object) -> object:
    # iou_reward: ``json.loads(sol.strip())`` of the solution string.
    if not isinstance(solution, str):
        return solution
    try:
        return json.loads(solution)
    except json.JSONDecodeError:
        raise row.error(f"the gpt turn is not a JSON box [x1, y1, x2, y2]: {solution!r}") from None
