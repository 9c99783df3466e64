"""MMMU-Pro: ``MMMU/MMMU_Pro``, split ``test`` of the configs ``standard (4 options)`` and
``standard (10 options)`` (1,730 rows each, ``standard (… options)/test-*.parquet``) and
``vision`` (the same 1,730 questions as screenshots, ``vision/test-*.parquet``), written as the
splits ``standard_4``, ``standard_10`` and ``vision``. Each config present is converted; the
4-option one is read for papers whose MMMU-Pro is a mean that includes it (Vision-SR1's
``Evaluation/eval_result.py`` ``add_weighted_subset``).

Raw schema (the dataset card's ``dataset_info``):

- ``standard (4 options)`` and ``standard (10 options)``: ``id`` string (``test_History_1``,
  ``validation_Chemistry_12``…), ``question`` string with ``<image N>`` placeholders,
  ``options`` string holding a Python list of up to 4 (or 10) option texts, ``explanation``
  string, ``image_1`` … ``image_7`` image or null, ``img_type`` string, ``answer`` string (the
  gold letter, A-D or A-J), ``topic_difficulty`` string, ``subject`` string;
- ``vision``: ``id`` string, ``image`` image (question and options rendered in it), ``options``
  string (a Python list, added to the config 2024-11-10), ``answer`` string, ``subject`` string.

Mapping to :class:`vlrl.items.records.Record`, ported from lmms-eval
``lmms_eval/tasks/mmmu_pro/utils.py`` (commit 75571cfe; tasks ``mmmu_pro_standard`` and
``mmmu_pro_vision``, ``lmms_eval_specific_kwargs.default``):

- standard (both configs; lmms-eval has no task for the 4-option one, and MMMU-Pro's own
  ``mmmu-pro/infer`` scripts build prompts for the 10-option and vision settings only, so it is
  laid out as the 10-option one): ``problem`` = ``construct_prompt`` without its post-prompt,
  ``f"{question}\\n{parse_options(options)}"`` with ``"A. text"`` lines (lmms-eval then appends
  ``"\\n\\nAnswer with the option letter from the given choices directly."``); ``<image N>``
  placeholders stay in the text; ``images`` = the distinct ``<image N>`` tokens of question +
  options, sorted (``mmmu_pro_doc_to_visual``);
- vision: ``mmmu_pro_doc_to_text`` sends only the task's post-prompt, since the question is in
  the image: ``problem`` = :data:`VISION_PROMPT`; ``images`` = [image]. The options are kept in
  ``options`` for scoring only, never shown as text;
- every split: multiple_choice, ``answer`` = the gold letter (checked against the options),
  ``task`` = ``subject`` (lmms-eval ``mmmu_pro_aggregate_results`` groups by it; the overall
  score is the instance-level accuracy), ``data_source`` = "mmmu_pro", ``id`` = the row's id.

Scoring: lmms-eval ``mmmu_pro_process_results`` parses a letter with MMMU's
``parse_multi_choice_response`` for standard rows, but compares the RAW response with the letter
for vision rows (no parsing); the official ``mmmu-pro/evaluate.py`` parses both settings.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.data.formats.mmmu import gold_letter, parse_options, render_options, save_images
from vlrl.items.records import Record

DATA_SOURCE = "mmmu_pro"
#: Output split → the hub files of its config.
SPLITS = {
    "standard_4": "standard (4 options)/test-*.parquet",
    "standard_10": "standard (10 options)/test-*.parquet",
    "vision": "vision/test-*.parquet",
}
#: The text of lmms-eval's ``mmmu_pro_vision`` (its ``post_prompt``; MMMU-Pro's own
#: ``mmmu-pro/prompts.yaml`` ``direct.vision`` starts with the same sentence).
VISION_PROMPT = "Answer with the option letter from the given choices directly."


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield (split, record) for the rows of each config present under ``source``."""
    present = {split: pattern for split, pattern in SPLITS.items() if any(source.glob(pattern))}
    if not present:
        raise DataError(f"{source}: no file matches any of {sorted(SPLITS.values())}")
    for split, pattern in present.items():
        convert_row = vision_row if split == "vision" else standard_row
        for row in parquet_rows(source, pattern):
            yield split, convert_row(row, images)


def _options(row: Row) -> list[str]:
    options = parse_options(row)
    if not options:
        raise row.error("field 'options' is an empty list")
    return options


def standard_row(row: Row, images: ImageStore) -> Record:
    """A ``standard (4 options)`` or ``standard (10 options)`` row (see the module
    docstring)."""
    options = _options(row)
    problem = f"{row.field('question')}\n{render_options(options)}"
    return record(
        row,
        id=row.field("id"),
        images=save_images(row, problem, images),
        problem=problem,
        answer=gold_letter(row, options),
        problem_type="multiple_choice",
        options=options,
        data_source=DATA_SOURCE,
        task=row.field("subject"),
    )


def vision_row(row: Row, images: ImageStore) -> Record:
    """A ``vision`` row: one screenshot holding question and options."""
    options = _options(row)
    return record(
        row,
        id=row.field("id"),
        images=[images.save(row.field("image"), row, "image")],
        problem=VISION_PROMPT,
        answer=gold_letter(row, options),
        problem_type="multiple_choice",
        options=options,
        data_source=DATA_SOURCE,
        task=row.field("subject"),
    )
