// Package dataset holds parley's data formats: curricula (dilemma prompts and
// persona pairs, or a game's own scenarios), the per-rollout record with its
// per-role outcomes, the training batch contract (schema version 2; version
// 1 files are still read), and their parquet and JSONL I/O. Package
// dataset/export exports rollouts as datasets.
package dataset

// Curriculum categories: the three dilemma categories of seed 000 (mixed
// 30/40/30 by default) and the open-ended questions of the single-agent
// baseline. Games add their own (rollout.Curriculum.Categories,
// LoadOptions.Categories).
const (
	CategoryProfessional  = "professional"  // professional & high-stakes
	CategoryInterpersonal = "interpersonal" // interpersonal & relational
	CategoryMicroEthics   = "micro_ethics"  // micro-ethics & social etiquette
	CategoryOpenEnded     = "open_ended"    // single-agent open-ended questions
)

// Categories lists every category valid for any game, in a fixed order.
var Categories = []string{CategoryProfessional, CategoryInterpersonal, CategoryMicroEthics, CategoryOpenEnded}

// DilemmaCategories are the three dilemma categories of seed 000.
var DilemmaCategories = []string{CategoryProfessional, CategoryInterpersonal, CategoryMicroEthics}

// Sequence kinds: a dialogue sequence holds one agent's turns in a
// negotiation; a final sequence holds the final completion (or the
// single-agent answer). Mask modes select sequences by kind.
const (
	KindDialogue = "dialogue"
	KindFinal    = "final"
)

// PersonaPair is two opposed personas, one for each negotiating agent,
// with optional short names ("speed", "quality") for tables and exports.
type PersonaPair struct {
	ID    string `json:"id" parquet:"id"`
	A     string `json:"a" parquet:"a"`
	B     string `json:"b" parquet:"b"`
	NameA string `json:"name_a,omitempty" parquet:"name_a"`
	NameB string `json:"name_b,omitempty" parquet:"name_b"`
}

// Personas returns the pair as the personas of roles A and B, named.
func (p PersonaPair) Personas() []Persona {
	return []Persona{{Role: "A", Text: p.A, Name: p.NameA}, {Role: "B", Text: p.B, Name: p.NameB}}
}

// Persona is the persona one role argues from.
type Persona struct {
	// Role is the game role ("A", "B", a party's name, …).
	Role string `json:"role" parquet:"role"`
	// Text is the persona as the agent is told it.
	Text string `json:"text" parquet:"text"`
	// Name is a short name of the persona ("speed"), "" when it has none.
	Name string `json:"name,omitempty" parquet:"name"`
}

// Prompt is one curriculum row: a task, the personas its roles argue from
// (the deliberation game's persona pair is roles A and B), and for games
// whose rows are structured, the game's own scenario as JSON. In files
// (JSONL and parquet) a row is flat: roles A and B are the columns
// persona_a and persona_b, other roles go to a personas list (see
// promptRecord).
type Prompt struct {
	ID            string
	Category      string
	Task          string
	PersonaPairID string
	Personas      []Persona
	Split         string
	// Scenario is the game's own row (seed 001's endowment setting, seed
	// 002's parties and score tables) as a JSON object; "" for text rows.
	Scenario string
}

// Persona returns the persona of role, or "".
func (p Prompt) Persona(role string) string { return PersonaOf(p.Personas, role) }

// Default curriculum splits: a row without a split is a training row; rows
// of SplitEval are held out for evaluation and never trained on.
const (
	SplitTrain = "train"
	SplitEval  = "eval"
)

// PersonaOf returns the persona of role in ps, or "".
func PersonaOf(ps []Persona, role string) string {
	for _, x := range ps {
		if x.Role == role {
			return x.Text
		}
	}
	return ""
}

// PersonaPairOf returns the personas of roles A and B (the deliberation
// game's pair).
func PersonaPairOf(a, b string) []Persona {
	return []Persona{{Role: "A", Text: a}, {Role: "B", Text: b}}
}

// SystemPrompt is the system prompt one role of a rollout was given, as
// its first message.
type SystemPrompt struct {
	Role string `json:"role" parquet:"role"`
	Text string `json:"text" parquet:"text"`
}

// Turn is one visible utterance of a rollout.
type Turn struct {
	Agent        string `json:"agent" parquet:"agent"` // A, B, single, final, …
	Text         string `json:"text" parquet:"text"`
	Tokens       int32  `json:"tokens" parquet:"tokens"`
	FinishReason string `json:"finish_reason" parquet:"finish_reason"`
	Agree        bool   `json:"agree" parquet:"agree"`
	// WeightVersion is the policy version whose weights sampled the turn
	// (0: the base model; absent from files written before it was
	// recorded, read as 0).
	WeightVersion int32 `json:"weight_version" parquet:"weight_version,optional"`
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
	// Versions is, per token, the policy version whose weights sampled it
	// (its turn's; mask-0 tokens carry the version of the turn they lead
	// to). Empty in files written before it was recorded.
	Versions []int32 `json:"versions,omitempty" parquet:"versions,list,optional"`
}

