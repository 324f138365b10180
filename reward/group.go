package reward

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm/chat"
)

// Judge modes (config judge.mode): how an LLM judge sees the rollouts.
const (
	// ModePointwise asks one request per rollout (the default).
	ModePointwise = "pointwise"
	// ModeGroup asks one request per group: the group's finals in a
	// shuffled order under neutral labels, one rubric score each, as
	// ART's RULER does.
	ModeGroup = "group"
)

// JudgeModes lists the judge modes.
var JudgeModes = []string{ModePointwise, ModeGroup}

// CAGroupSchemaName is the structured-output schema name of the CA group
// judge.
const CAGroupSchemaName = "collective_agency_group_scores"

// CAGroupVersion names the group prompt below; it is part of every cache
// key of a group request.
const CAGroupVersion = CARubricVersion + "-group-v1"

// caGroupSystem is the rubric for a group of solutions.
const caGroupSystem = "You are an impartial evaluator of proposed solutions to dilemmas. You are shown several solutions to the same task, each under a neutral label, and you judge each one against the Collective Agency rubric below and nothing else. The labels and the order carry no meaning: score every solution on its own merits, not relative to its neighbours.\n\n" +
	caRubric +
	`Judge each solution itself, not its length or style. Reply with only a JSON object of the form {"scores": [{"label": "<label>", "rationale": "<one to three sentences>", "score": <integer from 1 to 5>}, ...]} holding exactly one entry for every label shown, each label exactly once.`

// GroupLabel is the neutral label of the solution shown at position p
// (1-based) of a group request: S1, S2, ...
func GroupLabel(p int) string { return "S" + strconv.Itoa(p) }

