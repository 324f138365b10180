package view_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/train"
	"github.com/parleyhq/parley/view"
)

// get fetches url from h and decodes its JSON into v, returning the
// status.
func get(t *testing.T, h http.Handler, url string, v any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	if v != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("GET %s: %d %s: %v", url, rec.Code, rec.Body.String(), err)
		}
	}
	return rec.Code
}

type groupsAnswer struct {
	GroupsTotal   int      `json:"groups_total"`
	GroupsMatched int      `json:"groups_matched"`
	PersonaPairs  []string `json:"persona_pairs"`
	Members       []string `json:"members"`
	Groups        []struct {
		GroupID       string         `json:"group_id"`
		PersonaPairID string         `json:"persona_pair_id"`
		Members       []memberAnswer `json:"members"`
	} `json:"groups"`
	Error string `json:"error"`
}

type memberAnswer struct {
	RolloutID string       `json:"rollout_id"`
	Match     bool         `json:"match"`
	Roles     []roleAnswer `json:"roles"`
}

type roleAnswer struct {
	Role   string `json:"role"`
	Member string `json:"member"`
}

type dialogueAnswer struct {
	Dialogue struct {
		RolloutID string `json:"rollout_id"`
		Turns     []struct {
			Agent         string `json:"agent"`
			Text          string `json:"text"`
			WeightVersion int    `json:"weight_version"`
		} `json:"turns"`
		Final string `json:"final"`
		Roles []struct {
			Role      string  `json:"role"`
			Reward    float64 `json:"reward"`
			Advantage float64 `json:"advantage"`
		} `json:"roles"`
	} `json:"dialogue"`
	Sequences []struct {
		Role   string   `json:"role"`
		Kind   string   `json:"kind"`
		Source string   `json:"source"`
		IDs    []int32  `json:"ids"`
		Mask   []int8   `json:"mask"`
		Text   []string `json:"text"`
	} `json:"sequences"`
	Note      string `json:"note"`
	Tokenizer string `json:"tokenizer"`
}

// batchRollout is a rollout of a step's batch and its rows: step
// prefer's, else another step's when that batch is empty (every group of
// the step had one reward); it returns the step.
func batchRollout(t *testing.T, run string, prefer int) (int, string, []dataset.BatchRow) {
	t.Helper()
	var rows []dataset.BatchRow
	step := prefer
	for _, s := range []int{prefer, 1, 2, 3} {
		var err error
		if rows, err = dataset.ReadBatch(dataset.RunDir(run).BatchPath(s)); err != nil {
			t.Fatal(err)
		}
		if step = s; len(rows) > 0 {
			break
		}
	}
	if len(rows) == 0 {
		t.Fatal("every step's batch is empty")
	}
	id := rows[0].RolloutID
	var out []dataset.BatchRow
	for _, r := range rows {
		if r.RolloutID == id {
			out = append(out, r)
		}
	}
	return step, id, out
}

