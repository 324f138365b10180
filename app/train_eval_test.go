package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/harness"
	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/reward"
	"go.uber.org/zap"
)

// TestEvalOptions (issue 12, item 16): train.eval_every builds the loop's
// evaluations from the config: the curriculum's eval split, greedy, the
// run's judge as scorer and, to compare, a pairwise judge for an LLM judge
// (both orders) or the judge's scores for a rule; 0 builds none, and a
// curriculum without held-out rows is refused naming the key.
func TestEvalOptions(t *testing.T) {
	noEval := filepath.Join(t.TempDir(), "cur.jsonl")
	if err := os.WriteFile(noEval, []byte(`{"id": "t1", "category": "open_ended", "task": "Plan a trip.", "split": "train"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rule := "judge:\n  kind: rule\n  rule:\n    kind: keyword_share\n    keywords: [we]\n"
	tests := []struct {
		name, body string
		every      int
		prompts    int
		pairwise   bool // compared by an LLM pairwise judge, not by scores
		wantErr    []string
	}{
		{"off", rule + "train:\n  eval_every: 0\n", 0, 0, false, nil},
		{"rule judge", rule + "train:\n  eval_every: 4\n", 4, 10, false, nil},
		{"CA judge", "train:\n  eval_every: 2\n", 2, 10, true, nil},
		{"no held-out rows", fmt.Sprintf("%sgame:\n  env: single\ngrpo:\n  mask: final\ncurriculum:\n  path: %q\ntrain:\n  eval_every: 3\n", rule, noEval), 0, 0, false,
			[]string{"config key train.eval_every is 3", `split "eval"`, noEval}},
		{"series game", "game:\n  env: multiparty\njudge:\n  kind: game\ntrain:\n  eval_every: 2\n", 0, 0, false,
			[]string{"config key train.eval_every is 2", "multiparty game trains over series"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Load(writeYAML(t, tt.body), nil)
			if err != nil {
				t.Fatal(err)
			}
			judge, closeJudge, err := newJudge(cfg, "", nil, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			defer closeJudge()
			every, o, closeEval, err := evalOptions(cfg, judge, t.TempDir(), zap.NewNop())
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("evalOptions = nil error, want %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("evalOptions error = %q, want it to contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer closeEval()
			if every != tt.every || len(o.Prompts) != tt.prompts {
				t.Fatalf("evalOptions = every %d, %d prompts; want %d, %d", every, len(o.Prompts), tt.every, tt.prompts)
			}
			if tt.every == 0 {
				return
			}
			for _, p := range o.Prompts {
				if p.Split != dataset.SplitEval {
					t.Errorf("prompt %s in split %q, want only held-out rows", p.ID, p.Split)
				}
			}
			if o.Decoding.Name != report.DecodingGreedy || o.Decoding.Sampling.Temperature != 0 {
				t.Errorf("decoding %+v, want greedy (temperature 0)", o.Decoding)
			}
			if o.Scorer != judge || o.Scale != reward.ScaleOf(judge) {
				t.Errorf("scorer %v scale %+v, want the run's judge and its scale", o.Scorer, o.Scale)
			}
			_, isPairwise := o.Aspect.Judge.(*reward.PairwiseJudge)
			_, isScores := o.Aspect.Judge.(harness.ScoreComparer)
			if isPairwise != tt.pairwise || isScores == tt.pairwise {
				t.Errorf("compared by %T, want pairwise %v", o.Aspect.Judge, tt.pairwise)
			}
		})
	}
}
