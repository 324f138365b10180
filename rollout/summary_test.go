package rollout

import (
	"encoding/json"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

// TestSummaryRoundsToAgreement checks that rounds to agreement are the
// mean rounds of the rollouts that agreed, and undefined (absent from the
// JSON) when none did, not 0: a step without agreement has no rounds to
// agreement (metrics.jsonl used to record 0 there).
func TestSummaryRoundsToAgreement(t *testing.T) {
	for _, tc := range []struct {
		name string
		rs   []dataset.Rollout
		want any // nil: absent
	}{
		{"none agreed", []dataset.Rollout{{Rounds: 3}, {Rounds: 3}}, nil},
		{"no rollouts", nil, nil},
		{"only a failed one agreed", []dataset.Rollout{{Rounds: 3}, {Rounds: 1, Agreed: true, Failed: true}}, nil},
		{"two agreed", []dataset.Rollout{{Rounds: 1, Agreed: true}, {Rounds: 3}, {Rounds: 2, Agreed: true}}, 1.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Summary
			for i := range tc.rs {
				s.Add(&tc.rs[i])
			}
			s.Finish(0)
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if v, ok := got["rounds_to_agreement"]; v != tc.want || ok != (tc.want != nil) {
				t.Errorf("rounds_to_agreement %v (present: %v), want %v: %s", v, ok, tc.want, b)
			}
		})
	}
}
