"""Stage ``base_model``: build or download one base model into ``resources/models/<name>/``.

``config/models/<name>.yaml`` chooses the builder: ``tiny`` builds a random-init Qwen2.5-VL
locally (:mod:`vlrl.models.tiny`), ``hf`` fetches a pinned hub revision (:mod:`vlrl.hub`).
The output directory appears complete or not at all.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from vlrl.core import paths
from vlrl.core.errors import StageError
from vlrl.core.files import atomic_dir
from vlrl.items.prompts import PROMPTS

if TYPE_CHECKING:
    from vlrl.config import ModelConfig

log = logging.getLogger(__name__)

#: Keys of the model config (config/models/<name>.yaml) this stage reads: its params.

#: Seed of the tiny model's weights and of its tokenizer corpus.
TINY_SEED = 0
#: Copies of each instruction in the tokenizer corpus: BPE merges frequent words, and 20 copies
#: bring the think_answer instruction (119 characters) to 25 tokens. With every format's texts
#: at this weight the shapes texts take about 3% more tokens than with think_answer's alone.
INSTRUCTION_WEIGHT = 20
#: Copies of the chat template's words (role names, default system prompt) in the corpus: they
#: open every conversation, and at 200 copies BPE makes each a whole token (at 20 it spells
#: "system" and "helpful" letter by letter), 21 tokens less per conversation (~16% of tiny_shapes'
#: sequences).
CHAT_TEMPLATE_WEIGHT = 200


#: The prompt formats whose texts the tiny tokenizer is trained on. Fixed, not every format: the
#: tokenizer, so the tiny model and every number of the default, follow from this corpus, and a
#: format added for another experiment must not change them. Later formats (think_boxed,
#: rec_baseline, caption_bbox_think_answer) are tokenized all the same (byte-level BPE), in
#: smaller pieces where BPE learned no merge for their words.
CORPUS_FORMATS = (
    "think_answer",
    "rec_json",
    "od_json",
    "see_think_boxed",
    "caption_bbox_answer",
    "sophiavl_think",
)


def instruction_texts() -> list[str]:
    """The fixed texts of the :data:`CORPUS_FORMATS`: each one's template without the question,
    its per-type suffixes and its system prompt
    (:meth:`vlrl.items.prompts.PromptFormat.instruction_texts`).

    >>> instruction_texts()[0][:30]
    'First output the thinking proc'
    """
    return [text for name in CORPUS_FORMATS for text in PROMPTS[name].instruction_texts()]


def tiny_corpus(seed: int = TINY_SEED) -> list[str]:
    """Texts the tiny model's tokenizer is trained on: the shapes world, every instruction and
    the chat template's words."""
    from vlrl.data.shapes import text_corpus
    from vlrl.models.tiny import CHAT_TEMPLATE_TEXTS

    return (
        text_corpus(seed=seed, formats=CORPUS_FORMATS)
        + instruction_texts() * INSTRUCTION_WEIGHT
        + CHAT_TEMPLATE_TEXTS * CHAT_TEMPLATE_WEIGHT
    )


def run(model: str, cfg: ModelConfig | None = None) -> None:
    """Build or download base model ``model`` with its config (default: loaded from
    ``config/models/<model>.yaml``)."""
    if cfg is None:
        from vlrl.config import load_model

        cfg = load_model(model)
    out = paths.model_resource(model)
    log.info("base model %s: builder %s → %s", model, cfg.builder, out)
    with atomic_dir(out) as tmp:
        if cfg.builder == "tiny":
            from vlrl.models.tiny import build_tiny_model

            build_tiny_model(cfg.tiny, tiny_corpus(), tmp, seed=TINY_SEED)
        else:
            from vlrl.hub import download_model

            assert cfg.hf is not None  # guaranteed by ModelConfig validation
            if cfg.hf.revision is None:
                raise StageError(
                    f"base model {model}: {cfg.hf.repo_id} has no pinned revision "
                    f"({paths.model_file(model)}: hf.unpinned: {cfg.hf.unpinned}); a run never "
                    f"downloads an unpinned revision. Run `vlrl pin {model}` once, online."
                )
            download_model(cfg.hf.repo_id, cfg.hf.revision, tmp)
    log.info("base model %s ready in %s", model, out)
