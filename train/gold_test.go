package train_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestReadGold: a gold set that does not parse is an error naming its
// file and line.
func TestReadGold(t *testing.T) {
	tests := []struct{ file, want string }{
		{"bad_json.jsonl", "bad_json.jsonl:2:"},
		{"no_score.jsonl", "no_score.jsonl:2: gold item: no score"},
		{"repeated_id.jsonl", `repeated_id.jsonl:2: gold item: id "g1" repeats line 1`},
		{"unknown_field.jsonl", `unknown_field.jsonl:1: gold item: json: unknown field "rationale"`},
		{"missing.jsonl", "missing.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := train.ReadGold(filepath.Join("testdata", "gold", tt.file))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	items, err := train.ReadGold(filepath.Join("testdata", "gold", "items.jsonl"))
	if err != nil || len(items) != 3 || items[1].Personas[1].Text != "comfort" {
		t.Fatalf("items.jsonl: %+v, %v", items, err)
	}
}

// TestLoopGold runs the loop for 2 steps with the CA judge on serve-sim
// and the gold set scored every step: with the sim judge's own scores
// stored nothing moves and nothing is warned; with one stored score
// changed that item moves at every step and is warned about once.
func TestLoopGold(t *testing.T) {
	js, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	jts := httptest.NewServer(js.Handler())
	defer jts.Close()
	c, err := chat.New(chat.Options{BaseURL: jts.URL + "/v1", Model: "gpt-judge", Retry: retry.Policy{BackoffBase: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	judge := reward.NewCAJudge(c)
	items, err := train.ReadGold(filepath.Join("testdata", "gold", "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The sim judge is deterministic: its scores now are its scores later.
	for i := range items {
		res, err := judge.Judge(context.Background(), &dataset.Rollout{Task: items[i].Task, Final: items[i].Final, Personas: items[i].Personas})
		if err != nil {
			t.Fatal(err)
		}
		s := res.Score
		items[i].Score = &s
	}
	tests := []struct {
		name      string
		shift     map[string]float64 // added to the stored score of these ids
		wantMoved float64
		wantWarn  string
	}{
		{name: "unchanged"},
		{name: "one moved", shift: map[string]float64{"g2": 1}, wantMoved: 1.0 / 3, wantWarn: "g2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gold := make([]train.GoldItem, len(items))
			for i, it := range items {
				s := *it.Score + tt.shift[it.ID]
				it.Score = &s
				gold[i] = it
			}
			path := filepath.Join(t.TempDir(), "gold.jsonl")
			var b strings.Builder
			for _, it := range gold {
				line, _ := json.Marshal(it)
				b.Write(append(line, '\n'))
			}
			if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			read, err := train.ReadGold(path)
			if err != nil {
				t.Fatal(err)
			}
			core, logs := observer.New(zap.WarnLevel)
			dir := dataset.RunDir(t.TempDir())
			ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go ft.run(ctx)
			l := newLoopClient(t, dir, llm.Options{Endpoints: []string{simURL(t)}, Retry: retry.Policy{BackoffBase: time.Millisecond}}, 2, 0,
				func(o *train.LoopOptions) {
					o.Judge, o.Logger, o.Gold, o.GoldEvery = judge, zap.New(core), read, 1
				})
			if err := l.Run(ctx); err != nil {
				t.Fatal(err)
			}
			ms := readMetrics(t, dir)
			if len(ms) != 2 {
				t.Fatalf("%d metrics lines, want 2", len(ms))
			}
			for i, m := range ms {
				if m["judge/gold_scored"] != float64(3) || m["judge/gold_moved_share"] != tt.wantMoved {
					t.Fatalf("step %d: gold_scored %v moved_share %v, want 3 and %v", i+1, m["judge/gold_scored"], m["judge/gold_moved_share"], tt.wantMoved)
				}
				wantAbs := 0.0
				if tt.wantMoved > 0 {
					wantAbs = 1.0 / 3
				}
				if d := m["judge/gold_mean_abs_change"].(float64) - wantAbs; d > 1e-9 || d < -1e-9 {
					t.Fatalf("step %d: mean abs change %v, want %v", i+1, m["judge/gold_mean_abs_change"], wantAbs)
				}
			}
			warns := logs.FilterMessageSnippet("gold items scored differently").All()
			if tt.wantWarn == "" && len(warns) != 0 || tt.wantWarn != "" && len(warns) != 1 {
				t.Fatalf("%d gold warnings, want %d", len(warns), map[bool]int{true: 1}[tt.wantWarn != ""])
			}
			if tt.wantWarn != "" {
				if moved := warns[0].ContextMap()["moved"]; !strings.Contains(strings.Join(toStrings(moved), ","), tt.wantWarn) {
					t.Fatalf("warning names %v, want %s", moved, tt.wantWarn)
				}
			}
		})
	}
}

func toStrings(v any) []string {
	var out []string
	if vs, ok := v.([]any); ok {
		for _, x := range vs {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
