"""We-Math: ``We-Math/We-Math`` (config ``default``), split ``testmini``: 1,740 multiple-choice
questions in ``data/testmini-00000-of-00001-adbfe22dcd3558e6.parquet``, written as the split
``testmini``. The repository's ``testmini.json`` + ``testmini.zip`` hold the rows with image
paths instead, like the authors' github.com/We-Math/We-Math ``data/testmini.json`` (1,740 rows,
which this format converts whole once built into the parquet's schema); the parquet embeds the
images and is what lmms-eval's ``wemath_testmini_reasoning`` loads.

VLMEvalKit's ``WeMath`` reads a TSV from opencompass.openxlab.space (``WeMath.tsv``, md5
b5e969a0…, options in ``A`` … ``H`` columns, base64 images) that the download stage cannot
fetch; its scoring (``vlmeval/dataset/utils/wemath.py``) reads the same ``ID`` / ``key``
structure and hard-codes these 525 problems, so this format rebuilds its prompt from the hub's
rows.

Raw schema (the fields of ``data/testmini.json``; the parquet's columns as lmms-eval
``tasks/wemath/reasoning/utils.py`` reads them and as copies of its ``dataset_info`` list them):

- ``ID``: string, the composite problem ("2steps_1" … "2steps_360", "3steps_1" …
  "3steps_165"): 360 two-step and 165 three-step problems;
- ``key``: string, the question's place in its problem: ``2steps_1``, ``2steps_2``,
  ``2steps_multi`` / ``3steps_1`` … ``3steps_3``, ``3steps_multi`` (the sub-questions, one per
  knowledge concept, then the composite question);
- ``question number``: int64, 1 … 1,740, unique;
- ``question``: string; ``option``: string, the options in one string, ``"A. 300, 400;B. 400,
  300;C. …; E. No correct answer"`` (separators irregular: see :func:`parse_options`);
- ``answer``: string, the gold letter;
- ``image_path``: image (parquet struct ``{bytes, path}``);
- ``split`` ("testmini"), ``knowledge concept``, ``knowledge concept description``: strings
  (unused).

Mapping to :class:`vlrl.items.records.Record`, ported from VLMEvalKit
``vlmeval/dataset/image_mcq.py::WeMath.build_prompt`` (commit e8e78f05; the same in SATORI-R1's
fork ``VLMEvalKit/vlmeval/dataset/image_mcq.py``, 8857b30f), dataset ``WeMath`` (``WeMath_COT``
appends the row's ``requirement``, a CoT instruction, which vlrl's prompt format replaces):

- ``problem`` = ``"Question: {question}\\nOptions:\\nA. {A}\\nB. {B}\\n…"`` without the final
  newline (a ``Hint: {hint}\\n`` line first if the row has a ``hint``, which the hub's rows do
  not); SATORI's fork registers Qwen2.5-VL with ``use_custom_prompt=False``
  (``vlmeval/config.py``), so this is what the model is sent;
- ``options`` = the option texts in order (:func:`parse_options`), ``answer`` = the gold letter
  (relabelled if the hub skips a letter), ``problem_type`` = ``multiple_choice``;
- ``id`` = ``question number``; ``images`` = [image_path]; ``data_source`` = "wemath";
- ``task`` = ``one_step`` (a sub-question), ``two_step`` / ``three_step`` (a composite
  question): VLMEvalKit ``vlmeval/dataset/utils/wemath.py::wemath_accuracy`` reports exactly
  these accuracies as "One-step(S1)", "Two-step(S2)", "Three-step(S3)";
- ``groups`` = ``{"problem": ID, "step": key}``: what the four-dimensional metrics
  (``wemath_four_dimensional``, :mod:`vlrl.scoring.metrics`) read. Every problem must have all
  its questions (checked here).

Scoring in the reference: VLMEvalKit ``WeMath.evaluate`` asks ``gpt-4o-mini`` (SATORI's fork's
default judge for WeMath, ``run.py``) to extract the letter (``mcq_vanilla_eval`` /
``build_prompt_wemath``) or, without a judge, takes the first character after the last
"Answer"; ``wemath_evaluate_models`` then computes the strict / loose scores and IK, IG, CM, RM
over the 525 problems, ``wemath_accuracy`` the S1 / S2 / S3 accuracies.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "wemath"
SPLIT = "testmini"
PATTERN = "data/testmini-*.parquet"
LETTERS = "ABCDEFGH"
#: The task of a sub-question (VLMEvalKit's S1) and of a composite question by its number of
#: steps (S2, S3).
ONE_STEP = "one_step"
MULTI_TASKS = {"2": "two_step", "3": "three_step"}
_KEY = re.compile(r"([23])steps_([1-3]|multi)")

#: A ``;`` glued before a capital letter and full stop that end a phrase: "around point ;O.;B.",
#: "triangle BE;G.;" in the authors' ``testmini.json`` (a conversion slip: it is "point O.",
#: "BEG."). Removed before splitting, or "O."/"G." would read as option markers.
_STRAY_SEPARATOR = re.compile(r"[;；](?=[A-Z]\.\s*(?:[;；]|$))")
#: An option marker at the start or after ``;``: "A. ", "; B.", ";D.1".
_MARKER = re.compile(r"(?:^|[;；])\s*([A-H])\s*[.．、]")
#: The same after any whitespace too: "A. 45° B. 60° ;C. 120°" (3 rows lack the ``;``).
_LOOSE_MARKER = re.compile(r"(?:^|(?<=[;；\s]))([A-H])\s*[.．、]")


def _split_options(
    text: str, marker: re.Pattern[str], gaps: bool
) -> tuple[list[str], list[str]] | None:
    """``(labels, texts)`` when the markers found read A, B, C… (``gaps``: any rising letters)
    and every option has text; else None."""
    found = list(marker.finditer(text))
    labels = [m.group(1) for m in found]
    if len(found) < 2 or found[0].start() != 0 or labels[0] != "A":
        return None
    rising = all(a < b for a, b in pairwise(labels))
    if not (rising if gaps else "".join(labels) == LETTERS[: len(labels)]):
        return None
    ends = [m.start() for m in found[1:]] + [len(text)]
    texts = [
        text[m.end() : end].strip().rstrip(";；").strip()
        for m, end in zip(found, ends, strict=True)
    ]
    return (labels, texts) if all(texts) else None


def parse_options(option: str) -> tuple[list[str], list[str]] | None:
    """The option letters as written and the option texts of a We-Math ``option`` string, or
    None if it does not read as options.

    Tried in turn: markers at the start or after ``;`` reading A, B, C…; the same after any
    whitespace; markers after ``;`` with rising letters (one row reads A, B, C, F). Stray ``;``
    before a letter and full stop (``point ;O.;``) are removed first. All 1,740 testmini rows
    parse, with the gold letter among the labels.

    >>> parse_options("A. 300, 400;B. 400, 300; C. No correct answer")
    (['A', 'B', 'C'], ['300, 400', '400, 300', 'No correct answer'])
    >>> parse_options("A. 45° B. 60° ;C. 120°; D. No correct answer")[1]
    ['45°', '60°', '120°', 'No correct answer']
    >>> parse_options("A. Yes, around point ;O.;B. No.; F. No correct answer")
    (['A', 'B', 'F'], ['Yes, around point O.', 'No.', 'No correct answer'])
    >>> parse_options("no options") is None
    True
    """
    text = _STRAY_SEPARATOR.sub("", option.strip())
    for marker, gaps in ((_MARKER, False), (_LOOSE_MARKER, False), (_MARKER, True)):
        parsed = _split_options(text, marker, gaps)
        if parsed is not None:
            return parsed
    return None


def render_problem(question: str, options: list[str], hint: str | None = None) -> str:
    """VLMEvalKit ``WeMath.build_prompt``'s text without its final newline.

    >>> print(render_problem("How long is AB?", ["3 cm", "4 cm"]))
    Question: How long is AB?
    Options:
    A. 3 cm
    B. 4 cm
    """
    prompt = f"Hint: {hint}\n" if hint else ""
    prompt += f"Question: {question}\n"
    if options:
        prompt += "Options:\n" + "".join(f"{LETTERS[i]}. {o}\n" for i, o in enumerate(options))
    return prompt.rstrip("\n")


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("testmini", record) for every row of ``data/testmini-*.parquet``, after checking
    that every composite problem has each of its questions once."""
    records: list[Record] = []
    seen: dict[tuple[str, str], str] = {}
    for row in parquet_rows(source, PATTERN):
        rec = convert_row(row, images)
        where = (rec.groups["problem"], rec.groups["step"])
        if where in seen:
            raise row.error(f"repeats problem {where[0]!r} step {where[1]!r} of {seen[where]}")
        seen[where] = row.where
        records.append(rec)
    check_problems(records)
    for rec in records:
        yield SPLIT, rec


