package viewtest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/metrics"
	_ "github.com/parleyhq/parley/rollout/games" // config.Parse validates game.env against the registry
	"github.com/parleyhq/parley/train"
	"github.com/parleyhq/parley/view/viewtest"
)

// TestWriteReadsBack: a generated run reads back with the project's own
// readers: state.json, config.yaml, every step's verified batch (one row
// per sequence: three a rollout) and its rollouts (R a step, in groups
// with the IDs RolloutID gives, each with its turns, judge and roles),
// and metrics.jsonl (one step line a step, with the keys the report reads,
// and the evaluation lines).
func TestWriteReadsBack(t *testing.T) {
	for _, tc := range []struct {
		spec  viewtest.Spec
		evals int
	}{
		{viewtest.Spec{Steps: 3, Rollouts: 16, Seed: 1, EvalEvery: 2}, 1},
		{viewtest.Spec{Steps: 2, Rollouts: 12, GroupSize: 4, Seed: 2}, 0},
	} {
		t.Run(tc.spec.Name(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if err := viewtest.Write(dir, tc.spec); err != nil {
				t.Fatal(err)
			}
			d := dataset.RunDir(dir)
			st, ok, err := train.LoadState(d.StatePath())
			if err != nil || !ok || st.Step != tc.spec.Steps {
				t.Errorf("train.LoadState = %+v, %v, %v, want step %d", st, ok, err, tc.spec.Steps)
			}
			b, err := os.ReadFile(d.ConfigPath())
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			group := tc.spec.GroupSize
			if group == 0 {
				group = 8
			}
			if cfg.Rollout.GroupSize != group || cfg.Rollout.PromptsPerStep*group != tc.spec.Rollouts {
				t.Errorf("config.yaml: group_size %d, prompts_per_step %d, want %d rollouts in groups of %d",
					cfg.Rollout.GroupSize, cfg.Rollout.PromptsPerStep, tc.spec.Rollouts, group)
			}
			for step := 1; step <= tc.spec.Steps; step++ {
				checkStep(t, d, step, tc.spec.Rollouts, group)
			}
			checkMetrics(t, d, tc.spec.Steps, tc.evals)
		})
	}
}

// checkStep reads step's rollouts and batch back.
func checkStep(t *testing.T, d dataset.RunDir, step, rollouts, group int) {
	t.Helper()
	rs, err := dataset.ReadAllRollouts(d.RolloutsPath(step))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != rollouts {
		t.Errorf("step %d: %d rollouts, want %d", step, len(rs), rollouts)
	}
	seqs := 0
	for i, r := range rs {
		if want := viewtest.RolloutID(step, i/group, i%group); r.RolloutID != want || r.GroupID != viewtest.GroupID(step, i/group) {
			t.Errorf("step %d rollout %d: id %q group %q, want %q", step, i, r.RolloutID, r.GroupID, want)
		}
		if len(r.Turns) != 5 || r.Turns[4].Agent != "final" || r.Final == "" || r.Final != r.Turns[4].Text {
			t.Errorf("rollout %s: %d turns, final %q: want 4 turns and the final", r.RolloutID, len(r.Turns), r.Final)
		}
		for _, tu := range r.Turns[:4] {
			if n := len(strings.Fields(tu.Text)); n < 100 || n > 200 || int(tu.Tokens) != n+1 {
				t.Errorf("rollout %s: a turn of %d words, %d tokens: want 100–200 words and their stop token", r.RolloutID, n, tu.Tokens)
			}
		}
		if !r.Judged || r.Score < 1 || r.Score > 5 || r.JudgeRationale == "" || len(r.Roles) != 3 || len(r.Personas) != 2 {
			t.Errorf("rollout %s: judged %v score %v rationale %q, %d roles, %d personas", r.RolloutID, r.Judged, r.Score, r.JudgeRationale, len(r.Roles), len(r.Personas))
		}
		for _, s := range r.Sequences {
			trained := 0
			for _, m := range s.LossMask {
				trained += int(m)
			}
			if trained == 0 || trained == len(s.InputIDs) {
				t.Errorf("rollout %s %s sequence: %d of %d tokens trained, want some and not all", r.RolloutID, s.Role, trained, len(s.InputIDs))
			}
		}
		seqs += len(r.Sequences)
	}
	if seqs != 3*rollouts {
		t.Errorf("step %d: %d sequences, want 3 a rollout", step, seqs)
	}
	ready, err := dataset.VerifyBatch(d.BatchPath(step), step)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := dataset.ReadBatch(d.BatchPath(step))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != seqs || ready.Rows != seqs {
		t.Errorf("step %d: batch of %d rows (marker %d), want one a sequence, %d", step, len(rows), ready.Rows, seqs)
	}
	byID := map[string]dataset.Rollout{}
	for _, r := range rs {
		byID[r.RolloutID] = r
	}
	for _, row := range rows {
		r, ok := byID[row.RolloutID]
		if !ok || row.Step != int32(step) || row.Advantage != r.Role(row.Role).Advantage {
			t.Errorf("step %d batch row %s: step %d, advantage %v, rollout found %v", step, row.SampleID, row.Step, row.Advantage, ok)
		}
	}
}

