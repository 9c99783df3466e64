"""RealWorldQA: ``xai-org/RealworldQA`` (config ``default``, split ``test``, 765 rows in
``data/test-00000-of-00002.parquet`` and ``data/test-00001-of-00002.parquet``), the benchmark xAI
released with Grok-1.5 Vision: real-world photographs (many taken from vehicles), one question
with a short, verifiable answer each. lmms-eval's ``realworldqa`` task reads the copy
``lmms-lab/RealWorldQA`` (``lmms-lab-encoder/RealWorldQA`` since lmms-eval 4be7ee0e); Vision-SR1
evaluates it inside its combined ``zli12321/MLLM_test`` set (``file_name`` "realWorldQA").

Raw fields (the dataset card's ``dataset_info``, in this order):

- ``question``: string. Either a multiple-choice question, its options on their own lines
  (``"A. Left"``) and the instruction ``"Please answer directly with only the letter of the
  correct option and nothing else."`` (:data:`MC_INSTRUCTION`), or a short-answer question
  ending with ``"Please answer directly with a single word or number."``
  (:data:`SHORT_INSTRUCTION`);
- ``answer``: string, the option letter (``"C"``) or the short answer (``"2"``, ``"Downhill"``);
- ``image``: image (parquet struct ``{bytes, path}``; webp on the hub).

There is no id field: rows are numbered in file order across the two shards.

Mapping to :class:`vlrl.items.records.Record`, ported from lmms-eval
``lmms_eval/tasks/realworldqa/utils.py`` and ``realworldqa.yaml`` (commit 75571cfe):

- ``problem`` = ``question.strip()`` without its answer instruction. lmms-eval's
  ``realworldqa_doc_to_text`` sends the question as stored (its default ``pre_prompt`` and
  ``post_prompt`` are empty) and, for models that bring their own ``post_prompt``, deletes
  ``MC_INSTRUCTION`` (its ``REPLACE_PROMPT``) from it; vlrl's prompt format brings its own
  thinking/answer instruction, so both instructions are deleted here. The option lines stay in the
  problem, as lmms-eval sends them;
- multiple choice (the row carries :data:`MC_INSTRUCTION`, or, without an instruction, its answer
  is a single letter and its question has option lines): ``problem_type`` = ``multiple_choice``,
  ``options`` = the texts of the ``"A. ..."`` lines in order, ``answer`` = the letter (upper-cased;
  lmms-eval compares ``gt_ans.upper()`` with the letter ``extract_mcq_answer`` finds);
- otherwise ``problem_type`` = ``numerical`` when the answer is a plain number (:func:`is_number`),
  else ``free_form`` (lmms-eval compares ``pred.lower().strip().rstrip(".")`` with
  ``gt_ans.lower()``; vlrl's free-form rule is that normalised exact match);
- ``id`` = the row's 0-based place in the split; ``images`` = [image];
  ``data_source`` = "realworldqa"; no ``task`` (the benchmark has no categories).

Metric: lmms-eval's ``exact_match``, the mean over the 765 items of the 0/1 verdicts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "realworldqa"
SPLIT = "test"
PATTERN = "data/test-*.parquet"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: The multiple-choice answer instruction, verbatim (lmms-eval ``REPLACE_PROMPT``).
MC_INSTRUCTION = (
    "Please answer directly with only the letter of the correct option and nothing else."
)
#: The short-answer instruction, verbatim.
SHORT_INSTRUCTION = "Please answer directly with a single word or number."

# One option per line, "A. text" (lmms-eval's MultiChoiceRegexFilter reads r"\b([A-Z])\.\s+").
_OPTION = re.compile(r"^([A-Z])\.\s+(\S.*)$")
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+]?\.\d+")


def is_number(answer: str) -> bool:
    """Whether ``answer`` is a plain number (an integer, a decimal, thousands commas allowed).

    >>> [is_number(a) for a in ["2", "-1", "2.5", "1,000", "Downhill", "3 cars", "1,00"]]
    [True, True, True, True, False, False, False]
    """
    return bool(_NUMBER.fullmatch(answer.strip()))


def strip_instruction(question: str) -> tuple[str, str | None]:
    """The question without its answer instruction, and which one it carried: ``"mc"``,
    ``"short"`` or None. Both at once is a ValueError.

    >>> strip_instruction("How many cars?\\n" + SHORT_INSTRUCTION)
    ('How many cars?', 'short')
    >>> strip_instruction("Which side?\\nA. Left\\nB. Right\\n" + MC_INSTRUCTION)
    ('Which side?\\nA. Left\\nB. Right', 'mc')
    """
    found = [
        kind
        for kind, sentence in (("mc", MC_INSTRUCTION), ("short", SHORT_INSTRUCTION))
        if sentence in question
    ]
    if len(found) > 1:
        raise ValueError("it carries both the multiple-choice and the short-answer instruction")
    text = question.replace(MC_INSTRUCTION, "").replace(SHORT_INSTRUCTION, "")
    # The instruction sat on its own line: drop the blank lines and spaces it leaves behind.
    text = "\n".join(line.rstrip() for line in text.strip().splitlines()).strip()
    return text, found[0] if found else None


def parse_options(text: str) -> list[str]:
    """The texts of the ``"A. ..."`` option lines of ``text``, in order; [] when it has none.
    Letters that do not run A, B, C, ... are a ValueError.

    >>> parse_options("Where is the dog?\\nA. Behind the door\\nB. In front of it")
    ['Behind the door', 'In front of it']
    >>> parse_options("How many cars?")
    []
    """
    found = [m.groups() for m in map(_OPTION.match, text.splitlines()) if m]
    letters = "".join(letter for letter, _ in found)
    if letters != LETTERS[: len(letters)]:
        raise ValueError(f"its option lines are lettered {list(letters)}, not A, B, C, ...")
    return [option.strip() for _, option in found]


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("test", record) for every row, numbered in file order across the shards."""
    for index, row in enumerate(parquet_rows(source, PATTERN)):
        yield SPLIT, convert_row(row, index, images)


def convert_row(row: Row, index: int, images: ImageStore) -> Record:
    """One RealWorldQA row as a canonical record with id ``index`` (see the module docstring)."""
    answer = row.text("answer")
    try:
        problem, instruction = strip_instruction(row.text("question"))
        options = parse_options(problem) if instruction != "short" else []
    except ValueError as exc:
        raise row.error(f"field 'question': {exc}") from None
    if not problem:
        raise row.error("field 'question' holds only the answer instruction")
    letter = answer.upper()
    is_letter = len(letter) == 1 and letter in LETTERS
    if instruction == "mc" or (instruction is None and is_letter and options):
        if not options:
            raise row.error("field 'question' asks for an option letter but has no 'A. ...' lines")
        if not is_letter or letter not in LETTERS[: len(options)]:
            raise row.error(
                f"field 'answer' {answer!r} is not one of the option letters "
                f"{list(LETTERS[: len(options)])}"
            )
        fields = {"answer": letter, "problem_type": "multiple_choice", "options": options}
    else:
        kind = "numerical" if is_number(answer) else "free_form"
        fields = {"answer": answer, "problem_type": kind}
    return record(
        row,
        id=str(index),
        images=[images.save(row.field("image"), row, "image")],
        problem=problem,
        data_source=DATA_SOURCE,
        **fields,
    )
