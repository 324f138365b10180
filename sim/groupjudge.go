package sim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// SchemaCAGroup is the structured-output schema name of a group-scoring
// request (reward's CA group judge).
const SchemaCAGroup = "collective_agency_group_scores"

// Group judge misbehaviours (Options.JudgeGroupFault): how the group
// judge answers badly on every group request.
const (
	// GroupFaultMissing leaves the last label unscored.
	GroupFaultMissing = "missing"
	// GroupFaultRepeated scores the first label twice in place of the last.
	GroupFaultRepeated = "repeated"
	// GroupFaultOutOfRange scores the first label 9.
	GroupFaultOutOfRange = "out-of-range"
	// GroupFaultUnknown names a label the request did not show.
	GroupFaultUnknown = "unknown"
	// GroupFaultFirstBias scores the solution shown first 5, whatever it
	// says: a position bias that re-scoring in reversed order detects.
	GroupFaultFirstBias = "first-bias"
)

// GroupFaults lists the group judge's misbehaviours.
var GroupFaults = []string{GroupFaultMissing, GroupFaultRepeated, GroupFaultOutOfRange, GroupFaultUnknown, GroupFaultFirstBias}

// groupSolutionMarker introduces each labelled solution of a group
// request: "### Solution S1:".
const groupSolutionMarker = "### Solution "

// groupSections returns the labels and texts of a group request's
// solutions, in the order shown; ok is false when the prompt is not one.
// Each text is the "<solution>...</solution>" block, as the single-score
// judge reads it (judgedSection), so a final scores the same alone and in
// a group.
func groupSections(prompt string) (labels, texts []string, ok bool) {
	rest := prompt
	for {
		k := strings.Index(rest, groupSolutionMarker)
		if k < 0 {
			break
		}
		rest = rest[k+len(groupSolutionMarker):]
		colon := strings.Index(rest, ":")
		if colon < 0 || colon > 20 {
			continue
		}
		label := strings.TrimSpace(rest[:colon])
		body := rest[colon+1:]
		if e := strings.Index(body, "</solution>"); e >= 0 {
			body = body[:e+len("</solution>")]
		}
		labels = append(labels, label)
		texts = append(texts, strings.TrimSpace(body))
		rest = rest[colon+1:]
	}
	return labels, texts, len(labels) > 0
}

// isGroupPrompt reports whether a plain (schema-less) request is a group
// request.
func isGroupPrompt(prompt string) bool {
	_, _, ok := groupSections(prompt)
	return ok
}

// groupJudgeContent is the group judge's reply: one entry per label, the
// single-score judge's score of each solution, bent by fault (one of
// GroupFaults, or "") or, for judgeOutOfRange, with the first score 7.
func groupJudgeContent(prompt, fault string, jf judgeFault) string {
	labels, texts, _ := groupSections(prompt)
	type entry struct {
		Label     string `json:"label"`
		Rationale string `json:"rationale"`
		Score     int    `json:"score"`
	}
	entries := make([]entry, len(labels))
	for i, l := range labels {
		n, _ := CACount(texts[i])
		entries[i] = entry{Label: l, Score: CAScore(texts[i]), Rationale: fmt.Sprintf("Solution %s shows %d collective-agency cues.", l, n)}
	}
	if jf == judgeOutOfRange && len(entries) > 0 {
		entries[0].Score = 7
	}
	switch fault {
	case GroupFaultMissing:
		entries = entries[:len(entries)-1]
	case GroupFaultRepeated:
		if len(entries) > 0 {
			entries[len(entries)-1] = entries[0]
		}
	case GroupFaultOutOfRange:
		if len(entries) > 0 {
			entries[0].Score = 9
		}
	case GroupFaultUnknown:
		if len(entries) > 0 {
			entries[len(entries)-1].Label = "S" + strconv.Itoa(len(labels)+90)
		}
	case GroupFaultFirstBias:
		if len(entries) > 0 {
			entries[0].Score = 5
		}
	}
	out, _ := json.Marshal(map[string]any{"scores": entries})
	if jf == judgeMalformed {
		return string(out[:len(out)*2/3])
	}
	return string(out)
}