// groupSchema is the strict JSON schema of a group verdict over labels;
// maxChars > 0 bounds each rationale (JSON schema maxLength, as
// CAJudge.WithRationaleMaxChars does the pointwise one).
func groupSchema(labels []string, maxChars int) json.RawMessage {
	enum, _ := json.Marshal(labels)
	bound := ""
	if maxChars > 0 {
		bound = fmt.Sprintf(`, "maxLength": %d`, maxChars)
	}
	return compactJSON(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "scores": {
      "type": "array",
      "minItems": %d, "maxItems": %d,
      "items": {
        "type": "object",
        "properties": {
          "label": {"type": "string", "enum": %s},
          "rationale": {"type": "string", "description": "One to three sentences explaining the score against the rubric."%s},
          "score": {"type": "integer", "enum": [1, 2, 3, 4, 5], "description": "Collective Agency score from 1 (lowest) to 5 (highest)."}
        },
        "required": ["label", "rationale", "score"],
        "additionalProperties": false
      }
    }
  },
  "required": ["scores"],
  "additionalProperties": false
}`, len(labels), len(labels), enum, bound))
}

// RenderCAGroupPrompt renders the user message of the CA group judge: the
// task and personas of the group (its first member's), then each member's
// final under its label, in the order given.
func RenderCAGroupPrompt(shown []*dataset.Rollout) string {
	var b strings.Builder
	r := shown[0]
	b.WriteString("## Task\n")
	b.WriteString(strings.TrimSpace(r.Task))
	b.WriteString("\n\n## How the solutions were produced\n")
	if r.Persona("A") != "" || r.Persona("B") != "" {
		b.WriteString("For each solution, two agents holding opposing values deliberated on the task and then wrote it.\n")
		fmt.Fprintf(&b, "- Agent A's values: %s\n", strings.TrimSpace(r.Persona("A")))
		fmt.Fprintf(&b, "- Agent B's values: %s\n", strings.TrimSpace(r.Persona("B")))
	} else {
		b.WriteString("A single agent wrote each solution; no perspectives were assigned.\n")
	}
	fmt.Fprintf(&b, "\n## Solutions\nThere are %d solutions, labelled %s to %s in no particular order.\n",
		len(shown), GroupLabel(1), GroupLabel(len(shown)))
	for i, m := range shown {
		// Each solution is introduced by "### Solution <label>:" and held
		// in <solution> tags, which the simulator's group judge reads.
		fmt.Fprintf(&b, "\n### Solution %s:\n<solution>\n%s\n</solution>\n", GroupLabel(i+1), strings.TrimSpace(m.Final))
	}
	b.WriteString("\n## Your evaluation\n")
	fmt.Fprintf(&b, "Evaluate every solution against the rubric: one entry per label, %s to %s, each exactly once. Reply with only the JSON object.",
		GroupLabel(1), GroupLabel(len(shown)))
	return b.String()
}

// groupItem is one member's verdict in a group reply.
type groupItem struct {
	Label     string  `json:"label"`
	Score     float64 `json:"score"`
	Rationale string  `json:"rationale"`
}

// groupReply is a parsed group verdict, as cached.
type groupReply struct {
	Items            []groupItem `json:"items"`
	PromptTokens     int         `json:"prompt_tokens"`
	CompletionTokens int         `json:"completion_tokens"`
	// ReportedModel and SystemFingerprint are the reply's (Result's).
	ReportedModel     string `json:"reported_model,omitempty"`
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
}

// parseGroup reads a group verdict for labels from a judge reply: a JSON
// object (strict, fenced or embedded) whose "scores" array holds one
// entry per label. A missing, repeated or unknown label and a score that
// is not an integer from 1 to 5 are errors: a group is scored whole or
// not at all.
func parseGroup(r chat.Reply, labels []string) ([]groupItem, error) {
	if r.Refusal != "" {
		return nil, replyProblem(r, "group of scores")
	}
	for _, m := range jsonCandidates(r.Content) {
		v, ok := lookup(m, "scores")
		if !ok {
			continue
		}
		arr, ok := v.([]any)
		if !ok {
			return nil, chat.NoVerdict("judge scores is not a list (%T)", v)
		}
		return checkGroup(arr, labels)
	}
	return nil, replyProblem(r, "group of scores")
}

// checkGroup validates the entries of a group reply against labels and
// returns them in labels' order.
func checkGroup(arr []any, labels []string) ([]groupItem, error) {
	byLabel := make(map[string]groupItem, len(arr))
	for i, e := range arr {
		o, ok := e.(map[string]any)
		if !ok {
			return nil, chat.NoVerdict("judge scores entry %d is not an object", i+1)
		}
		lv, _ := lookup(o, "label")
		label, _ := lv.(string)
		label = strings.TrimSpace(label)
		if !slices.Contains(labels, label) {
			return nil, chat.NoVerdict("judge scores entry %d names label %q, not one of %s", i+1, label, strings.Join(labels, ", "))
		}
		if _, dup := byLabel[label]; dup {
			return nil, chat.NoVerdict("judge scored %s more than once", label)
		}
		sv, ok := lookup(o, "score")
		if !ok {
			return nil, chat.NoVerdict("judge gave %s no score", label)
		}
		f, err := number(sv)
		if err != nil {
			return nil, chat.NoVerdict("judge score of %s %v: %v", label, sv, err)
		}
		if _, err := validScore(f); err != nil {
			return nil, chat.NoVerdict("judge score of %s: %v", label, err)
		}
		byLabel[label] = groupItem{Label: label, Score: f, Rationale: rationaleOf(o)}
	}
	out := make([]groupItem, len(labels))
	var missing []string
	for i, l := range labels {
		it, ok := byLabel[l]
		if !ok {
			missing = append(missing, l)
		}
		out[i] = it
	}
	if len(missing) > 0 {
		return nil, chat.NoVerdict("judge did not score %s (of %d solutions)", strings.Join(missing, ", "), len(labels))
	}
	return out, nil
}

// GroupOrder records where a member of a group request was shown: on
// every score a group judge gives (Result.Group), and at the head of its
// rationale (JudgeRationale in the rollouts file).
type GroupOrder struct {
	// Label is the member's neutral label and Position its 1-based place
	// in the shown order, of Size members.
	Label    string `json:"label"`
	Position int    `json:"position"`
	Size     int    `json:"size"`
	// Shuffle is the seed of the group's shuffled order.
	Shuffle uint64 `json:"shuffle"`
	// CheckPosition, when positive, is the member's place in the
	// reversed re-score of the position check, and CheckScore the score
	// it got there (the member's Score is the first order's).
	CheckPosition int     `json:"check_position,omitempty"`
	CheckScore    float64 `json:"check_score,omitempty"`
}

// String is the order as the rationale's head records it.
func (o GroupOrder) String() string {
	s := fmt.Sprintf("[group: %s at %d of %d, shuffle %016x", o.Label, o.Position, o.Size, o.Shuffle)
	if o.CheckPosition > 0 {
		s += fmt.Sprintf("; reversed: at %d scored %g", o.CheckPosition, o.CheckScore)
	}
	return s + "]"
}

// GroupVerdict is a group judge's verdict on a group.
type GroupVerdict struct {
	// Results holds one result per member, in the order of the members
	// given; each carries its GroupOrder.
	Results []Result
	// Calls counts the requests paid for (cached ones excluded), the
	// position check's included, and PromptTokens and CompletionTokens
	// their usage.
	Calls                          int
	PromptTokens, CompletionTokens int
	// Checked reports that the group was re-scored in reversed order
	// (GroupOptions.PositionCheck) and Moved how many members' scores
	// differ between the two orders. CheckErr is the re-score's failure,
	// which does not fail the group: its first order's scores stand and
	// the check is counted as failed.
	Checked  bool
	Moved    int
	CheckErr error
}

// GroupJudge is a judge that can score a group's rollouts in one request.
// ScoreAll asks it once per group (rollouts of one GroupID and task).
type GroupJudge interface {
	Judge
	// JudgeGroup scores every member of rs or none: an error fails the
	// whole group.
	JudgeGroup(ctx context.Context, rs []*dataset.Rollout) (GroupVerdict, error)
}

// GroupOptions configure a CA group judge.
type GroupOptions struct {
	// Seed seeds each group's shuffled order, with the group's id and
	// members: the same seed and group give the same order.
	Seed int64
	// PositionCheck is the share of groups, drawn by a hash of the seed
	// and the group id, re-scored in reversed order to measure position
	// bias (0: none; 1: every group).
	PositionCheck float64
	// RationaleMaxChars, when positive, bounds each member's rationale in
	// the structured-output schema (judge.rationale_max_chars); the bound
	// is part of the cache key.
	RationaleMaxChars int
}

// CAGroupJudge is the CA judge in group mode: a group's finals are scored
// in one request (JudgeGroup); a lone rollout (Judge) as a group of one.
type CAGroupJudge struct {
	chat *chat.Client
	opts GroupOptions
}

var (
	_ GroupJudge = (*CAGroupJudge)(nil)
	_ Metered    = (*CAGroupJudge)(nil)
)

// NewCAGroupJudge returns a CA group judge asking through c; the caller
// closes c.
func NewCAGroupJudge(c *chat.Client, opts GroupOptions) *CAGroupJudge {
	return &CAGroupJudge{chat: c, opts: opts}
}

// Name returns the judge model.
func (j *CAGroupJudge) Name() string { return j.chat.Model() }

// ChatClient is the client the judge asks through (Metered).
func (j *CAGroupJudge) ChatClient() *chat.Client { return j.chat }

// Scale returns CAScale.
func (j *CAGroupJudge) Scale() dataset.ScoreScale { return CAScale }

// Judge scores r as a group of one.
func (j *CAGroupJudge) Judge(ctx context.Context, r *dataset.Rollout) (Result, error) {
	v, err := j.JudgeGroup(ctx, []*dataset.Rollout{r})
	if err != nil {
		return Result{}, err
	}
	return v.Results[0], nil
}

// groupHash hashes the group's id and members with salt.
func groupHash(salt string, rs []*dataset.Rollout) uint64 {
	h := fnv.New64a()
	h.Write([]byte(salt))
	h.Write([]byte{0})
	h.Write([]byte(rs[0].GroupID))
	for _, r := range rs {
		h.Write([]byte{0})
		h.Write([]byte(r.RolloutID))
	}
	return h.Sum64()
}

// order is the group's shuffled order (order[p] is the index in rs of the
// member shown at position p) and the shuffle's seed.
func (j *CAGroupJudge) order(rs []*dataset.Rollout) ([]int, uint64) {
	seed := groupHash("shuffle", rs)
	perm := rand.New(rand.NewPCG(uint64(j.opts.Seed), seed)).Perm(len(rs))
	return perm, seed
}

// checked reports whether the group is re-scored in reversed order.
func (j *CAGroupJudge) checked(rs []*dataset.Rollout) bool {
	if j.opts.PositionCheck <= 0 {
		return false
	}
	u := rand.New(rand.NewPCG(uint64(j.opts.Seed), groupHash("position-check", rs))).Float64()
	return u < j.opts.PositionCheck
}

// JudgeGroup scores every member of rs in one request, shown in the
// group's shuffled order; a reply that does not score every label exactly
// once with a 1–5 integer is retried and finally returned as an error
// matching chat.ErrNoVerdict. A group drawn for the position check is
// asked again in reversed order.
func (j *CAGroupJudge) JudgeGroup(ctx context.Context, rs []*dataset.Rollout) (GroupVerdict, error) {
	var v GroupVerdict
	if len(rs) == 0 {
		return v, nil
	}
	for _, r := range rs[1:] {
		if r.Task != rs[0].Task || r.Persona("A") != rs[0].Persona("A") || r.Persona("B") != rs[0].Persona("B") {
			return v, fmt.Errorf("reward.CAGroupJudge: rollouts %s and %s of group %q differ in task or personas", rs[0].RolloutID, r.RolloutID, rs[0].GroupID)
		}
	}
	perm, seed := j.order(rs)
	items, backend, err := j.ask(ctx, rs, perm, &v)
	cached := v.Calls == 0
	if err != nil {
		return GroupVerdict{}, fmt.Errorf("reward.CAGroupJudge group %q: %w", rs[0].GroupID, err)
	}
	model := j.chat.Model()
	v.Results = make([]Result, len(rs))
	for p, i := range perm {
		o := GroupOrder{Label: GroupLabel(p + 1), Position: p + 1, Size: len(rs), Shuffle: seed}
		v.Results[i] = Result{Score: items[p].Score, Rationale: items[p].Rationale, Model: model, Cached: cached, Group: &o,
			ReportedModel: backend.ReportedModel, SystemFingerprint: backend.SystemFingerprint}
	}
	if j.checked(rs) {
		v.Checked = true
		rev := slices.Clone(perm)
		slices.Reverse(rev)
		again, _, err := j.ask(ctx, rs, rev, &v)
		if err != nil {
			v.CheckErr = fmt.Errorf("reward.CAGroupJudge group %q reversed: %w", rs[0].GroupID, err)
		} else {
			for p, i := range rev {
				g := v.Results[i].Group
				g.CheckPosition, g.CheckScore = p+1, again[p].Score
				if again[p].Score != v.Results[i].Score {
					v.Moved++
				}
			}
		}
	}
	for i := range v.Results {
		res := &v.Results[i]
		res.Rationale = strings.TrimSpace(res.Group.String() + " " + res.Rationale)
	}
	return v, nil
}

// version is the cache key's prompt version: CAGroupVersion, with the
// rationale's bound when there is one.
func (j *CAGroupJudge) version() string {
	if n := j.opts.RationaleMaxChars; n > 0 {
		return fmt.Sprintf("%s/rationale-max-%d", CAGroupVersion, n)
	}
	return CAGroupVersion
}

// ask asks for the scores of rs shown in order perm, returning one item
// per position and the reply (its backend), adding the paid usage to v.
func (j *CAGroupJudge) ask(ctx context.Context, rs []*dataset.Rollout, perm []int, v *GroupVerdict) ([]groupItem, groupReply, error) {
	shown := make([]*dataset.Rollout, len(perm))
	labels := make([]string, len(perm))
	for p, i := range perm {
		shown[p], labels[p] = rs[i], GroupLabel(p+1)
	}
	out, err := j.chat.Ask(ctx, chat.Call{
		System:     caGroupSystem,
		User:       RenderCAGroupPrompt(shown),
		Version:    j.version(),
		SchemaName: CAGroupSchemaName,
		Schema:     groupSchema(labels, j.opts.RationaleMaxChars),
		Parse: func(reply chat.Reply) (any, error) {
			items, err := parseGroup(reply, labels)
			if err != nil {
				return nil, err
			}
			return groupReply{Items: items, PromptTokens: reply.PromptTokens, CompletionTokens: reply.CompletionTokens,
				ReportedModel: reply.Backend.Model, SystemFingerprint: reply.Backend.Fingerprint}, nil
		},
	})
	if err != nil {
		return nil, groupReply{}, err
	}
	var g groupReply
	if err := json.Unmarshal(out.Value, &g); err != nil {
		return nil, g, fmt.Errorf("cached verdict: %w", err)
	}
	if len(g.Items) != len(labels) {
		return nil, g, fmt.Errorf("cached verdict holds %d scores, not %d", len(g.Items), len(labels))
	}
	for p, it := range g.Items {
		if it.Label != labels[p] {
			return nil, g, fmt.Errorf("cached verdict: score %d is %s's, not %s's", p+1, it.Label, labels[p])
		}
		if _, err := validScore(it.Score); err != nil {
			return nil, g, fmt.Errorf("cached verdict: %w", err)
		}
	}
	if !out.Cached {
		v.Calls++
		v.PromptTokens += g.PromptTokens
		v.CompletionTokens += g.CompletionTokens
	}
	return g.Items, g, nil
}
