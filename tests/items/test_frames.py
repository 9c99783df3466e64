"""The model-input frame, checked against the code that makes it: transformers' Qwen2-VL image
processor run on real images, and LLaMA-Factory's own image preprocessing run in its environment."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from PIL import Image
from sft_env import run_in_sft_env

from vlrl.items.frames import (
    llamafactory_input_size,
    llamafactory_preprocessed_size,
    processor_input_size,
    to_input_frame,
)
from vlrl.scoring.rules import rescale_box


def qwen_processor(min_pixels: int, max_pixels: int):
    """Qwen2.5-VL's image processor with the given pixel bounds (the real model's defaults are
    3136 and 12845056; smaller ones make the resize move more sides)."""
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor

    return Qwen2VLImageProcessor(min_pixels=min_pixels, max_pixels=max_pixels)


def sizes(seed: int, n: int, largest: int = 900) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    out = [(rng.randrange(1, largest), rng.randrange(1, largest)) for _ in range(n)]
    # sides of under 28 px, long thin pictures, exact multiples of the 28 px merge
    return [*out, (5, 300), (300, 9), (28, 28), (56, 840), (641, 427), (1, 150)]


@pytest.mark.parametrize("bounds", [(3136, 12845056), (3136, 200 * 200), (64 * 64, 128 * 128)])
def test_the_frame_is_the_processors_grid(bounds) -> None:
    processor = qwen_processor(*bounds)
    for width, height in sizes(sum(bounds), 25):
        image = Image.new("RGB", (width, height), "white")
        _, grid_h, grid_w = processor(images=[image], return_tensors="pt")["image_grid_thw"][0]
        expected = [int(grid_w) * 14, int(grid_h) * 14]
        assert processor_input_size(processor, width, height) == expected, (width, height)


def test_the_tiny_models_frame(tiny_processor) -> None:
    image = Image.new("RGB", (300, 97), "white")
    grid = tiny_processor.image_processor(images=[image], return_tensors="pt")["image_grid_thw"][0]
    got = processor_input_size(tiny_processor.image_processor, 300, 97)
    assert got == [int(grid[2]) * 14, int(grid[1]) * 14]


LLAMAFACTORY_FRAMES = """
import json, sys
from PIL import Image
from transformers import AutoProcessor
from llamafactory.data.mm_plugin import get_mm_plugin

request = json.load(sys.stdin)
plugin = get_mm_plugin("qwen2_vl", image_token="<|image_pad|>")
processor = AutoProcessor.from_pretrained(request["model"]).image_processor
out = []
for width, height in request["sizes"]:
    image = plugin._preprocess_image(
        Image.new("RGB", (width, height), "white"),
        image_max_pixels=request["max_pixels"], image_min_pixels=request["min_pixels"],
    )
    grid = processor(images=[image], return_tensors="pt")["image_grid_thw"][0]
    out.append([list(image.size), [int(grid[2]) * 14, int(grid[1]) * 14]])
print(json.dumps(out))
"""


@pytest.mark.parametrize("bounds", [(32 * 32, 768 * 768), (40 * 40, 150 * 150)])
def test_the_sft_frame_is_llamafactorys(tiny_model_dir: Path, tmp_path: Path, bounds) -> None:
    """LLaMA-Factory's own ``Qwen2VLPlugin._preprocess_image`` and the processor it hands the
    image to, run in the SFT environment on the tiny model (bounds 56² and 112²)."""
    from transformers import AutoImageProcessor

    min_pixels, max_pixels = bounds
    cases = sizes(max_pixels, 40, largest=1200)
    request = {
        "model": str(tiny_model_dir),
        "sizes": cases,
        "min_pixels": min_pixels,
        "max_pixels": max_pixels,
    }
    released = run_in_sft_env(LLAMAFACTORY_FRAMES, request)
    processor = AutoImageProcessor.from_pretrained(tiny_model_dir)
    for (width, height), (preprocessed, frame) in zip(cases, released, strict=True):
        size = (width, height)
        assert llamafactory_preprocessed_size(*size, *bounds) == preprocessed, size
        assert llamafactory_input_size(processor, *size, *bounds) == frame, size


def test_moving_into_a_frame_and_back_is_the_identity() -> None:
    rng = random.Random(0)
    for _ in range(200):
        image = [rng.randrange(1, 2000), rng.randrange(1, 2000)]
        frame = [28 * rng.randrange(1, 60), 28 * rng.randrange(1, 60)]
        box = [rng.uniform(0, image[0]), rng.uniform(0, image[1])]
        box += [rng.uniform(box[0], image[0]), rng.uniform(box[1], image[1])]
        back = rescale_box(to_input_frame(box, image, frame), frame, image)
        assert back == pytest.approx(box, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        ((5600, 28), [5600, 28]),  # an aspect ratio of exactly 200 is kept
        ((5628, 28), [5040, 28]),  # 201: cut to 180 times the short side
        ((8400, 28), [5040, 28]),
        ((28, 5600), [28, 5600]),
        ((28, 5628), [28, 5040]),
        ((28, 8400), [28, 5040]),
    ],
)
def test_the_sft_frames_aspect_ratio_bound(size: tuple[int, int], expected: list[int]) -> None:
    """LLaMA-Factory's ``_preprocess_image``: beyond 200:1 the long side becomes 180 times the
    short one (pixel bounds wide enough to leave the size alone)."""
    from vlrl.items.frames import llamafactory_preprocessed_size

    assert llamafactory_preprocessed_size(*size, 0, 10**9) == expected
