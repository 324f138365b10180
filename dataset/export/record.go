package export

import (
	"bytes"
	"math"
	"strconv"
)

// Record is one exported rollout: a JSONL line, or a row of the HF parquet
// shards (messages as list<struct<role,name,content>>, personas as
// struct<a,b,name_a,name_b>). Every record has every key; a value that
// does not apply is null, never a zero that could be read as data: an
// unjudged rollout (its judging failed, or it was never scored) has null
// score, reward and advantage.
//
// Record is the one declaration of the export's schema: its fields, in
// order, are the JSONL keys (json tags) and the parquet columns (parquet
// tags, each the same name), and the Hugging Face features of the dataset
// card are derived from its parquet schema (features). A test fails when
// the JSON keys and the parquet columns disagree, or when the card's
// schema table misses a column.
type Record struct {
	ID             string        `json:"id" parquet:"id"`
	RunID          string        `json:"run_id" parquet:"run_id"`
	Step           int32         `json:"step" parquet:"step"`
	PolicyVersion  int32         `json:"policy_version" parquet:"policy_version"`
	Env            string        `json:"env" parquet:"env"`
	PromptID       string        `json:"prompt_id" parquet:"prompt_id"`
	GroupID        string        `json:"group_id" parquet:"group_id"`
	Category       string        `json:"category" parquet:"category"`
	Split          *string       `json:"split" parquet:"split,optional"`
	Task           string        `json:"task" parquet:"task"`
	PersonaPairID  *string       `json:"persona_pair_id" parquet:"persona_pair_id,optional"`
	Personas       Personas      `json:"personas" parquet:"personas"`
	Messages       []ChatMessage `json:"messages" parquet:"messages,list"`
	Final          string        `json:"final" parquet:"final"`
	Agreed         bool          `json:"agreed" parquet:"agreed"`
	Rounds         int32         `json:"rounds" parquet:"rounds"`
	Judged         bool          `json:"judged" parquet:"judged"`
	JudgeModel     *string       `json:"judge_model" parquet:"judge_model,optional"`
	JudgeRationale *string       `json:"judge_rationale" parquet:"judge_rationale,optional"`
	JudgeError     *string       `json:"judge_error" parquet:"judge_error,optional"`
	Score          *Float        `json:"score" parquet:"score,optional"`
	ScoreScale     *string       `json:"score_scale" parquet:"score_scale,optional"`
	Reward         *Float        `json:"reward" parquet:"reward,optional"`
	Advantage      *Float        `json:"advantage" parquet:"advantage,optional"`
	Failed         bool          `json:"failed" parquet:"failed"`
	Error          *string       `json:"error" parquet:"error,optional"`
}

// ChatMessage is one message of an exported rollout. Every message has the
// same keys (name is null when the message has none), so that readers
// infer one struct for the messages column.
//
// Messages scheme: first the system prompt of each role that had one, in
// the order the roles first spoke, as {role: "system", name: the role,
// content: its system prompt}; then the task, {role: "user", name: null,
// content: task}; then each turn of the rollout in order as {role:
// "assistant", name: the turn's agent ("A" or "B" in the deliberation game,
// "single" for the single-agent baseline, "final" for the final completion,
// or the game's role names), content: the turn's text}. The final
// completion is also in the record's "final" field.
type ChatMessage struct {
	Role    string  `json:"role" parquet:"role"`
	Name    *string `json:"name" parquet:"name,optional"`
	Content string  `json:"content" parquet:"content"`
}

// Personas are the personas of roles A and B of an exported rollout and
// their short names; null when the rollout has none (single-agent).
type Personas struct {
	A     *string `json:"a" parquet:"a,optional"`
	B     *string `json:"b" parquet:"b,optional"`
	NameA *string `json:"name_a" parquet:"name_a,optional"`
	NameB *string `json:"name_b" parquet:"name_b,optional"`
}

// Float is a float32 that JSON always writes with a fraction or an
// exponent ("3.0", never "3"), so that every reader infers a float column
// from every file, also one whose values happen to be integral (CA scores);
// a value that is not finite is written as null.
type Float float32

// MarshalJSON writes f as a JSON number with a fraction or an exponent.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	b := strconv.AppendFloat(nil, v, 'g', -1, 32)
	if !bytes.ContainsAny(b, ".e") {
		b = append(b, ".0"...)
	}
	return b, nil
}

// opt is s as a nullable value: nil for "".
func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// num is v as a nullable value.
func num(v float32) *Float {
	f := Float(v)
	return &f
}
