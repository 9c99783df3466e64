"""MME: ``lmms-lab/MME`` (the hub now redirects it to ``lmms-lab-encoder/MME``), config
``default``, split ``test``: 2,374 yes/no questions, two on each image, in four parquet files
``data/test-0000N-of-00004-<hash>.parquet``.

Raw schema (``datasets`` features):

- ``question_id``: string, the image's path in MME, e.g. ``code_reasoning/0020.png``; the two
  questions of one image share it;
- ``image``: ``datasets.Image`` (parquet struct ``{bytes, path}``);
- ``question``: string ending in ``" Please answer yes or no."``, MME's own instruction;
- ``answer``: ``"Yes"`` | ``"No"``;
- ``category``: one of the 14 subtasks: perception ``existence``, ``count``, ``position``,
  ``color``, ``posters``, ``celebrity``, ``scene``, ``landmark``, ``artwork``, ``OCR``;
  cognition ``commonsense_reasoning``, ``numerical_calculation``, ``text_translation``,
  ``code_reasoning``.

Ported from lmms-eval ``lmms_eval/tasks/mme/utils.py`` (commit 75571cfe) and VLMEvalKit
``vlmeval/dataset/utils/yorn.py::MME_rating``:

- ``problem`` = ``question.strip()``, keeping ``" Please answer yes or no."``: this is
  ``mme_doc_to_text`` with empty pre- and post-prompts (its ``plm`` setting), and the text
  VLMEvalKit sends (``Qwen2VLPromptMixin``: "MME has it's own prompt"). lmms-eval's default
  setting removes the sentence only to append its own post-prompt ``"\\nAnswer the question using
  a single word or phrase."``; vlrl's prompt format adds no yes/no hint of its own;
- ``answer`` = ``answer.lower().strip().replace(".", "")`` (``mme_process_results``), which must
  be ``yes`` or ``no``; ``problem_type`` = ``yes_no``;
- ``task`` = ``category``; :data:`PERCEPTION` / :data:`COGNITION` are lmms-eval's
  ``eval_type_dict`` (VLMEvalKit calls the second ``reasoning``);
- ``groups`` = ``{"image": key}``, ``key`` the pair ``mme_aggregate_results`` groups by,
  (``category``, ``question_id``), written as ``question_id`` when it already begins with
  ``<category>/`` and as ``<category>/<question_id>`` otherwise. Every key must hold exactly two
  questions (lmms-eval asserts "MME only supports pairwise evaluation");
- ``id`` = ``<key>#<n>``, ``n`` = 0, 1 the question's place in the pair in file order.

Metric (both references): per category c, acc_c = share of its questions answered right and
acc+_c = share of its images with both questions right; score_c = 100 (acc_c + acc+_c);
perception = Σ over the 10 perception categories (max 2000), cognition = Σ over the 4
cognition categories (max 800).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "mme"
SPLIT = "test"
PATTERN = "data/test-*.parquet"
PERCEPTION = (
    "existence",
    "count",
    "position",
    "color",
    "posters",
    "celebrity",
    "scene",
    "landmark",
    "artwork",
    "OCR",
)
COGNITION = (
    "commonsense_reasoning",
    "numerical_calculation",
    "text_translation",
    "code_reasoning",
)
CATEGORIES = PERCEPTION + COGNITION
#: The sentence lmms-eval's ``mme_doc_to_text`` removes when it adds a pre- or post-prompt.
YES_NO_PROMPT = " Please answer yes or no."
PAIR = 2


def image_key(category: str, question_id: str) -> str:
    """The (category, question_id) pair lmms-eval's aggregation groups an image's questions by.

    >>> image_key("code_reasoning", "code_reasoning/0020.png")
    'code_reasoning/0020.png'
    >>> image_key("OCR", "0001.jpg")
    'OCR/0001.jpg'
    """
    prefix = f"{category}/"
    return question_id if question_id.startswith(prefix) else prefix + question_id


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("test", record) for every row, after checking that every image has its two
    questions."""
    pairs: dict[str, list[Row]] = {}
    records: list[Record] = []
    for row in parquet_rows(source, PATTERN):
        rec = convert_row(row, images)
        key = rec.groups["image"]
        pair = pairs.setdefault(key, [])
        if len(pair) == PAIR:
            where = ", ".join(r.where for r in pair)
            raise row.error(f"is a third question on image {key!r} (the others: {where})")
        records.append(rec.model_copy(update={"id": f"{key}#{len(pair)}"}))
        pair.append(row)
    for key, pair in pairs.items():
        if len(pair) != PAIR:
            raise pair[0].error(
                f"is the only question on image {key!r}; MME asks two on each image "
                "(lmms-eval: 'MME only supports pairwise evaluation')"
            )
    for rec in records:
        yield SPLIT, rec


def convert_row(row: Row, images: ImageStore) -> Record:
    """One MME row as a canonical record (its id is set by :func:`convert`)."""
    category = row.text("category", strip=False).strip()
    if category not in CATEGORIES:
        raise row.error(f"field 'category' is {category!r}, not one of MME's 14 subtasks")
    question_id = row.text("question_id", strip=False).strip()
    answer = row.text("answer", strip=False).lower().strip().replace(".", "")
    if answer not in ("yes", "no"):
        raise row.error(f"field 'answer' is {row.data['answer']!r}, not Yes or No")
    key = image_key(category, question_id)
    return record(
        row,
        id=key,
        images=[images.save(row.field("image"), row, "image")],
        problem=row.text("question", strip=False).strip(),
        answer=answer,
        problem_type="yes_no",
        data_source=DATA_SOURCE,
        task=category,
        groups={"image": key},
    )
