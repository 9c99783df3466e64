"""A scratch project for the GRPO timing scripts: config/ copied, 256 generated shapes training
records, and the tiny model built as the base_model stage builds it."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def tiny_project(prefix: str) -> Path:
    """Make the scratch project the working directory and ``$VLRL_ROOT``; return its root."""
    from vlrl.config import ShapesConfig, TinyModelConfig
    from vlrl.core import paths
    from vlrl.core.files import write_jsonl
    from vlrl.data.shapes import generate_split
    from vlrl.models.tiny import build_tiny_model
    from vlrl.stages.base_model import TINY_SEED, tiny_corpus

    work = Path(tempfile.mkdtemp(prefix=prefix))
    shutil.copytree(REPO / "config", work / "config")
    os.chdir(work)
    os.environ["VLRL_ROOT"] = str(work)
    data = paths.data_dir("tiny_shapes")
    data.mkdir(parents=True)
    records = generate_split(ShapesConfig(), "train", 256, seed=0, out_dir=data)
    write_jsonl(data / "train.jsonl", [r.model_dump() for r in records])
    build_tiny_model(
        TinyModelConfig(), tiny_corpus(), paths.model_resource("tiny-qwen2.5-vl"), seed=TINY_SEED
    )
    return work
