"""A tiny Qwen2.5-VL built locally: the real architecture and processor classes, random weights.

The recipe: a byte-level BPE tokenizer trained on a
small corpus with Qwen's special tokens, the reasoning tags as single (non-special) tokens and a
Qwen2-VL chat template; a ``Qwen2_5_VLConfig`` shrunk to a few hundred thousand parameters whose
special-token ids come from that tokenizer; the real ``Qwen2_5_VLProcessor``. The result loads
with ``AutoProcessor`` / ``AutoModelForImageTextToText`` like a downloaded checkpoint, in both the
main environment and the LLaMA-Factory one, and runs on a 2-core CPU.

A 112x112 image becomes 8x8 patches of 14 px, merged 2x2: 16 image tokens.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vlrl.core.errors import StageError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast, Qwen2_5_VLConfig, Qwen2_5_VLProcessor

    from vlrl.config import TinyModelConfig

log = logging.getLogger(__name__)

#: Qwen's control tokens, special (dropped by ``skip_special_tokens=True``).
SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
#: Tags of the R1-style prompt formats: one token each, kept when decoding.
REASONING_TAGS = ["<think>", "</think>", "<answer>", "</answer>"]

PATCH_SIZE = 14
SPATIAL_MERGE_SIZE = 2
WINDOW_SIZE = 56
MAX_POSITIONS = 4096
MANIFEST = "vlrl_model.json"

#: The Qwen2-VL chat template (same structure and output as the one shipped with
#: Qwen/Qwen2-VL-7B-Instruct and Qwen/Qwen2.5-VL-*-Instruct).
CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}"
    "{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}"
    "{{ message['content'] }}<|im_end|>\n"
    "{% else %}"
    "{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}"
    "{{ content['text'] }}"
    "{% endif %}"
    "{% endfor %}"
    "<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
#: The chat template's own words: the role names and its default system prompt, in every
#: conversation (tokenizer corpus, vlrl.stages.base_model).
CHAT_TEMPLATE_TEXTS = ["system\nYou are a helpful assistant.", "user\n", "assistant\n"]


def build_tokenizer(corpus: list[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on ``corpus`` and wrap it as a Qwen-style fast tokenizer.

    The vocabulary is the 256 byte symbols, Qwen's special tokens, BPE merges up to
    ``vocab_size`` and the reasoning tags; every tag is one token.

    >>> tok = build_tokenizer(["a red circle", "two blue squares"] * 10, vocab_size=300)
    >>> tok.tokenize("<think>red</think>")[0]
    '<think>'
    >>> tok.decode(tok.encode("<answer>2</answer><|im_end|>"), skip_special_tokens=True)
    '<answer>2</answer>'
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    n_fixed = len(SPECIAL_TOKENS) + len(REASONING_TAGS)
    if vocab_size < 256 + n_fixed:
        raise ValueError(f"vocab_size {vocab_size} is below the {256 + n_fixed} fixed symbols")
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(REASONING_TAGS),
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        min_frequency=2,
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in REASONING_TAGS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
        chat_template=CHAT_TEMPLATE,
        model_max_length=MAX_POSITIONS,
        clean_up_tokenization_spaces=False,
    )


def build_config(cfg: TinyModelConfig, tokenizer: PreTrainedTokenizerFast) -> Qwen2_5_VLConfig:
    """A tiny ``Qwen2_5_VLConfig`` whose token ids come from ``tokenizer``."""
    from transformers import Qwen2_5_VLConfig

    if cfg.hidden_size % cfg.num_attention_heads:
        raise ValueError("hidden_size must be a multiple of num_attention_heads")
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    if head_dim % 2:
        raise ValueError(f"text head_dim {head_dim} must be even (rotary embedding)")
    mrope_section = _mrope_section(head_dim // 2)
    vision_heads = max(1, cfg.vision_hidden_size // 16)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    bos_id, eos_id, pad_id = ids["<|endoftext|>"], ids["<|im_end|>"], ids["<|endoftext|>"]
    # Qwen2.5-VL uses full attention every 8th vision block, ending with the last one.
    fullatt = [i for i in range(cfg.vision_depth) if (i + 1) % 8 == 0] or [cfg.vision_depth - 1]
    return Qwen2_5_VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": cfg.hidden_size,
            "intermediate_size": cfg.intermediate_size,
            "num_hidden_layers": cfg.num_hidden_layers,
            "num_attention_heads": cfg.num_attention_heads,
            "num_key_value_heads": cfg.num_key_value_heads,
            "max_position_embeddings": MAX_POSITIONS,
            "max_window_layers": cfg.num_hidden_layers,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 1000000.0,
                "mrope_section": mrope_section,
            },
            "bos_token_id": bos_id,
            "eos_token_id": eos_id,
            "pad_token_id": pad_id,
            "tie_word_embeddings": False,
        },
        vision_config={
            "depth": cfg.vision_depth,
            "hidden_size": cfg.vision_hidden_size,
            "intermediate_size": 2 * cfg.vision_hidden_size,
            "num_heads": vision_heads,
            "out_hidden_size": cfg.hidden_size,
            "patch_size": PATCH_SIZE,
            "spatial_merge_size": SPATIAL_MERGE_SIZE,
            "temporal_patch_size": 2,
            "window_size": WINDOW_SIZE,
            "fullatt_block_indexes": fullatt,
            "tokens_per_second": 2,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        bos_token_id=bos_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        tie_word_embeddings=False,
    )


def _mrope_section(half_head_dim: int) -> list[int]:
    """Split the rotary half-dimension over (time, height, width) like Qwen's 16:24:24.

    >>> _mrope_section(8), _mrope_section(64)
    ([2, 3, 3], [16, 24, 24])
    """
    t = half_head_dim // 4
    h = (half_head_dim - t) // 2
    return [t, h, half_head_dim - t - h]


def build_processor(
    cfg: TinyModelConfig, tokenizer: PreTrainedTokenizerFast
) -> Qwen2_5_VLProcessor:
    """The real Qwen2.5-VL processor around ``tokenizer``, with the configured pixel budget."""
    from transformers import Qwen2_5_VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor

    image_processor = Qwen2VLImageProcessor(
        min_pixels=cfg.min_pixels,
        max_pixels=cfg.max_pixels,
        patch_size=PATCH_SIZE,
        merge_size=SPATIAL_MERGE_SIZE,
    )
    video_processor = Qwen2VLVideoProcessor(patch_size=PATCH_SIZE, merge_size=SPATIAL_MERGE_SIZE)
    return Qwen2_5_VLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_processor,
        chat_template=CHAT_TEMPLATE,
    )


def check_forward(model: Any, processor: Any, image_size: int = 112) -> int:
    """Run one image+text forward pass; raise if the logits hold NaN or Inf.

    Returns:
        The number of image tokens the image became.
    """
    import torch
    from PIL import Image

    image = Image.new("RGB", (image_size, image_size), (200, 30, 30))
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "hi"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    inputs = processor(text=[text], images=[image], return_tensors="pt")
    with torch.no_grad():
        logits = model(**inputs).logits
    if not torch.isfinite(logits).all():
        raise StageError("tiny model forward pass produced NaN/Inf logits")
    return int((inputs["input_ids"] == model.config.image_token_id).sum())


def _drop_default_vision_rope(config_file: Path) -> None:
    """Remove the vision tower's default rope entry from a saved ``config.json``.

    transformers 5.19 writes ``vision_config.rope_parameters = {"rope_type": "axial", ...}``;
    5.6 (the LLaMA-Factory environment) does not know the axial type and warns on every load.
    Both versions rebuild the same vision rotary embedding without the entry.
    """
    tree = json.loads(config_file.read_text())
    vision = tree.get("vision_config", {})
    if vision.get("rope_parameters", {}).get("rope_type") == "axial":
        del vision["rope_parameters"]
        config_file.write_text(json.dumps(tree, indent=2, sort_keys=True) + "\n")


def pin_portable_init() -> bool:
    """Draw the weights with portable CPU kernels (:func:`vlrl.cluster.threads.pin_cpu_kernels`), so
    a base model built on any x86-64 CPU is the same file: torch's ``normal_`` has an AVX2 kernel
    whose numbers differ from the baseline one. Only in a process that has not loaded torch yet
    (the base_model stage); one that has (a test session) keeps its kernels and its environment.

    Returns:
        Whether the kernels were pinned.
    """
    if "torch" in sys.modules:
        log.info("tiny model: torch is loaded already; the weights use this process's kernels")
        return False
    from vlrl.cluster.threads import pin_cpu_kernels

    return pin_cpu_kernels("portable")


def build_tiny_model(cfg: TinyModelConfig, corpus: list[str], out_dir: Path, seed: int = 0) -> None:
    """Build the tiny Qwen2.5-VL into ``out_dir`` (model, tokenizer, processor, manifest).

    Args:
        cfg: the model shape (``config/models/<name>.yaml``, section ``tiny``).
        corpus: texts the BPE tokenizer is trained on (the prompts and answers it will see).
        out_dir: an existing or new directory; files in it are overwritten.
        seed: seeds the weight initialisation; the same inputs give identical weights, on
            every CPU when this process had not loaded torch before (:func:`pin_portable_init`).

    Raises:
        StageError: when the built model's forward pass gives NaN/Inf logits.
    """
    pin_portable_init()
    import torch
    from transformers import GenerationConfig, Qwen2_5_VLForConditionalGeneration

    start = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(corpus, cfg.vocab_size)
    config = build_config(cfg, tokenizer)
    processor = build_processor(cfg, tokenizer)

    with torch.random.fork_rng(devices=[]):  # seed the init without touching the caller's RNG
        torch.manual_seed(seed)
        model = Qwen2_5_VLForConditionalGeneration(config).eval()
    model.generation_config = GenerationConfig(
        bos_token_id=config.text_config.bos_token_id,
        eos_token_id=[config.text_config.eos_token_id, config.text_config.pad_token_id],
        pad_token_id=config.text_config.pad_token_id,
    )
    n_image_tokens = check_forward(model, processor)

    model.save_pretrained(out_dir, safe_serialization=True)
    processor.save_pretrained(out_dir)
    _drop_default_vision_rope(out_dir / "config.json")
    n_params = sum(p.numel() for p in model.parameters())
    manifest = {
        "builder": "tiny",
        "config": cfg.model_dump(),
        "seed": seed,
        "num_parameters": n_params,
        "vocab_size": len(tokenizer),
        "image_tokens_112px": n_image_tokens,
    }
    (out_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    log.info(
        "built tiny Qwen2.5-VL in %s: %d parameters, vocabulary %d, "
        "%d image tokens for 112x112, %.1fs",
        out_dir,
        n_params,
        len(tokenizer),
        n_image_tokens,
        time.perf_counter() - start,
    )
