package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/sim"
)

// curriculumSim serves an in-process serve-sim for the generator.
func curriculumSim(t *testing.T) string {
	t.Helper()
	s, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	return srv.URL
}

// runCurriculum runs "curriculum <args>" against the generator at url
// (the API key variable left unset) and returns what it printed.
func runCurriculum(t *testing.T, ctx context.Context, url string, args ...string) (string, error) {
	t.Helper()
	cmd := newCurriculumCmd(&cli{logLevel: "error"})
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	base := []string{"generate",
		"--generator.base_url=" + url + "/v1", "--generator.model=sim-judge",
		"--generator.api_key_env=PARLEY_TEST_UNSET_GENERATOR_KEY",
		// serve-sim's templated dilemmas differ in one slot: see
		// dataset/generate's simThreshold.
		"--near-dup-threshold=0.85"}
	cmd.SetArgs(append(base, args...))
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

func TestCurriculumGenerate(t *testing.T) {
	url := curriculumSim(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "dilemmas.jsonl")
	out, err := runCurriculum(t, context.Background(), url, "--n", "30", "--out", path, "--seed", "5")
	if err != nil {
		t.Fatalf("curriculum generate = %v", err)
	}
	if !strings.Contains(out, "30 prompts (30 new, 3 eval;") {
		t.Errorf("output %q, want a summary of 30 new prompts with 3 eval", out)
	}
	rows, err := dataset.LoadPrompts(path, dataset.LoadOptions{RequirePersonas: true})
	if err != nil {
		t.Fatalf("LoadPrompts = %v", err)
	}
	byCat := map[string]int{}
	for _, p := range rows {
		byCat[p.Category]++
	}
	if len(rows) != 30 || byCat["professional"] != 9 || byCat["interpersonal"] != 12 || byCat["micro_ethics"] != 9 {
		t.Errorf("%d prompts %v, want 30 as 9/12/9", len(rows), byCat)
	}

	// Same seed, other file: identical bytes.
	again := filepath.Join(dir, "again.jsonl")
	if _, err := runCurriculum(t, context.Background(), url, "--n", "30", "--out", again, "--seed", "5"); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(path)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Errorf("two runs with seed 5 differ")
	}

	// Resume to 45 with another mix and eval fraction.
	out, err = runCurriculum(t, context.Background(), url, "--n", "45", "--out", path, "--seed", "5",
		"--mix", "professional=1,interpersonal=1,micro_ethics=1", "--eval-fraction", "0.2")
	if err != nil {
		t.Fatalf("resumed curriculum generate = %v", err)
	}
	if !strings.Contains(out, "45 prompts (15 new,") {
		t.Errorf("resumed output %q, want 15 new", out)
	}
	rows, err = dataset.LoadPrompts(path, dataset.LoadOptions{RequirePersonas: true})
	if err != nil || len(rows) != 45 {
		t.Fatalf("LoadPrompts after resume = %d, %v; want 45", len(rows), err)
	}
	byCat = map[string]int{}
	for _, p := range rows {
		byCat[p.Category]++
	}
	if byCat["professional"] != 15 || byCat["interpersonal"] != 15 || byCat["micro_ethics"] != 15 {
		t.Errorf("after resume %v, want 15 each (mix 1:1:1 of 45)", byCat)
	}
}

func TestCurriculumGenerateParquetAndInterrupt(t *testing.T) {
	url := curriculumSim(t)
	path := filepath.Join(t.TempDir(), "c.parquet")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := runCurriculum(t, ctx, url, "--n", "10", "--out", path)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "rerun to continue") {
		t.Fatalf("cancelled curriculum generate = %v, want an interruption", err)
	}
	if _, err := runCurriculum(t, context.Background(), url, "--n", "10", "--out", path); err != nil {
		t.Fatal(err)
	}
	rows, err := dataset.LoadPrompts(path, dataset.LoadOptions{RequirePersonas: true})
	if err != nil || len(rows) != 10 {
		t.Fatalf("LoadPrompts(parquet) = %d, %v; want 10", len(rows), err)
	}
}

func TestCurriculumGenerateErrors(t *testing.T) {
	url := curriculumSim(t)
	path := filepath.Join(t.TempDir(), "c.jsonl")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--n", "5"}, "--out F is required"},
		{[]string{"--out", path}, "--n must be at least 1"},
		{[]string{"--n", "5", "--out", path, "--kind", "essays"}, "unknown kind"},
		{[]string{"--n", "5", "--out", path, "--mix", "professional"}, "--mix"},
		{[]string{"--n", "5", "--out", path, "--mix", "sports=1"}, "sports"},
		{[]string{"--n", "5", "--out", filepath.Join(t.TempDir(), "c.csv")}, "unknown file format"},
		{[]string{"--n", "5", "--out", path, "--generator.temperature=9"}, "generator.temperature"},
	}
	for _, tt := range tests {
		_, err := runCurriculum(t, context.Background(), url, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("curriculum generate %q = %v, want an error containing %q", tt.args, err, tt.want)
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("curriculum generate %q created %s before refusing", tt.args, path)
		}
	}
}
