"""Two tiny text models that a real ``transformers serve`` can serve on CPU in seconds, shared by
the tests of the judge (``tests/scoring/test_judge.py``) and of the servers the pipeline starts
(``tests/serving/test_servers.py``):

- ``random``: a random-init Qwen2 with a small BPE tokenizer; its replies are garbage;
- ``says1``: the same architecture with hand-set weights (attention and MLP outputs zeroed, one
  embedding direction per token class) so that greedy decoding answers ``1`` and then ends the
  turn: a real model, served for real, that behaves like a judge saying "correct".
"""

from __future__ import annotations

from pathlib import Path

from vlrl.scoring.judge_prompts import PROMPTS

FREE_FORM = PROMPTS["free_form"]


def build_text_models(out: Path) -> dict[str, str]:
    """Build the ``random`` and ``says1`` models (see the module docstring) under ``out``;
    their directories by name. ~5 s on CPU."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        GenerationConfig,
        PreTrainedTokenizerFast,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator([FREE_FORM.render("How many circles?", "3", "three")] * 4, trainer)
    template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=template,
    )
    eos, pad = tok.eos_token_id, tok.pad_token_id
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        bos_token_id=pad,
        eos_token_id=eos,
        pad_token_id=pad,
        tie_word_embeddings=False,
    )
    generation = GenerationConfig(
        do_sample=False, bos_token_id=pad, eos_token_id=eos, pad_token_id=pad
    )
    built = {}

    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    with torch.no_grad():  # never pick a special token: replies are visible garbage text
        model.lm_head.weight[[tok.convert_tokens_to_ids(t) for t in special]] = 0.0
    model.generation_config = generation
    built["random"] = out / "random"
    model.save_pretrained(built["random"])
    tok.save_pretrained(built["random"])

    one = tok.convert_tokens_to_ids("1")
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        emb = torch.zeros_like(model.model.embed_tokens.weight)
        emb[:, 0] = 1.0  # any token → "say 1"
        emb[one] = 0.0
        emb[one, 1] = 1.0  # after "1" → end the turn
        model.model.embed_tokens.weight.copy_(emb)
        model.model.norm.weight.fill_(1.0)
        model.lm_head.weight.zero_()
        model.lm_head.weight[one, 0] = 10.0
        model.lm_head.weight[eos, 1] = 10.0
    built["says1"] = out / "says1"
    model.save_pretrained(built["says1"])
    tok.save_pretrained(built["says1"])
    return {name: str(path) for name, path in built.items()}
