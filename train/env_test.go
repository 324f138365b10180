package train

import (
	"slices"
	"strings"
	"testing"
)

// TestChildEnv (issue 13, item 8; issue 12, item 9): the trainer and the
// server get parley's environment without the judge's key or anything that
// looks secret, except what each is allowed: the server its policy key,
// the trainer the W&B key when trainer.report_to has wandb.
func TestChildEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-judge")
	t.Setenv("MY_JUDGE_SECRET_VAR", "x")
	t.Setenv("JUDGE_CREDS", "named-secret")
	t.Setenv("VLLM_API_KEY", "policy-key")
	t.Setenv("WANDB_API_KEY", "wandb-key")
	t.Setenv("WANDB_PROJECT", "p")
	t.Setenv("HF_TOKEN", "hf")
	t.Setenv("CUDA_VISIBLE_DEVICES", "0,1")
	secrets := []string{"JUDGE_CREDS", "WANDB_API_KEY"}
	tests := []struct {
		name       string
		allow      []string
		gone, kept []string
	}{
		{"server", []string{"VLLM_API_KEY"},
			[]string{"OPENAI_API_KEY", "MY_JUDGE_SECRET_VAR", "JUDGE_CREDS", "WANDB_API_KEY"},
			[]string{"VLLM_API_KEY", "HF_TOKEN", "CUDA_VISIBLE_DEVICES", "PATH", "WANDB_PROJECT"}},
		{"trainer reporting to wandb", []string{"WANDB_API_KEY"},
			[]string{"OPENAI_API_KEY", "MY_JUDGE_SECRET_VAR", "JUDGE_CREDS", "VLLM_API_KEY"},
			[]string{"WANDB_API_KEY", "WANDB_PROJECT", "HF_TOKEN", "CUDA_VISIBLE_DEVICES", "PATH"}},
		{"trainer without wandb", nil,
			[]string{"OPENAI_API_KEY", "JUDGE_CREDS", "VLLM_API_KEY", "WANDB_API_KEY"},
			[]string{"HF_TOKEN", "PATH"}},
	}
	for _, tt := range tests {
		env := childEnv(secrets, tt.allow)
		names := map[string]bool{}
		for _, kv := range env {
			n, _, _ := strings.Cut(kv, "=")
			names[n] = true
		}
		for _, gone := range tt.gone {
			if names[gone] {
				t.Errorf("%s: childEnv(%v, %v) holds %s", tt.name, secrets, tt.allow, gone)
			}
		}
		for _, kept := range tt.kept {
			if !names[kept] {
				t.Errorf("%s: childEnv(%v, %v) lacks %s", tt.name, secrets, tt.allow, kept)
			}
		}
		if !slices.ContainsFunc(env, func(kv string) bool { return kv == "CUDA_VISIBLE_DEVICES=0,1" }) {
			t.Errorf("%s: values are not kept as they are", tt.name)
		}
	}
}

func TestShellLine(t *testing.T) {
	got := shellLine([]string{"python", "-m", "parley_trainer", "--run-dir", "runs/my run", "--note", "it's", ""})
	want := `python -m parley_trainer --run-dir 'runs/my run' --note 'it'\''s' ''`
	if got != want {
		t.Errorf("shellLine = %s, want %s", got, want)
	}
}
