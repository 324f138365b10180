package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/bench"
	"github.com/parleyhq/parley/eval/ifeval"
	"github.com/parleyhq/parley/eval/report"
	"github.com/spf13/pflag"
)

// TestReadersAcceptBOM gives every reader of a user's text file its format
// with a UTF-8 byte-order mark in front (as Windows editors and Excel
// write): each reads it as if the mark were not there.
func TestReadersAcceptBOM(t *testing.T) {
	const bom = "\ufeff"
	tests := []struct {
		name, file, content string
		read                func(path string) (n int, err error)
		want                int
	}{
		{"config", "c.yaml", "run:\n  seed: 3\n", func(p string) (int, error) {
			c, err := config.Load(p, pflag.NewFlagSet("x", pflag.ContinueOnError))
			return int(c.Run.Seed), err
		}, 3},
		{"curriculum jsonl", "c.jsonl", `{"id": "q1", "category": "open_ended", "task": "Plan a trip."}` + "\n", func(p string) (int, error) {
			ps, err := dataset.LoadPrompts(p, dataset.LoadOptions{})
			return len(ps), err
		}, 1},
		{"persona library", "p.jsonl", `{"id": "x1", "a": "Be fast.", "b": "Be careful."}` + "\n", func(p string) (int, error) {
			ps, err := dataset.LoadPersonaPairs(p)
			return len(ps), err
		}, 1},
		{"bench data jsonl", "d.jsonl", `{"id": 1, "answer": 3}` + "\n", func(p string) (int, error) {
			rs, err := bench.ReadRecords(p)
			return len(rs), err
		}, 1},
		{"bench data json", "d.json", `[{"id": 1}, {"id": 2}]`, func(p string) (int, error) {
			rs, err := bench.ReadRecords(p)
			return len(rs), err
		}, 2},
		{"bench data csv", "d.csv", "id,answer\n1,3\n", func(p string) (int, error) {
			rs, err := bench.ReadRecords(p)
			if err == nil && rs[0].Fields["id"] != "1" {
				t.Errorf("csv header: fields %v, want the key id", rs[0].Fields)
			}
			return len(rs), err
		}, 1},
		{"bench responses", "r.jsonl", `{"id": "1", "run": 0, "response": "x"}` + "\n", func(p string) (int, error) {
			rs, err := bench.ReadResponses(p)
			return len(rs), err
		}, 1},
		{"ifeval inputs", "i.jsonl", `{"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}` + "\n", func(p string) (int, error) {
			in, err := ifeval.LoadInputs(p)
			return len(in), err
		}, 1},
		{"ifeval reference responses", "r.jsonl", `{"prompt": "p", "response": "r"}` + "\n", func(p string) (int, error) {
			rs, err := ifeval.LoadResponses(p)
			return len(rs), err
		}, 1},
		{"evaluation results", "e.json", `{"kind": "bench", "benchmark": "aime2024", "model": "base", "runs": []}`, func(p string) (int, error) {
			r, err := report.ReadEvalFiles([]string{p})
			return len(r.Bench), err
		}, 1},
		{"bench result", "b.json", `{"benchmark": "aime2024", "n": 1, "runs": [], "mean": 0, "sd": 0}`, func(p string) (int, error) {
			r, err := bench.ReadResult(p)
			return r.N, err
		}, 1},
		{"metrics", "metrics.jsonl", `{"step": 1, "reward_mean": 0.5}` + "\n", func(p string) (int, error) {
			m, err := report.ReadMetrics(p)
			if err == nil && len(m.Notes) > 0 {
				t.Errorf("metrics notes %v", m.Notes)
			}
			return len(m.Steps), err
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.file)
			if err := os.WriteFile(path, []byte(bom+tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			n, err := tt.read(path)
			if err != nil || n != tt.want {
				t.Errorf("%s with a BOM: got %d, %v; want %d, no error", tt.name, n, err, tt.want)
			}
		})
	}
}
