// Package ifeval is a Go port of the IFEval instruction-following benchmark
// checks (Zhou et al. 2023, "Instruction-Following Evaluation for Large
// Language Models").
//
// It provides the 25 registered verifiable instructions ("keywords:existence",
// "length_constraints:number_words", "detectable_format:json_format", ...)
// with the keyword arguments of the reference registry, the strict and loose
// evaluation of evaluation_lib (loose accepts a response when any of eight
// variants passes: as is, without its first line, its last line, both, each
// with '*' removed), and the prompt-level and instruction-level accuracies of
// both.
//
// Build binds an instruction id to its kwargs; Instruction.Check runs the
// reference's check_following on one response; CheckStrict and CheckLoose add
// evaluation_lib's empty-response rule and loose variants; Evaluate scores a
// benchmark run (inputs matched to responses by prompt text, as the reference
// does) and LoadInputs / LoadResponses read the reference JSONL formats.
//
// The NLP the checks depend on is ported too, so that verdicts match the
// Python reference run with current packages: sentence counting uses a port
// of NLTK 3.10's Punkt tokenizer with its English model (internal/punkt),
// the capital-word count a port of nltk.word_tokenize (internal/wordtok), and
// language identification a port of langdetect 1.0.9 with its profiles and
// the reference's fixed seed 0 (internal/langdetect). DIFFERENCES.md in this
// directory lists every known behavioural difference from the reference.
// Instructions are safe for concurrent use.
//
// NOTICE: the instruction checks, the registry, the evaluation logic and the
// sentence splitter of this package are derived from
// google-research/google-research, folder instruction_following_eval
// (instructions.py, instructions_registry.py, instructions_util.py,
// evaluation_lib.py), Copyright The Google Research Authors, licensed under
// the Apache License, Version 2.0. The sentence and word tokenizers in
// internal/punkt and internal/wordtok are derived from NLTK
// (nltk/tokenize/punkt.py, nltk/tokenize/destructive.py), Copyright the NLTK
// Project, Apache License 2.0, and internal/punkt/english.tsv holds NLTK's
// pretrained English Punkt parameters. internal/langdetect is derived from
// langdetect (Copyright Michal Danilak) and Cybozu Labs' language-detection
// (Copyright Cybozu Labs, Inc.), Apache License 2.0, and embeds their language
// profiles. See testdata/NOTICE.
package ifeval
