"""The synthetic benchmark set that parley's GPQA and AIME scorers are measured
on: 304 responses per benchmark (38 items x 8 runs), written from templates of
the ways models state answers (answer phrasings, boxed variants, units,
thinking blocks, distractors), each with the answer a careful reader takes
from it ("intended"; "" when there is none: no answer, an ambiguous one, a
response cut off while thinking). The GPQA questions are written here for the
purpose: none is GPQA's (which must never be committed).

    python -m parley_tools.bench_synth generate   # the items and responses (stdlib only)
    python -m parley_tools.bench_synth reference  # the reference scorers' verdicts

`reference` scores the responses with the reference packages' own code, in a
scratch environment that has them (lm-eval is not one of parley's
dependencies):

    python -m venv /tmp/ref && /tmp/ref/bin/pip install --no-deps lm-eval==0.4.13 && \\
      /tmp/ref/bin/pip install "math-verify[antlr4_13_2]==0.9.0" numpy sacrebleu pyyaml \\
      jinja2 requests tqdm typing_extensions word2number
    PYTHONPATH=scripts /tmp/ref/bin/python -m parley_tools.bench_synth reference

GPQA: lm-eval's gpqa_diamond_cot_zeroshot task config (its filter_list
strict-match and flexible-extract, built by lm_eval.filters, and its
exact_match metric with the task's arguments), the choices through the task's
preprocess; simple-evals' ANSWER_PATTERN_MULTICHOICE and re.search, as
gpqa_eval.py scores. AIME: math-verify through parley_tools.mathverify. Every
reference reads a response as lm-eval does with think_end_token="</think>"
(postprocess_generated_text): after the last </think>, the whole response when
it has none. The verdicts go to eval/bench/testdata/synthetic/*-reference.jsonl,
which the Go tests check parley's ports against (and measure parley's own
scorer by); the Go tests need no Python.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

OUT = Path("eval/bench/testdata/synthetic")
RUNS = 8
SEED = 0  # GPQA's choice-shuffle seed (parley bench --seed)
LETTERS = "ABCD"

# simple-evals' common.py (openai/simple-evals at ee3b031), used by gpqa_eval.py
# as: match = re.search(ANSWER_PATTERN_MULTICHOICE, response_text);
# extracted_answer = match.group(1) if match else None; right when it equals the
# correct letter.
ANSWER_PATTERN_MULTICHOICE = r"(?i)Answer[ \t]*:[ \t]*\$?([A-D])\$?"

# (domain, question, correct, incorrect 1, incorrect 2, incorrect 3): synthetic
# questions, written for this set.
GPQA_ITEMS: list[tuple[str, str, str, str, str, str]] = [
    ("Physics", "Which boson mediates the electromagnetic interaction?", "Photon", "Gluon", "W boson", "Graviton"),
    ("Physics", "A ball is dropped from rest; ignoring drag, how far does it fall in the first 2 s (g = 9.8 m/s^2)?", "19.6 m", "9.8 m", "39.2 m", "4.9 m"),
    ("Chemistry", "What is the hybridization of the carbon atoms in ethyne?", "sp", "sp2", "sp3", "sp3d"),
    ("Biology", "Which organelle makes most of a eukaryotic cell's ATP?", "Mitochondrion", "Ribosome", "Golgi apparatus", "Lysosome"),
    ("Physics", "What is the speed of light in vacuum, to two significant figures?", "$3.0 \\times 10^8$ m/s", "$3.0 \\times 10^6$ m/s", "$1.5 \\times 10^8$ m/s", "$3.0 \\times 10^{10}$ m/s"),
    ("Chemistry", "Which of these is the conjugate base of acetic acid?", "Acetate", "Acetone", "Acetyl chloride", "Acetaldehyde"),
    ("Biology", "How many chromosomes does a typical human somatic cell carry?", "46", "23", "44", "48"),
    ("Physics", "Which quantity is conserved in an elastic collision but not in an inelastic one?", "Kinetic energy", "Momentum", "Mass", "Electric charge"),
    ("Chemistry", "What is the oxidation state of manganese in permanganate, MnO4-?", "+7", "+6", "+4", "+2"),
    ("Biology", "Which base pairs with adenine in RNA?", "Uracil", "Thymine", "Cytosine", "Guanine"),
    ("Physics", "What is the SI unit of magnetic flux?", "Weber", "Tesla", "Henry", "Gauss"),
    ("Chemistry", "Which element has the highest electronegativity on the Pauling scale?", "Fluorine", "Oxygen", "Chlorine", "Nitrogen"),
    ("Biology", "Which enzyme unwinds the DNA double helix at a replication fork?", "Helicase", "Ligase", "Primase", "Topoisomerase I"),
    ("Physics", "A photon has energy 2 eV. What is its wavelength, approximately?", "620 nm", "310 nm", "1240 nm", "420 nm"),
    ("Chemistry", "What is the molecular geometry of sulfur hexafluoride?", "Octahedral", "Trigonal bipyramidal", "Square planar", "Tetrahedral"),
    ("Biology", "Which tissue carries water up a vascular plant?", "Xylem", "Phloem", "Cambium", "Epidermis"),
    ("Physics", "What is the ground-state energy of hydrogen's electron?", "-13.6 eV", "-3.4 eV", "-1.51 eV", "+13.6 eV"),
    ("Chemistry", "Which reagent reduces a ketone to a secondary alcohol under mild conditions?", "Sodium borohydride", "Sodium hydroxide", "Potassium permanganate", "Chromic acid"),
    ("Biology", "In which phase of mitosis do sister chromatids separate?", "Anaphase", "Metaphase", "Prophase", "Telophase"),
    ("Physics", "Two resistors of 6 ohm each are connected in parallel. What is the total resistance?", "3 ohm", "12 ohm", "6 ohm", "1.5 ohm"),
    ("Chemistry", "Which gas is produced when zinc reacts with hydrochloric acid?", "Hydrogen", "Chlorine", "Oxygen", "Hydrogen chloride"),
    ("Biology", "Which molecule carries amino acids to the ribosome?", "tRNA", "mRNA", "rRNA", "snRNA"),
    ("Physics", "What happens to the period of a simple pendulum if its length is quadrupled?", "It doubles.", "It quadruples.", "It halves.", "It is unchanged."),
    ("Chemistry", "What is the pH of a 0.01 M HCl solution at 25 C?", "2", "1", "12", "0.01"),
    ("Biology", "Which blood cells are chiefly responsible for antibody production?", "B cells (plasma cells)", "T cells", "Erythrocytes", "Platelets"),
    ("Physics", "Which of these is a fermion?", "Neutron", "Photon", "Higgs boson", "Pion"),
    ("Chemistry", "Which type of isomers are non-superimposable mirror images?", "Enantiomers", "Diastereomers", "Structural isomers", "Conformers"),
    ("Biology", "Where in the cell does glycolysis take place?", "Cytoplasm", "Mitochondrial matrix", "Nucleus", "Endoplasmic reticulum"),
    ("Physics", "A 2 kg mass moves at 3 m/s. What is its kinetic energy?", "9 J", "6 J", "18 J", "3 J"),
    ("Chemistry", "Which bond is the strongest?", "C#N triple bond", "C=N double bond", "C-N single bond", "N-H bond"),
    ("Biology", "Which hormone lowers blood glucose?", "Insulin", "Glucagon", "Cortisol", "Adrenaline"),
    ("Physics", "What is the escape velocity from Earth's surface, approximately?", "11.2 km/s", "7.9 km/s", "3.0 km/s", "42.1 km/s"),
    ("Chemistry", "Which is an iron ore?", "Iron oxide (hematite)", "Iron", "Iron sulfate", "Iron carbonyl"),
    ("Biology", "Which kingdom do mushrooms belong to?", "Fungi", "Plantae", "Protista", "Monera"),
    ("Physics", "Which law relates the pressure and volume of a gas at constant temperature?", "Boyle's law", "Charles's law", "Gay-Lussac's law", "Avogadro's law"),
    ("Chemistry", "What is the approximate bond angle in water?", "104.5 degrees", "109.5 degrees", "120 degrees", "90 degrees"),
    ("Biology", "Which structure connects muscle to bone?", "Tendon", "Ligament", "Cartilage", "Fascia"),
    ("Physics", "What is the Schwarzschild radius of a black hole proportional to?", "Its mass", "The square of its mass", "The square root of its mass", "The inverse of its mass"),
]

# (problem, answer): synthetic AIME-style problems with integer answers in 0..999.
AIME_ITEMS: list[tuple[str, int]] = [
    (f"Synthetic problem {k + 1}: compute ({a} * {b} + {c}) mod 1000.", (a * b + c) % 1000)
    for k, (a, b, c) in enumerate(
        [
            (17, 23, 5), (3, 11, 0), (12, 12, 0), (45, 7, 3), (99, 9, 18), (5, 5, 8), (31, 4, 2), (2, 2, 3),
            (88, 11, 1), (14, 15, 20), (6, 7, 0), (123, 4, 7), (250, 3, 2), (19, 19, 6), (8, 125, 0), (33, 3, 1),
            (41, 24, 9), (7, 7, 7), (60, 6, 4), (13, 17, 0), (21, 21, 21), (4, 4, 0), (73, 11, 2), (16, 16, 16),
            (9, 111, 0), (52, 3, 5), (27, 37, 1), (11, 11, 11), (64, 2, 6), (18, 28, 0), (10, 46, 7), (3, 3, 3),
            (77, 13, 0), (29, 31, 8), (100, 5, 2), (1, 1, 0), (48, 20, 3), (36, 6, 6),
        ]
    )
]


def gpqa_id(i: int) -> str:
    return f"recSYNTH{i + 1:08d}"


def aime_id(i: int) -> str:
    return f"synth-aime-{i + 1:02d}"


def shuffle_gpqa(item_id: str, correct: str, incorrect: Sequence[str], seed: int, run: int) -> tuple[list[str], str]:
    """parley's ShuffleGPQA (eval/bench/gpqa.go): the choices in display order and the correct letter."""
    h = hashlib.sha256(f"parley/gpqa/{seed}/{run}/{item_id}".encode()).digest()
    code = int.from_bytes(h[:8], "big") % 24
    pool = [correct, *incorrect]
    src = [0, 1, 2, 3]
    choices = [""] * 4
    letter = ""
    radix = 6
    for pos in range(4):
        k, code = divmod(code, radix)
        if pos < 3:
            radix //= 3 - pos
        idx = src.pop(k)
        choices[pos] = pool[idx]
        if idx == 0:
            letter = LETTERS[pos]
    return choices, letter


