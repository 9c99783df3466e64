"""MMMU validation: ``MMMU/MMMU``, the ``validation`` split of its 30 per-subject configs (30 rows
each, 900 in all), one parquet per subject: ``<Subject>/validation-00000-of-00001.parquet``. The
same rows in ``lmms-lab/MMMU`` (the dataset of lmms-eval's ``mmmu_val`` until 2026-07, now its
copy ``lmms-lab-encoder/MMMU``) sit in ``data/validation-*.parquet``; both layouts are read.

Raw schema (the dataset card's ``dataset_info``, every config alike):

- ``id``: string, ``validation_<Subject>_<n>`` (e.g. ``validation_Art_Theory_3``);
- ``question``: string with ``<image N>`` placeholders;
- ``options``: string holding a Python list literal, e.g. ``"['$6', '$7', '<image 2>']"``
  (``"[]"`` for open questions);
- ``explanation``: string (unused);
- ``image_1`` … ``image_7``: image (parquet struct ``{bytes, path}``) or null;
- ``img_type``: string (unused); ``topic_difficulty``: string (unused);
- ``answer``: string: the letter for multiple-choice; for open questions the answer text, or a
  stringified list of accepted answers (``"['24/7', '3.429']"``: 3 validation rows);
- ``question_type``: "multiple-choice" | "open";
- ``subfield``: string (unused).

Mapping to :class:`vlrl.items.records.Record`, ported from lmms-eval
``lmms_eval/tasks/mmmu/utils.py``
(commit 75571cfe; ``mmmu_val``, ``prompt_type: format``, ``interleaved_format: false``):

- ``problem``: ``construct_prompt`` without its post-prompt: multiple-choice
  ``f"{question}\\n{parse_options(options)}"`` with options ``"A. text"`` one a line (then lmms-eval
  appends ``"\\n\\nAnswer with the option's letter from the given choices directly."``); open
  ``question`` (then ``"\\n\\nAnswer the question using a single word or phrase."``). The
  ``<image N>`` placeholders stay in the text, as ``mmmu_doc_to_text`` leaves them;
- ``images``: ``mmmu_doc_to_visual``: the distinct ``<image N>`` tokens of question + options,
  sorted, as ``image_N`` fields (an image field no token references is not sent);
- ``options`` = ``ast.literal_eval(options)``; ``answer`` = the gold letter (multiple_choice);
- open questions: ``numerical`` when the answer is a number by MMMU's ``check_is_number``
  (``float(answer.replace(",", ""))``), else ``free_form``; of a stringified list of accepted
  answers, ``answer`` is the first and ``accepted`` the rest (MMMU's ``eval_open`` accepts any);
- ``task`` = the subject from the id (``extract_subset_name``), the unit of lmms-eval's
  per-subject and per-domain (``DOMAIN_CAT2SUB_CAT``) breakdown.

Scoring (MMMU ``mmmu/utils/eval_utils.py``, ported in :mod:`vlrl.scoring.mmmu`):
multiple-choice is an exact letter match after ``parse_multi_choice_response`` (a random letter
when none is found); open answers match when a number in the response's key parts equals a gold
number, both rounded to 2 decimals, or a lower-cased gold text is a substring of a key part,
every gold of a list counting.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "mmmu"
SPLIT = "validation"
#: ``<Subject>/validation-*.parquet`` (MMMU/MMMU) and ``data/validation-*.parquet`` (lmms-lab).
PATTERN = "*/validation-*.parquet"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
IMAGE_TOKEN = re.compile(r"<image \d+>")
QUESTION_TYPES = ("multiple-choice", "open")


def parse_options(row: Row, field: str = "options") -> list[str]:
    """The option list a row's string field holds (lmms-eval: ``ast.literal_eval``); a string
    that is not a list literal of strings is an error naming the row."""
    raw = row.field(field)
    if not isinstance(raw, str):
        raise row.error(f"field {field!r} must be a string holding a Python list: {raw!r}")
    try:
        options = ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise row.error(f"field {field!r} is not a Python list literal ({exc}): {raw!r}") from None
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise row.error(f"field {field!r} is not a list of strings: {raw!r}")
    if len(options) > len(LETTERS):
        raise row.error(f"field {field!r} has {len(options)} options, more than letters A-Z")
    return options


def render_options(options: list[str]) -> str:
    """lmms-eval's ``parse_options``: one ``"A. text"`` line per option.

    >>> print(render_options(["red", "<image 2>"]))
    A. red
    B. <image 2>
    """
    return "\n".join(f"{LETTERS[i]}. {option}" for i, option in enumerate(options))


def image_fields(text: str) -> list[str]:
    """The image fields a prompt references (lmms-eval ``mmmu_doc_to_visual``): its distinct
    ``<image N>`` tokens as ``image_N``, sorted.

    >>> image_fields("<image 2> or <image 1>? <image 2>")
    ['image_1', 'image_2']
    """
    tokens = {token.strip("<>").replace(" ", "_") for token in IMAGE_TOKEN.findall(text)}
    return sorted(tokens)


def save_images(row: Row, text: str, images: ImageStore) -> list[str]:
    """Store every image ``text`` references; a referenced image that is missing is an error."""
    saved = []
    for field in image_fields(text):
        if field not in row.data:
            raise row.error(f"references <{field.replace('_', ' ')}> but has no field {field!r}")
        value = row.data[field]
        if value is None:
            raise row.error(
                f"field {field!r} is empty but <{field.replace('_', ' ')}> is referenced"
            )
        saved.append(images.save(value, row, field))
    return saved


def gold_letter(row: Row, options: list[str]) -> str:
    """The ``answer`` field as a letter naming one of ``options``."""
    answer = row.field("answer")
    letter = answer.strip() if isinstance(answer, str) else ""
    if len(letter) != 1 or letter not in LETTERS[: len(options)]:
        raise row.error(
            f"field 'answer' {answer!r} is not a letter among the {len(options)} options "
            f"(A-{LETTERS[len(options) - 1]})"
        )
    return letter


def subject_of(row: Row, item_id: str) -> str:
    """lmms-eval ``extract_subset_name``: ``validation_Art_Theory_3`` → ``Art_Theory``."""
    split = item_id.split("_")[0]
    match = re.search(rf"^{re.escape(split)}_(.+?)_\d+$", item_id)
    if not match:
        raise row.error(f"field 'id' {item_id!r} is not <split>_<Subject>_<number>")
    return match.group(1)


def is_number(text: str) -> bool:
    """MMMU ``check_is_number``.

    >>> is_number("7,243,000"), is_number("1/64")
    (True, False)
    """
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def open_answer(row: Row) -> tuple[str, list[str]]:
    """An open question's answer and the other accepted ones: of a stringified list of
    accepted answers, the first and the rest (stripped)."""
    answer = row.field("answer")
    if not isinstance(answer, str):
        raise row.error(f"field 'answer' must be a string: {answer!r}")
    answer = answer.strip()
    if answer.startswith("[") and answer.endswith("]"):
        try:
            accepted = ast.literal_eval(answer)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            accepted = None
        if isinstance(accepted, list):
            if not accepted or not all(isinstance(a, str) and a.strip() for a in accepted):
                raise row.error(f"field 'answer' lists no usable answer: {answer!r}")
            first, *rest = (a.strip() for a in accepted)
            return first, rest
    return answer, []


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("validation", record) for every row of the validation parquet files."""
    for row in parquet_rows(source, PATTERN):
        yield SPLIT, convert_row(row, images)


