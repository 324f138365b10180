"""The tiny model folder: files, chat template, determinism."""

from __future__ import annotations

import json

from make_tiny_model import ENDOFTEXT, IM_END, IM_START, make_tiny_model


def test_folder_loads_with_chat_template(tiny_model):
    from transformers import AutoConfig, AutoTokenizer

    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        assert (tiny_model / name).is_file(), name
    tcfg = json.loads((tiny_model / "tokenizer_config.json").read_text())
    assert "chat_template" in tcfg and tcfg["eos_token"] == IM_END
    cfg = AutoConfig.from_pretrained(str(tiny_model))
    assert cfg.model_type == "qwen3" and cfg.tie_word_embeddings
    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    assert len(tok) == cfg.vocab_size and 1000 <= len(tok) <= 4000
    assert cfg.eos_token_id == tok.convert_tokens_to_ids(IM_END)
    for special in (ENDOFTEXT, IM_START, IM_END):
        assert len(tok.encode(special)) == 1, special
    msgs = [{"role": "user", "content": "Hi"}]
    text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True, enable_thinking=False)
    assert text == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    assert tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=False) == "<|im_start|>user\nHi<|im_end|>\n"
    gen = json.loads((tiny_model / "generation_config.json").read_text())
    assert gen["eos_token_id"][0] == cfg.eos_token_id


def test_same_seed_same_folder(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("negotiate a fair share of the credit\n" * 50 + "agree on a proposal together\n" * 50)
    a = make_tiny_model(tmp_path / "a", seed=3, corpus=[str(corpus)], vocab_size=600)
    b = make_tiny_model(tmp_path / "b", seed=3, corpus=[str(corpus)], vocab_size=600)
    c = make_tiny_model(tmp_path / "c", seed=4, corpus=[str(corpus)], vocab_size=600)
    assert (a / "tokenizer.json").read_bytes() == (b / "tokenizer.json").read_bytes()
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    assert (a / "model.safetensors").read_bytes() != (c / "model.safetensors").read_bytes()
