r"""MathVerse testmini: ``AI4Math/MathVerse`` config ``testmini`` (split ``testmini``, one file
``testmini.parquet`` at the repository root; 3,940 rows = 788 problems x 5 versions). The
``testmini_text_only`` config (788 rows, no image) is not read.

Raw schema (the dataset card's ``dataset_info``, config ``testmini``; the same fields as the
authors' ``testmini.json`` and lmms-eval's copy ``CaraJ/MathVerse-lmmseval``):

- ``sample_index``: string, the row id ("1".."3940");
- ``problem_index``: string, the problem the row is a version of ("1".."788");
- ``problem_version``: string, one of "Text Dominant", "Text Lite", "Vision Intensive",
  "Vision Dominant", "Vision Only";
- ``question``: string, the question text of this version; multiple-choice questions end with
  a ``Choices:`` (sometimes ``Choice:``) line and one ``A:text`` / ``A.text`` line per option;
  EMPTY for "Vision Only" rows, whose question and options are drawn in the image;
- ``image``: image (parquet struct ``{bytes, path}``);
- ``answer``: string; for multi-choice a letter ("B"), sometimes "(C)", the option's text
  ("False") or several letters ("C\nD", "Choose 2 answers" questions);
- ``question_type``: "multi-choice" | "free-form";
- ``metadata``: struct {split, source, subject, subfield};
- ``query_wo``: string, the official zero-shot query: an answer-format instruction, then
  ``"\nQuestion: " + question`` ("Vision Only": the instruction alone, which starts "According to
  the question shown in the image, ...");
- ``query_cot``: string, the same with a reason-first instruction;
- ``question_for_eval``: string, the question the judge is shown.

Mapping to :class:`vlrl.items.records.Record`, ported from lmms-eval
``lmms_eval/tasks/mathverse/utils.py::mathverse_doc_to_text`` →
``mathverse_evals.py::MathVerseEvaluator.create_one_query`` (commit 75571cfe; every
``mathverse_testmini*`` task and the ``reasoning/`` variant use ``shot_type="format-prompt"``,
``query_type="query_wo"``, zero shots, so the prompt is ``query_wo.strip()``):

- ``id`` = sample_index; ``images`` = [image]; ``data_source`` = "mathverse";
- ``problem`` = ``query_wo`` stripped, verbatim. Its instruction line is MathVerse's own text
  (the answer format the judge expects), not a model-specific post-prompt, so it is kept; for
  "Vision Only" it is the only text there is. (VLMEvalKit ``vlmeval/dataset/image_vqa.py::
  MathVerse.build_prompt`` sends ``question`` instead, or ``query_cot`` for its ``*_cot``
  datasets.)
- ``task`` = problem_version, so the five versions are reported separately (the paper's and
  ``MathVerseEvaluator.eval_results``'s per-version table); ``groups`` = {"problem":
  problem_index}: the five versions of a problem are one cluster;
- free-form → ``numerical`` when the answer is a plain number, else ``free_form`` (answers such
  as "2191.7 metres", "4\sqrt{6}", "S 23.5 ^\circ W");
- multi-choice → ``multiple_choice`` with ``options`` parsed from the question (neither
  reference parses them: both show the whole text and let the judge compare the extracted
  answer with ``question_for_eval``; the options are kept for the rule-based scorer only, the
  prompt is ``query_wo``). The options are those of the row's own ``question``, else of its
  ``question_for_eval``, else of another version of the same problem ("Vision Only" rows: the
  same options, drawn in the image). ``answer`` = the gold letter: "(C)" → "C", an option's
  text → its letter. A multi-choice row whose options cannot be parsed anywhere, or whose answer
  names several letters, is kept as ``free_form`` with the hub's answer.

Scoring in the references is an LLM judge only: VLMEvalKit ``vlmeval/dataset/utils/
mathverse.py`` extracts the answer (GPT, 5 tries) then judges it against ``question_for_eval``
and ``answer`` (0/1; an exact string match of the extraction skips the judge); lmms-eval sends
the whole response (last 30 words in ``eval_results``) to a binary 0/1 judge. The score is the
accuracy over all rows and per ``problem_version``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "mathverse"
SPLIT = "testmini"
PATTERN = "testmini.parquet"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
VERSIONS = ("Text Dominant", "Text Lite", "Vision Intensive", "Vision Dominant", "Vision Only")
QUESTION_TYPES = ("multi-choice", "free-form")

_CHOICES_HEADER = re.compile(r"(?:^|\n)[ \t]*Choices?[ \t]*:[ \t]*\n", re.IGNORECASE)
_OPTION_LINE = re.compile(r"^[ \t]*([A-Z])[ \t]*[:.][ \t]*(.*?)\s*$")
_LETTER_ANSWER = re.compile(r"^\(?([A-Z])\)?$")
_PLAIN_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")


def parse_options(text: str) -> list[str]:
    """The option texts after the last ``Choices:`` / ``Choice:`` line of ``text``: the lines
    ``A:text`` or ``A.text`` with letters in order from A; other lines are skipped. Fewer than
    two options is none.

    >>> parse_options("Find x.\\nChoices:\\nA:40°\\nB:60°\\nC:120°")
    ['40°', '60°', '120°']
    >>> parse_options("True or false?\\nChoice:\\nA. True\\nB. False")
    ['True', 'False']
    >>> parse_options("angle CAB is ()\\nChoices:\\nA:26°\\nB:74°\\n102")
    ['26°', '74°']
    >>> parse_options(""), parse_options("What is x?")
    ([], [])
    """
    headers = list(_CHOICES_HEADER.finditer(text))
    if not headers:
        return []
    options: list[str] = []
    for line in text[headers[-1].end() :].split("\n"):
        match = _OPTION_LINE.match(line)
        if match and match.group(1) == LETTERS[len(options)]:
            options.append(match.group(2))
    return options if len(options) >= 2 else []


def is_plain_number(text: str) -> bool:
    """Whether ``text`` is one plain decimal number.

    >>> is_plain_number("11.8"), is_plain_number("-3"), is_plain_number("4.4 m")
    (True, True, False)
    """
    return bool(_PLAIN_NUMBER.fullmatch(text))


def _own_options(row: Row) -> list[str]:
    """The options written in the row itself (its question, else its question_for_eval)."""
    return parse_options(row.text("question", allow_empty=True, strip=False)) or parse_options(
        row.text("question_for_eval", allow_empty=True, strip=False)
    )


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("testmini", record) for every row of ``testmini.parquet``."""
    rows = list(parquet_rows(source, PATTERN))
    # The options of each multi-choice problem, from the first of its versions that shows them.
    shared: dict[str, list[str]] = {}
    for row in rows:
        if row.data.get("question_type") == "multi-choice":
            problem = str(row.data.get("problem_index"))
            if problem not in shared and (options := _own_options(row)):
                shared[problem] = options
    for row in rows:
        yield SPLIT, convert_row(row, images, shared)


