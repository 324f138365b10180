"""Make a tiny Qwen3-architecture model folder for CPU development.

The model has random weights drawn under a fixed seed; its tokenizer is a
byte-level BPE trained here, with the `tokenizers` library, on the bundled
curricula (or on --corpus files, or on a small built-in English text).
Nothing is downloaded. The folder is an ordinary Hugging Face model folder
(config.json, model.safetensors, tokenizer.json, tokenizer_config.json,
chat_template.jinja, generation_config.json) that transformers and vLLM load.

It behaves like Qwen3 where parley can tell the difference:
- `<|endoftext|>`, `<|im_start|>` and `<|im_end|>` are single special tokens,
  and `<think>`, `</think>`, `<tool_call>`, `</tool_call>`, `<tool_response>`
  and `</tool_response>` single added tokens that are NOT special, as in
  Qwen3's tokenizer_config.json (so `skip_special_tokens` keeps the think
  tags in the text, and a reasoning parser sees them); eos `<|im_end|>`, pad
  `<|endoftext|>`, no bos.
- The chat template is Qwen3's own, read at build time from the installed
  trl package, which ships it as trl/chat_templates/qwen3.jinja (it is never
  copied into this repository): `enable_thinking=False` ends the generation
  prompt with an empty `<think>\n\n</think>\n\n`; think blocks of earlier
  assistant turns are stripped; `reasoning_content` is rendered.
- generation_config.json carries Qwen3's sampling defaults (temperature 0.6,
  top_k 20, top_p 0.95), so a server that applies them (vLLM without
  `--generation-config vllm`) samples differently here as with Qwen3.

    python -m parley_tools.tiny_model --out models/tiny --seed 0
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from parley_trainer.atomic import write_dir

if TYPE_CHECKING:
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerBase

REPO_ROOT = Path(__file__).resolve().parent.parent.parent

ENDOFTEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
THINK = "<think>"
END_THINK = "</think>"
# Special (skipped by skip_special_tokens), as in Qwen3.
SPECIAL_TOKENS = [ENDOFTEXT, IM_START, IM_END]
# Added but not special, as in Qwen3 (its template emits all of them).
ADDED_TOKENS = [THINK, END_THINK, "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

# Where Qwen3's chat template is read from: a file shipped in trl's wheel.
TEMPLATE_PACKAGE = "trl"
TEMPLATE_FILE = "chat_templates/qwen3.jinja"

# Qwen3's generation_config.json sampling defaults.
QWEN3_SAMPLING = {"do_sample": True, "temperature": 0.6, "top_k": 20, "top_p": 0.95}


class TemplateNotFound(RuntimeError):
    """The package that ships Qwen3's chat template is not installed."""


def read_chat_template(package: str = TEMPLATE_PACKAGE, relpath: str = TEMPLATE_FILE) -> str:
    """Qwen3's chat template, read from the file the installed package ships
    (without importing the package)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise TemplateNotFound(
            f"Qwen3's chat template is read from the {package!r} package ({package}/{relpath}), "
            f"which is not installed: run `bash scripts/setup_venv.sh` (scripts/requirements.txt pins it)"
        )
    for root in spec.submodule_search_locations:
        path = Path(root) / relpath
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise TemplateNotFound(
        f"{package} is installed at {list(spec.submodule_search_locations)} but has no {relpath}: "
        f"install the version scripts/requirements.txt pins (`bash scripts/setup_venv.sh`)"
    )


BUILTIN_TEXT = """\
Two colleagues disagree about how to share credit for a project that went well.
One of them did most of the visible work; the other fixed the problems nobody saw.
They talk it through, listen to each other, and look for a fair proposal they both accept.
A good agreement respects everyone's interests, keeps the relationship, and explains its reasons.
I agree with your proposal. Let us write it down so that nobody forgets what we decided.
Should a doctor tell a patient about a small mistake that caused no harm? Honesty builds trust,
but a careless word can frighten people. A careful answer weighs both sides and names the trade-off.
Your friend asks you to keep a secret that could hurt someone else. What do you owe each of them?
A neighbour's tree drops leaves into your garden every autumn. You could complain, or offer to help.
The manager wants the report by Friday, but the data will not be ready until Monday.
We can meet halfway: a draft on Friday with the main findings, and the full report next week.
Collective agency means helping everyone involved act well together, not only winning the argument.
The system asks the user what they want; the assistant answers clearly and kindly.
Please summarise the dilemma, state each side's strongest point, and propose a solution.
The quick brown fox jumps over the lazy dog. Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000.
Yes, no, maybe, thank you, sorry, please, agree, disagree, because, therefore, however.
"""


def corpus_files(explicit: list[str] | None) -> list[Path]:
    """Return the corpus files: --corpus if given, else the bundled curricula.

    The bundled curricula are seed 000's and 001's games' (each bundles its
    own: deliberation, single, endowment), in file-name order, then the
    persona library.
    """
    if explicit:
        return [Path(p) for p in explicit]
    curricula = [
        path
        for game in ("deliberation", "single", "endowment")
        for path in glob.glob(str(REPO_ROOT / "rollout" / game / "curricula" / "*.jsonl"))
    ]
    files = [Path(p) for p in sorted(curricula, key=lambda p: (Path(p).name, p))]
    files.extend(Path(p) for p in sorted(glob.glob(str(REPO_ROOT / "dataset" / "personas" / "library.jsonl"))))
    return files


def _strings(value: object) -> list[str]:
    """Collect every string inside a decoded JSON value, in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        out: list[str] = []
        for v in value.values():
            out.extend(_strings(v))
        return out
    if isinstance(value, list):
        out = []
        for v in value:
            out.extend(_strings(v))
        return out
    return []


