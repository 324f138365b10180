package trust

import (
	"encoding/json"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// TestBRSHandComputed follows one counterpart through four games, γ = 0.9:
//
//	game 1: r' = 2, s' = 0 → r = 2,     s = 0     → E = 3/4            = 0.75
//	game 2: r' = 0, s' = 3 → r = 1.8,   s = 3     → E = 2.8/6.8        = 0.411764…
//	game 3: r' = 1, s' = 1 → r = 2.62,  s = 3.7   → E = 3.62/8.32      = 0.435096…
//	game 4: nothing        → r = 2.358, s = 3.33  → E = 3.358/7.688    = 0.436784…
func TestBRSHandComputed(t *testing.T) {
	steps := []struct{ r, s, wantR, wantS, wantE float64 }{
		{2, 0, 2, 0, 0.75},
		{0, 3, 1.8, 3, 2.8 / 6.8},
		{1, 1, 2.62, 3.7, 3.62 / 8.32},
		{0, 0, 2.358, 3.33, 3.358 / 7.688},
	}
	var e Evidence
	if e.Expectation() != 0.5 {
		t.Fatalf("E with no evidence = %v, want 0.5", e.Expectation())
	}
	for g, st := range steps {
		e = BRSUpdate(e, st.r, st.s, 0.9)
		if !near(e.R, st.wantR) || !near(e.S, st.wantS) || !near(e.Expectation(), st.wantE) {
			t.Errorf("game %d: evidence %+v E %v, want r %v s %v E %v", g+1, e, e.Expectation(), st.wantR, st.wantS, st.wantE)
		}
	}
}

// TestEMAHandComputed: signals 1, 0, 0.5, 1 from the prior 0.5.
//
//	λ = 0.7: 0.65, 0.455, 0.4685, 0.62795
//	λ = 0.5: 0.75, 0.375, 0.4375, 0.71875
//	λ = 0.9: 0.55, 0.495, 0.4955, 0.54595
func TestEMAHandComputed(t *testing.T) {
	xs := []float64{1, 0, 0.5, 1}
	want := map[float64][]float64{
		0.7: {0.65, 0.455, 0.4685, 0.62795},
		0.5: {0.75, 0.375, 0.4375, 0.71875},
		0.9: {0.55, 0.495, 0.4955, 0.54595},
	}
	for lam, ws := range want {
		tr := 0.5
		for g, x := range xs {
			tr = EMA(tr, x, lam)
			if !near(tr, ws[g]) {
				t.Errorf("λ %v game %d: trust %v, want %v", lam, g+1, tr, ws[g])
			}
		}
	}
}

// TestSequencesFixture replays the sequences gen_sequences.py computed.
func TestSequencesFixture(t *testing.T) {
	b, err := os.ReadFile("testdata/sequences.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		BRS []struct {
			Gamma  float64     `json:"gamma"`
			Counts [][]float64 `json:"counts"`
			Trust  []float64   `json:"trust"`
		} `json:"brs"`
		EMA []struct {
			Lambda  float64   `json:"lambda"`
			Prior   float64   `json:"prior"`
			Signals []float64 `json:"signals"`
			Trust   []float64 `json:"trust"`
		} `json:"ema"`
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{"a": "Party A", "b": "Party B"}
	for c, seq := range fx.BRS {
		var counts []map[string]map[string]Evidence
		for _, rs := range seq.Counts {
			counts = append(counts, map[string]map[string]Evidence{"a": {"b": {R: rs[0], S: rs[1]}}})
		}
		got := Replay(Settings{Method: MethodBRS, Condition: CondS, Gamma: seq.Gamma}, names, counts, nil)
		for g, want := range seq.Trust {
			if !near(got[g]["a"]["b"], want) {
				t.Errorf("BRS case %d game %d: %v, want %v", c, g+1, got[g]["a"]["b"], want)
			}
			if got[g]["b"]["a"] != 0.5 {
				t.Errorf("BRS case %d: b's trust in a moved without evidence: %v", c, got[g]["b"]["a"])
			}
		}
	}
	for c, seq := range fx.EMA {
		var sig []map[string]map[string]float64
		for _, x := range seq.Signals {
			sig = append(sig, map[string]map[string]float64{"a": {"b": x}})
		}
		got := Replay(Settings{Method: MethodRubric, Condition: CondS, Lambda: seq.Lambda, Prior: seq.Prior}, names, nil, sig)
		for g, want := range seq.Trust {
			if !near(got[g]["a"]["b"], want) {
				t.Errorf("EMA case %d game %d: %v, want %v", c, g+1, got[g]["a"]["b"], want)
			}
		}
	}
}

// TestBRSCounts: observer a over three proposals.
//
//  1. b proposes, meets a's BATNA: b +r. a voted yes: c (no) +s, d (yes) +r, adv (no) +s.
//  2. adv proposes, misses a's BATNA: adv +s. a voted no: nothing else.
//  3. c proposes, meets: c +r. a voted yes: b abstained (nothing), d (no) +s, adv (no) +s.
//
// So b (1, 0), c (1, 1), d (1, 1), adv (0, 3).
func TestBRSCounts(t *testing.T) {
	y, n, ab := VoteYes, VoteNo, VoteAbstain
	obs := []Observation{
		{Proposer: "b", Votes: map[string]string{"a": y, "b": y, "c": n, "d": y, "adv": n}, Meets: map[string]bool{"a": true}},
		{Proposer: "adv", Votes: map[string]string{"a": n, "b": n, "c": y, "d": n, "adv": y}, Meets: map[string]bool{"a": false}},
		{Proposer: "c", Votes: map[string]string{"a": y, "b": ab, "c": y, "d": n, "adv": n}, Meets: map[string]bool{"a": true}},
	}
	got := BRSCounts("a", obs, []string{"a", "b", "c", "d", "adv"})
	want := map[string]Evidence{"b": {1, 0}, "c": {1, 1}, "d": {1, 1}, "adv": {0, 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("BRSCounts = %v, want %v", got, want)
	}
}

func TestRank(t *testing.T) {
	tests := []struct {
		vec            map[string]float64
		det, mis       bool
		sep            float64
		name           string
		wantSepComment string
	}{
		{map[string]float64{"b": 0.6, "c": 0.5, "adv": 0.3}, true, false, 0.25, "adversary lowest", "(0.6+0.5)/2 − 0.3"},
		{map[string]float64{"b": 0.3, "c": 0.5, "adv": 0.3}, false, false, 0.1, "tie at the bottom", "0.4 − 0.3"},
		{map[string]float64{"b": 0.2, "c": 0.5, "adv": 0.3}, false, true, 0.05, "honest party lowest", "0.35 − 0.3"},
		{map[string]float64{"b": 0.5, "c": 0.5, "adv": 0.5}, false, false, 0, "the prior", ""},
	}
	for _, tt := range tests {
		r := Rank(tt.vec, "adv")
		if r.Detected != tt.det || r.Misidentified != tt.mis || !near(r.Separation, tt.sep) {
			t.Errorf("%s: Rank(%v) = %+v, want detected %v misidentified %v separation %v", tt.name, tt.vec, r, tt.det, tt.mis, tt.sep)
		}
	}
	m := MeanRanking(map[string]map[string]float64{
		"a":   {"b": 0.6, "c": 0.5, "adv": 0.3},
		"b":   {"a": 0.2, "c": 0.5, "adv": 0.3},
		"adv": {"a": 0.0, "b": 0.0, "c": 0.0}, // not an honest observer: ignored
	}, "adv")
	// a detects (sep 0.25), b misidentifies (sep 0.05): means 0.5, 0.5, 0.15;
	// honest trust (0.55 + 0.35)/2 = 0.45, adversary trust 0.3.
	if !near(m.Detection, 0.5) || !near(m.Misidentification, 0.5) || !near(m.Separation, 0.15) ||
		!near(m.HonestTrust, 0.45) || !near(m.AdversaryTrust, 0.3) || m.Observers != 2 {
		t.Errorf("MeanRanking = %+v", m)
	}
}

func TestStateUpdates(t *testing.T) {
	names := map[string]string{"a": "Party A", "b": "Party B", "adv": "Party C"}
	st := NewState(Settings{Method: MethodRubric, Condition: CondSP, Lambda: 0.7, Gamma: 0.9, Prior: 0.5}, names)
	st.ApplyEMA(map[string]map[string]float64{"a": {"b": 1, "adv": 0}, "b": {"adv": math.NaN()}})
	if !near(st.Trust["a"]["b"], 0.65) || !near(st.Trust["a"]["adv"], 0.35) || st.Trust["b"]["adv"] != 0.5 || st.Trust["b"]["a"] != 0.5 {
		t.Errorf("after ApplyEMA: %v", st.Trust)
	}
	b, _ := json.Marshal(st)
	back, err := ParseState(b)
	if err != nil || !reflect.DeepEqual(back, st) {
		t.Errorf("ParseState(Marshal) = %+v, %v", back, err)
	}
	brs := NewState(Settings{Method: MethodBRS, Condition: CondS, Gamma: 0.9, Lambda: 0.7}, names)
	brs.ApplyBRS(map[string]map[string]Evidence{"a": {"adv": {0, 2}}})
	if !near(brs.Trust["a"]["adv"], 0.25) || brs.Trust["a"]["b"] != 0.5 {
		t.Errorf("after ApplyBRS: %v", brs.Trust)
	}
	for _, bad := range []string{`{"version": 2}`, `{"version": 1, "settings": {"method": "x"}}`, `not json`} {
		if _, err := ParseState([]byte(bad)); err == nil {
			t.Errorf("ParseState(%s) = nil error", bad)
		}
	}
}

func TestSettings(t *testing.T) {
	if err := DefaultSettings().Validate(); err != nil {
		t.Fatal(err)
	}
	err := Settings{Method: "vibes", Condition: "s", Lambda: 1, Gamma: 0, Prior: 2}.Validate()
	for _, w := range []string{"key method", "key lambda", "key gamma", "key prior"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate = %v, want %q", err, w)
		}
	}
	labels := map[Settings]string{
		{Method: MethodBRS, Condition: CondS}:         "BRS (S)",
		{Method: MethodRubric, Condition: CondSP}:     "Rubric (S+P)",
		{Method: MethodFreeForm, Condition: CondSToP}: "FF (S→P)",
		{Method: MethodBRS, Condition: CondNone}:      "No trust",
		{Method: MethodBRS, Condition: CondS05P}:      "S0.5+P",
		{Method: MethodBRS, Condition: CondSRandP}:    "Srand+P",
	}
	for s, want := range labels {
		if got := s.Label(); got != want {
			t.Errorf("Label(%+v) = %q, want %q", s, got, want)
		}
	}
	// Table 8: which conditions show, guide, remind and update.
	for _, c := range []struct {
		cond                          string
		shown, guide, remind, updates bool
	}{
		{CondNone, false, false, false, false},
		{CondS, true, false, false, true},
		{CondSToP, true, false, true, true},
		{CondSP, true, true, true, true},
		{CondS05P, true, true, true, false},
		{CondSRandP, true, true, true, false},
	} {
		s := Settings{Condition: c.cond}
		if s.Shown() != c.shown || s.SystemGuidance() != c.guide || s.Reminder() != c.remind || s.Updates() != c.updates {
			t.Errorf("%s: shown %v guidance %v reminder %v updates %v", c.cond, s.Shown(), s.SystemGuidance(), s.Reminder(), s.Updates())
		}
	}
}