def _gold(row: Row, answer: str, options: list[str]) -> str | None:
    """The gold letter of a multi-choice answer; None when it names several letters."""
    match = _LETTER_ANSWER.match(answer)
    if match:
        letter = match.group(1)
        if letter not in LETTERS[: len(options)]:
            raise row.error(
                f"field 'answer' {answer!r} is not among the {len(options)} options "
                f"(A-{LETTERS[len(options) - 1]}) parsed from the question"
            )
        return letter
    texts = [option.strip() for option in options]
    if answer in texts:
        return LETTERS[texts.index(answer)]
    letters = [part.strip().strip("()") for part in re.split(r"[\n,]+", answer) if part.strip()]
    if len(letters) > 1 and all(letter in LETTERS[: len(options)] for letter in letters):
        return None
    raise row.error(
        f"field 'answer' {answer!r} is neither an option letter nor the text of one of the "
        f"options {options}"
    )


def convert_row(row: Row, images: ImageStore, shared: dict[str, list[str]]) -> Record:
    """One MathVerse row as a canonical record (see the module docstring); ``shared`` maps a
    problem_index to the options another version of the problem shows."""
    sample_index = row.text("sample_index", strip=False)
    problem_index = row.text("problem_index", strip=False)
    version = row.text("problem_version", strip=False)
    if version not in VERSIONS:
        raise row.error(f"field 'problem_version' is {version!r}, not one of {list(VERSIONS)}")
    question_type = row.text("question_type", strip=False)
    if question_type not in QUESTION_TYPES:
        raise row.error(f"field 'question_type' is {question_type!r}, not one of {QUESTION_TYPES}")
    query = row.text("query_wo", strip=False).strip()
    answer = row.text("answer", strip=False).strip()
    row.text("question", allow_empty=True, strip=False)

    options: list[str] = []
    if question_type == "multi-choice":
        candidates = _own_options(row) or shared.get(problem_index, [])
        gold = _gold(row, answer, candidates) if candidates else None
        if gold is not None:
            options, answer, problem_type = candidates, gold, "multiple_choice"
        else:
            problem_type = "free_form"
    else:
        problem_type = "numerical" if is_plain_number(answer) else "free_form"

    return record(
        row,
        id=sample_index,
        images=[images.save(row.field("image"), row, "image")],
        problem=query,
        answer=answer,
        problem_type=problem_type,
        options=options,
        data_source=DATA_SOURCE,
        task=version,
        groups={"problem": problem_index},
    )
