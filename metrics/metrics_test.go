package metrics

import (
	"encoding/json"
	"testing"
)

// TestLineEncodesAsStringMap: a Line encodes to the bytes a map[string]any
// of the same entries does, and Strings gives that map, so that switching
// the loop to typed keys leaves metrics.jsonl byte for byte as it was.
func TestLineEncodesAsStringMap(t *testing.T) {
	tests := []struct {
		name string
		line Line
	}{
		{"empty", Line{}},
		{"step line", Line{KeyStep: 3, KeyRewardMean: 0.25, KeyScoreMax: 1.0, RoleRewardPrefix + "holder": 0.5, TrainerPrefix + "loss": 1.5}},
		{"evaluation line", Line{KeyStep: 2, KeyKind: EvalKind, KeyEvalWinRate: 62.5, KeyEvalBaseScoreMean: 0.1}},
		{"game keys", Line{KeyStep: 1, "surplus_mean": 3.2, "hb_rejection": 0.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain := map[string]any{}
			for k, v := range tt.line {
				plain[string(k)] = v
			}
			got, err := json.Marshal(tt.line)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(plain)
			if string(got) != string(want) {
				t.Errorf("json.Marshal(%v) = %s, want %s", tt.line, got, want)
			}
			s := tt.line.Strings()
			if b, _ := json.Marshal(s); string(b) != string(want) || len(s) != len(tt.line) {
				t.Errorf("Strings() = %v, want %v", s, plain)
			}
		})
	}
}

// TestKeys pins the spelling of the keys that other programs read (the
// report's fixtures, the trainer's reporting, dashboards).
func TestKeys(t *testing.T) {
	tests := []struct {
		key  Key
		want string
	}{
		{KeyStep, "step"},
		{KeyKind, "kind"},
		{KeyScoreMean, "score_mean"},
		{KeyRewardMean, "reward_mean"},
		{RoleRewardPrefix, "reward_mean/"},
		{KeyGroupsDroppedZeroVariance, "groups_dropped_zero_variance"},
		{KeyTrainerTokensPerSampledToken, "trainer_tokens_per_sampled_token"},
		{KeyWaitTrainerSeconds, "wait_trainer_seconds"},
		{KeyTrainerLoss, "trainer/loss"},
		{KeyTrainerKL, "trainer/approx_kl"},
		{KeyEvalWinRate, "eval/win_rate"},
		{KeyJudgeCalls, "judge/calls"},
		{KeyJudge429, "judge/http_429"},
		{KeyJudgeLatencyP95, "judge/latency_p95_s"},
		{KeyJudgeCost, "judge/cost_usd"},
		{KeyJudgeCostTotal, "judge/cost_usd_total"},
		{KeyJudgeBackends, "judge/backends"},
		{KeyJudgeCorrLength, "judge/corr_length"},
		{KeyJudgeCorrPersonaEcho, "judge/corr_persona_echo"},
		{KeyJudgeCorrAgreement, "judge/corr_agreement"},
		{KeyEvalBaseScoreMean, "eval/base_score_mean"},
		{KeyEvalBaseRoundsToAgreement, "eval/base_rounds_to_agreement"},
		{KeyEvalSeconds, "eval/seconds"},
	}
	for _, tt := range tests {
		if string(tt.key) != tt.want {
			t.Errorf("key %q, want %q", tt.key, tt.want)
		}
	}
	if EvalKind != "eval" {
		t.Errorf("EvalKind = %q, want eval", EvalKind)
	}
}
