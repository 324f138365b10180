package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/vllmtest"
	"github.com/parleyhq/parley/train"
)

// TestLocalJudgeVLLM runs configs/quickstart-local-judge.yaml's judging
// path against a real vLLM (CPU build): the shared server `make test`
// starts (PARLEY_VLLM_URL) plays a few short deliberations as the policy
// and then judges them as the CA judge, through response_format
// json_schema. The tiny model's scores mean nothing; what is checked is
// that structured output forces a reply parley parses every time: every
// rollout judged, none failed, each score an integer of the rubric's 1-5,
// each rationale within judge.rationale_max_chars.
func TestLocalJudgeVLLM(t *testing.T) {
	srv := vllmtest.Shared(t)
	root, _ := filepath.Abs("../..")
	cfg := filepath.Join(root, "configs", "quickstart-local-judge.yaml")
	const rationaleMax = 120
	overrides := []string{
		"--config", cfg,
		"--policy.endpoints=" + srv.URL, "--policy.model=" + srv.Model,
		"--judge.base_url=" + srv.URL + "/v1", "--judge.model=" + srv.Model,
		fmt.Sprintf("--judge.rationale_max_chars=%d", rationaleMax),
		// a few short games: the rollouts are the judge's input, not the test
		"--game.deliberation.max_rounds=1", "--sampling.max_tokens=4", "--sampling.final_max_tokens=8",
		// the random judge may give a group equal scores; keep it in the batch
		"--grpo.keep_zero_variance=true",
	}
	ro := t.TempDir()
	start := time.Now()
	rc := newRolloutCmd(quietApp())
	rc.SetArgs(append([]string{"--out", ro, "--prompts", "1", "--group-size", "3"}, overrides...))
	if err := rc.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("parley rollout: %v", err)
	}
	played := time.Since(start)
	out := t.TempDir()
	sc := newScoreCmd(quietApp())
	sc.SetArgs(append([]string{"--in", filepath.Join(ro, "rollouts.parquet"), "--out", out}, overrides...))
	if err := sc.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("parley score (the tiny model as the CA judge): %v", err)
	}
	t.Logf("rollouts %.1fs, judging %.1fs", played.Seconds(), (time.Since(start) - played).Seconds())

	b, err := os.ReadFile(filepath.Join(out, "score-summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum train.RescoreSummary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("score-summary.json: %v", err)
	}
	if sum.Judge.Judged != 3 || sum.Judge.Failed != 0 || sum.Judge.Skipped != 0 {
		t.Errorf("judge stats %+v, want 3 judged, none failed or skipped", sum.Judge)
	}
	rs, err := dataset.ReadAllRollouts(dataset.RunDir(out).RolloutsPath(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d scored rollouts, want 3", len(rs))
	}
	for _, r := range rs {
		if !r.Judged || r.JudgeError != "" {
			t.Errorf("rollout %s: judged %t, judge error %q: want a parsed verdict", r.RolloutID, r.Judged, r.JudgeError)
			continue
		}
		if r.Score < 1 || r.Score > 5 || r.Score != float32(int(r.Score)) {
			t.Errorf("rollout %s: score %g, want an integer in the rubric's 1-5", r.RolloutID, r.Score)
		}
		if r.JudgeModel != srv.Model {
			t.Errorf("rollout %s: judge model %q, want %q", r.RolloutID, r.JudgeModel, srv.Model)
		}
		if n := utf8.RuneCountInString(r.JudgeRationale); n > rationaleMax {
			t.Errorf("rollout %s: rationale of %d characters, want at most %d (maxLength)", r.RolloutID, n, rationaleMax)
		}
	}
}
