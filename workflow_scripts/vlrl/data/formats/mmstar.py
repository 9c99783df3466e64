"""MMStar: ``Lin-Chen/MMStar``, split ``val``: 1,500 four-option questions, 250 in each of six
core capabilities, in ``mmstar.parquet`` at the repository root (``MMStar.tsv`` beside it is
VLMEvalKit's copy, not read).

Raw schema (the dataset card's ``dataset_info``, commit a9beb09 "init"):

- ``index``: int64, 0..1499;
- ``question``: string: the question with its options written into it, in one of two layouts
  (those public MMStar loaders parse; the file itself could not be read here):
  ``"...?\\nOptions: A: text, B: text, C: text, D: text"`` (most rows), or MathVista's
  ``"Hint: ...\\nQuestion: ...\\nChoices:\\n(A) text\\n(B) text..."`` (``(A)`` lines, some
  without the ``Choices:`` line). One loader notes two rows whose option A is written ``"nan"``:
  such texts are kept as written (the model reads them so);
- ``image``: the picture. The card declares ``image``; the file is read as raw image bytes by
  public loaders (a ``{bytes, path}`` struct is accepted too);
- ``answer``: string, the correct option's letter;
- ``category``: string, one of the six capabilities (:data:`CATEGORIES`);
  ``l2_category``: string, one of 18 sub-capabilities, three per category
  ("image scene and topic", "object counting", ...);
- ``meta_info``: struct ``{source, split, image_path}``, where the question was taken from
  (unused).

Mapping to :class:`vlrl.items.records.Record`, ported from lmms-eval
``lmms_eval/tasks/mmstar/utils.py::mmstar_doc_to_text`` (commit 75571cfe, task ``mmstar``):

- ``problem`` = ``question.strip()`` with " Please answer yes or no." removed, which
  ``mmstar_doc_to_text`` does whenever a post-prompt is set (its default is "\\nAnswer with the
  option's letter from the given choices directly", model-specific, replaced here by vlrl's
  prompt format); the options stay in the text, where the model reads them;
- ``options`` = the option texts parsed out of the question (:func:`parse_options`), for
  scoring by letter or text; ``answer`` = the letter, checked against them; ``problem_type`` =
  ``multiple_choice``;
- ``id`` = ``index``; ``task`` = ``category`` (the six capabilities the MMStar paper reports;
  each has 250 questions); ``groups["l2_category"]`` = ``l2_category`` (the key of lmms-eval's
  ``mmstar_aggregate_results``); ``images`` = [image]; ``data_source`` = "mmstar".

Metrics: VLMEvalKit (``ImageMCQDataset``, vanilla MCQ evaluation, ``report_acc``) reports the
micro accuracy over the 1,500 ("Overall") and per category and l2-category; with 250 questions
per category, the overall equals the mean of the six category scores the paper tables show.
lmms-eval's ``average`` is the mean of the 18 l2-category accuracies
(``mmstar_aggregate_results``), which weighs them equally although their sizes differ; its
per-category metrics are the means of their l2-categories. lmms-eval reads the letter by rule
only (``_task_utils/mcq_extract.py::extract_mcq_answer`` over A-D); VLMEvalKit by rule
(``can_infer``), then asks its MCQ judge when the rule finds no option (3 tries, then a random
letter; with no judge configured, such an answer is wrong).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator
from pathlib import Path

from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "mmstar"
SPLIT = "val"
PATTERN = "mmstar.parquet"
LETTERS = string.ascii_uppercase
#: The six core capabilities: the keys of lmms-eval's ``eval_type_dict``.
CATEGORIES = (
    "coarse perception",
    "fine-grained perception",
    "instance reasoning",
    "logical reasoning",
    "science & technology",
    "math",
)
#: lmms-eval's ``replace_prompt``, cut from the question when a pre- or post-prompt is set.
YES_NO_PROMPT = " Please answer yes or no."
_LETTER_LINE = re.compile(r"\(([A-Z])\)\s?(.*)")


def _lettered_lines(question: str) -> list[str] | None:
    """The texts of the ``(A) ...`` lines that end the question, A first; None if fewer than
    two or not lettered A, B, ... in order."""
    lines = question.rstrip().split("\n")
    block: list[tuple[str, str]] = []
    for line in reversed(lines):
        match = _LETTER_LINE.fullmatch(line.strip())
        if match is None:
            break
        block.insert(0, (match.group(1), match.group(2).strip()))
    if len(block) < 2 or [letter for letter, _ in block] != list(LETTERS[: len(block)]):
        return None
    return [option for _, option in block]


def _inline_options(question: str) -> list[str] | None:
    """The texts after the last ``Options:``, written ``A: x, B: y, ...``; None if there is no
    such list of two or more. Each next letter is looked for after the previous one, so a
    comma and a colon inside an option's text do not split it."""
    _, found, tail = question.rpartition("Options:")
    if not found:
        return None
    tail = tail.strip()
    if not tail.startswith("A:"):
        return None
    starts = [(0, len("A:"))]
    for letter in LETTERS[1:]:
        match = re.compile(rf",\s*{letter}:").search(tail, starts[-1][1])
        if match is None:
            break
        starts.append((match.start(), match.end()))
    if len(starts) < 2:
        return None
    ends = [start for start, _ in starts[1:]] + [len(tail)]
    return [tail[body:end].strip() for (_, body), end in zip(starts, ends, strict=True)]


def parse_options(question: str) -> list[str] | None:
    """The option texts written into an MMStar question, A first: the ``(A) ...`` lines that end
    it, else the ``Options: A: ..., B: ...`` list after its last ``Options:``; None if neither.

    >>> parse_options("What is it?\\nOptions: A: a cat, B: a dog, C: nan, D: a cow")
    ['a cat', 'a dog', 'nan', 'a cow']
    >>> parse_options("Hint: h\\nQuestion: x?\\nChoices:\\n(A) 1\\n(B) 2, C: 3")
    ['1', '2, C: 3']
    >>> parse_options("Ratio?\\nOptions: A: 3:2, B: 2:3") , parse_options("Is it red?")
    (['3:2', '2:3'], None)
    """
    return _lettered_lines(question) or _inline_options(question)


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("val", record) for every row of ``mmstar.parquet``."""
    seen: dict[int, str] = {}
    for row in parquet_rows(source, PATTERN):
        index = row.natural("index")
        if index in seen:
            raise row.error(f"repeats index {index} of {seen[index]}")
        seen[index] = row.where
        yield SPLIT, convert_row(row, images, index)


def convert_row(row: Row, images: ImageStore, index: int) -> Record:
    """One MMStar row as a canonical record (see the module docstring)."""
    question = row.text("question").replace(YES_NO_PROMPT, "")
    options = parse_options(question)
    if options is None:
        raise row.error(
            "field 'question' has no options in it (neither 'Options: A: ..., B: ...' nor "
            f"'(A) ...' lines at its end): {question[-120:]!r}"
        )
    answer = row.text("answer")
    letters = LETTERS[: len(options)]
    if len(answer) != 1 or answer not in letters:
        raise row.error(
            f"field 'answer' is {answer!r}, not one of the letters {letters} of the "
            f"{len(options)} options parsed from the question"
        )
    category = row.text("category")
    if category not in CATEGORIES:
        raise row.error(f"field 'category' is {category!r}, not one of {list(CATEGORIES)}")
    return record(
        row,
        id=str(index),
        images=[images.save(row.field("image"), row, "image")],
        problem=question,
        answer=answer,
        problem_type="multiple_choice",
        options=options,
        data_source=DATA_SOURCE,
        task=category,
        groups={"l2_category": row.text("l2_category")},
    )