def convert_row(row: Row, images: ImageStore) -> Record:
    """One MMMU row as a canonical record (see the module docstring)."""
    item_id = row.field("id")
    subject = subject_of(row, item_id)
    folder = Path(row.file).parent.name
    if folder != "data" and folder != subject:
        raise row.error(f"field 'id' {item_id!r} names subject {subject!r}, not {folder!r}")
    question = row.field("question")
    question_type = row.field("question_type")
    if question_type not in QUESTION_TYPES:
        raise row.error(f"field 'question_type' is {question_type!r}, not one of {QUESTION_TYPES}")

    if question_type == "multiple-choice":
        options = parse_options(row)
        if not options:
            raise row.error("field 'options' is an empty list for a multiple-choice question")
        problem = f"{question}\n{render_options(options)}"
        answer = gold_letter(row, options)
        accepted = []
        problem_type = "multiple_choice"
    else:
        options = []
        problem = question
        answer, accepted = open_answer(row)
        problem_type = "numerical" if is_number(answer) else "free_form"

    return record(
        row,
        id=item_id,
        images=save_images(row, problem, images),
        problem=problem,
        answer=answer,
        accepted=accepted,
        problem_type=problem_type,
        options=options,
        data_source=DATA_SOURCE,
        task=subject,
    )
