package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	_ "github.com/parleyhq/parley/rollout/endowment" // the game tournaments default to
)

// TestSpecErrors: a malformed agent list gets one clear error naming the
// key (and the agent's line).
func TestSpecErrors(t *testing.T) {
	head := "judge: {base_url: http://j/v1, model: j}\n"
	tests := []struct {
		name, yaml, want string
	}{
		{"one agent", head + "agents:\n  - {name: a, endpoint: http://x, model: m}\n", "key agents: must list at least 2"},
		{"duplicate", head + "agents:\n  - {name: a, endpoint: http://x, model: m}\n  - {name: a, endpoint: http://x, model: m}\n", "agents[1] (line 4).name: \"a\" is also agents[0]'s name"},
		{"no endpoint", head + "agents:\n  - {name: a, model: m}\n  - {name: b, endpoint: http://x, model: m}\n", "agents[0] (line 3): endpoint: must name"},
		{"bad kind", head + "agents:\n  - {name: a, kind: robot, endpoint: http://x, model: m}\n  - {name: b, endpoint: http://x, model: m}\n", "kind: must be endpoint, trained or external"},
		{"unknown key", head + "agents:\n  - {name: a, endpont: http://x, model: m}\n", `line 3: unknown key "agents[0].endpont"`},
		{"not a list", head + "agents: {name: a}\n", "line 2"},
		{"bad name", head + "agents:\n  - {name: 'a b', endpoint: http://x, model: m}\n  - {name: b, endpoint: http://x, model: m}\n", "name: \"a b\""},
		{"external without url", head + "agents:\n  - {name: a, kind: external, model: gpt}\n  - {name: b, endpoint: http://x, model: m}\n", "base_url: must name"},
		{"credentials", head + "agents:\n  - {name: a, endpoint: 'http://u:p@x', model: m}\n  - {name: b, endpoint: http://x, model: m}\n", "credentials in a URL"},
		{"trained without run", head + "agents:\n  - {name: a, kind: trained, endpoint: http://x, model: m}\n  - {name: b, endpoint: http://x, model: m}\n", "run: must name"},
		{"cohort names a stranger", head + "agents:\n  - {name: a, endpoint: http://x, model: m}\n  - {name: b, endpoint: http://x, model: m}\ncohorts:\n  - {name: c, drop: [z]}\n", "names agent \"z\""},
		{"no judge", "agents:\n  - {name: a, endpoint: http://x, model: m}\n  - {name: b, endpoint: http://x, model: m}\n", "key judge.base_url"},
		{"bad game section", head + "game: {max_turns: 0}\nagents:\n  - {name: a, endpoint: http://x, model: m}\n  - {name: b, endpoint: http://x, model: m}\n", "game: key max_turns"},
		{"unknown top-level key", head + "rouns: 3\n", `line 2: unknown key "rouns" (known keys here: agents, analysis, cohorts, concurrency, conditions, env, framings, game, judge,`},
		{"unknown game key", head + "game: {max_turn: 3}\n", `line 2: unknown key "game.max_turn"`},
		{"unknown analysis key", head + "analysis: {bootstraps: 3}\n", `line 2: unknown key "analysis.bootstraps"`},
		{"unknown judge key", "judge: {base_url: http://j/v1, model: j, temprature: 0}\n", `line 1: unknown key "judge.temprature"`},
		{"bad judge timeout", "judge: {base_url: http://j/v1, model: j, timeout: soon}\n", "line 1: key judge.timeout"},
		{"negative judge rate", "judge: {base_url: http://j/v1, model: j, requests_per_minute: -1}\n", "key judge: requests_per_minute"},
		{"both framings and conditions", head + "framings: [group]\nconditions: [group]\n", "key framings: is read as conditions"},
		{"unknown game", "env: chess\n", "key env: unknown game \"chess\""},
		{"not a mapping", "- a\n", "line 1: the top level must be a mapping"},
	}
	for _, tt := range tests {
		_, err := ParseTournament([]byte(tt.yaml))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	path := filepath.Join(t.TempDir(), "agents.yaml")
	os.WriteFile(path, []byte(tests[1].yaml), 0o644)
	if _, err := LoadTournament(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadTournament error %v does not name the file", err)
	}
}

// TestTournamentKeys: the judge takes the run config's chat-endpoint keys
// (its rate limits too), framings is read as conditions, and the game's
// section and analysis keys decode over the game's defaults.
func TestTournamentKeys(t *testing.T) {
	tt, err := ParseTournament([]byte(`judge: {base_url: http://j/v1, model: j, timeout: 7s, requests_per_minute: 60, tokens_per_minute: 9000}
framings: [group]
game: {max_turns: 3}
analysis: {bootstrap: 11}
agents:
  - {name: a, endpoint: http://x, model: m}
  - {name: b, endpoint: http://x, model: m}
`))
	if err != nil {
		t.Fatal(err)
	}
	if j := tt.Judge; j.Timeout != 7*time.Second || j.RequestsPerMinute != 60 || j.TokensPerMinute != 9000 || j.MaxRetries != 3 || j.Concurrency != 16 {
		t.Errorf("judge %+v, want the file's timeout and limits over the defaults", j)
	}
	if len(tt.Conditions) != 1 || tt.Conditions[0] != "group" {
		t.Errorf("conditions %v, want [group] (from framings)", tt.Conditions)
	}
	canon, err := tt.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"max_turns: 3\n", "endowment: 100\n", "bootstrap: 11\n", "splits: 2000\n", "requests_per_minute: 60\n"} {
		if !strings.Contains(string(canon), want) {
			t.Errorf("canonical lacks %q:\n%s", want, canon)
		}
	}
	again, err := CanonicalTournament(canon)
	if err != nil || string(again) != string(canon) {
		t.Errorf("the canonical file read back differs (%v):\n%s\n---\n%s", err, canon, again)
	}
}

// TestExampleSpec: the example tournament file parses.
func TestExampleSpec(t *testing.T) {
	s, err := LoadTournament("../configs/tournaments/seed001-agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Agents) != 4 || s.Agents[2].Kind != dataset.PolicyTrained || s.Agents[3].Kind != dataset.PolicyExternal || s.Agents[1].Adapter != "persuader" {
		t.Errorf("agents %+v", s.Agents)
	}
}

// TestTournamentIdentity: a tournament resumes on its directory whatever
// its judge's timeout, rate limits, retries and concurrency, and not when
// what plays or judges the games changes.
func TestTournamentIdentity(t *testing.T) {
	const base = `judge: {base_url: http://j/v1, model: j, timeout: 2m}
framings: [group]
agents:
  - {name: a, endpoint: http://x, model: m}
  - {name: b, endpoint: http://x, model: m}
`
	id := func(s string) string {
		t.Helper()
		b, err := TournamentIdentity([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := id(base)
	for _, tc := range []struct {
		name, from, to string
		same           bool
	}{
		{"judge timeout", "timeout: 2m", "timeout: 7s", true},
		{"judge rate limits", "timeout: 2m", "timeout: 2m, requests_per_minute: 60, tokens_per_minute: 9000, max_retries: 1, concurrency: 2", true},
		{"judge model", "model: j,", "model: k,", false},
		{"agent model", "{name: b, endpoint: http://x, model: m}", "{name: b, endpoint: http://x, model: n}", false},
	} {
		if got := id(strings.Replace(base, tc.from, tc.to, 1)); (got == want) != tc.same {
			t.Errorf("%s changed: identity equal %v, want %v", tc.name, got == want, tc.same)
		}
	}
}
