package app

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/sim"
)

// startAllSim runs serve-sim answering every registered game's prompts,
// as `parley serve-sim` does, and returns its URL.
func startAllSim(t *testing.T) string {
	t.Helper()
	games, err := SimGames(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.New(sim.Options{Games: games})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	return ts.URL
}

// generatorConfig is a config whose generator is serve-sim at url.
func generatorConfig(t *testing.T, url string) config.Config {
	t.Helper()
	y := fmt.Sprintf("run: {seed: 3}\ngenerator: {base_url: %s/v1, model: sim-judge, api_key_env: \"\", concurrency: 2, max_retries: 1}\n", url)
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatalf("config.Parse: %v\n%s", err, y)
	}
	return cfg
}

// countLines is the number of lines of a file.
func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		n++
	}
	return n
}

// TestGenerateCurriculum: `parley curriculum generate` asks serve-sim's
// generator for dilemmas until the file holds --n, prints a line of
// counts, and resumes a file that holds some.
func TestGenerateCurriculum(t *testing.T) {
	cfg := generatorConfig(t, startAllSim(t))
	out := filepath.Join(t.TempDir(), "dilemmas.jsonl")
	var printed bytes.Buffer
	env := Env{Out: &printed}
	if err := GenerateCurriculum(context.Background(), cfg, env, CurriculumOptions{Out: out, Kind: "dilemmas", N: 4}); err != nil {
		t.Fatal(err)
	}
	if n := countLines(t, out); n != 4 {
		t.Errorf("%s holds %d prompts, want 4", out, n)
	}
	if !strings.HasPrefix(printed.String(), out+": 4 prompts (4 new, ") {
		t.Errorf("printed %q, want the file's counts", printed.String())
	}
	printed.Reset()
	if err := GenerateCurriculum(context.Background(), cfg, env, CurriculumOptions{Out: out, Kind: "dilemmas", N: 6}); err != nil {
		t.Fatal(err)
	}
	if n := countLines(t, out); n != 6 {
		t.Errorf("after resuming, %s holds %d prompts, want 6", out, n)
	}
	if !strings.HasPrefix(printed.String(), out+": 6 prompts (2 new, ") {
		t.Errorf("printed %q, want 2 new of 6", printed.String())
	}
}

// TestGenerateCurriculumRefuses: the flags are checked before any request,
// and a generator that does not answer is named.
func TestGenerateCurriculumRefuses(t *testing.T) {
	cfg := generatorConfig(t, deadURL(t))
	out := filepath.Join(t.TempDir(), "x.jsonl")
	bad := "a=x"
	for _, tt := range []struct {
		name string
		o    CurriculumOptions
		want string
	}{
		{"no --out", CurriculumOptions{Kind: "dilemmas", N: 1}, "curriculum generate: --out F is required"},
		{"--n 0", CurriculumOptions{Out: out, Kind: "dilemmas"}, "curriculum generate: --n must be at least 1, got 0"},
		{"unknown kind", CurriculumOptions{Out: out, Kind: "poems", N: 1}, `curriculum generate: --kind: unknown kind "poems" (want dilemmas or open-ended)`},
		{"bad mix", CurriculumOptions{Out: out, Kind: "dilemmas", N: 1, Mix: &bad}, "curriculum generate: --mix: "},
		{"generator down", CurriculumOptions{Out: out, Kind: "open-ended", N: 1}, "curriculum generate: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := GenerateCurriculum(context.Background(), cfg, Env{}, tt.o)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("GenerateCurriculum(%+v) = %v, want an error starting %q", tt.o, err, tt.want)
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
}