// PolicyKind is what plays a role (config roles.<role>.policy, a
// tournament agent's kind, a rollout role's policy).
type PolicyKind string

// Policy kinds of a role: what plays it.
const (
	// PolicyTrained is the policy being trained (the base model before the
	// first adapter, then the newest adapter); in a tournament, a parley
	// run's trained policy (its newest checkpoint).
	PolicyTrained PolicyKind = "trained"
	// PolicyBase is the frozen base model on the policy endpoints.
	PolicyBase PolicyKind = "base"
	// PolicyAdapter is a fixed LoRA adapter on the policy endpoints.
	PolicyAdapter PolicyKind = "adapter"
	// PolicyEndpoint is another vLLM server (token level, not trained).
	PolicyEndpoint PolicyKind = "endpoint"
	// PolicyExternal is an external OpenAI-compatible chat model (text
	// level: no token sequences are recorded).
	PolicyExternal PolicyKind = "external"
	// PolicyScripted is a scripted agent of the game itself (a simulator's
	// party, a fixed opponent): no model at all.
	PolicyScripted PolicyKind = "scripted"
	// dataset.PolicyPool is a pool of frozen opponents (any of the kinds above but
	// trained), one drawn per group so that a group holds one opponent and
	// its advantages compare like with like.
	PolicyPool PolicyKind = "pool"
	// PolicyLeague is a league: the frozen opponents of a pool plus the
	// run's own past adapters (a snapshot every K steps), one drawn per
	// group by a stated rule and rated as they play (package league).
	PolicyLeague PolicyKind = "league"
)

// RoleOutcome is what one role of a rollout did and earned.
type RoleOutcome struct {
	// Role is the game role (A, B, final, holder, requester, a party).
	Role string `json:"role" parquet:"role"`
	// Policy is what played the role (PolicyTrained, PolicyBase, …).
	Policy PolicyKind `json:"policy" parquet:"policy"`
	// Model is the served model, adapter or external model name.
	Model string `json:"model" parquet:"model"`
	// Endpoint is the base URL when it is not the policy's endpoints.
	Endpoint string `json:"endpoint,omitempty" parquet:"endpoint"`
	// Trained reports that the role's sequences go into training batches.
	Trained bool `json:"trained" parquet:"trained"`
	// Scored reports that the role got a score (its judge or scorer
	// answered); Score, Reward and Advantage are meaningful only then.
	Scored    bool    `json:"scored" parquet:"scored"`
	Score     float32 `json:"score" parquet:"score"`
	Reward    float32 `json:"reward" parquet:"reward"`
	Advantage float32 `json:"advantage" parquet:"advantage"`
	// Outcome is the game's outcome for the role as JSON (a ledger, a vote,
	// a utility), "" when the game records none.
	Outcome string `json:"outcome,omitempty" parquet:"outcome"`
	// Member is the league member that played the role (a league role:
	// "pool[0]", "snapshot-000004"), "" otherwise; MemberVersion is that
	// snapshot's policy version (0 for the base model and frozen members).
	// Files written before leagues read as "" and 0.
	Member        string `json:"member,omitempty" parquet:"member"`
	MemberVersion int32  `json:"member_version,omitempty" parquet:"member_version"`
}