# --- GPQA responses ---------------------------------------------------------

REASONING = [
    "Let me recall the relevant principle before deciding.",
    "First, consider what the question is really asking.",
    "A quick estimate helps to rule out the outliers.",
    "The standard textbook result applies here.",
    "Checking the units confirms the scale of the answer.",
    "We can eliminate options that contradict basic conservation laws.",
]


class GPQACase:
    """One response being written: the question as shown, and the letters to use."""

    def __init__(self, rng: random.Random, choices: list[str], correct: str) -> None:
        self.rng, self.choices, self.correct = rng, choices, correct
        self.letter = correct if rng.random() < 0.6 else rng.choice([x for x in LETTERS if x != correct])
        self.other = rng.choice([x for x in LETTERS if x != self.letter])

    def text(self, letter: str) -> str:
        return self.choices[LETTERS.index(letter)]

    def reasoning(self, mention: bool = True) -> str:
        """Two or three sentences; with mention, one rules out another choice by "(X)"."""
        s = self.rng.sample(REASONING, 2)
        if mention:
            s.insert(1, f"Option ({self.other}) can be ruled out, since {self.text(self.other)} does not fit.")
        return " ".join(s)


GPQATemplate = Callable[[GPQACase], tuple[str, str]]

GPQA_TEMPLATES: list[GPQATemplate] = [
    lambda c: (f"{c.reasoning()}\n\nAnswer: {c.letter}", c.letter),
    lambda c: (f"{c.reasoning()}\n\nAnswer: ({c.letter})", c.letter),
    lambda c: (f"{c.reasoning()}\n\n**Answer: {c.letter}**", c.letter),
    lambda c: (f"{c.reasoning()}\n\n**Answer:** {c.letter}", c.letter),
    lambda c: (f"{c.reasoning()}\nThe answer is ({c.letter}).", c.letter),
    lambda c: (f"{c.reasoning()}\nThe answer is {c.letter}.", c.letter),
    lambda c: (f"{c.reasoning()}\nThe answer is ({c.letter}) because {c.text(c.letter)} fits the data.", c.letter),
    lambda c: (f"{c.reasoning()}\n\nFinal answer: \\boxed{{{c.letter}}}", c.letter),
    lambda c: (f"{c.reasoning()}\n\n$\\boxed{{({c.letter})}}$", c.letter),
    lambda c: (f"{c.reasoning()}\nTherefore, the answer is ({c.letter}).", c.letter),
    lambda c: (f"{c.reasoning()}\n\nanswer: {c.letter.lower()}", c.letter),
    lambda c: (f"At first glance ({c.other}) looks right, but {c.text(c.other)} fails the check. {c.reasoning(False)}\n\nAnswer: {c.letter}", c.letter),
    lambda c: (f"Answer: {c.other}\n\nWait, that is wrong: {c.text(c.other)} does not fit. {c.reasoning(False)} The answer is {c.letter}.", c.letter),
    lambda c: (f"<think>\n{c.reasoning()} Maybe ({c.other})? No.\n</think>\n\nAnswer: {c.letter}", c.letter),
    lambda c: (f"<think>\n{c.reasoning()} I am leaning towards ({c.letter}), so Answer: {c.letter} perhaps, but let me check the", ""),
    lambda c: (f"<think>\n{c.reasoning(False)} The value {c.text(c.letter)} seems plausible, but", ""),
    lambda c: (f"<think>\n{c.reasoning()}\n</think>\n\n", ""),
    lambda c: (f"{c.reasoning(False)} So the result is {c.text(c.letter)}.", c.letter),
    lambda c: (f"{c.reasoning()}\n\nANSWER: ${c.letter}$", c.letter),
    lambda c: (f"{c.reasoning()}\n\nAnswer: {c.letter}) {c.text(c.letter)}", c.letter),
    lambda c: (f"{c.reasoning()}\nThe answer is: {c.letter}", c.letter),
    lambda c: (f"{c.reasoning()}\n\nAnswer:\n{c.letter}", c.letter),
    lambda c: (f"{c.reasoning()} My answer is {c.letter}", c.letter),
    lambda c: (f"{c.reasoning(False)} Option {c.letter} is correct.", c.letter),
    lambda c: (f"{c.reasoning()}\n\n({c.letter})", c.letter),
    lambda c: (f"{c.reasoning(False)}\n\n{c.letter}", c.letter),
    lambda c: (f"{c.reasoning()}\n\nAnswer: \\text{{{c.letter}}}", c.letter),
    lambda c: (f"{c.reasoning()}\n\nAnswer: \\textbf{{{c.letter}}}", c.letter),
    lambda c: (f"Comparing ({c.other}) with the rest, {c.reasoning(False).lower()} I choose ({c.letter}).", c.letter),
    lambda c: (f"{c.reasoning()}\n\nAnswer: {c.letter} or {c.other}", ""),
    lambda c: (f"{c.reasoning()}\n\nAnswer: E", ""),
    lambda c: (f"{c.reasoning()}\nThe answer is ({c.letter})", c.letter),
    lambda c: (f"The answer is a bit subtle. {c.reasoning()}\n\nAnswer: {c.letter}", c.letter),
    lambda c: (f"{c.reasoning()}\n\nFinal Answer: {c.letter}.", c.letter),
    lambda c: (f"{c.reasoning()}\n\nAnswer : {c.letter}", c.letter),
    lambda c: (f"{c.reasoning()}\nThe answer is $\\boxed{{{c.letter}}}$.", c.letter),
    lambda c: (f"{c.reasoning()}\n\nAnswer: ({c.letter}) {c.text(c.letter)}", c.letter),
    lambda c: (f"{c.reasoning()}\nThus the answer is {c.letter}, {c.text(c.letter)}.", c.letter),
]


