"""MMBench v1.0 dev EN with CircularEval: ``lmms-lab/MMBench`` (the hub now redirects it to
``lmms-lab-encoder/MMBench``, the id lmms-eval's ``mmbench_en_dev`` uses at HEAD), config ``en``,
split ``dev``: 4,329 rows in ``en/dev-00000-of-00001.parquet`` = the 1,164 dev questions and
their CircularEval copies. The ``test`` split (answers withheld) and the ``cn`` / ``cc`` configs
are not read.

Raw schema (the dataset card's ``dataset_info`` for config ``en``; the columns and the 4,329
rows of VLMEvalKit's ``MMBench_DEV_EN.tsv``):

- ``index``: the question's number. A question with N options is asked N times with its options
  rotated: the original has ``index`` < 1,000,000, its copies ``index + k * 1,000,000``
  (k = 1 .. N-1), so ``index % 1e6`` names the question. The card of ``en`` at ac155b9 (before
  ``en/`` was uploaded again in 2678eaa) declares it ``string``; the cards of ``cn`` and of
  ``lmms-lab/MMBench_EN`` declare ``int64``, and lmms-eval's ``eval_result`` compares it with
  1e6 and takes it modulo 1e6 as a number: both an integer and a decimal string are read;
- ``question``: string; ``hint``: string, the context some questions come with; a question
  without one has null or the string ``"nan"`` (what ``str()`` made of the TSV's NaN, which
  lmms-eval's ``mmbench_doc_to_text`` tests for);
- ``A`` .. ``D``: strings, the options in order; a 2- or 3-option question has null (or
  ``"nan"``) in the last columns;
- ``answer``: the correct option's letter (in a copy, the letter after the rotation);
- ``category``: string, one of the 20 leaf abilities (``image_scene``, ``ocr`` ...);
  ``L2-category``: string, one of the six abilities above them (``coarse_perception``,
  ``finegrained_perception (instance-level)``, ``finegrained_perception (cross-instance)``,
  ``logic_reasoning``, ``relation_reasoning``, ``attribute_reasoning``);
- ``image``: image (parquet struct ``{bytes, path}``); ``source``, ``comment``, ``split``:
  strings (unused).

Mapping to :class:`vlrl.items.records.Record`, ported from VLMEvalKit
``vlmeval/dataset/image_mcq.py::ImageMCQDataset.build_prompt`` and
``vlmeval/dataset/utils/multiple_choice.py::mcq_circular_eval`` / ``report_acc`` (commit
e8e78f05), the MMBench authors' toolkit (SophiaVL-R1 and SATORI-R1 report VLMEvalKit numbers):

- ``problem`` = :func:`build_prompt`: ``"Hint: {hint}\\n"`` (only with a hint), ``"Question:
  {question}\\n"``, ``"Options:\\n"``, one ``"{letter}. {text}\\n"`` per option, then
  ``"Please select the correct answer from the options above."`` (VLMEvalKit's sentence for
  every model, not a model-specific post-prompt; its trailing ``" \\n"`` is dropped, the prompt
  format's instruction follows). lmms-eval ``tasks/mmbench/en_utils.py::mmbench_doc_to_text``
  (commit 75571cfe) lays the same parts out as ``f"{hint} {question} There are several
  options:\\nA. ..."`` and appends its post-prompt "Answer with the option's letter from the
  given choices directly.";
- ``options`` = the option texts A, B, ... (a column is an option unless null or ``"nan"``, as
  VLMEvalKit's ``pd.isna`` and lmms-eval's ``!= "nan"``); ``answer`` = the letter;
  ``problem_type`` = ``multiple_choice``;
- ``id`` = ``index``; ``groups["circular"]`` = ``index % 1e6`` (VLMEvalKit's ``g_index``, the
  key lmms-eval's ``eval_result`` groups by); ``groups["category"]`` = ``category``;
  ``task`` = ``L2-category`` (``report_acc`` reports per ``l2-category`` and per ``category``);
  ``images`` = [image]; ``data_source`` = "mmbench".

Every copy's original must be in the file (an orphan copy would be a group of its own), and a
copy's correct option must be the original's correct option text: both are errors naming the row.

Metric: CircularEval, the share of the 1,164 questions whose every rotation is answered right
(``all_correct`` over ``groups.circular``); per-row accuracy over all 4,329 rows is VLMEvalKit's
"vanilla_all" diagnostic. The references read the option from a response by rule
(``can_infer``: one option letter among the last tokens, or the one option text contained in it)
and ask a GPT judge only when that fails (3 tries, then a random letter); a rotation already
read wrong by rule fails its question without the judge.
"""

from __future__ import annotations

