package sim

import (
	"encoding/json"
	"strings"
	"testing"
)

// groupPrompt is a group request as reward's CA group judge renders it.
const groupPrompt = "## Task\nShare the garden?\n\n## Solutions\nThere are 3 solutions, labelled S1 to S3 in no particular order.\n\n" +
	"### Solution S1:\n<solution>\nTell no one.\n</solution>\n\n" +
	"### Solution S2:\n<solution>\nTogether we build shared trust: everyone gains agency, autonomy and dignity, jointly.\n</solution>\n\n" +
	"### Solution S3:\n<solution>\nAsk the neighbours.\n</solution>\n\n## Your evaluation\nScore every solution."

// TestGroupJudgeContent: the group judge scores each labelled solution as
// the single-score judge scores it alone, once per label, and each fault
// breaks the reply as named.
func TestGroupJudgeContent(t *testing.T) {
	type entry struct {
		Label string `json:"label"`
		Score int    `json:"score"`
	}
	_, texts, ok := groupSections(groupPrompt)
	if !ok || len(texts) != 3 {
		t.Fatalf("groupSections found %d solutions", len(texts))
	}
	alone := make([]int, 3)
	for i, txt := range texts {
		alone[i] = CAScore(judgedSection("## Final solution:\n" + txt + "\n\n## Your evaluation\nx"))
	}
	for _, tt := range []struct {
		fault  string
		labels string
		check  func(es []entry) bool
	}{
		{"", "S1 S2 S3", func(es []entry) bool {
			return es[0].Score == alone[0] && es[1].Score == alone[1] && es[2].Score == alone[2] && alone[1] > alone[0]
		}},
		{GroupFaultMissing, "S1 S2", nil},
		{GroupFaultRepeated, "S1 S2 S1", nil},
		{GroupFaultOutOfRange, "S1 S2 S3", func(es []entry) bool { return es[0].Score == 9 }},
		{GroupFaultUnknown, "S1 S2 S93", nil},
		{GroupFaultFirstBias, "S1 S2 S3", func(es []entry) bool { return es[0].Score == 5 && es[2].Score == alone[2] }},
	} {
		t.Run(tt.fault, func(t *testing.T) {
			content := groupJudgeContent(groupPrompt, tt.fault, judgeOK)
			var got struct{ Scores []entry }
			if err := json.Unmarshal([]byte(content), &got); err != nil {
				t.Fatalf("reply %q: %v", content, err)
			}
			var labels []string
			for _, e := range got.Scores {
				labels = append(labels, e.Label)
			}
			if strings.Join(labels, " ") != tt.labels {
				t.Errorf("labels %v, want %s", labels, tt.labels)
			}
			if tt.check != nil && !tt.check(got.Scores) {
				t.Errorf("scores %+v (alone %v) are not what %q gives", got.Scores, alone, tt.fault)
			}
		})
	}
	if isGroupPrompt("## Final solution:\n<solution>\nx\n</solution>") {
		t.Error("a single-score prompt was taken for a group request")
	}
	if _, err := New(Options{JudgeGroupFault: "sometimes"}); err == nil || !strings.Contains(err.Error(), "JudgeGroupFault") {
		t.Errorf("New with a bad JudgeGroupFault: %v, want an error naming it", err)
	}
}