// Rollout is the human-readable and token-level record of one rollout: one
// row of rollouts/step-N.parquet (schema version 2). Judge, reward and
// advantage fields are filled by scoring, per role in Roles; a failed
// rollout keeps its error and is never dropped.
type Rollout struct {
	RunID         string `json:"run_id" parquet:"run_id"`
	Step          int32  `json:"step" parquet:"step"`
	PolicyVersion int32  `json:"policy_version" parquet:"policy_version"`
	Env           string `json:"env" parquet:"env"`
	PromptID      string `json:"prompt_id" parquet:"prompt_id"`
	GroupID       string `json:"group_id" parquet:"group_id"`
	RolloutID     string `json:"rollout_id" parquet:"rollout_id"`
	Index         int32  `json:"index" parquet:"index"`
	Category      string `json:"category" parquet:"category"`
	Split         string `json:"split" parquet:"split"`
	Task          string `json:"task" parquet:"task"`
	// PersonaPairID and Personas are the row's personas, by role.
	PersonaPairID string    `json:"persona_pair_id" parquet:"persona_pair_id"`
	Personas      []Persona `json:"personas" parquet:"personas,list"`
	// Scenario is the row's game scenario (JSON), "" for text rows.
	Scenario string `json:"scenario" parquet:"scenario"`
	// Seed seeds the rollout's sampling and the game's own draws. The
	// continuations of a series training group share it (they face the
	// same draws) and sample with rollout.SampleSeed(Seed, Index).
	Seed        int64   `json:"seed" parquet:"seed"`
	Temperature float32 `json:"temperature" parquet:"temperature"`
	// Series and GameIndex place the rollout in a series of games whose
	// state carries over (seed 002's repeated games); "" and 0 otherwise.
	Series    string `json:"series" parquet:"series"`
	GameIndex int32  `json:"game_index" parquet:"game_index"`

	// SystemPrompts are the system prompts of the roles that had one, in
	// the order the roles first spoke.
	SystemPrompts []SystemPrompt `json:"system_prompts" parquet:"system_prompts,list"`

	Turns  []Turn `json:"turns" parquet:"turns,list"`
	Agreed bool   `json:"agreed" parquet:"agreed"`
	Rounds int32  `json:"rounds" parquet:"rounds"`
	Final  string `json:"final" parquet:"final"`
	// Outcome is the game's outcome as JSON (a ledger, a deal and its
	// votes), "" when the game records none beyond the fields above.
	Outcome string `json:"outcome" parquet:"outcome"`
	// Roles holds, per role, what played it and what it earned.
	Roles         []RoleOutcome `json:"roles" parquet:"roles,list"`
	Sequences     []Sequence    `json:"sequences" parquet:"sequences,list"`
	PrefixBreaks  int32         `json:"prefix_breaks" parquet:"prefix_breaks"`
	PromptTokens  int32         `json:"prompt_tokens" parquet:"prompt_tokens"`
	SampledTokens int32         `json:"sampled_tokens" parquet:"sampled_tokens"`
	Requests      int32         `json:"requests" parquet:"requests"`

	Failed bool   `json:"failed" parquet:"failed"`
	Error  string `json:"error" parquet:"error"`

	// Judged, Score, JudgeModel and JudgeRationale are the judge's (or
	// scorer's) verdict on the rollout as a whole: the headline score (the
	// CA score of the final completion, the share transferred, …). The
	// per-role scores are in Roles.
	Judged         bool    `json:"judged" parquet:"judged"`
	JudgeModel     string  `json:"judge_model" parquet:"judge_model"`
	Score          float32 `json:"score" parquet:"score"`
	JudgeRationale string  `json:"judge_rationale" parquet:"judge_rationale"`
	JudgeError     string  `json:"judge_error" parquet:"judge_error"`

	StartedUnixMS int64 `json:"started_unix_ms" parquet:"started_unix_ms"`
	RolloutMS     int64 `json:"rollout_ms" parquet:"rollout_ms"`
	JudgeMS       int64 `json:"judge_ms" parquet:"judge_ms"`
}

// Role returns the outcome of role, or nil.
func (r *Rollout) Role(role string) *RoleOutcome {
	for i := range r.Roles {
		if r.Roles[i].Role == role {
			return &r.Roles[i]
		}
	}
	return nil
}

// Persona returns the persona of role, or "".
func (r *Rollout) Persona(role string) string { return PersonaOf(r.Personas, role) }

// SchemaVersion is the version of the batch and rollout contracts written
// in every file's metadata and .ready marker. Version 2 added per-role
// outcomes to rollouts and the kind and advantage columns to batches;
// readers accept MinSchemaVersion to SchemaVersion.
const SchemaVersion = 2

// MinSchemaVersion is the oldest version the readers accept.
const MinSchemaVersion = 1

// BatchRow is one training sequence of a step's batch: one row of
// batches/step-N.parquet, the contract between parley and the trainer.
type BatchRow struct {
	RunID         string `json:"run_id" parquet:"run_id"`
	SampleID      string `json:"sample_id" parquet:"sample_id"`
	GroupID       string `json:"group_id" parquet:"group_id"`
	RolloutID     string `json:"rollout_id" parquet:"rollout_id"`
	PromptID      string `json:"prompt_id" parquet:"prompt_id"`
	Step          int32  `json:"step" parquet:"step"`
	PolicyVersion int32  `json:"policy_version" parquet:"policy_version"`
	Env           string `json:"env" parquet:"env"`
	Role          string `json:"role" parquet:"role"`
	// Kind is the sequence's kind (KindDialogue, KindFinal); version 2.
	Kind              string    `json:"kind" parquet:"kind"`
	InputIDs          []int32   `json:"input_ids" parquet:"input_ids,list"`
	LossMask          []int8    `json:"loss_mask" parquet:"loss_mask,list"`
	InferenceLogprobs []float32 `json:"inference_logprobs" parquet:"inference_logprobs,list"`
	Advantages        []float32 `json:"advantages" parquet:"advantages,list"`
	Reward            float32   `json:"reward" parquet:"reward"`
	// Advantage is the role's scalar advantage, the value on every mask-1
	// token of Advantages; version 2.
	Advantage   float32 `json:"advantage" parquet:"advantage"`
	Temperature float32 `json:"temperature" parquet:"temperature"`
	// TokenVersions is, per token, the policy version whose weights
	// sampled it (Sequence.Versions); a trained token's staleness is
	// Step-1 minus its version. Empty in batches written before it was
	// recorded: every token then has PolicyVersion.
	TokenVersions []int32 `json:"token_versions,omitempty" parquet:"token_versions,list,optional"`
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
