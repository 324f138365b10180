"""The tiny model folder: files, Qwen3's tokens and chat template, determinism."""

from __future__ import annotations

import json

import pytest

from parley_tools.tiny_model import (
    END_THINK,
    ENDOFTEXT,
    IM_END,
    IM_START,
    THINK,
    TemplateNotFound,
    make_tiny_model,
    read_chat_template,
)

SYS = {"role": "system", "content": "Be brief."}
USER = {"role": "user", "content": "Hi"}


@pytest.fixture(scope="module")
def tok(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model))


def render(tok, msgs, **kw) -> str:
    return tok.apply_chat_template(msgs, tokenize=False, **kw)


def test_folder_loads(tiny_model, tok):
    from transformers import AutoConfig

    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        assert (tiny_model / name).is_file(), name
    tcfg = json.loads((tiny_model / "tokenizer_config.json").read_text())
    assert tcfg["eos_token"] == IM_END and tcfg["pad_token"] == ENDOFTEXT
    assert tcfg["chat_template"] == read_chat_template()
    cfg = AutoConfig.from_pretrained(str(tiny_model))
    assert cfg.model_type == "qwen3" and cfg.tie_word_embeddings
    assert len(tok) == cfg.vocab_size and 1000 <= len(tok) <= 4000
    assert cfg.eos_token_id == tok.convert_tokens_to_ids(IM_END)
    gen = json.loads((tiny_model / "generation_config.json").read_text())
    assert gen["eos_token_id"] == [cfg.eos_token_id, tok.convert_tokens_to_ids(ENDOFTEXT)]
    # Qwen3's sampling defaults: a server must be told to ignore them (vLLM --generation-config vllm)
    assert (gen["temperature"], gen["top_k"], gen["top_p"]) == (0.6, 20, 0.95)


def test_five_single_tokens(tok):
    for t in (IM_START, IM_END, ENDOFTEXT, THINK, END_THINK):
        ids = tok.encode(t, add_special_tokens=False)
        assert len(ids) == 1, (t, ids)
        # ... also inside text, never split by the BPE
        inner = tok.encode(f"say {t} now", add_special_tokens=False)
        assert ids[0] in inner, (t, inner)
    # As Qwen3: the ChatML tokens are special (skipped on decode), the think tags are not.
    ids = tok.encode(f"{IM_START}a{THINK}b{END_THINK}c{IM_END}{ENDOFTEXT}", add_special_tokens=False)
    assert tok.decode(ids, skip_special_tokens=True) == f"a{THINK}b{END_THINK}c"
    assert tok.decode(ids, skip_special_tokens=False) == f"{IM_START}a{THINK}b{END_THINK}c{IM_END}{ENDOFTEXT}"


def test_generation_prompt_and_enable_thinking(tok):
    base = f"{IM_START}system\nBe brief.{IM_END}\n{IM_START}user\nHi{IM_END}\n"
    assert render(tok, [SYS, USER], add_generation_prompt=False) == base
    # thinking on (Qwen3's default): the model opens the think block itself
    assert render(tok, [SYS, USER], add_generation_prompt=True) == base + f"{IM_START}assistant\n"
    assert render(tok, [SYS, USER], add_generation_prompt=True, enable_thinking=True) == base + f"{IM_START}assistant\n"
    # thinking off: an empty think block ends the generation prompt
    assert render(tok, [SYS, USER], add_generation_prompt=True, enable_thinking=False) == (
        base + f"{IM_START}assistant\n{THINK}\n\n{END_THINK}\n\n"
    )


def test_earlier_turns_lose_their_think_block(tok):
    """An earlier assistant turn is re-rendered without its think block, so
    the re-render does not extend the tokens the turn was sampled from."""
    prompt = list(tok.apply_chat_template([SYS, USER], add_generation_prompt=True, enable_thinking=False, return_dict=True)["input_ids"])
    reply = "Hello there."
    sampled = prompt + tok.encode(reply, add_special_tokens=False) + [tok.convert_tokens_to_ids(IM_END)]
    history = [SYS, USER, {"role": "assistant", "content": f"{THINK}\n\n{END_THINK}\n\n{reply}"}, {"role": "user", "content": "And?"}]
    text = render(tok, history, add_generation_prompt=True, enable_thinking=False)
    assert f"{IM_START}assistant\n{reply}{IM_END}\n{IM_START}user\nAnd?" in text
    assert text.count(THINK) == 1  # only the new generation prompt's
    again = tok(text, add_special_tokens=False)["input_ids"]
    assert again[: len(sampled)] != sampled, "the re-render extends the sampled tokens: not Qwen3's template"
    # Think content, too, is stripped from earlier turns ...
    thought = [SYS, USER, {"role": "assistant", "content": f"{THINK}\nweigh it\n{END_THINK}\n\nYes."}, {"role": "user", "content": "Ok"}]
    assert "weigh it" not in render(tok, thought, add_generation_prompt=True)
    # ... but kept in an assistant turn after the last user message.
    last = [SYS, USER, {"role": "assistant", "content": f"{THINK}\nweigh it\n{END_THINK}\n\nYes."}]
    assert render(tok, last).endswith(f"{IM_START}assistant\n{THINK}\nweigh it\n{END_THINK}\n\nYes.{IM_END}\n")


def test_reasoning_content(tok):
    msgs = [SYS, USER, {"role": "assistant", "content": "Hello", "reasoning_content": "\nwhy not\n"}]
    assert render(tok, msgs).endswith(f"{IM_START}assistant\n{THINK}\nwhy not\n{END_THINK}\n\nHello{IM_END}\n")
    earlier = msgs + [{"role": "user", "content": "More"}]
    assert "why not" not in render(tok, earlier, add_generation_prompt=True)


def test_template_package_missing():
    with pytest.raises(TemplateNotFound, match=r"no_such_pkg_parley.*setup_venv"):
        read_chat_template(package="no_such_pkg_parley")
    with pytest.raises(TemplateNotFound, match=r"has no chat_templates/nope.jinja"):
        read_chat_template(relpath="chat_templates/nope.jinja")


def test_same_seed_same_folder(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("negotiate a fair share of the credit\n" * 50 + "agree on a proposal together\n" * 50)
    a = make_tiny_model(tmp_path / "a", seed=3, corpus=[str(corpus)], vocab_size=600)
    b = make_tiny_model(tmp_path / "b", seed=3, corpus=[str(corpus)], vocab_size=600)
    c = make_tiny_model(tmp_path / "c", seed=4, corpus=[str(corpus)], vocab_size=600)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "model.safetensors"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert (a / "model.safetensors").read_bytes() != (c / "model.safetensors").read_bytes()