def read_corpus(files: list[Path]) -> list[str]:
    """Read text lines from the corpus files.

    JSONL files contribute every string value of every row; other files
    contribute their lines. The built-in text is always included, so the
    tokenizer covers common English and the chat roles even on a tiny corpus.
    """
    texts: list[str] = [line for line in BUILTIN_TEXT.splitlines() if line.strip()]
    texts += ["system", "user", "assistant"]
    # Blank lines, as chat templates and paragraphs have them (Qwen3 has "\n\n" as one token).
    texts += ["First paragraph.\n\nSecond paragraph.\n\n"] * 8
    for path in files:
        with open(path, encoding="utf-8") as f:
            for raw in f:
                line = raw.strip()
                if not line:
                    continue
                if path.suffix == ".jsonl":
                    try:
                        texts.extend(s for s in _strings(json.loads(line)) if s.strip())
                    except json.JSONDecodeError:
                        texts.append(line)
                else:
                    texts.append(line)
    return texts


def train_tokenizer(texts: list[str], vocab_size: int) -> Tokenizer:
    """Train a byte-level BPE tokenizer; the special tokens come first (ids
    0..2), the other added tokens are appended later."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=1,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def token_id(tokenizer: PreTrainedTokenizerBase, token: str) -> int:
    """The id of one token."""
    tid = tokenizer.convert_tokens_to_ids(token)
    if not isinstance(tid, int):
        raise TypeError(f"{token!r}: {tid!r} is not one token id")
    return tid


def make_tiny_model(
    out: str | os.PathLike[str],
    seed: int = 0,
    corpus: list[str] | None = None,
    vocab_size: int = 3000,
    hidden_size: int = 128,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    head_dim: int = 32,
    intermediate_size: int = 256,
    max_position_embeddings: int = 4096,
    untied: bool = False,
) -> Path:
    """Write a tiny Qwen3 model folder to out and return its path.

    The folder is built in a temporary sibling directory and renamed into
    place (parley_trainer.atomic.write_dir), so a reader never sees a
    half-written model.
    """
    import torch
    from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    out_path = Path(out).resolve()
    chat_template = read_chat_template()
    texts = read_corpus(corpus_files(corpus))
    raw_tok = train_tokenizer(texts, vocab_size)

    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw_tok,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        unk_token=None,
        bos_token=None,
        # Qwen3 lists these as additional special tokens
        extra_special_tokens=[IM_START, IM_END],
        model_max_length=max_position_embeddings,
        clean_up_tokenization_spaces=False,
    )
    from tokenizers import AddedToken

    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in ADDED_TOKENS])
    tokenizer.chat_template = chat_template
    vocab = len(tokenizer)
    endoftext_id = token_id(tokenizer, ENDOFTEXT)
    im_end_id = token_id(tokenizer, IM_END)

    config = Qwen3Config(
        vocab_size=vocab,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        head_dim=head_dim,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=not untied,
        bos_token_id=endoftext_id,
        eos_token_id=im_end_id,
        pad_token_id=endoftext_id,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        dtype="float32",
    )
    config.architectures = ["Qwen3ForCausalLM"]
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    if untied:
        with torch.no_grad():
            model.lm_head.weight.copy_(model.model.embed_tokens.weight)
    model.eval()

    gen = GenerationConfig(
        bos_token_id=endoftext_id,
        eos_token_id=[im_end_id, endoftext_id],
        pad_token_id=endoftext_id,
        **QWEN3_SAMPLING,
    )

    def fill(tmp: Path) -> None:
        model.save_pretrained(tmp, safe_serialization=True)
        gen.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        # Keep the template inside tokenizer_config.json (where Qwen3 has
        # it) as well as in chat_template.jinja, for loaders that read only
        # the former.
        cfg_path = tmp / "tokenizer_config.json"
        tcfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        tcfg["chat_template"] = chat_template
        # "TokenizersBackend" is transformers 5's name; older transformers
        # (as bundled with some vLLM releases) know only this one.
        tcfg["tokenizer_class"] = "PreTrainedTokenizerFast"
        cfg_path.write_text(json.dumps(tcfg, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    write_dir(out_path, fill)
    return out_path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output model folder (replaced if it exists)")
    p.add_argument("--seed", type=int, default=0, help="weight init seed")
    p.add_argument("--corpus", nargs="*", default=None, help="tokenizer corpus files (.jsonl or text)")
    p.add_argument("--vocab-size", type=int, default=3000)
    p.add_argument("--hidden-size", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--head-dim", type=int, default=32)
    p.add_argument("--intermediate-size", type=int, default=256)
    p.add_argument("--max-position-embeddings", type=int, default=4096)
    p.add_argument(
        "--untied",
        action="store_true",
        help="an output head of its own (tie_word_embeddings false), initialised as the embedding: the full-weights "
        "quickstart's model (vLLM 0.32's CPU build does not reload a tied head in place)",
    )
    a = p.parse_args(argv)
    try:
        read_chat_template()
    except TemplateNotFound as e:
        print(f"tiny_model: {e}", file=sys.stderr)
        return 1
    path = make_tiny_model(
        a.out,
        seed=a.seed,
        corpus=a.corpus,
        vocab_size=a.vocab_size,
        hidden_size=a.hidden_size,
        num_layers=a.layers,
        num_heads=a.heads,
        num_kv_heads=a.kv_heads,
        head_dim=a.head_dim,
        intermediate_size=a.intermediate_size,
        max_position_embeddings=a.max_position_embeddings,
        untied=a.untied,
    )
    print(json.dumps({"model": str(path)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