// TestAPI: the index finds the run and the rollout output; the overview
// has the run's curves and steps; a step's groups page through; a
// dialogue's sequences are the batch's, loss mask and all, decoded.
func TestAPI(t *testing.T) {
	run, rollout := trainedRun(t)
	s, err := view.NewServer([]string{run, rollout}, view.Options{PageGroups: 2})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	var ix struct {
		Runs []struct {
			Kind  string `json:"kind"`
			Name  string `json:"name"`
			Steps int    `json:"steps"`
		} `json:"runs"`
	}
	get(t, h, "/api/index", &ix)
	if len(ix.Runs) != 2 || ix.Runs[0].Kind != view.KindRun || ix.Runs[0].Steps != 3 || ix.Runs[1].Kind != view.KindRollout || ix.Runs[1].Steps != 1 {
		t.Errorf("/api/index runs = %+v, want the run (3 steps) and the rollout output (1)", ix.Runs)
	}
	var ov struct {
		Charts []struct {
			ID     string `json:"id"`
			Series []struct {
				Points [][2]float64 `json:"points"`
			} `json:"series"`
			Band *struct{ Points [][3]float64 } `json:"band"`
		} `json:"charts"`
	}
	get(t, h, "/api/run/overview?run=0", &ov)
	ids := map[string]int{}
	for _, c := range ov.Charts {
		for _, s := range c.Series { // rounds to agreement has only the steps that agreed
			ids[c.ID] = max(ids[c.ID], len(s.Points))
		}
		if c.ID == "reward" && (c.Band == nil || len(c.Band.Points) != 3) {
			t.Errorf("the reward chart's band = %+v, want 3 steps", c.Band)
		}
	}
	for _, want := range []string{"reward", "agreement", "rounds", "trainer/loss"} {
		if ids[want] != 3 {
			t.Errorf("overview chart %q has %d points, want 3 (charts %v)", want, ids[want], ids)
		}
	}
	// Pages of 2 groups: every group once, each with its 3 members.
	var first groupsAnswer
	get(t, h, "/api/run/groups?run=0&step=1", &first)
	seen := map[string]bool{}
	for page := 0; page*2 < max(first.GroupsTotal, 1); page++ {
		var g groupsAnswer
		get(t, h, view.GroupsURL(0, 1, view.Filter{}, page), &g)
		for _, gr := range g.Groups {
			if seen[gr.GroupID] || len(gr.Members) != 3 {
				t.Errorf("page %d: group %s again, or with %d members, want 3", page, gr.GroupID, len(gr.Members))
			}
			seen[gr.GroupID] = true
		}
	}
	if first.GroupsTotal < 3 || len(seen) != first.GroupsTotal || len(first.Groups) != 2 {
		t.Errorf("step 1's groups: %d total, %d seen over the pages, %d on the first; want at least 3, each once, 2 a page", first.GroupsTotal, len(seen), len(first.Groups))
	}

	step, id, rows := batchRollout(t, run, 1)
	var d dialogueAnswer
	get(t, h, view.DialogueURL(0, step, id), &d)
	if d.Dialogue.RolloutID != id || len(d.Dialogue.Turns) == 0 || d.Dialogue.Final == "" {
		t.Errorf("dialogue %s: %+v, want its turns and final", id, d.Dialogue)
	}
	if len(d.Sequences) != len(rows) {
		t.Fatalf("dialogue %s has %d sequences, the batch %d", id, len(d.Sequences), len(rows))
	}
	for i, r := range rows {
		q := d.Sequences[i]
		if q.Source != view.SourceBatch || q.Role != r.Role || !slices.Equal(q.IDs, r.InputIDs) || !slices.Equal(q.Mask, r.LossMask) {
			t.Errorf("sequence %d: %s %s from %s, mask equal %v, want the batch's %s %s", i, q.Role, q.Kind, q.Source, slices.Equal(q.Mask, r.LossMask), r.Role, r.Kind)
		}
		if tinyModel() != "" && (len(q.Text) != len(q.IDs) || !strings.Contains(strings.Join(q.Text, ""), "<|im_start|>")) {
			t.Errorf("sequence %d is not decoded with the tiny model's tokenizer (%d pieces)", i, len(q.Text))
		}
	}

	var ro dialogueAnswer
	var rg groupsAnswer
	get(t, h, "/api/run/groups?run=1&step=0", &rg)
	get(t, h, view.DialogueURL(1, 0, rg.Groups[0].Members[0].RolloutID), &ro)
	if len(ro.Sequences) == 0 || ro.Sequences[0].Source != view.SourceRollout {
		t.Errorf("a rollout output's dialogue: %d sequences, want its own record's", len(ro.Sequences))
	}
}

// TestFilters: each filter narrows a step's groups, and a bad value is an
// error naming the filter.
func TestFilters(t *testing.T) {
	run, _ := trainedRun(t)
	s, err := view.NewServer([]string{run}, view.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	var all groupsAnswer
	get(t, h, "/api/run/groups?run=0&step=3", &all)
	pair := all.Groups[0].PersonaPairID
	if len(all.Members) == 0 {
		t.Fatal("step 3 lists no league member: the fixture's role B is a league")
	}
	member := all.Members[0]
	tests := []struct {
		name, query string
		status      int
		check       func(g groupsAnswer) bool
		wantErr     string
	}{
		{"persona", "&persona=" + pair, 200, func(g groupsAnswer) bool {
			for _, x := range g.Groups {
				if x.PersonaPairID != pair {
					return false
				}
			}
			return g.GroupsMatched >= 1
		}, ""},
		{"league member", "&member=" + member, 200, func(g groupsAnswer) bool {
			for _, x := range g.Groups {
				if !slices.ContainsFunc(x.Members, func(m memberAnswer) bool {
					return slices.ContainsFunc(m.Roles, func(r roleAnswer) bool { return r.Member == member })
				}) {
					return false
				}
			}
			return g.GroupsMatched >= 1
		}, ""},
		{"no such member", "&member=snapshot-999999", 200, func(g groupsAnswer) bool { return g.GroupsMatched == 0 }, ""},
		{"no such persona", "&persona=nobody-has-this", 200, func(g groupsAnswer) bool { return g.GroupsMatched == 0 }, ""},
		{"reward above any", "&reward_min=2", 200, func(g groupsAnswer) bool { return g.GroupsMatched == 0 }, ""},
		{"reward range of all", "&reward_min=-1&reward_max=1", 200, func(g groupsAnswer) bool { return g.GroupsMatched == g.GroupsTotal }, ""},
		{"bad number", "&adv_min=lots", 400, nil, "adv_min"},
		{"bad agreed", "&agreed=maybe", 400, nil, "agreed"},
	}
	for _, tt := range tests {
		var g groupsAnswer
		status := get(t, h, "/api/run/groups?run=0&step=3"+tt.query, &g)
		if status != tt.status {
			t.Errorf("%s: status %d (%s), want %d", tt.name, status, g.Error, tt.status)
			continue
		}
		if tt.wantErr != "" && !strings.Contains(g.Error, tt.wantErr) {
			t.Errorf("%s: error %q, want it to name %q", tt.name, g.Error, tt.wantErr)
		}
		if tt.check != nil && !tt.check(g) {
			t.Errorf("%s: %d of %d groups matched", tt.name, g.GroupsMatched, g.GroupsTotal)
		}
	}
}

// TestNotAParleyDir: a folder that holds no parley output is refused,
// naming what was looked for.
func TestNotAParleyDir(t *testing.T) {
	empty := t.TempDir()
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("hello"), 0o644)
	file := filepath.Join(other, "notes.txt")
	tests := []struct {
		name, dir string
		want      []string
	}{
		{"empty folder", empty, []string{"not a parley output", "config.yaml", "metrics.jsonl", "rollouts/", "rollouts.parquet", "tournament"}},
		{"other files", other, []string{"not a parley output"}},
		{"a file", file, []string{"not a directory"}},
		{"missing", filepath.Join(empty, "nope"), []string{"no such file"}},
	}
	for _, tt := range tests {
		_, err := view.NewServer([]string{tt.dir}, view.Options{})
		if err == nil {
			t.Errorf("%s: NewServer(%s) = nil error", tt.name, tt.dir)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tt.name, err, w)
			}
		}
	}
}

