"""The frame a Qwen2-VL-family model reads and writes boxes in: the image as its processor resized
it. Qwen2.5-VL answers boxes in absolute pixels of that frame, so a box target is meant in it and
VLM-R1 rescales a predicted box from it to the original image (``qwen_module.iou_reward``,
``test_rec_r1.py``: ``image_grid_thw`` × 14).

- :func:`processor_input_size`: the frame the image processor makes of an image (its own
  ``smart_resize``, with the processor's patch, merge and pixel bounds): TRL's GRPO and the
  transformers generators feed images to the processor as they are.
- :func:`llamafactory_input_size`: the frame of an SFT image: LLaMA-Factory first shrinks or grows
  it into ``[image_min_pixels, image_max_pixels]`` (``Qwen2VLPlugin._preprocess_image``) and then
  hands it to the same processor.
- :func:`to_input_frame`: a box in original pixels moved into a frame.

Sizes are ``[width, height]``, as the records' ``image_sizes`` are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def _bounds(image_processor: Any) -> tuple[int, int, int]:
    """``(factor, min_pixels, max_pixels)`` of a Qwen2-VL image processor: what its ``resize``
    passes to ``smart_resize`` (transformers 5: ``size`` holds the pixel bounds)."""
    size = image_processor.size
    factor = image_processor.patch_size * image_processor.merge_size
    return factor, int(size["shortest_edge"]), int(size["longest_edge"])


def processor_input_size(image_processor: Any, width: int, height: int) -> list[int]:
    """``[width, height]`` of a ``width`` × ``height`` image as ``image_processor`` (a Qwen2-VL
    image processor) resizes it: ``image_grid_thw[1:]`` × patch size, computed with the
    processor's own ``smart_resize`` and bounds, without decoding the image.

    >>> from types import SimpleNamespace
    >>> proc = SimpleNamespace(patch_size=14, merge_size=2,
    ...                        size={"shortest_edge": 3136, "longest_edge": 12845056})
    >>> processor_input_size(proc, 640, 427)
    [644, 420]
    """
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

    factor, min_pixels, max_pixels = _bounds(image_processor)
    new_height, new_width = smart_resize(height, width, factor, min_pixels, max_pixels)
    return [new_width, new_height]


def llamafactory_preprocessed_size(
    width: int, height: int, min_pixels: int, max_pixels: int
) -> list[int]:
    """``[width, height]`` after LLaMA-Factory's ``Qwen2VLPlugin._preprocess_image``
    (hiyouga/LLaMA-Factory v0.9.5, ``src/llamafactory/data/mm_plugin.py``: the base plugin's
    shrink into ``image_max_pixels`` and growth to ``image_min_pixels``, each truncating to whole
    pixels; then sides of at least 28 and an aspect ratio within 200).

    >>> llamafactory_preprocessed_size(1000, 500, 32 * 32, 100 * 100)
    [141, 70]
    >>> llamafactory_preprocessed_size(10, 400, 32 * 32, 768 * 768)
    [28, 400]
    """
    if width * height > max_pixels:
        factor = math.sqrt(max_pixels / (width * height))
        width, height = int(width * factor), int(height * factor)
    if width * height < min_pixels:
        factor = math.sqrt(min_pixels / (width * height))
        width, height = int(width * factor), int(height * factor)
    if min(width, height) < 28:
        width, height = max(width, 28), max(height, 28)
    if width / height > 200:
        width = height * 180
    if height / width > 200:
        height = width * 180
    return [width, height]


def llamafactory_input_size(
    image_processor: Any, width: int, height: int, min_pixels: int, max_pixels: int
) -> list[int]:
    """The frame an SFT image is trained in: :func:`llamafactory_preprocessed_size` with
    LLaMA-Factory's ``image_min_pixels``/``image_max_pixels``, then the processor's resize
    (:func:`processor_input_size`)."""
    return processor_input_size(
        image_processor, *llamafactory_preprocessed_size(width, height, min_pixels, max_pixels)
    )


def to_input_frame(
    box: Sequence[float], image_size: Sequence[float], input_size: Sequence[float]
) -> list[float]:
    """A box in original pixels, ``image_size`` ``[width, height]``, scaled into the frame of
    ``input_size``: the inverse of VLM-R1's ``resize_bbox``.

    >>> to_input_frame([10, 20, 30, 40], [100, 200], [50, 50])
    [5.0, 5.0, 15.0, 10.0]
    """
    (img_w, img_h), (in_w, in_h) = image_size, input_size
    x1, y1, x2, y2 = box
    return [x1 / img_w * in_w, y1 / img_h * in_h, x2 / img_w * in_w, y2 / img_h * in_h]
