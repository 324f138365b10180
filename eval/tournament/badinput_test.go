package tournament

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/sim"
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
		{"unknown key", head + "agents:\n  - {name: a, endpont: http://x, model: m}\n", "line 3: field endpont not found"},
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
		_, err := ParseSpec([]byte(tt.yaml))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	path := filepath.Join(t.TempDir(), "agents.yaml")
	os.WriteFile(path, []byte(tests[1].yaml), 0o644)
	if _, err := LoadSpec(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadSpec error %v does not name the file", err)
	}
}

// deadURL is an address nothing listens on.
func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestAgentDown: an agent whose server is down for the whole tournament
// stops it before the first game with an error naming the agent; with
// preflight off its games are recorded as failed after their attempts and
// every other game is played.
func TestAgentDown(t *testing.T) {
	url := startSim(t, sim.Options{})
	dead := deadURL(t)
	y := specYAML(url, url, 1, "")
	y = strings.Replace(y, "endpoint: "+url+", model: sim-policy, adapter: open-g95-p90, adapter_path: /sim/open-g95-p90",
		"endpoint: "+dead+", model: sim-policy", 1)
	spec := mustSpec(t, y)
	dir := t.TempDir()
	_, err := Run(context.Background(), Options{Dir: dir, Spec: spec})
	if err == nil || !strings.Contains(err.Error(), "agent open-g95-p90") || !strings.Contains(err.Error(), dead) {
		t.Fatalf("preflight: %v, want an error naming the agent and its endpoint", err)
	}
	if recs, _ := ReadRecords(dir); len(recs) != 0 {
		t.Fatalf("%d games played before the preflight error", len(recs))
	}
	spec.Preflight = false
	dir = t.TempDir()
	sum, err := Run(context.Background(), Options{Dir: dir, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 12 || sum.Failed != 6 || !sum.Complete {
		t.Errorf("summary %+v: want 12 games, the down agent's 6 failed", sum)
	}
	recs, _ := ReadRecords(dir)
	for _, r := range recs {
		down := r.Match.Holder == "open-g95-p90" || r.Match.Requester == "open-g95-p90"
		if r.Failed != down {
			t.Errorf("game %s (%s vs %s): failed %v", r.Match.ID, r.Match.Holder, r.Match.Requester, r.Failed)
		}
		if down && (r.Attempts != 2 || len(r.Errors) != 2 || !strings.Contains(r.Errors[0], "127.0.0.1")) {
			t.Errorf("game %s: %d attempts, errors %v", r.Match.ID, r.Attempts, r.Errors)
		}
	}
	// The report leaves the failed games out and says how many.
	path, err := WriteReport(dir, filepath.Join(dir, "report"))
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(path)
	if !strings.Contains(string(md), "**6 played and analysed, 6 failed**") || strings.Contains(string(md), "NaN") {
		t.Errorf("report of a tournament with a down agent:\n%s", md)
	}
}

// TestJudgeNonsenseFailsGames: a judge answering malformed JSON fails the
// games (more unparsed verdicts than max_unparsed), recorded with why.
func TestJudgeNonsenseFailsGames(t *testing.T) {
	url := startSim(t, sim.Options{})
	judge := startSim(t, sim.Options{JudgeMalformedRate: 1})
	spec := mustSpec(t, specYAML(url, judge, 1, ""))
	dir := t.TempDir()
	sum, err := Run(context.Background(), Options{Dir: dir, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed != sum.Total {
		t.Errorf("%d of %d games failed, want all", sum.Failed, sum.Total)
	}
	recs, _ := ReadRecords(dir)
	for _, r := range recs {
		if !strings.Contains(strings.Join(r.Errors, " "), "unparsed verdicts") {
			t.Errorf("game %s errors %v", r.Match.ID, r.Errors)
		}
	}
}

// TestNegativeEndowmentScenario: a scenario file with a negative
// endowment is one error naming the file, the line and the key; nothing
// is played.
func TestNegativeEndowmentScenario(t *testing.T) {
	url := startSim(t, sim.Options{})
	path := filepath.Join(t.TempDir(), "scenarios.jsonl")
	row := func(id, framing string, e int) string {
		return fmt.Sprintf(`{"id":%q,"category":"endowment","task":"t","scenario":"{\"endowment\":%d,\"framing\":\"%s\",\"appeal\":\"x\"}"}`+"\n", id, e, framing)
	}
	os.WriteFile(path, []byte(row("a", "singular", 100)+row("b", "group", -100)), 0o644)
	spec := mustSpec(t, specYAML(url, url, 1, "scenarios: "+path))
	dir := t.TempDir()
	_, err := Run(context.Background(), Options{Dir: dir, Spec: spec})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "row b") || !strings.Contains(err.Error(), "key endowment") {
		t.Fatalf("error %v, want the file, the row and the key", err)
	}
	if recs, _ := ReadRecords(dir); len(recs) != 0 {
		t.Errorf("%d games played", len(recs))
	}
}

// TestExampleSpec: the example tournament file parses.
func TestExampleSpec(t *testing.T) {
	s, err := LoadSpec("../../configs/tournaments/seed001-agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Agents) != 4 || s.Agents[2].Kind != KindTrained || s.Agents[3].Kind != KindExternal || s.Agents[1].Adapter != "persuader" {
		t.Errorf("agents %+v", s.Agents)
	}
}
