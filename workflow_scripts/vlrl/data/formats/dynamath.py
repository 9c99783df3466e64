"""DynaMath: ``DynaMath/DynaMath_Sample`` (config ``default``), ten splits ``sample_variant1`` ..
``sample_variant10`` of 501 rows each, the released draw of the benchmark of Zou et al.,
"DynaMath: A Dynamic Visual Benchmark for Evaluating Mathematical Reasoning Robustness of Vision
Language Models" (arXiv 2411.00836): 501 seed questions, each a program, drawn ten
times (5,010 concrete questions). All ten are written as the ``test`` split.

The split files are ``data/sample<k>-*.parquet`` (the card's ``data_files`` at revision
5370736e) or ``data/sample_variant<k>-*.parquet`` (the names of a copy, lscpku/DynaMath_Sample);
the variant ``k`` is read from the name. Raw
fields (the card's ``dataset_info``): ``id`` (string, the seed question, the same in every
variant), ``question``, ``image`` (string, the image's path in the authors' zip, unused),
``decoded_image`` (image, parquet struct ``{bytes, path}``), ``ground_truth`` (string),
``answer_type`` (``float``, ``multiple choice``, ``text``; the authors' seed file
github.com/DynaMath/DynaMath ``dataset/dataset.json`` also has ``int`` and ``single answer``),
``subject`` and ``knowledge_level`` (strings).

Mapping to :class:`vlrl.items.records.Record` (VLMEvalKit ``vlmeval/dataset/dynamath.py``,
commit e8e78f05, whose TSV holds the same 5,010 questions with ``qid``/``varid``):

- ``id`` = ``"<id>-v<k>"``; ``groups`` = ``{"seed": id, "variant": k, "knowledge_level":
  ...}`` (the worst case is over a seed's variants); ``task`` = ``subject`` (VLMEvalKit reports
  per subject and per level);
- ``problem`` = ``question`` as it is, its options inside it (VLMEvalKit's ``build_prompt``
  puts it after ``"## Question\\n "`` and, but for ``DynaMath_noprompt``, before a guide asking
  for a JSON answer: model-specific instructions, like every format's);
- ``multiple choice`` → ``multiple_choice``: ``answer`` = the gold letter, ``options`` read from
  the question (:func:`parse_options`: ``(A) x (B) y`` on one line, or one ``A. x`` / ``A: x``
  per line); ``float`` → ``numerical`` (the gold must be a number); any other answer type →
  ``free_form``, as VLMEvalKit reads every type but those two as text.

Scoring (VLMEvalKit ``DynaMath_auxeval``, ported in :mod:`vlrl.scoring.dynamath`): average
accuracy over the 5,010 questions, and worst-case accuracy, the share of seeds answered right in
all ten variants (the OpenCompass leaderboard's DynaMath column).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "dynamath"
SPLIT = "test"
_VARIANT_FILE = re.compile(r"^sample(?:_variant)?(\d+)-.*\.parquet$")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")
_INLINE = re.compile(r"\(([A-Z])\)\s*")
_LINE = re.compile(r"^([A-Z])[.:]\s?(.*)$")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
PROBLEM_TYPES = {"multiple choice": "multiple_choice", "float": "numerical"}


def _inline_options(question: str) -> list[str]:
    labels = list(_INLINE.finditer(question))
    starts = [i for i, m in enumerate(labels) if m.group(1) == "A"]
    if not starts:
        return []
    labels = labels[starts[-1] :]
    found = "".join(m.group(1) for m in labels)
    if found != LETTERS[: len(found)]:
        return []
    ends = [m.start() for m in labels[1:]] + [len(question)]
    return [question[m.end() : end].strip() for m, end in zip(labels, ends, strict=True)]


def _line_options(question: str) -> list[str]:
    options: list[str] = []
    for line in question.splitlines():
        match = _LINE.match(line.strip())
        if match and match.group(1) == LETTERS[len(options)]:
            options.append(match.group(2).strip())
        elif match and match.group(1) == "A":
            options = [match.group(2).strip()]
    return options


def parse_options(question: str) -> list[str]:
    """The option texts written in a DynaMath question, in order: the last ``(A) ... (B) ...``
    run, else the lines ``A. ...`` / ``A: ...`` from the last one labelled A; empty when there are
    none (or fewer than two). An option drawn in the image (``choice: (A) (B) (C)``, seed 127)
    has no text: its letter stands for it.

    >>> parse_options("Is this a periodic function? Choices: (A) Yes (B) No")
    ['Yes', 'No']
    >>> parse_options("Which group?\\nA. Group 1\\nB. Group 2\\nC. Group 3")
    ['Group 1', 'Group 2', 'Group 3']
    >>> parse_options("Intersection of A and B?\\nA: [2, 8]\\nB: [1, 2]\\n")
    ['[2, 8]', '[1, 2]']
    >>> parse_options("Which figure? choice: (A) (B) (C)")
    ['A', 'B', 'C']
    """
    options = _inline_options(question) or _line_options(question)
    if len(options) < 2:
        return []
    return [text or LETTERS[i] for i, text in enumerate(options)]


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("test", record) for every row of every variant file; a variant that misses a seed
    another variant has (the worst case would be over fewer variants) is a DataError."""
    variants: dict[int, list[str]] = defaultdict(list)
    for path in sorted((source / "data").glob("*.parquet")):
        match = _VARIANT_FILE.match(path.name)
        if match:
            variants[int(match.group(1))].append(path.name)
    if not variants:
        raise DataError(
            f"{source}/data: no file named sample_variant<k>-*.parquet or sample<k>-*.parquet"
        )
    seeds: dict[int, set[str]] = defaultdict(set)
    for variant in sorted(variants):
        for name in variants[variant]:
            for row in parquet_rows(source, f"data/{name}"):
                seeds[variant].add(row.text("id"))
                yield SPLIT, convert_row(row, variant, images)
    every = set().union(*seeds.values())
    for variant in sorted(seeds):
        if missing := sorted(every - seeds[variant]):
            raise DataError(
                f"{source}/data: variant {variant} lacks seeds {missing[:5]} that other variants "
                f"have ({len(missing)} in all): the worst case needs every seed in every variant"
            )


def convert_row(row: Row, variant: int, images: ImageStore) -> Record:
    """One DynaMath row of variant ``variant`` as a canonical record (see the module
    docstring)."""
    seed = row.text("id")
    question = row.text("question", strip=False)
    answer = row.text("ground_truth")
    answer_type = row.text("answer_type")
    problem_type = PROBLEM_TYPES.get(answer_type, "free_form")
    options: list[str] = []
    if problem_type == "multiple_choice":
        options = parse_options(question)
        if not options:
            raise row.error("field 'question' of a multiple-choice row lists no options")
        if answer not in LETTERS[: len(options)]:
            raise row.error(
                f"field 'ground_truth' {answer!r} is not one of the letters of the "
                f"{len(options)} options"
            )
    elif problem_type == "numerical" and not _NUMBER.fullmatch(answer):
        raise row.error(f"field 'ground_truth' {answer!r} of a float row is not a number")
    return record(
        row,
        id=f"{seed}-v{variant}",
        images=[images.save(row.field("decoded_image"), row, "decoded_image")],
        problem=question,
        answer=answer,
        problem_type=problem_type,
        options=options,
        data_source=DATA_SOURCE,
        task=row.text("subject"),
        groups={
            "seed": seed,
            "variant": str(variant),
            "knowledge_level": row.text("knowledge_level"),
        },
    )