// copyRun copies a run directory.
func copyRun(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "run")
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// TestRunBeingWritten: a truncated rollouts file is named and skipped, in
// the overview and when its step is asked for; a temporary file is not a
// step; a batch without .ready is not read; metrics.jsonl's unfinished
// last line waits; a step written later is picked up.
func TestRunBeingWritten(t *testing.T) {
	src, _ := trainedRun(t)
	run := copyRun(t, src)
	rd := dataset.RunDir(run)
	b, _ := os.ReadFile(rd.RolloutsPath(2))
	os.WriteFile(rd.RolloutsPath(2), b[:len(b)/2], 0o644)
	os.WriteFile(filepath.Join(rd.RolloutsDir(), ".step-000004.parquet.tmp-123"), b[:100], 0o644)
	os.Remove(rd.ReadyPath(3))
	m, _ := os.ReadFile(rd.MetricsPath())
	os.WriteFile(rd.MetricsPath(), append(m, []byte(`{"step":4,"score_mean":`)...), 0o644)

	s, err := view.NewServer([]string{run}, view.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	var ov struct {
		Steps   []struct{ Step int } `json:"steps"`
		Skipped []struct{ File, Error string }
	}
	get(t, h, "/api/run/overview?run=0", &ov)
	if len(ov.Steps) != 2 || ov.Steps[0].Step != 1 || ov.Steps[1].Step != 3 {
		t.Errorf("steps = %v, want 1 and 3 (2 is cut short, 4 is a temporary file)", ov.Steps)
	}
	if len(ov.Skipped) != 1 || ov.Skipped[0].File != rd.RolloutsPath(2) || !strings.Contains(ov.Skipped[0].Error, "cut short") {
		t.Errorf("skipped = %+v, want step 2's rollouts, named, cut short", ov.Skipped)
	}
	var g groupsAnswer
	if status := get(t, h, "/api/run/groups?run=0&step=2", &g); status != http.StatusUnprocessableEntity || !strings.Contains(g.Error, rd.RolloutsPath(2)) {
		t.Errorf("step 2's groups: %d %q, want 422 naming %s", status, g.Error, rd.RolloutsPath(2))
	}
	var all groupsAnswer
	get(t, h, "/api/run/groups?run=0&step=3", &all)
	var d dialogueAnswer
	get(t, h, view.DialogueURL(0, 3, all.Groups[0].Members[0].RolloutID), &d)
	if !strings.Contains(d.Note, "no .ready") || len(d.Sequences) == 0 || d.Sequences[0].Source != view.SourceRollout {
		t.Errorf("step 3 without .ready: note %q, %d sequences, want the rollout's record and a note", d.Note, len(d.Sequences))
	}

	os.WriteFile(rd.RolloutsPath(2), b, 0o644) // the writer finished
	get(t, h, "/api/run/overview?run=0", &ov)
	if len(ov.Steps) != 3 {
		t.Errorf("after step 2 is complete: steps %v, want 1, 2, 3", ov.Steps)
	}
}

// TestNoSecret: a key in the environment appears in no answer, page or
// export.
func TestNoSecret(t *testing.T) {
	const secret = "sk-test-secret-4c1d"
	t.Setenv("OPENAI_API_KEY", secret)
	t.Setenv("PARLEY_JUDGE_KEY", secret)
	run, rollout := trainedRun(t)
	s, err := view.NewServer([]string{run, rollout}, view.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := s.Export(&buf, view.ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Errorf("the export holds %d answers, want every step's pages", n)
	}
	pages := []string{buf.String()}
	for _, u := range []string{"/", "/assets/app.js", "/api/index", "/api/run/overview?run=0"} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		body, _ := io.ReadAll(rec.Body)
		pages = append(pages, string(body))
	}
	for i, p := range pages {
		if strings.Contains(p, secret) {
			t.Errorf("page %d holds the environment's secret", i)
		}
	}
}

// TestNoTokenizer: without a tokenizer.json beside the config's model the
// dialogue has token ids and no text, and says so.
func TestNoTokenizer(t *testing.T) {
	src, _ := trainedRun(t)
	run := copyRun(t, src)
	cfg := filepath.Join(run, dataset.ConfigFile)
	b, _ := os.ReadFile(cfg)
	var kept []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.Contains(l, "model:") {
			kept = append(kept, l)
		}
	}
	os.WriteFile(cfg, []byte(strings.Join(kept, "\n")), 0o644)
	s, err := view.NewServer([]string{run}, view.Options{})
	if err != nil {
		t.Fatal(err)
	}
	step, id, _ := batchRollout(t, run, 1)
	var d dialogueAnswer
	get(t, s.Handler(), view.DialogueURL(0, step, id), &d)
	if d.Tokenizer != "" || len(d.Sequences) == 0 || len(d.Sequences[0].Text) != 0 || len(d.Sequences[0].IDs) == 0 {
		t.Errorf("without a model in config.yaml: tokenizer %q, %d sequences, want ids and no text", d.Tokenizer, len(d.Sequences))
	}
}

