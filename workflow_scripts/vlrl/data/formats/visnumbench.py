"""VisNumBench: ``GML-FMGroup/VisNumBench`` (config ``default``, its only split ``train``, 1,913
rows in ``data/train-*.parquet``), the authors' hub copy of the number-sense benchmark of Weng et
al., "VisNumBench: Evaluating Number Sense of Multimodal Large Language Models" (ICCV 2025,
arXiv 2503.14939): 1,011 questions on synthetic images and 902 on real-world photographs, all
multiple choice, over seven visual numerical attributes. The hub split is named ``train`` but
it is the whole benchmark; it is written here as the ``test`` split.

Vision-SR1 evaluates on its own copy, ``zli12321/visnumbench`` (split ``test``, EasyR1 columns
``problem`` / ``images`` / ``answer``, no attribute column), scored by string matching only
(``Evaluation/eval_result.py::compute_MCQ_stats``, mathruler ``grade_answer`` on the last
``\\boxed{}``, commit 4480e080) and reported as one accuracy; that copy's prompt layout is not
public here, so this format reads the authors' data, which carries the attribute.

Raw fields (the dataset card's ``dataset_info``, in this order; values as in the authors'
``datasets/Real-World Dataset/Real.json`` and ``datasets/Synthetic Mathematical Dataset/
Synthetic.json``, github.com/GML-FMGroup/mllm_number_sense):

- ``class``: string, the scenario (synthetic or real-world images; the exact values were not
  seen here, so any non-empty string is accepted);
- ``id``: string, ``"<n>_<Attribute>"`` (``"101_Scale"``), unique within a scenario only (733 ids
  occur in both);
- ``question``: string;
- ``option``: string, the options on one line, labelled ``(a)`` .. ``(e)``:
  ``"(a) 1.2 (b) 2.5 (c) 3.8 (d) 4.6"``; option texts may hold parentheses of their own
  (``"(a) (50, 60) degrees"``);
- ``answer``: string, the label and text of the right option, ``"(b) 2.5"``;
- ``task_class``: string, one of the four estimation tasks (value comparison, value estimation,
  range estimation, multiplicative estimation);
- ``Attributes``: string, one of :data:`ATTRIBUTES` (Area is synthetic-only, Volume real-only);
- ``image``: image (parquet struct ``{bytes, path}``).

Mapping to :class:`vlrl.items.records.Record`, ported from the authors' evaluation code
(GML-FMGroup/mllm_number_sense, commit 5c97a7d8: ``eval/utils.py::build_prompt``,
``eval/extrac_answer.py``, ``eval/evaluate.py``):

- ``problem`` = ``"Question: {question}\\nOptions: {options}"``, the layout of ``build_prompt``
  without its last line, the answer instruction ``"Answer the question based on the most likely
  options."`` (vlrl's prompt format brings its own thinking/answer instruction), and without the
  indentation its triple-quoted f-string adds. The option labels are upper-cased, ``(a)`` ->
  ``(A)``, so that vlrl's option-letter rule (upper-case letters, like every other
  multiple-choice benchmark here) reads the letter a model copies from the prompt; the option
  texts are as on the hub (:func:`render_options`);
- ``options`` = the option texts in order (:func:`parse_options`); ``answer`` = the letter of the
  right option (``"B"``); ``problem_type`` = ``multiple_choice``;
- ``task`` = ``Attributes``, the paper's per-attribute breakdown (here over both scenarios; the
  paper tabulates each scenario's attributes separately);
- ``groups`` = ``{"scenario": class, "task_class": task_class}``;
- ``id`` = ``"{class}_{id}"``; ``images`` = [image]; ``data_source`` = "visnumbench".

Metric (``evaluate.py``): accuracy, per scenario and per attribute within it; the leaderboard's
"VisNumBench" column is the accuracy over all 1,913 questions. The authors do not parse the
response: a judge LLM (``extrac_answer.py``: InternVL2.5-38B, greedy, up to 1,024 tokens; "You can
replace this with any powerful LLM") maps it to ``(a)``..``(e)`` or ``(z)`` (no option), and an
item is right when that equals the first three characters of ``answer``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "visnumbench"
SPLIT = "test"
PATTERN = "data/train-*.parquet"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: The seven visual numerical attributes (README: Angle, Length, Scale, Quantity, Depth, Area,
#: Volume).
ATTRIBUTES = ("Angle", "Length", "Scale", "Quantity", "Depth", "Area", "Volume")

# A label "(a)" opens the string or follows a space; a parenthesis inside an option text
# ("(50, 60)") never holds a single letter.
_LABEL = re.compile(r"(?:^|(?<=\s))\(([A-Za-z])\)\s*")
_ANSWER = re.compile(r"\(([A-Za-z])\)\s*(.*)", re.DOTALL)


def parse_options(text: str) -> list[str]:
    """The option texts of a one-line ``"(a) ... (b) ..."`` string, in order. A string that does
    not open with ``(a)``, labels out of order or an empty option text is a ValueError.

    >>> parse_options("(a) (50, 60) degrees (b) (150, 160) degrees")
    ['(50, 60) degrees', '(150, 160) degrees']
    >>> parse_options("(a) CDAB (b) ADCB (c) DBCA")
    ['CDAB', 'ADCB', 'DBCA']
    """
    text = text.strip()
    labels = list(_LABEL.finditer(text))
    found = "".join(m.group(1).upper() for m in labels)
    if not labels or labels[0].start() != 0 or found != LETTERS[: len(found)]:
        raise ValueError(f"is not labelled (a), (b), (c), ... from its start: {text!r}")
    ends = [m.start() for m in labels[1:]] + [len(text)]
    options = [text[m.end() : end].strip() for m, end in zip(labels, ends, strict=True)]
    if not all(options):
        raise ValueError(f"has an empty option: {text!r}")
    return options


def render_options(options: list[str]) -> str:
    """The options on one line, as the hub writes them, with upper-case labels.

    >>> render_options(["1.2", "2.5"])
    '(A) 1.2 (B) 2.5'
    """
    return " ".join(f"({LETTERS[i]}) {option}" for i, option in enumerate(options))


def answer_letter(answer: str, options: list[str]) -> str:
    """The letter of ``answer`` (``"(b) 2.5"``); a label past the options, or a text that is not
    the labelled option's, is a ValueError.

    >>> answer_letter("(b) 2.5", ["1.2", "2.5"]), answer_letter("(A)", ["1.2", "2.5"])
    ('B', 'A')
    """
    match = _ANSWER.fullmatch(answer.strip())
    if not match:
        raise ValueError(f"{answer!r} does not open with an option label like '(b)'")
    letter, text = match.group(1).upper(), match.group(2).strip()
    if letter not in LETTERS[: len(options)]:
        raise ValueError(f"{answer!r} names option {letter}, past the {len(options)} options")
    if text and text != options[LETTERS.index(letter)]:
        raise ValueError(
            f"{answer!r} disagrees with option ({letter}) {options[LETTERS.index(letter)]!r}"
        )
    return letter


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("test", record) for every row of ``data/train-*.parquet``."""
    for row in parquet_rows(source, PATTERN):
        yield SPLIT, convert_row(row, images)


def convert_row(row: Row, images: ImageStore) -> Record:
    """One VisNumBench row as a canonical record (see the module docstring)."""
    scenario = row.text("class")
    attribute = row.text("Attributes")
    if attribute not in ATTRIBUTES:
        raise row.error(f"field 'Attributes' is {attribute!r}, not one of {list(ATTRIBUTES)}")
    try:
        options = parse_options(row.text("option"))
    except ValueError as exc:
        raise row.error(f"field 'option' {exc}") from None
    try:
        letter = answer_letter(row.text("answer"), options)
    except ValueError as exc:
        raise row.error(f"field 'answer' {exc}") from None
    question = row.text("question")
    return record(
        row,
        id=f"{scenario}_{row.text('id')}",
        images=[images.save(row.field("image"), row, "image")],
        problem=f"Question: {question}\nOptions: {render_options(options)}",
        answer=letter,
        problem_type="multiple_choice",
        options=options,
        data_source=DATA_SOURCE,
        task=attribute,
        groups={"scenario": scenario, "task_class": row.text("task_class")},
    )
