package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
