package config

import (
	"strings"
	"testing"
)

// TestRolePool: roles.<role>.policy pool lists frozen opponents, each
// checked like a role; scripted is a policy of its own.
func TestRolePool(t *testing.T) {
	base := "game:\n  env: endowment\njudge:\n  kind: game\n  base_url: http://j/v1\n  model: j\ngrpo:\n  mask: dialogue\nroles:\n"
	tests := []struct {
		roles, want string
	}{
		{"  requester:\n    policy: pool\n    pool:\n      - {policy: base}\n      - {policy: scripted}\n      - {policy: adapter, model: a}\n", ""},
		{"  requester:\n    policy: scripted\n", ""},
		{"  requester:\n    policy: pool\n", "key roles.requester.pool: must list"},
		{"  requester:\n    policy: pool\n    pool:\n      - {policy: trained}\n", "key roles.requester.pool[0].policy: a pool holds frozen opponents"},
		{"  requester:\n    policy: pool\n    pool:\n      - {policy: adapter}\n", "key roles.requester.pool[0].model"},
		{"  requester:\n    policy: pool\n    pool:\n      - {policy: external, model: m}\n", "roles.requester.pool[0].base_url"},
		{"  requester:\n    policy: base\n    pool:\n      - {policy: base}\n", "key roles.requester.pool: is for policy pool"},
		{"  requester:\n    policy: pool\n    pool:\n      - {policy: base, modle: x}\n", `line 13: unknown key "roles.requester.pool[0].modle"`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(base + tt.roles))
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.roles, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.roles, err, tt.want)
		}
	}
	cfg, err := Parse([]byte(base + "  requester:\n    policy: pool\n    pool:\n      - {policy: external, base_url: 'http://x/v1', model: m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Redacted().Roles["requester"].Pool[0].BaseURL; got != "http://x/v1" {
		t.Errorf("redacted pool URL %q", got)
	}
}

// TestRoleLeague: roles.<role>.policy league, its keys and the game's
// roles; each bad value is named by its key and line.
func TestRoleLeague(t *testing.T) {
	base := "game:\n  env: endowment\njudge:\n  kind: game\n  base_url: http://j/v1\n  model: j\ngrpo:\n  mask: dialogue\nroles:\n"
	tests := []struct {
		roles, want string
	}{
		{"  requester:\n    policy: league\n", ""},
		{"  requester:\n    policy: league\n    pool:\n      - {policy: scripted}\n    league: {snapshot_every: 2, draw: pfsp, pfsp_power: 2, max_loaded: 3}\n", ""},
		{"  requester:\n    policy: league\n    league: {draw: best}\n", `line 12: key roles.requester.league.draw: "best" is not one of uniform, latest, pfsp`},
		{"  requester:\n    policy: league\n    league: {snapshot_every: -1}\n", "key roles.requester.league.snapshot_every: must be zero or more"},
		{"  requester:\n    policy: league\n    league: {pfsp_power: -1}\n", "key roles.requester.league.pfsp_power"},
		{"  requester:\n    policy: league\n    league: {snapshot: 2}\n", `unknown key "roles.requester.league.snapshot"`},
		{"  A:\n    policy: league\n", `line 11: key roles.A.policy: game endowment has no role "A" to play by a league (its roles: requester, holder)`},
		{"  requester:\n    policy: base\n    league: {draw: pfsp}\n", "key roles.requester.league: is for policy league"},
		{"  requester:\n    policy: league\n  holder:\n    policy: scripted\n", "no role of game endowment is left to it"},
		{"  requester:\n    policy: league\n    pool:\n      - {policy: league}\n", "key roles.requester.pool[0].policy: a pool holds frozen opponents"},
		{"  requester:\n    policy: league\ntrainer:\n  full_finetune: true\n  model: m\n", "key roles.requester.policy: a league's snapshots are the run's LoRA adapters"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(base + tt.roles))
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.roles, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.roles, err, tt.want)
		}
	}
}

// TestCrossPlayEvery: train.crossplay_every needs an endpoint of its own
// and a game with a tournament.
func TestCrossPlayEvery(t *testing.T) {
	base := "policy:\n  endpoints: ['http://p:8000']\njudge:\n  kind: game\n  base_url: http://j/v1\n  model: j\ngrpo:\n  mask: dialogue\n"
	tests := []struct {
		yaml, want string
	}{
		{"game:\n  env: endowment\ntrain:\n  crossplay_every: 5\n  crossplay_endpoint: http://xp:8000\n", ""},
		{"game:\n  env: endowment\ntrain:\n  crossplay_every: 5\n", "key train.crossplay_endpoint: must name a vLLM server of its own"},
		{"game:\n  env: endowment\ntrain:\n  crossplay_every: 5\n  crossplay_endpoint: http://p:8000\n", "is one of policy.endpoints"},
		{"game:\n  env: endowment\ntrain:\n  crossplay_every: -1\n", "key train.crossplay_every: must be 0"},
		{"game:\n  env: deliberation\ntrain:\n  crossplay_every: 2\n  crossplay_endpoint: http://xp:8000\n", ""},
		{"game:\n  env: single\ntrain:\n  crossplay_every: 2\n  crossplay_endpoint: http://xp:8000\n", "game single has no two-seat tournament"},
	}
	for _, tt := range tests {
		y := base + tt.yaml
		if strings.Contains(tt.yaml, "deliberation") || strings.Contains(tt.yaml, "single") {
			y = strings.Replace(y, "kind: game", "kind: ca", 1)
		}
		_, err := Parse([]byte(y))
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.yaml, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.yaml, err, tt.want)
		}
	}
}
