package reward

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/llm/chat"
)

// maxRationale bounds a rationale taken from free text.
const maxRationale = 4000

var (
	fenceRe      = regexp.MustCompile("(?s)```[a-zA-Z]*\\s*(.*?)```")
	scoreLabelRe = regexp.MustCompile(`(?i)\bscore\b["'*\s]*(?:is|of|=|:)?["'*\s]*(-?\d+(?:\.\d+)?)`)
	scoreFracRe  = regexp.MustCompile(`(?i)(-?\d+(?:\.\d+)?)\s*(?:/|out\s+of)\s*5\b`)
	winnerRe     = regexp.MustCompile(`(?i)\bwinner\b["'*\s]*(?:is|=|:)?["'*\s]*(?:response\s+)?(tie|a|b)\b`)
	bracketRe    = regexp.MustCompile(`\[\[(A|B|C|tie)\]\]`)
)

// jsonCandidates returns the JSON objects found in text: the whole text,
// the bodies of code fences, and every object embedded in prose, in that
// order.
func jsonCandidates(text string) []map[string]any {
	var out []map[string]any
	try := func(s string) {
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		if d.Decode(&m) == nil && m != nil {
			out = append(out, m)
		}
	}
	try(text)
	for _, m := range fenceRe.FindAllStringSubmatch(text, -1) {
		try(strings.TrimSpace(m[1]))
	}
	for i := 0; i < len(text); i++ {
		if text[i] != '{' {
			continue
		}
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(text[i:]))
		d.UseNumber()
		if d.Decode(&m) == nil && m != nil {
			out = append(out, m)
			i += int(d.InputOffset()) - 1
		}
	}
	return out
}

// lookup returns the value of key in m, matching the key case-insensitively.
func lookup(m map[string]any, key string) (any, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

// rationaleOf returns the rationale field of m, if any.
func rationaleOf(m map[string]any) string {
	for _, k := range []string{"rationale", "reasoning", "reason", "explanation"} {
		if v, ok := lookup(m, k); ok {
			if s, ok := v.(string); ok {
				return strings.TrimSpace(s)
			}
		}
	}
	return ""
}

// freeRationale is the rationale of a reply that held no JSON rationale.
func freeRationale(text string) string {
	text = strings.TrimSpace(text)
	if len(text) > maxRationale {
		text = text[:maxRationale]
	}
	return text
}

// replyProblem explains a reply that held no verdict.
func replyProblem(r chat.Reply, what string) error {
	switch {
	case r.Refusal != "":
		return chat.NoVerdict("judge refused: %q", snippet(r.Refusal))
	case strings.TrimSpace(r.Content) == "":
		return chat.NoVerdict("empty judge reply (finish_reason %q)", r.FinishReason)
	case r.FinishReason == "length":
		return chat.NoVerdict("judge reply truncated before a %s: %q", what, snippet(r.Content))
	}
	return chat.NoVerdict("no %s in judge reply: %q", what, snippet(r.Content))
}

// snippet shortens s for an error message.
func snippet(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// parseScore reads a 1–5 integer score and a rationale from a judge reply:
// strict JSON, JSON in a code fence or embedded in prose, or free text such
// as "Score: 4" or "4/5". A score that is out of range or not an integer
// is an error, as is a reply with no score.
func parseScore(r chat.Reply) (int, string, error) {
	if r.Refusal != "" {
		return 0, "", replyProblem(r, "score")
	}
	for _, m := range jsonCandidates(r.Content) {
		v, ok := lookup(m, "score")
		if !ok {
			continue
		}
		f, err := number(v)
		if err != nil {
			return 0, "", chat.NoVerdict("judge score %v: %v", v, err)
		}
		s, err := validScore(f)
		if err != nil {
			return 0, "", err
		}
		rat := rationaleOf(m)
		if rat == "" {
			rat = freeRationale(r.Content)
		}
		return s, rat, nil
	}
	for _, re := range []*regexp.Regexp{scoreLabelRe, scoreFracRe} {
		if m := re.FindStringSubmatch(r.Content); m != nil {
			f, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return 0, "", chat.NoVerdict("judge score %q: %v", m[1], err)
			}
			s, err := validScore(f)
			if err != nil {
				return 0, "", err
			}
			return s, freeRationale(r.Content), nil
		}
	}
	return 0, "", replyProblem(r, "score")
}

// number converts a decoded JSON value (json.Number or a numeric string)
// to a float.
func number(v any) (float64, error) {
	switch x := v.(type) {
	case json.Number:
		return x.Float64()
	case string:
		return strconv.ParseFloat(strings.TrimSpace(x), 64)
	}
	return 0, fmt.Errorf("not a number (%T)", v)
}

// validScore checks that f is an integer from 1 to 5.
func validScore(f float64) (int, error) {
	if math.IsNaN(f) || f != math.Trunc(f) {
		return 0, chat.NoVerdict("judge score %v is not an integer", f)
	}
	if f < 1 || f > 5 {
		return 0, chat.NoVerdict("judge score %v is out of range 1-5", f)
	}
	return int(f), nil
}

// Pairwise winners as the judge names them.
const (
	winnerA   = "A"
	winnerB   = "B"
	winnerTie = "tie"
)

// normWinner maps a judge's winner label to A, B or tie.
func normWinner(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "response ")
	switch s {
	case "a":
		return winnerA, true
	case "b":
		return winnerB, true
	case "tie", "draw", "equal":
		return winnerTie, true
	}
	return "", false
}

// parseWinner reads a pairwise verdict ("A", "B" or "tie") and a rationale
// from a judge reply: JSON (strict, fenced or embedded), "Winner: A", or
// the [[A]] / [[B]] / [[C]] convention.
func parseWinner(r chat.Reply) (string, string, error) {
	if r.Refusal != "" {
		return "", "", replyProblem(r, "winner")
	}
	for _, m := range jsonCandidates(r.Content) {
		v, ok := lookup(m, "winner")
		if !ok {
			continue
		}
		s, _ := v.(string)
		w, ok := normWinner(s)
		if !ok {
			return "", "", chat.NoVerdict("judge winner %v is not A, B or tie", v)
		}
		rat := rationaleOf(m)
		if rat == "" {
			rat = freeRationale(r.Content)
		}
		return w, rat, nil
	}
	if m := winnerRe.FindStringSubmatch(r.Content); m != nil {
		w, _ := normWinner(m[1])
		return w, freeRationale(r.Content), nil
	}
	if ms := bracketRe.FindAllStringSubmatch(r.Content, -1); ms != nil {
		// [[C]] is the tie of the [[A]]/[[B]]/[[C]] convention only; a bare
		// "C" elsewhere is an invalid winner.
		label := ms[len(ms)-1][1]
		if label == "C" {
			label = winnerTie
		}
		w, _ := normWinner(label)
		return w, freeRationale(r.Content), nil
	}
	return "", "", replyProblem(r, "winner")
}

// compactJSON is a helper for schema literals.
func compactJSON(s string) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		panic(fmt.Sprintf("reward: bad schema literal: %v", err))
	}
	return b.Bytes()
}
