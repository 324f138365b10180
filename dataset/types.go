// Package dataset holds parley's data formats: curricula (dilemma prompts and
// persona pairs), the per-rollout record, the training batch contract (schema
// version 1), their parquet and JSONL I/O, and dataset export.
package dataset

// Curriculum categories: the three dilemma categories of seed 000 (mixed
// 30/40/30 by default) and the open-ended questions of the single-agent
// baseline.
const (
	CategoryProfessional  = "professional"  // professional & high-stakes
	CategoryInterpersonal = "interpersonal" // interpersonal & relational
	CategoryMicroEthics   = "micro_ethics"  // micro-ethics & social etiquette
	CategoryOpenEnded     = "open_ended"    // single-agent open-ended questions
)

// Categories lists every valid category in a fixed order.
var Categories = []string{CategoryProfessional, CategoryInterpersonal, CategoryMicroEthics, CategoryOpenEnded}

// Sequence kinds: a dialogue sequence holds one agent's turns in a
// negotiation; a final sequence holds the final completion (or the
// single-agent answer). Mask modes select sequences by kind.
const (
	KindDialogue = "dialogue"
	KindFinal    = "final"
)

// PersonaPair is two opposed personas, one for each negotiating agent.
type PersonaPair struct {
	ID string `json:"id" parquet:"id"`
	A  string `json:"a" parquet:"a"`
	B  string `json:"b" parquet:"b"`
}

// Prompt is one curriculum row: a task, and for the deliberation game the
// persona pair the two agents argue from.
type Prompt struct {
	ID            string `json:"id" parquet:"id"`
	Category      string `json:"category" parquet:"category"`
	Task          string `json:"task" parquet:"task"`
	PersonaPairID string `json:"persona_pair_id,omitempty" parquet:"persona_pair_id"`
	PersonaA      string `json:"persona_a,omitempty" parquet:"persona_a"`
	PersonaB      string `json:"persona_b,omitempty" parquet:"persona_b"`
	Split         string `json:"split,omitempty" parquet:"split"`
}

// Turn is one visible utterance of a rollout.
type Turn struct {
	Agent        string `json:"agent" parquet:"agent"` // A, B, single, final, …
	Text         string `json:"text" parquet:"text"`
	Tokens       int32  `json:"tokens" parquet:"tokens"`
	FinishReason string `json:"finish_reason" parquet:"finish_reason"`
	Agree        bool   `json:"agree" parquet:"agree"`
}

// Sequence is one training sequence of one agent, token in, token out: the
// rendered prompt and every continuation exactly as the server tokenized or
// sampled it. LossMask is 1 on sampled tokens; Logprobs holds their sampling
// logprobs (0 where the mask is 0).
type Sequence struct {
	Role     string    `json:"role" parquet:"role"`
	Kind     string    `json:"kind" parquet:"kind"`
	InputIDs []int32   `json:"input_ids" parquet:"input_ids,list"`
	LossMask []int8    `json:"loss_mask" parquet:"loss_mask,list"`
	Logprobs []float32 `json:"logprobs" parquet:"logprobs,list"`
}

// Rollout is the human-readable and token-level record of one rollout: one
// row of rollouts/step-N.parquet. Judge and advantage fields are filled by
// scoring; a failed rollout keeps its error and is never dropped.
type Rollout struct {
	RunID         string  `json:"run_id" parquet:"run_id"`
	Step          int32   `json:"step" parquet:"step"`
	PolicyVersion int32   `json:"policy_version" parquet:"policy_version"`
	Env           string  `json:"env" parquet:"env"`
	PromptID      string  `json:"prompt_id" parquet:"prompt_id"`
	GroupID       string  `json:"group_id" parquet:"group_id"`
	RolloutID     string  `json:"rollout_id" parquet:"rollout_id"`
	Index         int32   `json:"index" parquet:"index"`
	Category      string  `json:"category" parquet:"category"`
	Task          string  `json:"task" parquet:"task"`
	PersonaA      string  `json:"persona_a" parquet:"persona_a"`
	PersonaB      string  `json:"persona_b" parquet:"persona_b"`
	Seed          int64   `json:"seed" parquet:"seed"`
	Temperature   float32 `json:"temperature" parquet:"temperature"`

	Turns         []Turn     `json:"turns" parquet:"turns,list"`
	Agreed        bool       `json:"agreed" parquet:"agreed"`
	Rounds        int32      `json:"rounds" parquet:"rounds"`
	Final         string     `json:"final" parquet:"final"`
	Sequences     []Sequence `json:"sequences" parquet:"sequences,list"`
	PrefixBreaks  int32      `json:"prefix_breaks" parquet:"prefix_breaks"`
	PromptTokens  int32      `json:"prompt_tokens" parquet:"prompt_tokens"`
	SampledTokens int32      `json:"sampled_tokens" parquet:"sampled_tokens"`
	Requests      int32      `json:"requests" parquet:"requests"`

	Failed bool   `json:"failed" parquet:"failed"`
	Error  string `json:"error" parquet:"error"`

	Judged         bool    `json:"judged" parquet:"judged"`
	JudgeModel     string  `json:"judge_model" parquet:"judge_model"`
	Score          float32 `json:"score" parquet:"score"`
	JudgeRationale string  `json:"judge_rationale" parquet:"judge_rationale"`
	JudgeError     string  `json:"judge_error" parquet:"judge_error"`
	Reward         float32 `json:"reward" parquet:"reward"`
	Advantage      float32 `json:"advantage" parquet:"advantage"`

	StartedUnixMS int64 `json:"started_unix_ms" parquet:"started_unix_ms"`
	RolloutMS     int64 `json:"rollout_ms" parquet:"rollout_ms"`
	JudgeMS       int64 `json:"judge_ms" parquet:"judge_ms"`
}

// SchemaVersion is the version of the batch contract written in every batch
// file's metadata and .ready marker.
const SchemaVersion = 1

// BatchRow is one training sequence of a step's batch: one row of
// batches/step-N.parquet, the contract between parley and the trainer.
type BatchRow struct {
	RunID             string    `json:"run_id" parquet:"run_id"`
	SampleID          string    `json:"sample_id" parquet:"sample_id"`
	GroupID           string    `json:"group_id" parquet:"group_id"`
	RolloutID         string    `json:"rollout_id" parquet:"rollout_id"`
	PromptID          string    `json:"prompt_id" parquet:"prompt_id"`
	Step              int32     `json:"step" parquet:"step"`
	PolicyVersion     int32     `json:"policy_version" parquet:"policy_version"`
	Env               string    `json:"env" parquet:"env"`
	Role              string    `json:"role" parquet:"role"`
	InputIDs          []int32   `json:"input_ids" parquet:"input_ids,list"`
	LossMask          []int8    `json:"loss_mask" parquet:"loss_mask,list"`
	InferenceLogprobs []float32 `json:"inference_logprobs" parquet:"inference_logprobs,list"`
	Advantages        []float32 `json:"advantages" parquet:"advantages,list"`
	Reward            float32   `json:"reward" parquet:"reward"`
	Temperature       float32   `json:"temperature" parquet:"temperature"`
}

// Ready is the .ready marker written beside a batch once it is complete.
type Ready struct {
	SchemaVersion int    `json:"schema_version"`
	Step          int    `json:"step"`
	PolicyVersion int    `json:"policy_version"`
	Rows          int    `json:"rows"`
	Tokens        int64  `json:"tokens"`
	SHA256        string `json:"sha256"`
}