// checkMetrics reads metrics.jsonl back.
func checkMetrics(t *testing.T, d dataset.RunDir, steps, evals int) {
	t.Helper()
	b, err := os.ReadFile(d.MetricsPath())
	if err != nil {
		t.Fatal(err)
	}
	var stepLines, evalLines int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("metrics.jsonl: %v: %s", err, sc.Bytes())
		}
		if l[string(metrics.KeyKind)] == metrics.EvalKind {
			evalLines++
			if _, ok := l[string(metrics.KeyEvalWinRate)]; !ok {
				t.Errorf("evaluation line without %s: %s", metrics.KeyEvalWinRate, sc.Bytes())
			}
			continue
		}
		stepLines++
		if got := l[string(metrics.KeyStep)]; got != float64(stepLines) {
			t.Errorf("step line %d: step %v", stepLines, got)
		}
		for _, k := range []metrics.Key{metrics.KeyRewardMean, metrics.KeyScoreMin, metrics.KeyScoreMax, metrics.KeyAgreementRate,
			metrics.KeyPrefixCacheHitRate, metrics.KeyTrainerLoss, metrics.KeyJudgeCalls, metrics.KeyBatchRows} {
			if _, ok := l[string(k)]; !ok {
				t.Errorf("step line %d: no %s", stepLines, k)
			}
		}
	}
	if stepLines != steps || evalLines != evals {
		t.Errorf("metrics.jsonl: %d step lines and %d evaluation lines, want %d and %d", stepLines, evalLines, steps, evals)
	}
}

// TestWriteDeterministic: the same spec writes the same bytes.
func TestWriteDeterministic(t *testing.T) {
	spec := viewtest.Spec{Steps: 2, Rollouts: 8, Seed: 3}
	var sums []string
	for range 2 {
		dir := filepath.Join(t.TempDir(), "run")
		if err := viewtest.Write(dir, spec); err != nil {
			t.Fatal(err)
		}
		ready, err := dataset.ReadReady(dataset.RunDir(dir).ReadyPath(2))
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, ready.SHA256)
	}
	if sums[0] != sums[1] {
		t.Errorf("two runs of %+v: batch sha256 %s and %s, want equal", spec, sums[0], sums[1])
	}
}

// TestWriteRefuses: bad specs and a folder holding a run are errors.
func TestWriteRefuses(t *testing.T) {
	held := filepath.Join(t.TempDir(), "run")
	if err := viewtest.Write(held, viewtest.Spec{Steps: 1, Rollouts: 8}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		spec viewtest.Spec
		want string
	}{
		{filepath.Join(t.TempDir(), "a"), viewtest.Spec{Steps: 0, Rollouts: 8}, "want steps ≥ 1"},
		{filepath.Join(t.TempDir(), "b"), viewtest.Spec{Steps: 1, Rollouts: 12}, "multiple of the group size"},
		{held, viewtest.Spec{Steps: 1, Rollouts: 8}, "already holds a run"},
	} {
		err := viewtest.Write(tc.dir, tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Write(%+v) = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
}
