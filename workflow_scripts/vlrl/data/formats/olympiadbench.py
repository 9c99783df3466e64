r"""OlympiadBench: ``Hothan/OlympiadBench``, the authors' hub copy (github.com/OpenBMB/OlympiadBench
links it), one config per subset, each a single split ``train`` in
``OlympiadBench/<subset>/<subset>.parquet``. The open-ended subsets ``OE_<MM|TO>_<maths|physics>_
<en|zh>_<COMP|CEE>`` are converted, each present one into the split of its name
(``OE_MM_maths_en_COMP`` → ``records/OE_MM_maths_en_COMP.jsonl``); the theorem-proving ``TP_*``
subsets have no final answer and are not read.

Which subset: SATORI-R1's table (OlympiadBench 10.3 / 13.5 for Qwen2.5-VL-3B / SATORI-3B, 20.2
for Qwen2.5-VL-7B) has for Qwen2.5-VL-7B and GPT-4o the numbers of the MM-Eureka-style tables
(Qwen2.5-VL-7B: MathVista 68.2, MathVerse 47.9, MathVision 25.4, OlympiadBench 20.2, WeMath
62.1), and MM-Eureka's evaluation (github.com/ModalMinds/MM-EUREKA
``eval/olympiadbench/evaluate_olympiadbench.py``, branch ``qwen``, bccddd78) loads
``Hothan/OlympiadBench`` config ``OE_MM_maths_en_COMP`` (150 multimodal English competition
maths problems) and lets gpt-4o judge the whole response against the answer. lmms-eval's
``olympiadbench_OE_MM_maths_en_COMP`` task is the same subset (a gpt-4o judge too). VLMEvalKit's
``OlympiadBench`` (``vlmeval/dataset/image_vqa.py``), which SATORI's fork has, is a TSV of the
ten OE subsets (multimodal and text-only; "AVG" over all of them, and per subset), scored by
rule (``MathJudger``); which of its numbers SATORI's own 3B entries are was not found.

Raw schema (the dataset card's ``dataset_info``, as copies of it show):

- ``id``: int64; ``question``: string, with ``<image_1>`` … placeholders (kept, as VLMEvalKit
  sends them); ``context``: string or null (physics: a shared setting);
- ``final_answer``: list of strings, ``["$\\frac{1}{2}$"]``; the authors' judge reads only its
  first string, which holds all of a problem's answers, comma-separated, when it has several;
  ``solution``: list of strings (unused);
- ``image_1`` … ``image_5``: image or null (parquet struct ``{bytes, path}``);
- ``is_multiple_answer``: bool (null read as false); ``answer_type``: string, ``Numerical``,
  ``Expression``, ``Equation``, ``Interval``, ``Tuple`` or several joined by ","; ``unit``:
  string or null; ``error``: string or null, the numerical tolerance ("1e-2", "0.1,0.2" per
  answer);
- ``subfield``: string ("Geometry", "Algebra", "Combinatorics", "Number Theory", …);
  ``modality``, ``difficulty``, ``question_type``, ``subject``, ``language``: strings (unused:
  the subset's name says language and subject, as VLMEvalKit reads them from ``source``).

Mapping to :class:`vlrl.items.records.Record`, ported from VLMEvalKit
``vlmeval/dataset/image_vqa.py::OlympiadBench.build_prompt`` and
``vlmeval/dataset/utils/olympiadbench.py::get_answer_type_text`` / ``make_input`` (commit
e8e78f05; the same in SATORI-R1's fork, 8857b30f):

- ``problem`` = VLMEvalKit's instruction + "\\n" + the question (physics: context + "\\n" +
  question when there is a context), the instruction without its last sentence, the
  answer-format directive ``Please end your solution with "So the final answer is
  \boxed{answer}." and give the result explicitly[, note that the unit of the answer should not
  be included in \boxed{}].`` (Chinese: ``请在最后以"所以最终答案是\boxed{答案}。"显式给出结果…``),
  which vlrl's prompt format replaces (:func:`instruction`);
- ``images`` = the non-null ``image_1`` … ``image_5`` in order (a multimodal subset needs one);
- ``answer`` = ``final_answer[0]``: the authors' ``inference/judge.py`` and lmms-eval's
  ``olympiadbench/en_utils.py`` judge against ``final_answer[0]``, VLMEvalKit against the TSV's
  ``final_answer[2:-2]`` (the same string for a one-element list); MM-Eureka's and lmms-eval's
  gpt-4o prompts join all the strings with newlines;
- ``problem_type`` = ``numerical`` when vlrl's numerical rule (an equal number, else Math-Verify)
  accepts the answer as its own prediction, i.e. it can read it (numbers, fractions, radicals,
  intervals, LaTeX expressions; :func:`is_decidable`); the answer is then kept as on the hub,
  ``$`` delimiters included, which Math-Verify's LaTeX reader needs. Otherwise ``free_form``
  (the rule's plain-text guard refuses spans with several bare numbers: ``$2 n+1$``,
  ``$y=2 x+1$``, ``$x=1$, $x=2$``), the answer without its ``$`` signs, as
  ``MathJudger.preprocess`` drops them;
- ``id`` = id; ``task`` = subfield; ``data_source`` = "olympiadbench".

Scoring in the references, beyond the generic rules: ``MathJudger.judge`` (VLMEvalKit
``utils/olympiadbench.py``, ported from the authors' ``inference/code/math_judger.py``) takes
the text after the last "So the final answer is", the contents of every ``\boxed{}``, splits
both answers at top-level commas, expands ``\pm``, pairs the parts in any order, and compares
each pair as intervals, then numbers within the row's ``error`` tolerance (default 1e-8,
absolute; x/100 and x·100 accepted as percentages), then sympy expressions, then equations. The
tolerance, the percentage forms, the unordered multi-answer pairing and ``\pm`` are not in the
generic rules; MM-Eureka's and lmms-eval's numbers come from a gpt-4o judge instead.

Scoring here: the gold of a free_form row has lost its ``$`` signs and a response's answer may
keep them (``$2 n+1$``), so a string comparison of the two can fail on an identical answer;
:func:`vlrl.scoring.maths.equivalent` (:func:`~vlrl.scoring.maths.equivalent_match`) drops the
``$`` of both and compares the maths, and is the rule for these rows. SATORI-R1's judge is
:func:`vlrl.scoring.maths.olympiad_satori`; it judges every answer at the default 1e-8, as the
records do not carry the ``error`` column.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from vlrl.core.errors import DataError
from vlrl.data.formats import ImageStore, Row, parquet_rows, record
from vlrl.items.records import Record

DATA_SOURCE = "olympiadbench"
#: The open-ended subsets (VLMEvalKit's ``name_list``); each is a split of its own.
SUBSETS = (
    "OE_MM_maths_en_COMP",
    "OE_MM_maths_zh_CEE",
    "OE_MM_maths_zh_COMP",
    "OE_MM_physics_en_COMP",
    "OE_MM_physics_zh_CEE",
    "OE_TO_maths_en_COMP",
    "OE_TO_maths_zh_CEE",
    "OE_TO_maths_zh_COMP",
    "OE_TO_physics_en_COMP",
    "OE_TO_physics_zh_CEE",
)
IMAGE_FIELDS = tuple(f"image_{i}" for i in range(1, 6))
ANSWER_TYPES = ("Numerical", "Expression", "Equation", "Interval")
_ENGLISH_TYPES = {
    "Numerical": "a numerical value",
    "Expression": "an expression",
    "Equation": "an equation",
    "Interval": "an interval",
}
_CHINESE_TYPES = {
    "Numerical": "数值",
    "Expression": "表达式",
    "Equation": "方程",
    "Interval": "区间",
}


def pattern(subset: str) -> str:
    """The hub file(s) of a subset.

    >>> pattern("OE_MM_maths_en_COMP")
    'OlympiadBench/OE_MM_maths_en_COMP/*.parquet'
    """
    return f"OlympiadBench/{subset}/*.parquet"


def _single_type_text(answer_type: str, chinese: bool) -> str | None:
    """VLMEvalKit ``get_single_answer_type_text`` (None where it exits)."""
    answer_type = answer_type.split("-")[0]
    for name in ANSWER_TYPES:
        if name in answer_type:
            return (_CHINESE_TYPES if chinese else _ENGLISH_TYPES)[name]
    return None


def answer_type_text(answer_type: str, chinese: bool, multiple: bool) -> str | None:
    """VLMEvalKit ``get_answer_type_text``, verbatim (its "The answer of The problem" included);
    None for an answer type it cannot read (it exits there).

    >>> answer_type_text("Numerical", False, False)
    'The answer of The problem should be a numerical value. '
    >>> answer_type_text("Numerical,Interval", False, True).endswith(
    ...     "in order being a numerical value, an interval. ")
    True
    >>> answer_type_text("Tuple", False, True), answer_type_text("Expression", True, False)
    ('', '，答案类型为表达式')
    """
    if "Need_human_evaluate" in answer_type or "Tuple" in answer_type:
        return ""
    if not multiple:
        text = _single_type_text(answer_type, chinese)
        if text is None:
            return None
        return f"，答案类型为{text}" if chinese else f"The answer of The problem should be {text}. "
    parts = answer_type.split(",")
    texts = [t for t in (_single_type_text(part, chinese) for part in parts) if t is not None]
    if len(texts) != len(parts):
        return None
    if len(set(texts)) == 1:
        if chinese:
            return f"，题目有多个答案，答案类型均为{texts[0]}"
        return f"The problem has multiple answers, each of them should be {texts[0]}. "
    if chinese:
        return f"，题目有多个答案，答案类型分别为{'、'.join(texts)}"
    return f"The problem has multiple answers, with the answers in order being {', '.join(texts)}. "


def instruction(subset: str, type_text: str) -> str:
    """VLMEvalKit ``OlympiadBench.build_prompt``'s open-ended prompt up to, not including, its
    answer-format sentence ("Please end your solution with …\\boxed{…}").

    >>> instruction("OE_MM_maths_en_COMP", "").split(". ")[0]
    'The following is an open-ended problem from an International Math competition'
    >>> instruction("OE_MM_physics_zh_CEE", "，答案类型为数值")
    '以下是中国物理竞赛中的解答题，答案类型为数值。请根据题目的要求和所提供的信息计算得出答案。解答过程和结果中使用的变量和公式请使用LaTeX格式表示。'
    """
    math = "maths" in subset
    if "zh" in subset:
        return (
            f"以下是中国{'数学' if math else '物理'}竞赛中的解答题{type_text}。"
            "请根据题目的要求和所提供的信息计算得出答案。"
            "解答过程和结果中使用的变量和公式请使用LaTeX格式表示。"
        )
    return (
        "The following is an open-ended problem from an International "
        f"{'Math' if math else 'Physics'} competition. {type_text}Please calculate the answer "
        "according to the given requirements and the information provided. Please use LaTeX "
        "format to represent the variables and formulas used in the solution process and results."
    )


def is_decidable(answer: str) -> bool:
    """Whether vlrl's numerical rule accepts ``answer`` as its own prediction: Math-Verify (or
    the single-number match) can read it, so the item is scored ``numerical``. Like
    :func:`vlrl.scoring.rules.score_item`, call it from the main thread (Math-Verify's timeouts
    use ``signal.alarm``), as the download stage does.

    >>> is_decidable("$\\\\frac{1}{2}$"), is_decidable("$2 n+1$"), is_decidable("$x=1$, $x=2$")
    (True, False, False)
    """
    from vlrl.scoring.rules import score_item

    return score_item(f"<answer>{answer}</answer>", answer, "numerical")[2] == 1


def convert(source: Path, images: ImageStore) -> Iterator[tuple[str, Record]]:
    """Yield (subset, record) for the rows of each open-ended subset present under ``source``."""
    present = [subset for subset in SUBSETS if any(source.glob(pattern(subset)))]
    if not present:
        raise DataError(
            f"{source}: no file matches any of {[pattern(s) for s in SUBSETS]} (the open-ended "
            "OlympiadBench subsets)"
        )
    for subset in present:
        for row in parquet_rows(source, pattern(subset)):
            yield subset, convert_row(row, images, subset)


def _optional_text(row: Row, name: str) -> str | None:
    value = row.field(name, allow_empty=True)
    if value is not None and not isinstance(value, str):
        raise row.error(f"field {name!r} must be a string or null: {value!r}")
    return value.strip() if value and value.strip() else None


def _final_answer(row: Row) -> str:
    value = row.field("final_answer")
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise row.error(f"field 'final_answer' must be a non-empty list of strings: {value!r}")
    if not value[0].strip():
        raise row.error(f"field 'final_answer' starts with an empty answer: {value!r}")
    return value[0].strip()


def convert_row(row: Row, images: ImageStore, subset: str) -> Record:
    """One open-ended OlympiadBench row of ``subset`` as a canonical record (see the module
    docstring)."""
    item_id = row.field("id")
    if isinstance(item_id, bool) or not isinstance(item_id, int | str):
        raise row.error(f"field 'id' must be an integer: {item_id!r}")
    question = row.field("question")
    if not isinstance(question, str):
        raise row.error(f"field 'question' must be a string: {question!r}")
    answer_type = row.field("answer_type")
    if not isinstance(answer_type, str):
        raise row.error(f"field 'answer_type' must be a string: {answer_type!r}")
    multiple = row.field("is_multiple_answer", allow_empty=True)
    if multiple is not None and not isinstance(multiple, bool):
        raise row.error(f"field 'is_multiple_answer' must be a bool or null: {multiple!r}")
    type_text = answer_type_text(answer_type, "zh" in subset, bool(multiple))
    if type_text is None:
        raise row.error(
            f"field 'answer_type' {answer_type!r} names none of {list(ANSWER_TYPES)} (nor Tuple)"
        )

    # VLMEvalKit prepends a context to physics questions only, when the column has one
    context = (
        _optional_text(row, "context") if "physics" in subset and "context" in row.data else None
    )
    body = f"{context}\n{question}" if context else question
    saved = [
        images.save(row.data[name], row, name)
        for name in IMAGE_FIELDS
        if row.data.get(name) is not None
    ]
    if "_MM_" in subset and not saved:
        raise row.error(f"has no image in {list(IMAGE_FIELDS)}, in multimodal subset {subset}")

    answer = _final_answer(row)
    if is_decidable(answer):
        problem_type = "numerical"
    else:
        problem_type, answer = "free_form", answer.replace("$", "").strip()
        if not answer:
            raise row.error("field 'final_answer' holds only '$' signs")
    return record(
        row,
        id=str(item_id).strip(),
        images=saved,
        problem=f"{instruction(subset, type_text)}\n{body}",
        answer=answer,
        problem_type=problem_type,
        data_source=DATA_SOURCE,
        task=_optional_text(row, "subfield"),
    )
