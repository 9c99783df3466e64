"""Small datasets in each paper's released training-data layout, for the recipes' smoke variants.

Each ``config/experiments/<recipe>_smoke.yaml`` trains on a ``config/datasets/smoke_<format>.yaml``
dataset: a user-provided (``local``) folder, ``data/smoke/<format>/``, holding a few rows written
here in the real layout of that recipe's data (zip members and COCO pictures for VLM-R1, parquet
with image bytes for EasyR1, json + picture folders for SophiaVL and the LLaMA-Factory cold start,
ms-swift jsonl for VQA-Verify), by the fixture writers of the formats' own tests. The download
stage copies and converts them with the real format module, as it would the released files.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

TESTS = Path(__file__).resolve().parent
FORMAT_TESTS = TESTS / "data" / "formats"

#: Smoke dataset (``config/datasets/<name>.yaml``) → the format whose fixture it holds.
SMOKE_DATASETS = {
    "smoke_vlm_r1_rec_train": "vlm_r1_rec_train",
    "smoke_vlm_r1_ovd": "vlm_r1_ovd",
    "smoke_vlm_r1_jsonl": "vlm_r1_jsonl",
    "smoke_vision_sr1_cold_9k": "llamafactory_sharegpt",
    "smoke_vision_sr1_47k": "easyr1",
    "smoke_sophiavl_r1_130k": "sophiavl_r1",
    "smoke_vqa_verify": "vqa_verify",
}


def _format_test(fmt: str):
    path = FORMAT_TESTS / f"test_{fmt}.py"
    spec = importlib.util.spec_from_file_location(f"smoke_fixture_{fmt}", path)
    assert spec and spec.loader, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rec_train(root: Path) -> None:
    """VLM-R1's REC release (rec_jsons_processed.zip, train2014.zip) with four rows per train
    file: the dataset config's expected_rows says so, in place of the released counts."""
    test = _format_test("vlm_r1_rec_train")
    texts = {name: test.lines(test.good_rows(name.split("_")[0])) for name in test.RELEASED}
    test.write_release(root, texts)


def builder(fmt: str) -> Callable[[Path], None]:
    """The function that writes format ``fmt``'s smoke fixture into a folder."""
    if fmt == "vlm_r1_rec_train":
        return _rec_train
    return getattr(_format_test(fmt), f"write_{fmt}_fixture")


def write_smoke_datasets(project: Path) -> list[Path]:
    """Write every smoke dataset's folder under ``project/data/smoke/``; returns them."""
    written = []
    for fmt in dict.fromkeys(SMOKE_DATASETS.values()):
        folder = project / "data" / "smoke" / fmt
        folder.mkdir(parents=True, exist_ok=True)
        builder(fmt)(folder)
        written.append(folder)
    return written
