r"""MATH-Vision: ``MathLLMs/MathVision`` (config ``default``), splits ``test`` (3,040 rows,
``data/test-*.parquet``) and ``testmini`` (304 rows, a subset of test, ``data/testmini-*.parquet``),
written as the splits ``test`` and ``testmini``.

Raw schema (the dataset card's ``dataset_info``; the same fields as the authors'
``data/test.jsonl`` in github.com/mathllm/MATH-V):

- ``id``: string ("1".."3040");
- ``question``: string with ``<image1>``, ``<image2>``… placeholders (all drawn in the one
  ``decoded_image``);
- ``options``: list of strings: five option texts (A-E) for multiple-choice questions, sometimes
  just ``["A", "B", "C", "D", "E"]`` when the options are drawn in the image; empty otherwise;
- ``image``: string, the image's path in the original zip (unused);
- ``decoded_image``: image (parquet struct ``{bytes, path}``);
- ``answer``: string: the gold letter for multiple choice; otherwise a number ("60"), an
  expression ("$\frac{1}{3}$", "7/3", "(3,-4)", "$\boxed{\frac{3}{4}}$") or, for two test rows
  whose options are in the image but not in ``options`` (ids 59, 434), a letter;
- ``solution``: string or null; ``level``: int64 (1-5); ``subject``: string (16 subjects, e.g.
  "metric geometry - area").

Mapping to :class:`vlrl.items.records.Record`, ported from lmms-eval
``lmms_eval/tasks/mathvision/utils.py::mathvision_doc_to_text`` (commit 75571cfe; tasks
``mathvision_test`` / ``mathvision_testmini``), which sends::

    'Please solve the problem step by step and put your answer in one "\\boxed{}".'
    + f"{question}\nChoices: {choices_str}" + "\n" + mc_prompt      (with options)
    + question                                                       (without)

with ``choices_str = "\n".join(f"{letter}. {option}")`` (the first option on the "Choices:"
line). ``problem`` = that text without the model-specific pre-prompt ("Please solve...") and
post-prompt (``mc_prompt``, "Answer the question with the option's letter from the given choices
directly."): ``f"{question}\nChoices: A. ...\nB. ..."``, or the bare question.

- ``id`` = id; ``images`` = [decoded_image] (``mathvision_doc_to_visual``); ``data_source`` =
  "mathvision"; ``task`` = subject (VLMEvalKit ``vlmeval/dataset/utils/mathv.py::MATH_V_acc``
  reports per subject, the paper per subject and level);
- with options → ``multiple_choice``: ``options`` as on the hub, ``answer`` = the gold letter,
  checked against them;
- without options → ``numerical`` when the answer is a plain number, else ``free_form``.
- The answer is stripped; a form feed in it is the ``\f`` of a LaTeX ``\frac`` lost to a JSON
  escape (test id 2830 is ``"\x0crac{36}{13}"`` in the authors' ``test.jsonl``) and is written
  back as ``\f``.

Scoring in the references (no LLM in lmms-eval's ``mathvision_test*``):
lmms-eval ``mathvision_process_results`` cuts the response at "the answer is" etc., takes the last
``\boxed{}`` (``eval_utils.find_math_answer``), and counts it right if ``is_equal(answer, pred)``
or ``is_equal(option_text, pred)``; ``is_equal`` compares lower-cased strings, then ``eval`` of
both, then ``latex2sympy`` of both (within 1e-6). VLMEvalKit ``mathv.py`` does the same
``is_equal`` after ``can_infer`` (MC) or a GPT answer extraction.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "mathvision"
#: Output split → its hub files.
SPLITS = {"test": "data/test-*.parquet", "testmini": "data/testmini-*.parquet"}
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_PLAIN_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")


def render_problem(question: str, options: list[str]) -> str:
    """lmms-eval's ``mathvision_doc_to_text`` without its pre- and post-prompt.

    >>> print(render_problem("Which?\\n<image1>", ["2", "3"]))
    Which?
    <image1>
    Choices: A. 2
    B. 3
    >>> render_problem("How many?", [])
    'How many?'
    """
    if not options:
        return question
    choices = "\n".join(f"{LETTERS[i]}. {option}" for i, option in enumerate(options))
    return f"{question}\nChoices: {choices}"


def is_plain_number(text: str) -> bool:
    """Whether ``text`` is one plain decimal number.

    >>> is_plain_number("60"), is_plain_number("-1.5"), is_plain_number("7/3")
    (True, True, False)
    """
    return bool(_PLAIN_NUMBER.fullmatch(text))


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield (split, record) for the rows of each split present under ``source``."""
    present = {split: pattern for split, pattern in SPLITS.items() if any(source.glob(pattern))}
    if not present:
        raise DataError(f"{source}: no file matches any of {sorted(SPLITS.values())}")
    for split, pattern in present.items():
        for row in parquet_rows(source, pattern):
            yield split, convert_row(row, images)


def _options(row: Row) -> list[str]:
    options = row.field("options", allow_empty=True)
    if options is None:
        return []
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise row.error(f"field 'options' must be a list of strings: {options!r}")
    if len(options) > len(LETTERS):
        raise row.error(f"field 'options' has {len(options)} entries, more than letters A-Z")
    if any(not option.strip() for option in options):
        raise row.error(f"field 'options' has an empty option: {options!r}")
    return options


def convert_row(row: Row, images: ImageStore) -> Record:
    """One MATH-Vision row as a canonical record (see the module docstring)."""
    item_id = row.text("id", strip=False)
    question = row.text("question", strip=False)
    subject = row.text("subject", strip=False)
    options = _options(row)
    answer = row.text("answer", strip=False).replace("\x0c", "\\f").strip()
    if options:
        if len(answer) != 1 or answer not in LETTERS[: len(options)]:
            raise row.error(
                f"field 'answer' {answer!r} is not an option letter "
                f"(A-{LETTERS[len(options) - 1]}) of the {len(options)} options"
            )
        problem_type = "multiple_choice"
    else:
        problem_type = "numerical" if is_plain_number(answer) else "free_form"
    return record(
        row,
        id=item_id,
        images=[images.save(row.field("decoded_image"), row, "decoded_image")],
        problem=render_problem(question, options),
        answer=answer,
        problem_type=problem_type,
        options=options,
        data_source=DATA_SOURCE,
        task=subject,
    )
