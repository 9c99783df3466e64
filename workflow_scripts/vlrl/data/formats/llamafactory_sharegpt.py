r"""Vision-SR1's cold-start SFT data, ``LMMs-Lab-Turtle/Vision-SR1-Cold-9K``, in LLaMA-Factory's
files → one record per conversation, split ``train``, each keeping its assistant turn verbatim
(``Record.response``).

Read as ``zli12321/Vision-SR1`` @ 4480e08 registers and trains it:
``LLaMA-Factory-Cold-Start/data/dataset_info.json`` registers ``vision_see_think``
(``A-vision_see_think.json``) and ``vision_reasoner`` (``A-vision_reasoner.json``) as
``"formatting": "sharegpt"``, ``"columns": {"messages": "messages", "images": "images"}``,
``"tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
"assistant_tag": "assistant"}``, and ``caption_reasoners(text)``
(``A-caption_reasoners(text).json``) with no settings, i.e. alpaca (``instruction``, ``input``,
``output``); ``examples/train_full/Vision-SR1-Cold-Start.yaml`` trains on all three.
``download-sft-data.py`` downloads the whole hub repository into that ``data`` folder, which is
LLaMA-Factory's ``media_dir`` (``hparams/data_args.py``: ``media_dir`` defaults to
``dataset_dir``), so an image path such as ``cold_start/4384.jpg`` is relative to the folder of
the json files. How LLaMA-Factory reads a row (``src/llamafactory/data/converter.py``):
sharegpt turns alternate user / assistant (else the row is skipped); the last turn is the
response; alpaca's user turn is ``instruction`` and ``input`` joined by a newline (each only when
non-empty) and ``output`` is the response; ``mm_plugin.py`` ``_validate_input`` requires as many
``<image>`` tokens in the turns as images.

Mapping to :class:`vlrl.items.records.Record`, one per row, in file order, split ``train``: ``id`` =
``<subset>-<position>``; ``task`` = the subset (``vision_see_think``, ``vision_reasoner``,
``caption_reasoners(text)``); ``turns`` = a sharegpt row's conversation verbatim, every round,
``<image>`` tags where they are (what SFT trains on, as LLaMA-Factory read it: a first ``system``
turn is ``system``, the system prompt); ``problem`` = the first user turn, ``<image>`` tokens
removed and the ends stripped (for reports; the Vision-SR1 user turns carry their format
instructions, which stay); ``response`` = the last assistant turn verbatim; ``images`` = the
row's pictures, stored once each; ``answer`` = the final answer of the response: the last
``\boxed{}`` (mathruler's ``extract_boxed_content``, the extraction Vision-SR1's reward uses),
else the last ``<answer>…</answer>``, else the whole response stripped (SFT trains on the turns,
not on the answer: such a record is no evaluation item); ``problem_type`` and ``options`` from
that answer as :func:`vlrl.data.formats.easyr1.answer_kind` reads it; ``data_source`` =
``vision_sr1_cold_9k``. An alpaca row is one round (no ``turns``): ``problem`` as above from its
user turn, ``response`` its output.

Rejected rows (named by ``id``), each saying why: what LLaMA-Factory skips itself (sharegpt turns
that do not alternate user or observation with assistant or function call after an optional
first system turn, an odd number of them, no round at all), what would stop its training (an
image file that is missing, as a user of the release finds for ~6K of the 9K vision rows:
zli12321/Vision-SR1 issue 9, or unreadable; ``<image>`` tokens that do not match the images;
a turn that is not text), and what a vlrl record cannot be without: a first user turn holding
nothing but ``<image>`` tokens, an empty last assistant turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, RowError, record
from vlrl.data.formats.easyr1 import IMAGE_TOKEN, answer_kind, read_image_file
from vlrl.items.records import Record

DATA_SOURCE = "vision_sr1_cold_9k"
SPLIT = "train"
#: Subset (dataset_info.json name) → (file name, LLaMA-Factory formatting).
SUBSETS = {
    "vision_see_think": ("A-vision_see_think.json", "sharegpt"),
    "vision_reasoner": ("A-vision_reasoner.json", "sharegpt"),
    "caption_reasoners(text)": ("A-caption_reasoners(text).json", "alpaca"),
}
#: The registered sharegpt columns and tags.
MESSAGES, IMAGES = "messages", "images"
ROLE, CONTENT, USER, ASSISTANT = "role", "content", "user", "assistant"
#: alpaca's default columns (parser.py DatasetAttr: prompt, query, response).
INSTRUCTION, INPUT, OUTPUT = "instruction", "input", "output"
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("train", record) for every row of the three files, subset by subset; a row that
    cannot be converted is yielded as a :class:`RowError` carrying its id."""
    for task, (name, formatting) in SUBSETS.items():
        path = find_file(source, name)
        rel = path.relative_to(source).as_posix()
        for index, item in enumerate(read_rows(path, rel)):
            row = Row(rel, index, item)
            rid = f"{task}-{index}"
            try:
                if not isinstance(item, dict):
                    raise row.error(f"is a {type(item).__name__}, not an object")
                if formatting == "sharegpt":
                    system, turns, files = sharegpt_turns(row)
                else:
                    user, response, files = alpaca_turns(row)
                    system, turns = (
                        None,
                        [{ROLE: USER, CONTENT: user}, {ROLE: ASSISTANT, CONTENT: response}],
                    )
                kept = turns if formatting == "sharegpt" else None
                yield (
                    SPLIT,
                    to_record(row, rid, task, system, turns, files, path.parent, images, kept=kept),
                )
            except RowError as exc:
                yield SPLIT, RowError(str(exc), row_id=rid)


