// Package bench holds parley's benchmark checks on the policy, everything but
// generation: loaders for the public data files (JSONL, JSON, CSV, parquet),
// GPQA Diamond (seeded choice shuffles, the simple-evals prompt, answer
// extraction) and AIME 2024/2025 (the \boxed{} instruction, last-box integer
// extraction), Qwen3's sampling presets, and scoring of responses into
// accuracy per run and mean ± SD over runs, online or from a responses file.
//
// A runner asks for the questions of each run (GPQAQuestions,
// AIMEQuestions), has the policy answer each Prompt, collects Responses
// {id, run, response} and scores them (ScoreGPQA, ScoreAIME, or
// ScoreOffline from files). Benchmark data is read from the user's local
// files; GPQA must never be committed, and this package's tests use
// synthetic rows with the same columns. IFEval lives in eval/ifeval.
//
// A scorer reads the answers (Scorers, ScoreOptions): parley's own
// (ExtractChoice, ExtractAIMEAnswer), or a reference's, so a score can be
// reported beside published ones: lm-eval 0.4.13's GPQA filters
// (LMEvalStrict, LMEvalFlexible, ported with Python's string semantics),
// simple-evals' GPQA pattern (SimpleEvalsChoice), and the math-verify
// package itself for AIME (MathVerify runs it in parley's Python
// environment). The references read a response cut off inside its thinking
// block whole (ReferenceText); parley's scorer gives it no answer, and the
// results count such responses (CutOff). testdata/synthetic holds the set
// the scorers are measured on, with the references' verdicts.
package bench

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/fsutil"
)

// Benchmark names, as written in results.
const (
	GPQADiamond = "gpqa_diamond"
	AIME2024    = "aime2024"
	AIME2025    = "aime2025"
)

// Question is one prompt for the policy: item ID, run, the user message to
// send, and the expected answer (a letter for GPQA, an integer for AIME).
type Question struct {
	ID       string `json:"id"`
	Run      int    `json:"run"`
	Prompt   string `json:"prompt"`
	Expected string `json:"expected"`
}

// Response is the policy's answer to one question in one run: a line of a
// responses file. Expected is optional; when set, scoring checks that it is
// the answer the scorer expects (so a GPQA file scored with the wrong shuffle
// seed fails instead of scoring at chance).
type Response struct {
	ID       string `json:"id"`
	Run      int    `json:"run"`
	Response string `json:"response"`
	Expected string `json:"expected,omitempty"`
}

// ReadResponses reads a responses file: JSONL, one {id, run, response
// [, expected]} object per line. id may be a JSON string or number; run an
// integer. Errors name the file and line.
func ReadResponses(path string) ([]Response, error) {
	recs, err := ReadJSONL(path)
	if err != nil {
		return nil, fmt.Errorf("bench.ReadResponses: %w", err)
	}
	out := make([]Response, 0, len(recs))
	for _, r := range recs {
		var resp Response
		var ok bool
		if resp.ID, _, ok = r.Text("id"); !ok {
			return nil, fmt.Errorf("bench.ReadResponses: %s: no id", r.Where())
		}
		run, _, ok := r.Text("run")
		if !ok {
			return nil, fmt.Errorf("bench.ReadResponses: %s: no run", r.Where())
		}
		n, err := strconv.Atoi(run)
		if err != nil {
			return nil, fmt.Errorf("bench.ReadResponses: %s: run %q is not an integer", r.Where(), run)
		}
		resp.Run = n
		v, present := r.Fields["response"]
		text, isString := v.(string)
		if !present || !isString {
			return nil, fmt.Errorf("bench.ReadResponses: %s: response must be a string", r.Where())
		}
		resp.Response = text
		if e, ok := r.Fields["expected"].(string); ok {
			resp.Expected = e
		}
		out = append(out, resp)
	}
	return out, nil
}

// WriteResponses writes responses as JSONL (the ReadResponses format),
// through a temporary file renamed into place.
func WriteResponses(path string, responses []Response) error {
	var b strings.Builder
	for _, r := range responses {
		line, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("bench.WriteResponses: %w", err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := fsutil.WriteFileAtomic(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("bench.WriteResponses: %w", err)
	}
	return nil
}
