"""HallusionBench: ``lmms-lab/HallusionBench`` (the hub now redirects it to
``lmms-lab-encoder/HallusionBench``), config ``default``, split ``image``: 951 yes/no questions
asked with a figure, in ``data/image-00000-of-00001.parquet``. The split ``non_image``
(``data/non_image-00000-of-00001.parquet``, the 178 questions asked with no figure) is not read:
lmms-eval's ``hallusion_bench_image`` and VLMEvalKit's ``HallusionBench`` (951 rows) both skip it.

Raw schema (every field a string, as in the official ``HallusionBench.json`` of
``tianyi-lab/HallusionBench`` the hub split was built from; ``image``: ``datasets.Image``, a
parquet struct ``{bytes, path}``):

- ``category``: ``VD`` (visual dependent) | ``VS`` (visual supplement);
- ``subcategory``: ``illusion``, ``math``, ``video``, ``figure``, ``ocr`` (VD) | ``chart``,
  ``table``, ``map``, ``ocr`` (VS);
- ``visual_input``: ``1`` (original figure) | ``2`` (edited figure); ``0`` (no figure) is the
  ``non_image`` split only;
- ``set_id``, ``figure_id``, ``question_id``: decimal strings; a figure is
  (category, subcategory, set_id, figure_id), a question asked over the figures of a set is
  (category, subcategory, set_id, question_id);
- ``sample_note``: string (unused); ``question``: string; ``gt_answer``: ``"1"`` (yes) |
  ``"0"`` (no); ``gt_answer_details``: the reference sentence lmms-eval's GPT judge reads
  (unused); ``filename``: ``./<category>/<subcategory>/<set_id>_<figure_id>.png`` (unused);
- ``image``: the figure.

Mapping to :class:`vlrl.items.records.Record`:

- ``problem`` = ``question`` as it is: lmms-eval ``hallusion_bench/evaluate_hb.py::
  hb_doc_to_text`` with its default (empty) pre- and post-prompt; VLMEvalKit
  ``ImageBaseDataset.build_prompt`` sends the bare question too (its ``Qwen2VLPromptMixin``
  appends the model-specific ``" Please answer yes or no."``, not kept here);
- ``answer`` = ``"yes"`` / ``"no"`` from ``gt_answer`` ``"1"`` / ``"0"``; ``problem_type`` =
  ``yes_no``;
- ``id`` = ``<category>_<subcategory>_<set_id>_<figure_id>_<question_id>``, the per-question key
  lmms-eval's ``utils.py::get_eval_all`` asserts unique;
- ``task`` = ``<category>_<subcategory>`` (``VD_illusion`` …), VLMEvalKit's ``l2-category``, whose
  prefix is its ``category`` (``VD`` / ``VS``): the two levels ``Hallusion_rating`` reports;
- ``groups``: ``figure`` = ``<category>_<subcategory>_<set_id>_<figure_id>`` (fAcc) and
  ``question`` = ``<category>_<subcategory>_<set_id>_<question_id>`` (qAcc): the keys of
  lmms-eval ``utils.py::get_eval_fig`` / ``get_eval_pair_all`` (VLMEvalKit
  ``vlmeval/dataset/utils/yorn.py::Hallusion_rating`` uses ``<l2-category>_<set_id>_<figure_id>``
  and ``…_<question_id>``, the same partition).

Metrics (both references; values ×100): aAcc = correct questions / 951; fAcc = figures whose
questions are all correct / figures (346); qAcc = question groups all correct / groups (455);
the OpenCompass "overall" is the mean of the three. lmms-eval's ``get_eval_fig`` leaves out VS
rows with ``figure_id`` 0 (the no-figure control), which only the ``non_image`` split holds: a
VS row with figure 0 here is an error, so both references agree on this split.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "hallusionbench"
SPLIT = "image"
#: The image split only; ``non_image-*`` does not match.
PATTERN = "data/image-*.parquet"
CATEGORIES = ("VD", "VS")
ANSWERS = {"1": "yes", "0": "no"}
#: ``visual_input`` of a question asked with its figure (1 original, 2 edited).
VISUAL_INPUTS = ("1", "2")


def text(row: Row, name: str) -> str:
    """A field as the stripped string the references key on (``str(r[name])``); an integer is
    accepted as its decimal string."""
    value = row.field(name)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise row.error(f"field {name!r} must be a string: {value!r}")
    return str(value).strip()


def number(row: Row, name: str) -> str:
    """A ``set_id`` / ``figure_id`` / ``question_id``: a decimal string."""
    value = text(row, name)
    if not value.isdigit():
        raise row.error(f"field {name!r} is {value!r}, not a decimal number")
    return value


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("image", record) for every row of the image split."""
    seen: dict[str, str] = {}
    for row in parquet_rows(source, PATTERN):
        rec = convert_row(row, images)
        if rec.id in seen:
            raise row.error(f"repeats the question {rec.id!r} of {seen[rec.id]}")
        seen[rec.id] = row.where
        yield SPLIT, rec


def convert_row(row: Row, images: ImageStore) -> Record:
    """One HallusionBench row as a canonical record (see the module docstring)."""
    category = text(row, "category")
    if category not in CATEGORIES:
        raise row.error(f"field 'category' is {category!r}, not one of {CATEGORIES}")
    subcategory = text(row, "subcategory")
    if not subcategory.isidentifier():
        raise row.error(f"field 'subcategory' {subcategory!r} is not a plain word")
    set_id, figure_id, question_id = (
        number(row, n) for n in ("set_id", "figure_id", "question_id")
    )
    visual_input = text(row, "visual_input")
    if visual_input not in VISUAL_INPUTS:
        raise row.error(
            f"field 'visual_input' is {visual_input!r}: the image split holds questions asked "
            f"with a figure ({' or '.join(VISUAL_INPUTS)}); 0 belongs to the non_image split"
        )
    if category == "VS" and figure_id == "0":
        raise row.error(
            "is a VS question on figure 0, the no-figure control lmms-eval leaves out of fAcc "
            "(get_eval_fig); it belongs to the non_image split"
        )
    gt_answer = text(row, "gt_answer")
    if gt_answer not in ANSWERS:
        raise row.error(f"field 'gt_answer' is {gt_answer!r}, not '1' (yes) or '0' (no)")
    question = row.field("question")
    if not isinstance(question, str):
        raise row.error(f"field 'question' must be a string: {question!r}")

    figure = f"{category}_{subcategory}_{set_id}_{figure_id}"
    return record(
        row,
        id=f"{figure}_{question_id}",
        images=[images.save(row.field("image"), row, "image")],
        problem=question,
        answer=ANSWERS[gt_answer],
        problem_type="yes_no",
        data_source=DATA_SOURCE,
        task=f"{category}_{subcategory}",
        groups={
            "figure": figure,
            "question": f"{category}_{subcategory}_{set_id}_{question_id}",
        },
    )