def find_file(source: Path, name: str) -> Path:
    """The one file named ``name`` under ``source``, wherever it lies."""
    found = sorted(p for p in source.rglob("*") if p.name == name and p.is_file())
    if len(found) != 1:
        what = "no file" if not found else f"several files {[str(p) for p in found]}"
        raise DataError(f"{source}: {what} named {name!r} (Vision-SR1-Cold-9K's {name})")
    return found[0]


def read_rows(path: Path, rel: str) -> list[Any]:
    """The json list of rows in ``path``."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{rel}: not valid json: {exc}") from None
    if not isinstance(rows, list):
        raise DataError(f"{rel}: holds a {type(rows).__name__}, not a list of rows")
    return rows


#: LLaMA-Factory's DatasetAttr defaults for the other roles (hparams/parser.py): the turns at
#: odd positions (after an optional system turn) are user or observation turns, the others
#: assistant or function-call turns (data/converter.py SharegptDatasetConverter).
SYSTEM, OBSERVATION, FUNCTION = "system", "observation", "function_call"
ODD_ROLES, EVEN_ROLES = (USER, OBSERVATION), (ASSISTANT, FUNCTION)


def sharegpt_turns(row: Row) -> tuple[str | None, list[dict[str, str]], list[str]]:
    """(system prompt, turns, image paths) of a sharegpt row, the turns as LLaMA-Factory's
    ``SharegptDatasetConverter`` accepts them (a row it would skip is an error saying so)."""
    messages = row.field(MESSAGES)
    if not isinstance(messages, list) or not messages:
        raise row.error(f"field {MESSAGES!r} must be a non-empty list of turns: {messages!r}")
    for index, turn in enumerate(messages):
        if not isinstance(turn, dict) or not isinstance(turn.get(CONTENT), str):
            raise row.error(f"turn {index} must be {{{ROLE!r}: ..., {CONTENT!r}: text}}: {turn!r}")
    system = None
    if messages[0].get(ROLE) == SYSTEM:
        system, messages = messages[0][CONTENT], messages[1:]
    roles = [m.get(ROLE) for m in messages]
    for index, role in enumerate(roles):
        allowed = EVEN_ROLES if index % 2 else ODD_ROLES
        if role not in allowed:
            raise row.error(
                f"turn {index} has role {role!r} where LLaMA-Factory reads one of {allowed} "
                f"(turns {roles}): it skips such a row"
            )
    if not roles or len(roles) % 2:
        raise row.error(f"has {len(roles)} turns {roles}: LLaMA-Factory skips an odd count or none")
    turns = [{ROLE: m[ROLE], CONTENT: m[CONTENT]} for m in messages]
    files = row.data.get(IMAGES) or []
    if isinstance(files, str):
        files = [files]  # LLaMA-Factory's _find_medias takes a single path too
    if not isinstance(files, list) or not all(isinstance(f, str) and f.strip() for f in files):
        raise row.error(f"field {IMAGES!r} must be a list of image paths: {files!r}")
    return system, turns, files


def alpaca_turns(row: Row) -> tuple[str, str, list[str]]:
    """(user turn, assistant turn, no images) of an alpaca row, as LLaMA-Factory joins them."""
    parts = []
    for name in (INSTRUCTION, INPUT):
        value = row.data.get(name)
        if value is not None and not isinstance(value, str):
            raise row.error(f"field {name!r} must be a string: {value!r}")
        if value:
            parts.append(value)
    user = "\n".join(parts)
    if not user.strip():
        raise row.error(f"the user turn is empty (fields {INSTRUCTION!r} and {INPUT!r})")
    response = row.data.get(OUTPUT)
    if not isinstance(response, str) or not response.strip():
        raise row.error(f"the assistant turn is missing: field {OUTPUT!r} is {response!r}")
    return user, response, []


def final_answer(response: str) -> str | None:
    r"""The response's final answer: the last ``\boxed{}``, else the last ``<answer>…</answer>``,
    stripped; None when it has neither (or they are empty).

    >>> final_answer("<think>so</think>\\boxed{\\frac{1}{2}}"), final_answer("<answer>B</answer>")
    ('\\frac{1}{2}', 'B')
    >>> final_answer("it is red") is None
    True
    """
    from mathruler.grader import extract_boxed_content

    boxed = extract_boxed_content(response)
    if boxed != "None" or "\\boxed{None}" in response:
        return boxed.strip() or None
    tags = _ANSWER_TAG.findall(response)
    return (tags[-1].strip() or None) if tags else None


def to_record(
    row: Row,
    rid: str,
    task: str,
    system: str | None,
    turns: list[dict[str, str]],
    files: list[str],
    media_dir: Path,
    images: ImageStore,
    *,
    kept: list[dict[str, str]] | None = None,
) -> Record:
    """The record of one conversation (see the module docstring); ``kept``: the turns it keeps
    verbatim for SFT."""
    tokens = sum(turn[CONTENT].count(IMAGE_TOKEN) for turn in turns)
    if tokens != len(files):
        raise row.error(
            f"its turns have {tokens} {IMAGE_TOKEN} tokens but the row has {len(files)} images "
            "(LLaMA-Factory needs one per image)"
        )
    problem = turns[0][CONTENT].replace(IMAGE_TOKEN, "").strip()
    if not problem:
        raise row.error(f"the user turn holds nothing but {IMAGE_TOKEN} tokens")
    response = turns[-1][CONTENT]
    if not response.strip():
        raise row.error(f"the last {ASSISTANT} turn is empty")
    answer = final_answer(response) or response.strip()
    pictures = [
        images.save(read_image_file(media_dir, f, row, f"{IMAGES}[{i}]"), row, f"{IMAGES}[{i}]")
        for i, f in enumerate(files)
    ]
    problem_type, options = answer_kind(problem, answer)
    return record(
        row,
        id=rid,
        images=pictures,
        problem=problem,
        answer=answer,
        problem_type=problem_type,
        options=options,
        response=response,
        turns=kept,
        system=system if kept is not None else None,
        data_source=DATA_SOURCE,
        task=task,
    )
