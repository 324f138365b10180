package endowment

import (
	"math"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

// TestMessageFeatures: each feature on messages counted by hand.
func TestMessageFeatures(t *testing.T) {
	tests := []struct {
		name string
		msgs []string
		want MessageFeatures // Strategies unchecked when nil
	}{
		{name: "none", msgs: nil, want: MessageFeatures{}},
		{name: "singular, turn 1 of serve-sim's requester",
			// 41 words; a name (Amina Yusuf), an age, "her"; "today";
			// $40; one "?"; strategies: concrete impact (every dollar),
			// urgency (today), emotion (suffer) → 3 strategies, 1 message
			// each: log₂ 3.
			msgs: []string{"I am writing on behalf of Amina Yusuf, a 9-year-old girl in Kano, needs an operation on a damaged heart valve that her family cannot pay for. Every dollar counts today. They suffer every night. Would you give $40 for Amina?"},
			want: MessageFeatures{Messages: 1, Individuation: 1, Length: 41, Urgency: 1, DollarAsks: 1, QuestionMarks: 1, StrategyEntropy: math.Log2(3),
				Strategies: map[string]int{"concrete impact": 1, "urgency": 1, "emotion": 1}}},
		{name: "group, thanks, no amount",
			// No individuation (plural, no name, no age); 2 gratitude
			// markers (Thank, grateful); 0 urgency; 2 question marks.
			msgs: []string{"Thank you for listening. The 300 families of the district are grateful for anything?", "Will you help them?"},
			want: MessageFeatures{Messages: 2, Individuation: 0, Length: (14 + 4) / 2.0, Gratitude: 1, QuestionMarks: 1,
				Strategies: map[string]int{"reciprocity": 1}}},
		{name: "ages, names and urgency phrases",
			// "aged 67" and "named Tomas"; "right now" and "too late" and
			// "urgent": 3 in the first, 0 in the second; forty dollars.
			msgs: []string{"A farmer aged 67 needs help right now, it is urgent, before it is too late.", "A boy named Tomas asks for forty dollars."},
			want: MessageFeatures{Messages: 2, Individuation: 1, Length: (16 + 8) / 2.0, Urgency: 1.5, DollarAsks: 0.5}},
		{name: "a capitalised sentence start is no name",
			msgs: []string{"Every Dollar matters. Please give."},
			want: MessageFeatures{Messages: 1, Individuation: 0, Length: 5}},
	}
	for _, tt := range tests {
		got := MessageFeaturesOf(tt.msgs)
		gv, wv := got.Values(), tt.want.Values()
		for i := range gv {
			if math.Abs(gv[i]-wv[i]) > 1e-12 {
				t.Errorf("%s: %s = %v, want %v", tt.name, MessageFeatureNames[i], gv[i], wv[i])
			}
		}
		if got.Messages != tt.want.Messages {
			t.Errorf("%s: %d messages, want %d", tt.name, got.Messages, tt.want.Messages)
		}
		if tt.want.Strategies != nil {
			for k, v := range tt.want.Strategies {
				if got.Strategies[k] != v {
					t.Errorf("%s: strategy %s %d, want %d (all %v)", tt.name, k, got.Strategies[k], v, got.Strategies)
				}
			}
			if len(got.Strategies) != len(tt.want.Strategies) {
				t.Errorf("%s: strategies %v, want %v", tt.name, got.Strategies, tt.want.Strategies)
			}
		}
	}
}

// TestRequesterFeatures reads only the requester's turns, traces removed.
func TestRequesterFeatures(t *testing.T) {
	turns := []dataset.Turn{{Agent: RoleRequester, Text: "<think>She is 9 years old? Ask $50.</think>Please help them."},
		{Agent: RoleHolder, Text: "Her? I give $5. Thank you?"}}
	f := RequesterFeatures(turns)
	if f.Messages != 1 || f.Individuation != 0 || f.DollarAsks != 0 || f.QuestionMarks != 0 || f.Gratitude != 0 || f.Length != 3 {
		t.Errorf("RequesterFeatures = %+v: want one message of 3 words, the trace and the holder's turn left out", f)
	}
}
