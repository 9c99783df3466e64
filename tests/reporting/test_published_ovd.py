"""VLM-R1's OVD tables as config/reference/vlm_r1_ovd.yaml holds them (arXiv:2504.07615v2 Tables
3-4): every printed number, the columns mapped to the ovdeval and coco_filtered metrics, and
Table 4's Overall reproduced by the ovdeval benchmark's overall formula (the mean of OVDEval's five
aspects) from each row's own columns."""

from __future__ import annotations

import pytest

from vlrl.benchmarks import load_benchmark
from vlrl.reporting.published import load_reference, reference_problems

SUB_TASKS = ["Celebrity", "Logo", "Landmark", "Color", "Material", "Position", "Relationship",
             "Negation"]  # fmt: skip
TABLE_4 = {
    "qwen2_5_vl_3b": [13.2, 26.5, 21.3, 2.9, 11.6, 47.9, 13.1, 38.7, 25.46],
    "qwen2_5_vl_7b": [48.4, 35.8, 44.6, 3.0, 10.5, 40.5, 16.2, 39.0, 29.08],
    "sft_3b": [50.4, 34.9, 50.7, 4.3, 7.6, 33.7, 13.1, 34.4, 26.50],
    "rl_3b": [55.0, 34.6, 47.9, 4.5, 9.7, 42.9, 21.5, 37.7, 31.01],
}
TABLE_3 = {
    "qwen2_5_vl_3b": [14.2, 56.06, 33.79],
    "qwen2_5_vl_7b": [14.4, 54.73, 33.36],
    "sft_3b": [18.5, 53.15, 39.4],
    "rl_3b": [21.1, 67.34, 43.84],
}


def test_the_reference_is_valid_and_holds_tables_3_and_4() -> None:
    assert reference_problems("vlm_r1_ovd") == []
    reference = load_reference("vlm_r1_ovd")
    for row_id, values in TABLE_4.items():
        columns = [f"OVDEval {t}" for t in SUB_TASKS] + ["OVDEval Overall"]
        assert [reference.row(row_id).values[c] for c in columns] == values, row_id
    for row_id, values in TABLE_3.items():
        columns = ["COCO_filtered mAP", "COCO_filtered GP", "COCO_filtered GR"]
        assert [reference.row(row_id).values[c] for c in columns] == values, row_id
    assert reference.protocol.scoring == "vlm_r1_ovd"
    assert {c.benchmark for c in reference.columns.values()} == {"ovdeval", "coco_filtered"}


@pytest.mark.parametrize("row_id", list(TABLE_4))
def test_the_overall_formula_reproduces_table_4(row_id: str) -> None:
    """ovdeval's overall, computed from the row's eight printed columns, is its printed Overall
    to the hundredth (the mean of the eight columns is not)."""
    *columns, overall = TABLE_4[row_id]
    values = dict(zip([t.lower() for t in SUB_TASKS], columns, strict=True))
    for spec in load_benchmark("ovdeval").metrics:
        if spec.kind == "mean_of":
            values[spec.name] = sum(values[m] for m in spec.of) / len(spec.of)
    assert round(values["overall"], 2) == overall
    assert round(sum(columns) / 8, 2) != overall