def check_problems(records: list[Record]) -> None:
    """Every problem has its sub-questions and its multi-step question, no more (the
    four-dimensional metrics need them all).

    Raises:
        DataError: naming the problem, the questions it has and those it should have.
    """
    steps: dict[str, set[str]] = {}
    for rec in records:
        steps.setdefault(rec.groups["problem"], set()).add(rec.groups["step"])
    for problem, have in steps.items():
        n = problem.split("steps_")[0]
        want = {*(f"{n}steps_{i}" for i in range(1, int(n) + 1)), f"{n}steps_multi"}
        if have != want:
            raise DataError(
                f"We-Math problem {problem!r} has the questions {sorted(have)}, not "
                f"{sorted(want)} (ID and key of its rows)"
            )


def convert_row(row: Row, images: ImageStore) -> Record:
    """One We-Math row as a canonical record (see the module docstring)."""
    number = row.field("question number")
    if isinstance(number, bool) or not isinstance(number, int):
        raise row.error(f"field 'question number' must be an integer: {number!r}")
    problem = row.text("ID")
    key = row.text("key")
    match = _KEY.fullmatch(key)
    if not match or (match.group(2) != "multi" and int(match.group(2)) > int(match.group(1))):
        raise row.error(f"field 'key' is {key!r}, not 2steps_1/2/multi or 3steps_1/2/3/multi")
    if not re.fullmatch(rf"{match.group(1)}steps_\d+", problem):
        raise row.error(
            f"field 'ID' {problem!r} is not a {match.group(1)}-step problem like its key {key!r}"
        )
    option = row.text("option")
    parsed = parse_options(option)
    if parsed is None:
        raise row.error(f"field 'option' does not read as options A., B., …: {option!r}")
    labels, options = parsed
    answer = row.text("answer").upper()
    if answer not in labels:
        raise row.error(f"field 'answer' {answer!r} is not one of the option letters {labels}")
    hint = row.data.get("hint")  # VLMEvalKit uses a hint column if there is one; the hub has none
    hint = hint.strip() if isinstance(hint, str) and hint.strip() else None
    task = MULTI_TASKS[match.group(1)] if match.group(2) == "multi" else ONE_STEP
    return record(
        row,
        id=str(number),
        images=[images.save(row.field("image_path"), row, "image_path")],
        problem=render_problem(row.text("question"), options, hint),
        answer=LETTERS[labels.index(answer)],
        problem_type="multiple_choice",
        options=options,
        data_source=DATA_SOURCE,
        task=task,
        groups={"problem": problem, "step": key},
    )