def gpqa_set() -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The items (GPQA's columns) and the responses, one per item and run."""
    rng = random.Random(20)
    items, responses = [], []
    for i, (domain, q, correct, *incorrect) in enumerate(GPQA_ITEMS):
        items.append(
            {
                "Record ID": gpqa_id(i),
                "Question": f"(Synthetic.) {q}",
                "Correct Answer": correct,
                "Incorrect Answer 1": incorrect[0],
                "Incorrect Answer 2": incorrect[1],
                "Incorrect Answer 3": incorrect[2],
                "High-level domain": domain,
                "Subdomain": "Synthetic " + domain,
            }
        )
    for run in range(RUNS):
        for i, (_, _, correct, *incorrect) in enumerate(GPQA_ITEMS):
            choices, letter = shuffle_gpqa(gpqa_id(i), correct, incorrect, SEED, run)
            t = (i + 5 * run) % len(GPQA_TEMPLATES)
            text, intended = GPQA_TEMPLATES[t](GPQACase(rng, choices, letter))
            responses.append({"id": gpqa_id(i), "run": run, "response": text, "expected": letter, "intended": intended, "template": f"gpqa-{t:02d}"})
    return items, responses


# --- AIME responses ---------------------------------------------------------


class AIMECase:
    """One AIME response being written: the value it gives and a distractor."""

    def __init__(self, rng: random.Random, answer: int) -> None:
        self.rng = rng
        self.n = answer if rng.random() < 0.65 else rng.choice([x for x in range(1, 1000) if x != answer])
        self.m = rng.choice([x for x in range(1, 1000) if x not in (answer, self.n)])

    def work(self) -> str:
        return self.rng.choice(
            [
                "Multiplying first and then reducing modulo 1000 keeps the numbers small.",
                "We compute the product, add the constant, and take the remainder.",
                "Working step by step, the intermediate value is easy to check.",
            ]
        )

    def split(self) -> str:
        """The value's digits with a comma after the first: 123 as "1, 23" (a list, not 123)."""
        s = str(self.n)
        return f"{s[0]}, {s[1:]}" if len(s) > 1 else f"{s}, 0"


AIMETemplate = Callable[[AIMECase], tuple[str, str]]

AIME_TEMPLATES: list[AIMETemplate] = [
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n}}}", str(c.n)),
    lambda c: (f"{c.work()} The answer is $\\boxed{{{c.n}}}$.", str(c.n)),
    lambda c: (f"{c.work()} So the answer is \\boxed {c.n}.", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n}.0}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n} \\text{{ cm}}}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n}\\%}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n}^\\circ}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{\\${c.n}}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{n = {c.n}}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{m+n = {c.n}}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n:03d}}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n}, {c.m}}}", ""),
    lambda c: (f"{c.work()} This gives \\boxed{{{c.m}}}. Wait, I made an arithmetic error; redoing it gives \\boxed{{{c.n}}}.", str(c.n)),
    lambda c: (f"{c.work()} Either \\boxed{{{c.n}}} or \\boxed{{{c.m}}}.", ""),
    lambda c: (f"{c.work()} The answer is {c.n}.", str(c.n)),
    lambda c: (f"<think>\n{c.work()} So far \\boxed{{{c.n}}} but I should double-check the", ""),
    lambda c: (f"<think>\n{c.work()} Maybe \\boxed{{{c.m}}}? No.\n</think>\n\nThe answer is \\boxed{{{c.n}}}.", str(c.n)),
    lambda c: (f"<think>\n{c.work()}\n</think>\n\n**Final Answer**\n\\[\n\\boxed{{{c.n}}}\n\\]", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{\\frac{{{2 * c.n}}}{{2}}}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n}.5}}", f"{c.n}.5"),
    lambda c: (f"{c.work()}\n\n\\boxed{{\\textbf{{{c.n}}}}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n} \\text{{ ways}}}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\fbox{{{c.n}}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{ {c.n} }}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n}}}\\text{{ cm}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n} \\text{{ or }} {c.m}}}", ""),
    lambda c: (f"{c.work()}\n\n\\boxed{{-{c.n}}}", str(-c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n}\\,\\text{{cm}}^2}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n}^{{\\circ}}}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{\\text{{{c.n}}}}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.split()}}}", ""),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n}.00}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{\\dfrac{{{c.n}}}{{1}}}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n}}}\n\nSo the final answer is {c.n}.", str(c.n)),
    lambda c: (f"{c.work()}\n\nAnswer: {c.n}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{{c.n}\\text{{ degrees}}}}", str(c.n)),
    lambda c: (f"{c.work()}\n\n\\boxed{{${c.n}$}}", str(c.n)),
    lambda c: (f"{c.work()} Hence \\(\\boxed{{{c.n}}}\\).", str(c.n)),
]


