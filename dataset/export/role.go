package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/dataset"
)

// Condition is an export filter on a role's outcome
// (dataset.RoleOutcome.Outcome, a JSON object): a number compared with a
// value, or a boolean ("share_given<=0.01", "turn1_refusal==true").
type Condition struct {
	Key, Op string
	Value   float64
	// Bool is set for a boolean comparison (== or != only).
	Bool *bool
}

var conditionRE = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(<=|>=|==|!=|<|>)\s*(\S+)\s*$`)

// ParseCondition reads KEY OP VALUE, OP one of < <= > >= == !=.
func ParseCondition(s string) (Condition, error) {
	m := conditionRE.FindStringSubmatch(s)
	if m == nil {
		return Condition{}, fmt.Errorf("export.ParseCondition: %q is not KEY OP VALUE (OP: < <= > >= == !=)", s)
	}
	c := Condition{Key: m[1], Op: m[2]}
	if b, err := strconv.ParseBool(m[3]); err == nil && (m[3] == "true" || m[3] == "false") {
		if c.Op != "==" && c.Op != "!=" {
			return Condition{}, fmt.Errorf("export.ParseCondition: %q compares a boolean with %s", s, c.Op)
		}
		c.Bool = &b
		return c, nil
	}
	v, err := strconv.ParseFloat(m[3], 64)
	if err != nil || math.IsNaN(v) {
		return Condition{}, fmt.Errorf("export.ParseCondition: %q: %q is not a number or a boolean", s, m[3])
	}
	c.Value = v
	return c, nil
}

// String writes the condition back.
func (c Condition) String() string {
	if c.Bool != nil {
		return fmt.Sprintf("%s%s%t", c.Key, c.Op, *c.Bool)
	}
	return fmt.Sprintf("%s%s%g", c.Key, c.Op, c.Value)
}

// holds reports whether obj satisfies the condition; a missing key or a
// value of another type does not.
func (c Condition) holds(obj map[string]any) bool {
	v, ok := obj[c.Key]
	if !ok {
		return false
	}
	if c.Bool != nil {
		b, ok := v.(bool)
		return ok && (b == *c.Bool) == (c.Op == "==")
	}
	x, ok := v.(float64)
	if !ok {
		return false
	}
	switch c.Op {
	case "<":
		return x < c.Value
	case "<=":
		return x <= c.Value
	case ">":
		return x > c.Value
	case ">=":
		return x >= c.Value
	case "==":
		return x == c.Value
	default:
		return x != c.Value
	}
}

// roleViews is the part of a game's outcome that records each role's
// conversation as the role saw it (seed 001's endowment game does): its
// system prompt, the others' messages as user, its own turns as sampled,
// private <think> traces included.
type roleViews struct {
	Views map[string][]ChatMessage `json:"views"`
}

var thinkRE = regexp.MustCompile(`(?s)<think>.*?</think>\s*`)

// roleRecord applies the role filters of opts to s and, when it passes,
// returns its record as a chat of that role: the role's own view when the
// game recorded one, else the task, the role's turns as assistant and the
// others' as user. Private traces are kept only with opts.Traces. The
// reward is the role's.
func (s source) roleRecord(rec Record, opts Options) (Record, bool) {
	var ro *dataset.RoleOutcome
	for i := range s.Roles {
		if s.Roles[i].Role == opts.Role {
			ro = &s.Roles[i]
		}
	}
	if ro == nil {
		return rec, false
	}
	if len(opts.Models) > 0 {
		found := false
		for _, m := range opts.Models {
			found = found || m == ro.Model
		}
		if !found {
			return rec, false
		}
	}
	if len(opts.Where) > 0 {
		var obj map[string]any
		if json.Unmarshal([]byte(ro.Outcome), &obj) != nil {
			return rec, false
		}
		for _, c := range opts.Where {
			if !c.holds(obj) {
				return rec, false
			}
		}
	}
	rec.Reward, rec.Score, rec.Advantage = nil, nil, nil
	if ro.Scored {
		rec.Reward, rec.Score, rec.Advantage = num(ro.Reward), num(ro.Score), num(ro.Advantage)
	}
	var v roleViews
	if json.Unmarshal([]byte(s.Outcome), &v) == nil && len(v.Views[opts.Role]) > 0 {
		rec.Messages = append([]ChatMessage(nil), v.Views[opts.Role]...)
	} else {
		var msgs []ChatMessage
		for _, sp := range s.SystemPrompts {
			if sp.Role == opts.Role {
				msgs = append(msgs, ChatMessage{Role: "system", Name: opt(sp.Role), Content: sp.Text})
			}
		}
		msgs = append(msgs, ChatMessage{Role: "user", Content: s.Task})
		for _, t := range s.Turns {
			if t.Agent == opts.Role {
				msgs = append(msgs, ChatMessage{Role: "assistant", Name: opt(t.Agent), Content: t.Text})
			} else {
				msgs = append(msgs, ChatMessage{Role: "user", Name: opt(t.Agent), Content: t.Text})
			}
		}
		rec.Messages = msgs
	}
	for i := range rec.Messages {
		if rec.Messages[i].Role == "assistant" && !opts.Traces {
			rec.Messages[i].Content = strings.TrimSpace(thinkRE.ReplaceAllString(rec.Messages[i].Content, ""))
		}
	}
	return rec, true
}

// roleCatalog gathers, over every rollout an export reads, the roles
// played and the fields of the exported role's outcomes, so that a role
// or a --where field that none holds (a typo: "holdr", "share_givn") is an
// error naming the known ones rather than an empty dataset.
type roleCatalog struct {
	roles  map[string]bool
	fields map[string]bool
}

// add records s's roles and, when opts filters on fields, the fields of
// its opts.Role outcome.
func (c *roleCatalog) add(s source, opts Options) {
	if c.roles == nil {
		c.roles, c.fields = map[string]bool{}, map[string]bool{}
	}
	for _, ro := range s.Roles {
		c.roles[ro.Role] = true
		if ro.Role != opts.Role || len(opts.Where) == 0 {
			continue
		}
		var obj map[string]any
		if json.Unmarshal([]byte(ro.Outcome), &obj) == nil {
			for k := range obj {
				c.fields[k] = true
			}
		}
	}
}

// check reports opts.Role when no rollout read has it, and each condition
// whose field no outcome of the role holds, naming the known ones.
func (c *roleCatalog) check(opts Options, read int64) error {
	if !c.roles[opts.Role] {
		return fmt.Errorf("role %q: none of the %d rollouts read has it (their roles: %s)", opts.Role, read, knownNames(c.roles))
	}
	var errs []error
	for _, cond := range opts.Where {
		if !c.fields[cond.Key] {
			errs = append(errs, fmt.Errorf("condition %s: no %s outcome has the field %q (their fields: %s)", cond, opts.Role, cond.Key, knownNames(c.fields)))
		}
	}
	return errors.Join(errs...)
}

// knownNames lists a set's names sorted, or "none".
func knownNames(set map[string]bool) string {
	if len(set) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(set)), ", ")
}
