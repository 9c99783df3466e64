"""MM-Vet: ``lmms-lab/MMVet`` (config ``default``, split ``test``, 218 rows in
``data/test-00000-of-00001.parquet``), the lmms-eval copy of the authors' ``mm-vet.json`` +
images (github.com/yuweihao/MM-Vet). lmms-eval's ``mmvet`` task read it until its dataset path
moved to ``lmms-lab-encoder/MMVet`` (lmms-eval 4be7ee0e, 2026-07-30, "migrate dataset paths").

Raw fields, as lmms-eval ``lmms_eval/tasks/mmvet/utils.py`` reads them (the card's
``dataset_info`` could not be read here; other columns are ignored):

- ``question_id``: string, "v1_0".."v1_217" (the keys of ``mm-vet.json``);
- ``image``: image (parquet struct ``{bytes, path}``);
- ``question``: string;
- ``answer``: string, the reference; ``<AND>`` joins parts that must all be present, ``<OR>``
  alternatives of which one suffices (e.g. "-1<AND>-5");
- ``capability``: string, the comma-separated capabilities the question needs, among rec, ocr,
  know, gen, spat, math (``mmvet_aggregate_results`` does ``capabilities.split(",")``; in
  ``mm-vet.json`` it is a list, which is accepted too).

Mapping to :class:`vlrl.items.records.Record`, ported from lmms-eval ``tasks/mmvet/utils.py``
(commit 75571cfe) and the authors' ``mm-vet_evaluator.py``:

- ``id`` = question_id; ``images`` = [image]; ``data_source`` = "mmvet";
- ``problem`` = the bare question. lmms-eval's ``doc_to_text`` prepends the task's pre-prompt
  ("First please perform reasoning, and think step by step to provide best answer to the
  following question: \\n\\n"), a model-specific prompt vlrl's prompt format replaces; the
  authors' inference scripts send the question alone;
- ``answer`` = the reference as on the hub, ``<AND>`` / ``<OR>`` kept: the grader reads them;
- ``problem_type`` = ``free_form``;
- ``task`` = the capability integration, its capabilities in the order of :data:`CAPABILITIES`
  joined by "," ("rec,know,gen"): the paper's 16 integrations. The per-capability scores (an
  item counts toward each of its capabilities) are not a single-label breakdown.

Scoring is the GPT-4 grader, not a rule: the authors' few-shot table followed by the item as a
table row (:data:`vlrl.scoring.judge_prompts.MMVET_GRADER` and ``mmvet_query``, which
``config/benchmarks/mmvet.yaml`` names as the benchmark's judge prompt); the grader completes the
last cell with a correctness score 0.0-1.0; the benchmark score is the mean x 100 (per capability:
the mean over the items that need it). Authors' settings (``mm-vet_evaluator.py``): ``gpt-4-0613``,
``temperature=0``, ``max_tokens=3``; the reply's first space-separated token must parse as a float
in [0, 1], else the query is retried with "\\nPredict the correctness of the answer (digit): "
appended and the temperature raised by 0.5, and after 5 tries the score is 0.0; the paper averages
5 grading runs (``--num_run``, "we set it as 5 in the paper") and reports their std.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "mmvet"
SPLIT = "test"
PATTERN = "data/test-*.parquet"
#: MM-Vet's six core capabilities, in the order of lmms-eval's ``cap_columns``.
CAPABILITIES = ("rec", "ocr", "know", "gen", "spat", "math")


def capability_task(row: Row) -> str:
    """The row's capabilities in :data:`CAPABILITIES` order, joined by ","."""
    value = row.field("capability")
    if isinstance(value, str):
        names = [name.strip() for name in value.split(",")]
    elif isinstance(value, list) and all(isinstance(name, str) for name in value):
        names = [name.strip() for name in value]
    else:
        raise row.error(f"field 'capability' must be a string or a list of strings: {value!r}")
    unknown = [name for name in names if name not in CAPABILITIES]
    if unknown or not names:
        raise row.error(
            f"field 'capability' {value!r} names {unknown or 'nothing'}, not among "
            f"{list(CAPABILITIES)}"
        )
    return ",".join(name for name in CAPABILITIES if name in names)


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield ("test", record) for every row of ``data/test-*.parquet``."""
    for row in parquet_rows(source, PATTERN):
        yield SPLIT, convert_row(row, images)


def convert_row(row: Row, images: ImageStore) -> Record:
    """One MM-Vet row as a canonical record (see the module docstring)."""
    question_id = row.field("question_id")
    if not isinstance(question_id, str | int) or isinstance(question_id, bool):
        raise row.error(f"field 'question_id' must be a string: {question_id!r}")
    return record(
        row,
        id=str(question_id).strip(),
        images=[images.save(row.field("image"), row, "image")],
        problem=row.text("question", strip=False).strip(),
        answer=row.text("answer", strip=False).strip(),
        problem_type="free_form",
        data_source=DATA_SOURCE,
        task=capability_task(row),
    )
