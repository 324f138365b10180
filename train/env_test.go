package train

import (
	"slices"
	"strings"
	"testing"
)

// TestChildEnv (issue 13, item 8): the trainer and the server get parley's
// environment without the judge's key or anything that looks secret,
// except what they are allowed.
func TestChildEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-judge")
	t.Setenv("MY_JUDGE_SECRET_VAR", "x")
	t.Setenv("JUDGE_CREDS", "named-secret")
	t.Setenv("VLLM_API_KEY", "policy-key")
	t.Setenv("HF_TOKEN", "hf")
	t.Setenv("CUDA_VISIBLE_DEVICES", "0,1")
	env := childEnv([]string{"JUDGE_CREDS"}, []string{"VLLM_API_KEY"})
	names := map[string]bool{}
	for _, kv := range env {
		n, _, _ := strings.Cut(kv, "=")
		names[n] = true
	}
	for _, gone := range []string{"OPENAI_API_KEY", "MY_JUDGE_SECRET_VAR", "JUDGE_CREDS"} {
		if names[gone] {
			t.Errorf("child environment holds %s", gone)
		}
	}
	for _, kept := range []string{"VLLM_API_KEY", "HF_TOKEN", "CUDA_VISIBLE_DEVICES", "PATH"} {
		if !names[kept] {
			t.Errorf("child environment lacks %s", kept)
		}
	}
	if !slices.ContainsFunc(env, func(kv string) bool { return kv == "CUDA_VISIBLE_DEVICES=0,1" }) {
		t.Error("values are not kept as they are")
	}
}

func TestShellLine(t *testing.T) {
	got := shellLine([]string{"python", "-m", "parley_trainer", "--run-dir", "runs/my run", "--note", "it's", ""})
	want := `python -m parley_trainer --run-dir 'runs/my run' --note 'it'\''s' ''`
	if got != want {
		t.Errorf("shellLine = %s, want %s", got, want)
	}
}
