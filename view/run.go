package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/train"
	"gopkg.in/yaml.v3"
)

// config reads the run's config.yaml (zero when absent or unreadable).
func (src *source) config() runConfig {
	var c runConfig
	if b, err := os.ReadFile(filepath.Join(src.Dir, dataset.ConfigFile)); err == nil {
		_ = yaml.Unmarshal(b, &c)
	}
	return c
}

// rolloutsPath is the rollouts file of a step: a run's
// rollouts/step-N.parquet, a rollout output's rollouts.parquet (step 0).
func (src *source) rolloutsPath(step int) (string, error) {
	if src.Kind == KindRollout {
		if step != 0 {
			return "", notFound("step %d: a parley rollout output has one file, %s: ask for step 0", step, dataset.RolloutFileName)
		}
		return filepath.Join(src.Dir, dataset.RolloutFileName), nil
	}
	return dataset.RunDir(src.Dir).RolloutsPath(step), nil
}

// batchPath is a step's batch when its .ready marker is there, "" before
// (or for a rollout output, which has none).
func (src *source) batchPath(step int) string {
	if src.Kind != KindRun {
		return ""
	}
	rd := dataset.RunDir(src.Dir)
	if _, err := os.Stat(rd.ReadyPath(step)); err != nil {
		return ""
	}
	return rd.BatchPath(step)
}

// stepInfo is one step whose rollouts can be read.
type stepInfo struct {
	Step  int  `json:"step"`
	Batch bool `json:"batch"`
}

// skippedFile is a file the viewer could not read, and why.
type skippedFile struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

