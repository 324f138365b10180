package export

import (
	"reflect"

	"github.com/parleyhq/parley/dataset"
)

// source is the projection of dataset.Rollout that an export reads: the
// columns a record needs, so that the token sequences are never decoded
// (dataset.StreamRows reads only the columns of its type). Every field
// but the legacy ones is the Rollout field of the same name, type and
// column (a test checks it), and NewRecord fills it from a Rollout by
// name.
type source struct {
	RunID          string                 `parquet:"run_id"`
	RolloutID      string                 `parquet:"rollout_id"`
	Step           int32                  `parquet:"step"`
	PolicyVersion  int32                  `parquet:"policy_version"`
	Env            string                 `parquet:"env"`
	PromptID       string                 `parquet:"prompt_id"`
	GroupID        string                 `parquet:"group_id"`
	Category       string                 `parquet:"category"`
	Split          string                 `parquet:"split"`
	Task           string                 `parquet:"task"`
	PersonaPairID  string                 `parquet:"persona_pair_id"`
	Personas       []dataset.Persona      `parquet:"personas,list"`
	SystemPrompts  []dataset.SystemPrompt `parquet:"system_prompts,list"`
	Roles          []dataset.RoleOutcome  `parquet:"roles,list"`
	Turns          []dataset.Turn         `parquet:"turns,list"`
	Agreed         bool                   `parquet:"agreed"`
	Rounds         int32                  `parquet:"rounds"`
	Final          string                 `parquet:"final"`
	Failed         bool                   `parquet:"failed"`
	Error          string                 `parquet:"error"`
	Score          float32                `parquet:"score"`
	Judged         bool                   `parquet:"judged"`
	JudgeModel     string                 `parquet:"judge_model"`
	JudgeRationale string                 `parquet:"judge_rationale"`
	JudgeError     string                 `parquet:"judge_error"`
	Outcome        string                 `parquet:"outcome"`

	// Schema version 1 columns (legacyColumns), which Rollout no longer
	// has.
	PersonaA        string  `parquet:"persona_a"`
	PersonaB        string  `parquet:"persona_b"`
	LegacyReward    float32 `parquet:"reward"`
	LegacyAdvantage float32 `parquet:"advantage"`
}

// legacyColumns are the columns of source that schema version 1 files have
// and Rollout does not.
var legacyColumns = []string{"persona_a", "persona_b", "reward", "advantage"}

// NewRecord turns a rollout into its export record; scale labels its score
// (zero: unlabelled).
func NewRecord(r dataset.Rollout, scale dataset.ScoreScale) Record {
	return sourceOf(r).record(scale)
}

// sourceOf projects r onto source, field by field by name; the legacy
// fields stay zero.
func sourceOf(r dataset.Rollout) source {
	var s source
	sv, rv := reflect.ValueOf(&s).Elem(), reflect.ValueOf(r)
	for i := range sv.NumField() {
		if f := rv.FieldByName(sv.Type().Field(i).Name); f.IsValid() {
			sv.Field(i).Set(f)
		}
	}
	return s
}

// record is s's export record; scale labels its score.
func (s source) record(scale dataset.ScoreScale) Record {
	msgs := make([]ChatMessage, 0, len(s.SystemPrompts)+len(s.Turns)+1)
	for _, sp := range s.SystemPrompts {
		msgs = append(msgs, ChatMessage{Role: "system", Name: opt(sp.Role), Content: sp.Text})
	}
	msgs = append(msgs, ChatMessage{Role: "user", Content: s.Task})
	for _, t := range s.Turns {
		msgs = append(msgs, ChatMessage{Role: "assistant", Name: opt(t.Agent), Content: t.Text})
	}
	personas := Personas{A: opt(s.PersonaA), B: opt(s.PersonaB)}
	for _, p := range s.Personas {
		switch p.Role {
		case "A":
			personas.A, personas.NameA = opt(p.Text), opt(p.Name)
		case "B":
			personas.B, personas.NameB = opt(p.Text), opt(p.Name)
		}
	}
	rec := Record{
		ID: s.RolloutID, RunID: s.RunID, Step: s.Step, PolicyVersion: s.PolicyVersion, Env: s.Env,
		PromptID: s.PromptID, GroupID: s.GroupID, Category: s.Category, Split: opt(s.Split), Task: s.Task,
		PersonaPairID: opt(s.PersonaPairID), Personas: personas, Messages: msgs, Final: s.Final,
		Agreed: s.Agreed, Rounds: s.Rounds, Judged: s.Judged, JudgeError: opt(s.JudgeError),
		Failed: s.Failed, Error: opt(s.Error),
	}
	if s.Judged {
		rec.JudgeModel, rec.JudgeRationale, rec.Score = opt(s.JudgeModel), opt(s.JudgeRationale), num(s.Score)
		if !scale.IsZero() {
			rec.ScoreScale = opt(scale.Label())
		}
	}
	if len(s.Roles) == 0 { // schema version 1: one reward for the rollout
		if s.Judged {
			rec.Reward, rec.Advantage = num(s.LegacyReward), num(s.LegacyAdvantage)
		}
		return rec
	}
	for _, ro := range s.Roles {
		if ro.Trained && ro.Scored {
			rec.Reward, rec.Advantage = num(ro.Reward), num(ro.Advantage)
			break
		}
	}
	return rec
}