import math
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "mmbench"
SPLIT = "dev"
PATTERN = "en/dev-*.parquet"
#: A copy's ``index`` is its question's plus a multiple of this (VLMEvalKit ``int(x % 1e6)``).
CIRCULAR_OFFSET = 1_000_000
LETTERS = string.ascii_uppercase
#: The last line of VLMEvalKit's ``ImageMCQDataset.build_prompt`` (without its trailing " \n").
SELECT_PROMPT = "Please select the correct answer from the options above."


def absent(value: Any) -> bool:
    """Whether a hint or option cell holds nothing: null, NaN, blank or the string ``"nan"``.

    >>> [absent(v) for v in (None, float("nan"), " ", "nan", "Nan", "0")]
    [True, True, True, True, False, False]
    """
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return isinstance(value, str) and value.strip() in ("", "nan")


def build_prompt(question: str, hint: str | None, options: list[str]) -> str:
    """The question as VLMEvalKit's ``ImageMCQDataset.build_prompt`` sends it (see the module
    docstring).

    >>> print(build_prompt("Which animal is it?", "A farm.", ["cat", "cow"]))
    Hint: A farm.
    Question: Which animal is it?
    Options:
    A. cat
    B. cow
    Please select the correct answer from the options above.
    """
    lines = [f"Hint: {hint}"] if hint is not None else []
    lines += [f"Question: {question}", "Options:"]
    lines += [f"{LETTERS[i]}. {option}" for i, option in enumerate(options)]
    lines.append(SELECT_PROMPT)
    return "\n".join(lines)


def options_of(row: Row) -> list[str]:
    """The option texts of columns A, B, ... in order; a given option after an empty one, fewer
    than two options or a non-string option is an error naming the column."""
    cells = [(letter, row.data[letter]) for letter in LETTERS if letter in row.data]
    options: list[str] = []
    for letter, value in cells:
        if absent(value):
            continue
        if len(options) != LETTERS.index(letter):
            missing = LETTERS[len(options)]
            raise row.error(f"option {letter!r} is given but option {missing!r} is empty")
        if not isinstance(value, str):
            raise row.error(f"field {letter!r} must be a string: {value!r}")
        options.append(value)
    if len(options) < 2:
        raise row.error(f"has {len(options)} options in columns A-D; a question needs 2 or more")
    return options


def hint_of(row: Row) -> str | None:
    """The hint, or None when the row has none (null, blank or ``"nan"``)."""
    value = row.field("hint", allow_empty=True)
    if absent(value):
        return None
    if not isinstance(value, str):
        raise row.error(f"field 'hint' must be a string: {value!r}")
    return value


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("dev", record) for every row of ``en/dev-*.parquet``, after checking that every
    circular copy belongs to an original row of the file."""
    converted: list[tuple[Row, int, Record]] = []
    seen: dict[int, tuple[Row, Record]] = {}
    for row in parquet_rows(source, PATTERN):
        index = row.natural("index")
        if index in seen:
            raise row.error(f"repeats index {index} of {seen[index][0].where}")
        rec = convert_row(row, images, index)
        seen[index] = (row, rec)
        converted.append((row, index, rec))
    for row, index, rec in converted:
        if index >= CIRCULAR_OFFSET:
            check_copy(row, index, rec, seen)
    for _, _, rec in converted:
        yield SPLIT, rec


def check_copy(row: Row, index: int, rec: Record, originals: dict[int, tuple[Row, Record]]) -> None:
    """A circular copy needs its original in the file, with the same correct option text."""
    base = index % CIRCULAR_OFFSET
    if base not in originals:
        raise row.error(
            f"is circular copy {index} of question {base}, which is not in the file "
            "(CircularEval groups the rows by index % 1e6)"
        )
    original_row, original = originals[base]

    def correct(r: Record) -> str:
        return r.options[LETTERS.index(r.answer)].strip()

    if correct(rec) != correct(original):
        raise row.error(
            f"is circular copy {index} with correct option {correct(rec)!r}, but its original "
            f"({original_row.where}) has {correct(original)!r}"
        )


def convert_row(row: Row, images: ImageStore, index: int) -> Record:
    """One MMBench row as a canonical record (see the module docstring)."""
    options = options_of(row)
    answer = row.text("answer", strip=False).strip()
    letters = LETTERS[: len(options)]
    if len(answer) != 1 or answer not in letters:
        raise row.error(f"field 'answer' is {answer!r}, not one of its option letters {letters}")
    return record(
        row,
        id=str(index),
        images=[images.save(row.field("image"), row, "image")],
        problem=build_prompt(row.text("question", strip=False), hint_of(row), options),
        answer=answer,
        problem_type="multiple_choice",
        options=options,
        data_source=DATA_SOURCE,
        task=row.text("L2-category", strip=False).strip(),
        groups={
            "circular": str(index % CIRCULAR_OFFSET),
            "category": row.text("category", strip=False).strip(),
        },
    )