// steps lists the steps with a complete rollouts file, and the files
// skipped as incomplete (cut short or still being written; checked by
// their parquet marks, cheaply, so a long run lists fast).
func (s *Server) steps(src *source) ([]stepInfo, []skippedFile, error) {
	var files []dataset.StepFile
	if src.Kind == KindRollout {
		files = []dataset.StepFile{{Step: 0, Path: filepath.Join(src.Dir, dataset.RolloutFileName)}}
	} else {
		var err error
		files, err = dataset.RolloutFiles(dataset.RunDir(src.Dir).RolloutsDir(), 0, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
	}
	var ready map[int]bool
	if src.Kind == KindRun {
		ready = map[int]bool{}
		entries, _ := os.ReadDir(dataset.RunDir(src.Dir).BatchesDir())
		for _, e := range entries {
			if name, ok := strings.CutSuffix(e.Name(), dataset.ReadyExt); ok {
				if n, ok := dataset.ParseStepName(name); ok {
					ready[n] = true
				}
			}
		}
	}
	var out []stepInfo
	var skipped []skippedFile
	for _, f := range files {
		if err := s.checkFrame(f.Path); err != nil {
			skipped = append(skipped, skippedFile{File: f.Path, Error: err.Error()})
			continue
		}
		out = append(out, stepInfo{Step: f.Step, Batch: ready[f.Step]})
	}
	return out, skipped, nil
}

// checkFrame checks a parquet file's marks at both ends (PAR1), which a
// file cut short or still being written lacks at its end.
func (s *Server) checkFrame(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	const magic = "PAR1"
	if st.Size() < 12 {
		return fmt.Errorf("%d bytes, too short to be a parquet file: cut short or still being written", st.Size())
	}
	head, tail := make([]byte, 4), make([]byte, 4)
	if _, err := f.ReadAt(head, 0); err != nil {
		return err
	}
	if _, err := f.ReadAt(tail, st.Size()-4); err != nil && err != io.EOF {
		return err
	}
	if string(head) != magic {
		return fmt.Errorf("not a parquet file (it starts with %q)", head)
	}
	if string(tail) != magic {
		return errors.New("not a complete parquet file (no PAR1 at its end): cut short, or still being written")
	}
	return nil
}

// runInfo is a run as /api/index lists it.
type runInfo struct {
	Index    int    `json:"index"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Dir      string `json:"dir"`
	Env      string `json:"env,omitempty"`
	Model    string `json:"model,omitempty"`
	Judge    string `json:"judge,omitempty"`
	Steps    int    `json:"steps"`
	LastStep int    `json:"last_step"`
	Skipped  int    `json:"skipped"`
}

func (s *Server) runInfo(i int) (runInfo, []stepInfo, []skippedFile, error) {
	src := s.runs[i]
	c := src.config()
	judge := c.Judge.Kind
	if reward.JudgeKind(judge).UsesChat() { // a judge that asks a model names it
		judge = strings.TrimSpace(judge + " " + c.Judge.Model)
	}
	info := runInfo{Index: i, Kind: src.Kind, Name: src.Name, Dir: src.Dir, Env: c.Game.Env, Model: c.Policy.Model, Judge: judge}
	if c.Run.Name != "" {
		info.Name = c.Run.Name
	}
	steps, skipped, err := s.steps(src)
	if err != nil {
		return info, nil, nil, err
	}
	if info.Env == "" && len(steps) > 0 {
		info.Env, info.Model = s.firstRow(src, steps[0].Step)
	}
	info.Steps, info.Skipped = len(steps), len(skipped)
	if len(steps) > 0 {
		info.LastStep = steps[len(steps)-1].Step
	}
	return info, steps, skipped, nil
}

// firstRow is the game and the first role's model of a step's first
// rollout: what a rollout output, which has no config.yaml, says of itself.
func (s *Server) firstRow(src *source, step int) (env, model string) {
	path, err := src.rolloutsPath(step)
	if err != nil || s.checkParquet(path) != nil {
		return "", ""
	}
	type head struct {
		Env   string                `parquet:"env"`
		Roles []dataset.RoleOutcome `parquet:"roles,list"`
	}
	_ = dataset.StreamRows(path, func(h head) error {
		env = h.Env
		if len(h.Roles) > 0 {
			model = h.Roles[0].Model
		}
		return io.EOF
	})
	return env, model
}

// summary is a rollout output's summary.json, its numbers only.
func (src *source) summary() map[string]float64 {
	out := map[string]float64{}
	b, err := os.ReadFile(filepath.Join(src.Dir, "summary.json"))
	if err != nil {
		return out
	}
	var raw map[string]any
	if json.Unmarshal(b, &raw) != nil {
		return out
	}
	for k, v := range raw {
		if x, ok := v.(float64); ok {
			out[k] = x
		}
	}
	return out
}

// index is /api/index: the runs, rollout outputs and game outputs found.
func (s *Server) index(*http.Request) (any, error) {
	runs := []runInfo{}
	for i := range s.runs {
		info, _, _, err := s.runInfo(i)
		if err != nil {
			return nil, err
		}
		runs = append(runs, info)
	}
	type gameOut struct{ Kind, Title, Dir, Route string }
	gs := []gameOut{}
	for _, f := range s.games {
		gs = append(gs, gameOut(f))
	}
	return map[string]any{"runs": runs, "games": gs}, nil
}

// overview is /api/run/overview: the run's curves and its steps.
func (s *Server) overview(r *http.Request) (any, error) {
	src, i, err := s.runParam(r)
	if err != nil {
		return nil, err
	}
	info, steps, skipped, err := s.runInfo(i)
	if err != nil {
		return nil, err
	}
	var charts []chart
	if src.Kind == KindRun {
		lines, bad, err := readMetrics(dataset.RunDir(src.Dir).MetricsPath())
		if err != nil {
			return nil, err
		}
		if bad != "" {
			skipped = append(skipped, skippedFile{File: dataset.RunDir(src.Dir).MetricsPath(), Error: bad})
		}
		charts = buildCharts(lines)
	}
	if steps == nil {
		steps = []stepInfo{}
	}
	if skipped == nil {
		skipped = []skippedFile{}
	}
	tok := ""
	if t := s.tokenizer(src, src.config()); t != nil {
		tok = t.Path
	}
	res := map[string]any{"run": info, "steps": steps, "skipped": skipped, "charts": charts, "tokenizer": tok}
	if src.Kind == KindRollout {
		res["summary"] = src.summary()
	}
	return res, nil
}

// rolloutRow is a rollout's summary: the columns the groups page reads
// (no turns, no token sequences).
type rolloutRow struct {
	RolloutID     string                `parquet:"rollout_id"`
	GroupID       string                `parquet:"group_id"`
	PromptID      string                `parquet:"prompt_id"`
	Index         int32                 `parquet:"index"`
	Category      string                `parquet:"category"`
	Task          string                `parquet:"task"`
	PersonaPairID string                `parquet:"persona_pair_id"`
	Personas      []dataset.Persona     `parquet:"personas,list"`
	Agreed        bool                  `parquet:"agreed"`
	Rounds        int32                 `parquet:"rounds"`
	Judged        bool                  `parquet:"judged"`
	Score         float32               `parquet:"score"`
	Failed        bool                  `parquet:"failed"`
	Error         string                `parquet:"error"`
	Roles         []dataset.RoleOutcome `parquet:"roles,list"`
	PolicyVersion int32                 `parquet:"policy_version"`
}

// Filter selects rollouts on the groups page and in an export; the zero
// Filter selects every one. A group is listed when any member matches.
type Filter struct {
	// Prompt is a substring of the task or the prompt id (any case).
	Prompt string
	// Category is the prompt's category, exactly.
	Category string
	// Persona is a substring of the persona pair id or a persona's name or
	// text (any case).
	Persona string
	// Member is a league member that played a role ("snapshot-000004").
	Member string
	// RewardMin … AdvMax bound some role's reward and advantage (nil: no
	// bound).
	RewardMin, RewardMax, AdvMin, AdvMax *float64
	// Agreed is "yes" or "no" ("": either).
	Agreed string
}

// filterKeys are the query keys of a Filter, in the order URLs carry them.
var filterKeys = []string{"prompt", "category", "persona", "member", "reward_min", "reward_max", "adv_min", "adv_max", "agreed"}

// ParseFilter reads a Filter from query values, naming a bad one.
func ParseFilter(q map[string][]string) (Filter, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	f := Filter{Prompt: get("prompt"), Category: get("category"), Persona: get("persona"), Member: get("member"), Agreed: get("agreed")}
	for _, b := range []struct {
		key string
		dst **float64
	}{{"reward_min", &f.RewardMin}, {"reward_max", &f.RewardMax}, {"adv_min", &f.AdvMin}, {"adv_max", &f.AdvMax}} {
		v := get(b.key)
		if v == "" {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return f, badRequest("filter %s=%q (flag --%s): want a number", b.key, v, strings.ReplaceAll(b.key, "_", "-"))
		}
		*b.dst = &x
	}
	if f.Agreed != "" && f.Agreed != "yes" && f.Agreed != "no" {
		return f, badRequest("filter agreed=%q (flag --agreed): want yes or no", f.Agreed)
	}
	return f, nil
}

// Query is the filter as URL query parameters, in filterKeys' order ("" for
// the zero Filter), as app.js writes them.
func (f Filter) Query() string {
	num := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	vals := []string{f.Prompt, f.Category, f.Persona, f.Member, num(f.RewardMin), num(f.RewardMax), num(f.AdvMin), num(f.AdvMax), f.Agreed}
	var b strings.Builder
	for i, v := range vals {
		if v == "" {
			continue
		}
		b.WriteString("&" + filterKeys[i] + "=" + queryEscape(v))
	}
	return b.String()
}

// queryEscape escapes as JavaScript's encodeURIComponent does, so that the
// export's URLs are the page's.
func queryEscape(s string) string {
	const keep = "-_.!~*'()"
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(keep, c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func (f Filter) match(r *rolloutRow) bool {
	has := func(s, sub string) bool { return strings.Contains(strings.ToLower(s), strings.ToLower(sub)) }
	if f.Prompt != "" && !has(r.Task, f.Prompt) && !has(r.PromptID, f.Prompt) {
		return false
	}
	if f.Category != "" && r.Category != f.Category {
		return false
	}
	if f.Persona != "" {
		ok := has(r.PersonaPairID, f.Persona)
		for _, p := range r.Personas {
			ok = ok || has(p.Name, f.Persona) || has(p.Text, f.Persona)
		}
		if !ok {
			return false
		}
	}
	if f.Agreed != "" && r.Agreed != (f.Agreed == "yes") {
		return false
	}
	if f.Member != "" && !slices.ContainsFunc(r.Roles, func(o dataset.RoleOutcome) bool { return o.Member == f.Member }) {
		return false
	}
	if f.RewardMin != nil || f.RewardMax != nil || f.AdvMin != nil || f.AdvMax != nil {
		in := func(v float32, lo, hi *float64) bool {
			return (lo == nil || float64(v) >= *lo) && (hi == nil || float64(v) <= *hi)
		}
		if !slices.ContainsFunc(r.Roles, func(o dataset.RoleOutcome) bool {
			return o.Scored && in(o.Reward, f.RewardMin, f.RewardMax) && in(o.Advantage, f.AdvMin, f.AdvMax)
		}) {
			return false
		}
	}
	return true
}

// personaOut is a persona as the pages show it.
type personaOut struct {
	Role string `json:"role"`
	Name string `json:"name,omitempty"`
	Text string `json:"text"`
}

func personasOut(ps []dataset.Persona) []personaOut {
	out := []personaOut{}
	for _, p := range ps {
		out = append(out, personaOut{p.Role, p.Name, p.Text})
	}
	return out
}

// roleOut is a role's outcome as the pages show it.
type roleOut struct {
	Role          string  `json:"role"`
	Policy        string  `json:"policy"`
	Model         string  `json:"model,omitempty"`
	Member        string  `json:"member,omitempty"`
	MemberVersion int32   `json:"member_version,omitempty"`
	Trained       bool    `json:"trained"`
	Scored        bool    `json:"scored"`
	Score         float32 `json:"score"`
	Reward        float32 `json:"reward"`
	Advantage     float32 `json:"advantage"`
	Outcome       string  `json:"outcome,omitempty"`
}

func rolesOut(rs []dataset.RoleOutcome) []roleOut {
	out := []roleOut{}
	for _, o := range rs {
		out = append(out, roleOut{o.Role, string(o.Policy), o.Model, o.Member, o.MemberVersion, o.Trained, o.Scored, o.Score, o.Reward, o.Advantage, o.Outcome})
	}
	return out
}

// memberSummary is one rollout of a group on the groups page.
type memberSummary struct {
	RolloutID string    `json:"rollout_id"`
	Index     int32     `json:"index"`
	Agreed    bool      `json:"agreed"`
	Rounds    int32     `json:"rounds"`
	Judged    bool      `json:"judged"`
	Score     float32   `json:"score"`
	Failed    bool      `json:"failed"`
	Error     string    `json:"error,omitempty"`
	Roles     []roleOut `json:"roles"`
	Match     bool      `json:"match"`
}

// groupSummary is one group on the groups page.
type groupSummary struct {
	GroupID       string          `json:"group_id"`
	PromptID      string          `json:"prompt_id"`
	Category      string          `json:"category"`
	Task          string          `json:"task"`
	PersonaPairID string          `json:"persona_pair_id"`
	Personas      []personaOut    `json:"personas"`
	Members       []memberSummary `json:"members"`
	match         bool
}

// openStep checks a step's rollouts file and returns its path.
func (s *Server) openStep(src *source, step int) (string, error) {
	path, err := src.rolloutsPath(step)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err != nil {
		return "", notFound("step %d has no rollouts file (%s): not written yet, or the step was never sampled", step, path)
	}
	if err := s.checkParquet(path); err != nil {
		return "", &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("step %d's rollouts file cannot be read, skipped: %v", step, err)}
	}
	return path, nil
}

// stepFile reads a request's run and step (?run=I&step=N) and opens the
// step's rollouts file: the source, the step and the file's path.
func (s *Server) stepFile(r *http.Request) (*source, int, string, error) {
	src, _, err := s.runParam(r)
	if err != nil {
		return nil, 0, "", err
	}
	step, err := stepParam(r)
	if err != nil {
		return nil, 0, "", err
	}
	path, err := s.openStep(src, step)
	if err != nil {
		return nil, 0, "", err
	}
	return src, step, path, nil
}

// groups is /api/run/groups: a page of a step's groups, summaries only.
func (s *Server) groups(r *http.Request) (any, error) {
	filter, err := ParseFilter(r.URL.Query())
	if err != nil {
		return nil, err
	}
	page := 0
	if p := r.URL.Query().Get("page"); p != "" {
		if page, err = strconv.Atoi(p); err != nil || page < 0 {
			return nil, badRequest("page %q: want 0 or more", p)
		}
	}
	_, step, path, err := s.stepFile(r)
	if err != nil {
		return nil, err
	}
	var order []*groupSummary
	byID := map[string]*groupSummary{}
	cats, pairs, members := map[string]bool{}, map[string]bool{}, map[string]bool{}
	rows := 0
	err = dataset.StreamRows(path, func(row rolloutRow) error {
		rows++
		g := byID[row.GroupID]
		if g == nil {
			g = &groupSummary{GroupID: row.GroupID, PromptID: row.PromptID, Category: row.Category, Task: row.Task,
				PersonaPairID: row.PersonaPairID, Personas: personasOut(row.Personas)}
			byID[row.GroupID] = g
			order = append(order, g)
		}
		m := filter.match(&row)
		g.match = g.match || m
		g.Members = append(g.Members, memberSummary{RolloutID: row.RolloutID, Index: row.Index, Agreed: row.Agreed, Rounds: row.Rounds,
			Judged: row.Judged, Score: row.Score, Failed: row.Failed, Error: row.Error, Roles: rolesOut(row.Roles), Match: m})
		cats[row.Category] = true
		pairs[pairLabel(row.PersonaPairID, row.Personas)] = true
		for _, o := range row.Roles {
			if o.Member != "" {
				members[o.Member] = true
			}
		}
		return nil
	})
	if err != nil {
		s.log.Warn("view: a rollouts file cannot be read")
		return nil, &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("step %d's rollouts file cannot be read, skipped: %v", step, err)}
	}
	var matched []*groupSummary
	for _, g := range order {
		if g.match {
			matched = append(matched, g)
		}
	}
	size := s.opts.PageGroups
	pages := max(1, (len(matched)+size-1)/size)
	lo, hi := min(page*size, len(matched)), min((page+1)*size, len(matched))
	out := []groupSummary{}
	for _, g := range matched[lo:hi] {
		slices.SortFunc(g.Members, func(a, b memberSummary) int { return int(a.Index - b.Index) })
		out = append(out, *g)
	}
	return map[string]any{
		"step": step, "file": path, "rollouts": rows, "groups_total": len(order), "groups_matched": len(matched),
		"page": page, "pages": pages, "groups": out,
		"categories": sortedKeys(cats), "persona_pairs": sortedKeys(pairs), "members": sortedKeys(members),
	}, nil
}

// pairLabel names a persona pair: its id, else its personas' names.
func pairLabel(id string, ps []dataset.Persona) string {
	if id != "" {
		return id
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	return strings.Join(names, " / ")
}

func sortedKeys(m map[string]bool) []string {
	out := []string{}
	for k := range m {
		if k != "" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// rolloutText is a rollout without its token sequences: what the group
// and dialogue pages show.
type rolloutText struct {
	rolloutRow
	Env            string                 `parquet:"env"`
	Turns          []dataset.Turn         `parquet:"turns,list"`
	SystemPrompts  []dataset.SystemPrompt `parquet:"system_prompts,list"`
	Final          string                 `parquet:"final"`
	Outcome        string                 `parquet:"outcome"`
	JudgeModel     string                 `parquet:"judge_model"`
	JudgeRationale string                 `parquet:"judge_rationale"`
	JudgeError     string                 `parquet:"judge_error"`
	Temperature    float32                `parquet:"temperature"`
}

// turnOut is one turn as the pages show it.
type turnOut struct {
	Agent         string `json:"agent"`
	Persona       string `json:"persona,omitempty"`
	Text          string `json:"text"`
	Tokens        int32  `json:"tokens"`
	FinishReason  string `json:"finish_reason,omitempty"`
	Agree         bool   `json:"agree"`
	WeightVersion int32  `json:"weight_version"`
}

// dialogueOut is one rollout, as the group and dialogue pages show it.
type dialogueOut struct {
	RolloutID      string       `json:"rollout_id"`
	GroupID        string       `json:"group_id"`
	PromptID       string       `json:"prompt_id"`
	Index          int32        `json:"index"`
	Env            string       `json:"env"`
	Category       string       `json:"category"`
	Task           string       `json:"task"`
	PersonaPairID  string       `json:"persona_pair_id"`
	Personas       []personaOut `json:"personas"`
	PolicyVersion  int32        `json:"policy_version"`
	Turns          []turnOut    `json:"turns"`
	Agreed         bool         `json:"agreed"`
	Rounds         int32        `json:"rounds"`
	Final          string       `json:"final"`
	Outcome        string       `json:"outcome,omitempty"`
	Judged         bool         `json:"judged"`
	JudgeModel     string       `json:"judge_model,omitempty"`
	Score          float32      `json:"score"`
	JudgeRationale string       `json:"judge_rationale,omitempty"`
	JudgeError     string       `json:"judge_error,omitempty"`
	Failed         bool         `json:"failed"`
	Error          string       `json:"error,omitempty"`
	Roles          []roleOut    `json:"roles"`
}

func dialogueOf(r *rolloutText) dialogueOut {
	d := dialogueOut{RolloutID: r.RolloutID, GroupID: r.GroupID, PromptID: r.PromptID, Index: r.Index, Env: r.Env, Category: r.Category,
		Task: r.Task, PersonaPairID: r.PersonaPairID, Personas: personasOut(r.Personas), PolicyVersion: r.PolicyVersion,
		Turns: []turnOut{}, Agreed: r.Agreed, Rounds: r.Rounds, Final: r.Final, Outcome: r.Outcome, Judged: r.Judged,
		JudgeModel: r.JudgeModel, Score: r.Score, JudgeRationale: r.JudgeRationale, JudgeError: r.JudgeError,
		Failed: r.Failed, Error: r.Error, Roles: rolesOut(r.Roles)}
	for _, t := range r.Turns {
		p := ""
		for _, x := range r.Personas {
			if x.Role == t.Agent {
				p = x.Name
				if p == "" {
					p = x.Text
				}
			}
		}
		d.Turns = append(d.Turns, turnOut{t.Agent, p, t.Text, t.Tokens, t.FinishReason, t.Agree, t.WeightVersion})
	}
	return d
}

// group is /api/run/group: one group's members, side by side.
func (s *Server) group(r *http.Request) (any, error) {
	_, step, path, err := s.stepFile(r)
	if err != nil {
		return nil, err
	}
	id := r.URL.Query().Get("group")
	members := []dialogueOut{}
	err = dataset.StreamRows(path, func(row rolloutText) error {
		if row.GroupID == id {
			members = append(members, dialogueOf(&row))
		}
		return nil
	})
	if err != nil {
		return nil, &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("step %d's rollouts file cannot be read, skipped: %v", step, err)}
	}
	if len(members) == 0 {
		return nil, notFound("group %q is not in step %d (%s)", id, step, path)
	}
	slices.SortFunc(members, func(a, b dialogueOut) int { return int(a.Index - b.Index) })
	return map[string]any{"step": step, "group_id": id, "members": members}, nil
}

// seqOut is one training sequence with its tokens: ids, the loss mask,
// the sampling logprobs and, with a tokenizer, each token's text.
type seqOut struct {
	Role      string    `json:"role"`
	Kind      string    `json:"kind"`
	Source    string    `json:"source"`
	Reward    *float32  `json:"reward,omitempty"`
	Advantage *float32  `json:"advantage,omitempty"`
	IDs       []int32   `json:"ids"`
	Mask      []int8    `json:"mask"`
	Logprobs  []float32 `json:"logprobs"`
	Versions  []int32   `json:"versions,omitempty"`
	Text      []string  `json:"text,omitempty"`
}

// batchSeq is the part of a batch row the dialogue page reads.
type batchSeq struct {
	RolloutID         string    `parquet:"rollout_id"`
	Role              string    `parquet:"role"`
	Kind              string    `parquet:"kind"`
	InputIDs          []int32   `parquet:"input_ids,list"`
	LossMask          []int8    `parquet:"loss_mask,list"`
	InferenceLogprobs []float32 `parquet:"inference_logprobs,list"`
	Reward            float32   `parquet:"reward"`
	Advantage         float32   `parquet:"advantage"`
	TokenVersions     []int32   `parquet:"token_versions,list,optional"`
}

// rolloutSeqs is a rollout's own token sequences.
type rolloutSeqs struct {
	RolloutID string             `parquet:"rollout_id"`
	Sequences []dataset.Sequence `parquet:"sequences,list"`
}

// auditOut is a rollout's score by the audit judge (judge.audit), beside
// the training judge's.
type auditOut struct {
	Judge string `json:"judge"`
	train.AuditItem
}

// audited is the audit judge's verdict on a run's rollout, from
// audit/step-N.json; nil when the step or the rollout was not audited, or
// the record cannot be read (the page shows no audit, as for a run without
// one).
func (src *source) audited(step int, rolloutID string) *auditOut {
	if src.Kind != KindRun {
		return nil
	}
	b, err := os.ReadFile(dataset.RunDir(src.Dir).AuditPath(step))
	if err != nil {
		return nil
	}
	var rec train.AuditRecord
	if json.Unmarshal(b, &rec) != nil {
		return nil
	}
	for _, it := range rec.Items {
		if it.RolloutID == rolloutID {
			return &auditOut{Judge: rec.Judge, AuditItem: it}
		}
	}
	return nil
}

// Sources of a dialogue's sequences.
const (
	SourceBatch   = "batch"
	SourceRollout = "rollout"
)

// dialogue is /api/run/dialogue: one rollout with its token sequences,
// from the step's batch when the rollout was trained (the loss mask the
// trainer read), else from the rollout's own record.
func (s *Server) dialogue(r *http.Request) (any, error) {
	src, step, path, err := s.stepFile(r)
	if err != nil {
		return nil, err
	}
	id := r.URL.Query().Get("rollout")
	found, err := readRollout[rolloutText](path, id)
	if err != nil {
		return nil, &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("step %d's rollouts file cannot be read, skipped: %v", step, err)}
	}
	if len(found) == 0 {
		return nil, notFound("rollout %q is not in step %d (%s)", id, step, path)
	}
	out := map[string]any{"step": step, "dialogue": dialogueOf(&found[0])}
	if a := src.audited(step, id); a != nil {
		out["audit"] = a
	}
	var seqs []seqOut
	note := ""
	if bp := src.batchPath(step); bp != "" {
		if err := s.checkParquet(bp); err != nil {
			note = fmt.Sprintf("the step's batch cannot be read (%v): the rollout's own token record is shown", err)
		} else if rows, err := readRollout[batchSeq](bp, id); err != nil {
			note = fmt.Sprintf("the step's batch %s cannot be read (%v): the rollout's own token record is shown", bp, err)
		} else {
			for _, b := range rows {
				rw, adv := b.Reward, b.Advantage
				seqs = append(seqs, seqOut{Role: b.Role, Kind: b.Kind, Source: SourceBatch, Reward: &rw, Advantage: &adv,
					IDs: b.InputIDs, Mask: b.LossMask, Logprobs: b.InferenceLogprobs, Versions: b.TokenVersions})
			}
		}
		if note == "" && len(seqs) == 0 {
			note = "this rollout is not in the step's batch (its group was dropped, e.g. for zero reward variance, or its role is not trained): the rollout's own token record is shown"
		}
	} else if src.Kind == KindRun {
		note = "the step's batch is not written yet (no .ready marker): the rollout's own token record is shown"
	}
	if len(seqs) == 0 {
		rows, err := readRollout[rolloutSeqs](path, id)
		if err != nil {
			return nil, &apiError{http.StatusUnprocessableEntity, fmt.Sprintf("step %d's rollouts file cannot be read, skipped: %v", step, err)}
		}
		for _, row := range rows {
			for _, q := range row.Sequences {
				seqs = append(seqs, seqOut{Role: q.Role, Kind: q.Kind, Source: SourceRollout, IDs: q.InputIDs, Mask: q.LossMask, Logprobs: q.Logprobs, Versions: q.Versions})
			}
		}
	}
	tok := s.tokenizer(src, src.config())
	for i := range seqs {
		if tok != nil {
			seqs[i].Text = tok.Pieces(seqs[i].IDs)
		}
	}
	if seqs == nil {
		seqs = []seqOut{}
	}
	out["sequences"] = seqs
	out["note"] = note
	if tok != nil {
		out["tokenizer"] = filepath.Base(filepath.Dir(tok.Path)) + "/" + filepath.Base(tok.Path)
	} else {
		out["tokenizer"] = ""
	}
	return out, nil
}