def aime_set() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The items and the responses, one per item and run."""
    rng = random.Random(24)
    items = [{"id": aime_id(i), "problem": p, "answer": a} for i, (p, a) in enumerate(AIME_ITEMS)]
    responses = []
    for run in range(RUNS):
        for i, (_, answer) in enumerate(AIME_ITEMS):
            t = (i + 5 * run) % len(AIME_TEMPLATES)
            text, intended = AIME_TEMPLATES[t](AIMECase(rng, answer))
            responses.append({"id": aime_id(i), "run": run, "response": text, "expected": str(answer), "intended": intended, "template": f"aime-{t:02d}"})
    return items, responses


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def generate(out: Path) -> None:
    """Write gpqa.csv, gpqa-responses.jsonl, aime.jsonl and aime-responses.jsonl under out."""
    out.mkdir(parents=True, exist_ok=True)
    items, responses = gpqa_set()
    with (out / "gpqa.csv").open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(items[0]))
        w.writeheader()
        w.writerows(items)
    write_jsonl(out / "gpqa-responses.jsonl", responses)
    aitems, aresponses = aime_set()
    write_jsonl(out / "aime.jsonl", aitems)
    write_jsonl(out / "aime-responses.jsonl", aresponses)


# --- reference verdicts -----------------------------------------------------


def reference(out: Path) -> None:
    """Score the responses under out with the reference packages; write *-reference.jsonl."""
    try:
        import lm_eval
        from lm_eval.api.instance import Instance
        from lm_eval.api.metrics import exact_match_hf_evaluate
        from lm_eval.filters import build_filter_ensemble
        from lm_eval.models.utils import postprocess_generated_text
        from lm_eval.tasks._yaml_loader import load_yaml
        from lm_eval.tasks.gpqa.cot_zeroshot.utils import preprocess
    except ImportError as e:
        sys.exit(f"bench_synth reference: {e}: run it in a scratch environment with lm-eval==0.4.13 (see this module's doc)")
    from importlib.metadata import version

    from parley_tools.mathverify import verdicts

    if version("lm-eval") != "0.4.13":
        sys.exit(f"bench_synth reference: lm-eval {version('lm-eval')}: want 0.4.13 (the version eval/bench ports)")

    def read(response: str) -> str:
        return str(postprocess_generated_text(response, None, "</think>"))

    task = load_yaml(Path(lm_eval.__file__).parent / "tasks/gpqa/cot_zeroshot/gpqa_diamond_cot_zeroshot.yaml", resolve_func=False)
    metric = next(m for m in task["metric_list"] if m["metric"] == "exact_match")
    em_kwargs = {k: v for k, v in metric.items() if k not in ("metric", "aggregation", "higher_is_better")}
    ensembles = {}
    for fc in task["filter_list"]:
        components = [(f["function"], {k: v for k, v in f.items() if k != "function"}) for f in fc["filter"]]
        ensembles["lm-eval-strict" if fc["name"] == "strict-match" else "lm-eval-flexible"] = build_filter_ensemble(fc["name"], components)

    with (out / "gpqa.csv").open(encoding="utf-8", newline="") as f:
        items = {r["Record ID"]: r for r in csv.DictReader(f)}
    responses = read_jsonl(out / "gpqa-responses.jsonl")
    instances = []
    for r in responses:
        it = items[r["id"]]
        choices, letter = shuffle_gpqa(r["id"], it["Correct Answer"], [it[f"Incorrect Answer {k}"] for k in (1, 2, 3)], SEED, r["run"])
        assert letter == r["expected"], r
        doc = {"choices": [preprocess(c) for c in choices], "answer": f"({letter})"}
        inst = Instance(request_type="generate_until", doc=doc, arguments=("", {}), idx=0)
        inst.resps = [read(r["response"])]
        instances.append(inst)
    for ens in ensembles.values():
        ens.apply(instances)
    rows = []
    for r, inst in zip(responses, instances):
        row: dict[str, Any] = {"id": r["id"], "run": r["run"]}
        for scorer, ens in ensembles.items():
            got = inst.filtered_resps[ens.name]
            em = exact_match_hf_evaluate(predictions=[got], references=[inst.doc["answer"]], **em_kwargs)["exact_match"]
            row[scorer] = {"got": got, "correct": bool(em == 1.0)}
        m = re.search(ANSWER_PATTERN_MULTICHOICE, read(r["response"]))
        extracted = m.group(1) if m else None
        row["simple-evals"] = {"got": extracted or "", "correct": extracted == r["expected"]}
        rows.append(row)
    write_jsonl(out / "gpqa-reference.jsonl", rows)

    aresponses = read_jsonl(out / "aime-responses.jsonl")
    lines = [json.dumps({"gold": r["expected"], "response": read(r["response"])}) for r in aresponses]
    arows = [{"id": r["id"], "run": r["run"], "math-verify": v} for r, v in zip(aresponses, verdicts(lines))]
    write_jsonl(out / "aime-reference.jsonl", arows)
    print(f"lm-eval {version('lm-eval')}, math-verify {version('math-verify')}: wrote {out}/gpqa-reference.jsonl, {out}/aime-reference.jsonl")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m parley_tools.bench_synth", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["generate", "reference"])
    ap.add_argument("--out", type=Path, default=OUT, help=f"the set's directory (default {OUT})")
    a = ap.parse_args(argv)
    if a.command == "generate":
        generate(a.out)
    else:
        reference(a.out)


if __name__ == "__main__":
    main()
