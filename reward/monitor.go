package reward

import (
	"math"
	"regexp"
	"strings"

	"github.com/parleyhq/parley/dataset"
)

// Monitors are a step's reward-hacking monitors: the Pearson correlation,
// over the step's judged rollouts of the trained policy, of the rollout's
// score with a trait of its final completion. A field is nil when fewer
// than 3 rollouts were judged or a side has no spread.
type Monitors struct {
	// Length: the final's length in words (strings.Fields).
	Length *float64
	// PersonaEcho: the share of the final's word 3-grams (lower-cased)
	// that appear in the rollout's persona texts (0 when the final has
	// fewer than 3 words).
	PersonaEcho *float64
	// Agreement: the count of agreement phrases (AgreementPhrases) in the
	// final, lower-cased.
	Agreement *float64
}

// AgreementPhrases are the phrases Monitors' Agreement counts.
var AgreementPhrases = []string{"i agree", "we agree", "agreed", "you're right", "you are right", "sounds good", "deal", "fair point", "that works"}

// ComputeMonitors computes the monitors of rs: rollouts judged, not failed
// and with a trained role.
func ComputeMonitors(rs []dataset.Rollout) Monitors {
	var score, length, echo, agree []float64
	for i := range rs {
		r := &rs[i]
		if !r.Judged || r.Failed || !trained(r) {
			continue
		}
		score = append(score, float64(r.Score))
		length = append(length, float64(len(strings.Fields(r.Final))))
		echo = append(echo, PersonaEcho(r.Final, r.Personas))
		agree = append(agree, float64(AgreementCount(r.Final)))
	}
	return Monitors{Length: Pearson(score, length), PersonaEcho: Pearson(score, echo), Agreement: Pearson(score, agree)}
}

func trained(r *dataset.Rollout) bool {
	for _, o := range r.Roles {
		if o.Trained {
			return true
		}
	}
	return false
}

// PersonaEcho is the share of final's word 3-grams (lower-cased) that
// appear in the persona texts.
func PersonaEcho(final string, personas []dataset.Persona) float64 {
	grams := trigrams(final)
	if len(grams) == 0 {
		return 0
	}
	in := map[string]bool{}
	for _, p := range personas {
		for _, g := range trigrams(p.Text) {
			in[g] = true
		}
	}
	n := 0
	for _, g := range grams {
		if in[g] {
			n++
		}
	}
	return float64(n) / float64(len(grams))
}

func trigrams(s string) []string {
	w := strings.Fields(strings.ToLower(s))
	var out []string
	for i := 0; i+3 <= len(w); i++ {
		out = append(out, strings.Join(w[i:i+3], " "))
	}
	return out
}

// agreementRE matches any of AgreementPhrases as whole words (so "deal"
// is not counted in "ideal"), case-insensitively.
var agreementRE = func() *regexp.Regexp {
	alts := make([]string, len(AgreementPhrases))
	for i, p := range AgreementPhrases {
		alts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?i)\b(?:` + strings.Join(alts, "|") + `)\b`)
}()

// AgreementCount counts the occurrences of AgreementPhrases in s as
// whole words, case-insensitively.
func AgreementCount(s string) int {
	return len(agreementRE.FindAllStringIndex(s, -1))
}

// Pearson is the Pearson correlation of xs and ys (equal lengths), nil
// with fewer than 3 pairs or when either side has no spread.
func Pearson(xs, ys []float64) *float64 {
	n := len(xs)
	if n < 3 || len(ys) != n {
		return nil
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return nil
	}
	r := sxy / math.Sqrt(sxx*syy)
	return &r
}