// TestDialogueAudit: a dialogue of a run with an audit judge
// (judge.audit) carries the audit judge's verdict on the rollout, or its
// failure; a rollout the audit did not sample, and a run without audits,
// carry none.
func TestDialogueAudit(t *testing.T) {
	run, _ := trainedRun(t)
	run = copyRun(t, run)
	step, id, _ := batchRollout(t, run, 2)
	rs, err := dataset.ReadAllRollouts(dataset.RunDir(run).RolloutsPath(step))
	if err != nil {
		t.Fatal(err)
	}
	other := ""
	for _, r := range rs {
		if r.RolloutID != id {
			other = r.RolloutID
		}
	}
	score := 2.0
	rec := train.AuditRecord{Step: step, Judge: "gpt-audit", Items: []train.AuditItem{
		{RolloutID: id, TrainScore: 4, AuditScore: &score, Rationale: "hedges"},
		{RolloutID: other, TrainScore: 3, Cause: "rate limited (HTTP 429)", Error: "giving up"},
	}}
	b, _ := json.Marshal(rec)
	if err := os.MkdirAll(dataset.RunDir(run).AuditDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dataset.RunDir(run).AuditPath(step), b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := view.NewServer([]string{run}, view.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		Audit *struct {
			Judge      string   `json:"judge"`
			TrainScore float64  `json:"train_score"`
			AuditScore *float64 `json:"audit_score"`
			Rationale  string   `json:"rationale"`
			Cause      string   `json:"cause"`
		} `json:"audit"`
	}
	for _, tt := range []struct {
		rollout, cause string
		score          float64 // 0: no score
	}{{id, "", 2}, {other, "rate limited (HTTP 429)", 0}} {
		var a answer
		get(t, s.Handler(), fmt.Sprintf("/api/run/dialogue?run=0&step=%d&rollout=%s", step, tt.rollout), &a)
		switch {
		case a.Audit == nil:
			t.Errorf("%s: no audit in the dialogue", tt.rollout)
		case a.Audit.Judge != "gpt-audit" || a.Audit.Cause != tt.cause || (tt.score != 0) != (a.Audit.AuditScore != nil) ||
			(a.Audit.AuditScore != nil && *a.Audit.AuditScore != tt.score):
			t.Errorf("%s: audit %+v, want judge gpt-audit, score %v, cause %q", tt.rollout, a.Audit, tt.score, tt.cause)
		}
	}
	if err := os.Remove(dataset.RunDir(run).AuditPath(step)); err != nil {
		t.Fatal(err)
	}
	var a answer
	get(t, s.Handler(), fmt.Sprintf("/api/run/dialogue?run=0&step=%d&rollout=%s", step, id), &a)
	if a.Audit != nil {
		t.Errorf("a step without an audit record: audit %+v, want none", a.Audit)
	}
}
