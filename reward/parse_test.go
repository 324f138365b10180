package reward

import (
	"encoding/json"
	"testing"

	"github.com/parleyhq/parley/llm/chat"
)

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
}

func TestParseScore(t *testing.T) {
	tests := []struct {
		in            string
		want          int
		wantRationale string
		wantErr       bool
	}{
		{`{"rationale":"r","score":5}`, 5, "r", false},
		{`{"Score": 2, "Reasoning": "caps"}`, 2, "caps", false},
		{"```\n{\"score\": 3, \"rationale\": \"plain fence\"}\n```", 3, "plain fence", false},
		{"Some thoughts first.\n```json\n{\"rationale\": \"after prose\", \"score\": 4}\n```", 4, "after prose", false},
		{`Verdict {"note": "no score here"} and then {"score": 1, "rationale": "second object"}`, 1, "second object", false},
		{"Score: 3", 3, "Score: 3", false},
		{"score = 2", 2, "score = 2", false},
		{`"score": 4,`, 4, `"score": 4,`, false},
		{"My rating is 4 out of 5.", 4, "My rating is 4 out of 5.", false},
		{"Overall 3/5", 3, "Overall 3/5", false},
		{`{"rationale":"r","score":6}`, 0, "", true},
		{`{"rationale":"r","score":-1}`, 0, "", true},
		{`{"rationale":"r","score":2.5}`, 0, "", true},
		{`{"rationale":"r","score":"high"}`, 0, "", true},
		{`{"rationale":"r","score":null}`, 0, "", true},
		{"Score: 9", 0, "", true},
		{"I cannot rate this response.", 0, "", true},
		{"", 0, "", true},
	}
	for _, tt := range tests {
		got, rat, err := parseScore(chat.Reply{Content: tt.in})
		if (err != nil) != tt.wantErr || got != tt.want || (!tt.wantErr && rat != tt.wantRationale) {
			t.Errorf("parseScore(%q) = %d, %q, %v, want %d, %q, error %v", tt.in, got, rat, err, tt.want, tt.wantRationale, tt.wantErr)
		}
	}
	if _, _, err := parseScore(chat.Reply{Content: `{"score":5}`, Refusal: "no"}); err == nil {
		t.Errorf("parseScore(refusal) = nil error, want error")
	}
}

func TestParseWinner(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{`{"rationale":"r","winner":"A"}`, "A", false},
		{`{"rationale":"r","winner":"b"}`, "B", false},
		{`{"rationale":"r","winner":"Tie"}`, "tie", false},
		{`{"rationale":"r","winner":"Response B"}`, "B", false},
		{"```json\n{\"winner\": \"tie\", \"rationale\": \"same\"}\n```", "tie", false},
		{"Winner: B", "B", false},
		{"**Winner:** Response A", "A", false},
		{"After comparing, my verdict is [[B]].", "B", false},
		{"Equally good: [[C]]", "tie", false},
		{`{"rationale":"r","winner":"both A and B"}`, "", true},
		{"They are different.", "", true},
		{`{"rationale":"r","winner":"C"}`, "", true},
		{"Winner: C", "", true},
	}
	for _, tt := range tests {
		got, _, err := parseWinner(chat.Reply{Content: tt.in})
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseWinner(%q) = %q, %v, want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
