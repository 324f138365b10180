// Package rollout plays games (environments) against the policy server and
// records each rollout token in, token out: the Game interface and the
// registry of games (each game lives in a subpackage: deliberation,
// single, …; package games registers the built-in ones), the per-agent
// trajectory recorder with its loss masks and per-role players, the worker
// pool that samples groups, and series of games whose state carries over.
package rollout

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
)

// Policy is what rollouts need of the inference client: chat-template
// tokenization and token-id completions.
type Policy interface {
	Tokenize(ctx context.Context, req llm.TokenizeRequest) (llm.TokenizeResult, error)
	Complete(ctx context.Context, req llm.CompletionRequest) ([]llm.Completion, error)
}

// Agents speaks for the agents of one rollout. A game calls Turn with an
// agent's own view of the conversation; the agent's reply is sampled from
// exactly the tokens the server rendered and recorded in that agent's
// trajectory.
type Agents interface {
	Turn(ctx context.Context, role string, msgs []llm.Message, opts TurnOptions) (Reply, error)
}

// TurnOptions shape one turn.
type TurnOptions struct {
	// Kind is dataset.KindDialogue or dataset.KindFinal: the kind of the
	// training sequence the turn's tokens go to.
	Kind string
	// MaxTokens bounds the reply (0: the recorder's default).
	MaxTokens int
}

// Reply is an agent's sampled turn.
type Reply struct {
	// Text is the visible reply: end-of-turn tokens and <think> blocks removed.
	Text string
	// Raw is the text as the server decoded it.
	Raw          string
	Tokens       int
	FinishReason string
	// WeightVersion is the policy version that sampled the reply
	// (RecorderOptions.WeightVersion).
	WeightVersion int32
}

// Chatter is what an external player needs: an OpenAI-compatible chat
// client (*chat.Client).
type Chatter interface {
	Chat(ctx context.Context, req chat.Request) (chat.Response, error)
	Model() string
}

// Player is what plays one role of a game: the trained policy, a frozen
// base or adapter on the policy's endpoints, another vLLM endpoint (token
// level), or an external OpenAI-compatible model (text level: no token
// sequence is recorded for it).
type Player struct {
	// Kind is dataset.PolicyTrained, PolicyBase, PolicyAdapter,
	// PolicyEndpoint or PolicyExternal.
	Kind dataset.PolicyKind
	// Model is the served model or adapter name asked. For the trained
	// policy it is set by the runner (the newest adapter).
	Model string
	// Endpoint labels the server when it is not the policy's.
	Endpoint string
	// Tokens is the token-level client; nil for an external player.
	Tokens Policy
	// Chat is the client of an external player.
	Chat Chatter
	// Trained marks the role's sequences for training batches.
	Trained bool
	// Bridge renders Tokens' bridges (HistoryTokens); nil: the recorder's
	// own for the trained policy's client, a new one for another client.
	Bridge *Bridge
	// Member and MemberVersion name the league member the player is
	// (dataset.RoleOutcome's), "" and 0 outside a league.
	Member        string
	MemberVersion int
}

// HistoryMode is how a Recorder carries an agent's conversation from one
// turn to the next (config rollout.history).
type HistoryMode string

const (
	// HistoryTokens keeps each agent's sampled tokens verbatim and appends,
	// for each new message, only the bridge tokens the server renders (see
	// Bridge): one training sequence per agent, whatever the template does
	// to earlier turns when it renders them again. The default.
	HistoryTokens HistoryMode = "tokens"
	// HistoryRerender renders the agent's whole view every turn and extends
	// its sequence when the rendering starts with it; otherwise (a prefix
	// break: Qwen3's template strips the think blocks of earlier turns) it
	// starts a new sequence.
	HistoryRerender HistoryMode = "rerender"
)

// ParseHistoryMode reads a history mode; "" is HistoryTokens.
func ParseHistoryMode(s string) (HistoryMode, error) {
	switch HistoryMode(s) {
	case "", HistoryTokens:
		return HistoryTokens, nil
	case HistoryRerender:
		return HistoryRerender, nil
	}
	return "", fmt.Errorf("rollout: history mode %q is not %s or %s", s, HistoryTokens, HistoryRerender)
}

// HistoryModes lists the history modes, for validation and help.
var HistoryModes = []string{string(HistoryTokens), string(HistoryRerender)}

// RecorderOptions configure a Recorder.
type RecorderOptions struct {
	Policy Policy
	// Model is the served model or LoRA adapter name of the trained
	// policy, which plays every role not in Players.
	Model string
	// Players maps roles to what plays them when not the trained policy.
	Players map[string]Player
	// Sampling is the base sampling; each turn gets its own derived seed.
	Sampling llm.Sampling
	// ChatTemplateKwargs go to /tokenize (e.g. enable_thinking).
	ChatTemplateKwargs map[string]any
	// Seed is the rollout's seed.
	Seed int64
	// History is HistoryTokens (the default) or HistoryRerender.
	History HistoryMode
	// Bridge renders the bridges of HistoryTokens; share one across the
	// recorders of a run (nil: the recorder makes its own).
	Bridge *Bridge
	// WeightVersion reports the policy version the trained policy's
	// endpoints serve when a turn is sampled (nil: 0); each turn and each
	// of its tokens record it.
	WeightVersion func() int
	// Session, when set (the rollout id), routes each role's completions
	// as one session, Session+"/"+role, so a dialogue's turns reach the
	// endpoint whose prefix cache holds it (llm.WithSession); Group (the
	// group id) starts a group's sessions together. EndSessions releases
	// them.
	Session, Group string
}

// SessionEnder is what a client that routes by session needs to hear when
// a rollout ends (*llm.Client).
type SessionEnder interface {
	EndSession(id string)
}

// Recorder implements Agents for one rollout and holds its trajectories.
//
// Its invariant: what is sampled is what is trained, bit for bit. Every
// completion is sampled from exactly the current token sequence of its
// agent, the sampled ids are appended to that sequence verbatim under mask
// 1 with their logprobs, and a sequence is only ever appended to; every
// other token is under mask 0. In HistoryTokens mode an agent's sequence is
// its first rendered prompt, then per turn its sampled ids and the bridge
// to its next generation prompt, so a turn is never rendered again.
type Recorder struct {
	opts    RecorderOptions
	seqs    []dataset.Sequence
	systems []dataset.SystemPrompt
	agents  map[string]*agentState
	bridges map[Policy]*Bridge // bridges of players' other clients

	// PrefixBreaks counts turns that could not extend their agent's
	// sequence and started a new one: in HistoryRerender a rendering that
	// does not start with the sequence, in HistoryTokens a view that did
	// not grow by appending to the last one (the game rewrote history);
	// in both, a change of the role's sequence kind.
	PrefixBreaks int
	// Requests counts /tokenize and /v1/completions requests (a Bridge's
	// one-off template probe not included).
	Requests int
	// PromptTokens counts the tokens added to sequences under mask 0:
	// rendered prompts, bridges and closing tokens.
	PromptTokens int
	// SampledTokens counts the tokens sampled (mask 1).
	SampledTokens int
	// PromptTokensSent counts the prompt tokens of completion requests.
	PromptTokensSent int
	// ClosedTurns counts turns (HistoryTokens) that ended without the
	// template's end-of-turn token — cut at max_tokens or by a stop
	// string — and were closed by appending it under mask 0, as the
	// template would render the turn, so the agent's sequence goes on.
	ClosedTurns int
}

// agentState is what a Recorder keeps of one role.
type agentState struct {
	seq   int           // index in seqs of its current sequence (-1: none)
	turns int           // turns taken
	view  []llm.Message // its view at its last turn (HistoryTokens)
	raw   string        // its last reply as decoded (HistoryTokens)
}

// sessionID is role's session id.
func (r *Recorder) sessionID(role string) string { return r.opts.Session + "/" + role }

// EndSessions releases the routing sessions of the roles that took a
// turn, on every client that routes by session; call it when the rollout
// ends, played out or failed.
func (r *Recorder) EndSessions() {
	if r.opts.Session == "" {
		return
	}
	for role := range r.agents {
		if e, ok := r.Player(role).Tokens.(SessionEnder); ok {
			e.EndSession(r.sessionID(role))
		}
	}
}

// NewRecorder returns a Recorder for one rollout.
func NewRecorder(opts RecorderOptions) *Recorder {
	if opts.History != HistoryRerender {
		opts.History = HistoryTokens
	}
	if opts.History == HistoryTokens && opts.Bridge == nil {
		opts.Bridge = NewBridge(opts.Policy)
	}
	return &Recorder{opts: opts, agents: map[string]*agentState{}}
}

// Turn samples role's reply to msgs, its whole view of the conversation,
// and records it. The sequence it samples from is, in HistoryRerender, msgs
// rendered by the chat template (extending the role's sequence when the
// rendering starts with it); in HistoryTokens, the role's sequence so far
// followed by the bridge for the messages msgs added since its last turn
// (its first turn, or a view that did not grow by appending, renders msgs
// whole into a new sequence).
func (r *Recorder) Turn(ctx context.Context, role string, msgs []llm.Message, opts TurnOptions) (Reply, error) {
	kind := opts.Kind
	if kind == "" {
		kind = dataset.KindDialogue
	}
	st := r.agents[role]
	if st == nil {
		st = &agentState{seq: -1}
		r.agents[role] = st
		if len(msgs) > 0 && msgs[0].Role == "system" {
			r.systems = append(r.systems, dataset.SystemPrompt{Role: role, Text: msgs[0].Content})
		}
	}
	pl := r.Player(role)
	if pl.Chat != nil {
		return r.chatTurn(ctx, role, st, pl, msgs, opts)
	}
	if r.opts.Session != "" {
		ctx = llm.WithSession(ctx, llm.Session{ID: r.sessionID(role), Group: r.opts.Group})
	}
	var maxModelLen int
	var err error
	if r.opts.History == HistoryTokens {
		maxModelLen, err = r.extendTokens(ctx, role, st, pl, msgs, kind)
	} else {
		maxModelLen, err = r.extendRerender(ctx, role, st, pl, msgs, kind)
	}
	if err != nil {
		return Reply{}, err
	}
	s := &r.seqs[st.seq]

	sp := r.opts.Sampling
	if opts.MaxTokens > 0 {
		sp.MaxTokens = opts.MaxTokens
	}
	if maxModelLen > 0 {
		room := maxModelLen - len(s.InputIDs)
		if room <= 0 {
			return Reply{}, fmt.Errorf("rollout: turn of %s: the prompt fills the context (%d tokens, max_model_len %d)", role, len(s.InputIDs), maxModelLen)
		}
		if sp.MaxTokens > room {
			sp.MaxTokens = room
		}
	}
	turn := st.turns
	st.turns++
	seed := DeriveSeed(r.opts.Seed, role, int64(turn))
	sp.Seed = &seed
	sp.N = 1
	// The prompt is the sequence itself: the sampled ids extend exactly
	// the tokens they were sampled from.
	prompt := s.InputIDs
	choices, err := pl.Tokens.Complete(ctx, llm.CompletionRequest{Model: pl.Model, Prompt: prompt, Sampling: sp})
	r.Requests++
	r.PromptTokensSent += len(prompt)
	if err != nil {
		return Reply{}, fmt.Errorf("rollout: sample turn %d of %s: %w", turn+1, role, err)
	}
	if len(choices) == 0 {
		return Reply{}, fmt.Errorf("rollout: sample turn %d of %s: the server returned no choices", turn+1, role)
	}
	c := choices[0]
	v := r.version()
	// The tokens since the last sampled ones (this turn's prompt) lead to
	// this turn: they carry its version too.
	for i := len(s.Versions); i < len(s.InputIDs); i++ {
		s.Versions = append(s.Versions, v)
	}
	appendSampled(s, c.TokenIDs, c.Logprobs)
	for range c.TokenIDs {
		s.Versions = append(s.Versions, v)
	}
	r.SampledTokens += len(c.TokenIDs)
	st.view = slices.Clone(msgs)
	st.raw = c.Text
	return Reply{Text: CleanText(c.Text), Raw: c.Text, Tokens: len(c.TokenIDs), FinishReason: c.FinishReason, WeightVersion: v}, nil
}

// extendRerender renders msgs whole and extends the role's sequence with
// the rendering when it starts with the sequence, or else starts a new one.
func (r *Recorder) extendRerender(ctx context.Context, role string, st *agentState, pl Player, msgs []llm.Message, kind string) (int, error) {
	tok, err := pl.Tokens.Tokenize(ctx, llm.TokenizeRequest{
		Model:               pl.Model,
		Messages:            msgs,
		AddGenerationPrompt: true,
		ChatTemplateKwargs:  r.opts.ChatTemplateKwargs,
	})
	r.Requests++
	if err != nil {
		return 0, fmt.Errorf("rollout: tokenize turn of %s: %w", role, err)
	}
	if st.seq >= 0 && r.seqs[st.seq].Kind == kind && hasPrefix(tok.Tokens, r.seqs[st.seq].InputIDs) {
		s := &r.seqs[st.seq]
		r.appendPrompt(s, tok.Tokens[len(s.InputIDs):])
		return tok.MaxModelLen, nil
	}
	if st.seq >= 0 {
		r.PrefixBreaks++
	}
	r.startSequence(role, st, kind, tok.Tokens)
	return tok.MaxModelLen, nil
}

// extendTokens extends the role's sequence with the bridge to msgs, or,
// on its first turn or when msgs is not its last view plus its reply plus
// new messages, renders msgs whole into a new sequence.
func (r *Recorder) extendTokens(ctx context.Context, role string, st *agentState, pl Player, msgs []llm.Message, kind string) (int, error) {
	// The template's end of turn, learned once per run; asking at every
	// first turn names a template that cannot render bridges at once.
	bridge := r.bridgeFor(pl)
	eot, _, err := bridge.TemplateEnd(ctx, pl.Model, r.opts.ChatTemplateKwargs)
	if err != nil {
		return 0, fmt.Errorf("rollout: turn of %s: %w", role, err)
	}
	if st.seq >= 0 && r.seqs[st.seq].Kind == kind {
		if added, ok := st.added(msgs); ok {
			ids, maxModelLen, err := bridge.Render(ctx, pl.Model, r.opts.ChatTemplateKwargs, added)
			r.Requests++
			if err != nil {
				return 0, fmt.Errorf("rollout: turn %d of %s: %w", st.turns+1, role, err)
			}
			s := &r.seqs[st.seq]
			if s.InputIDs[len(s.InputIDs)-1] != eot {
				// The turn was cut (max_tokens, a stop string) before the
				// model ended it: end it as the template would render it.
				r.appendPrompt(s, []int32{eot})
				r.ClosedTurns++
			}
			r.appendPrompt(s, ids)
			return maxModelLen, nil
		}
	}
	if st.seq >= 0 {
		r.PrefixBreaks++
	}
	tok, err := pl.Tokens.Tokenize(ctx, llm.TokenizeRequest{
		Model:               pl.Model,
		Messages:            msgs,
		AddGenerationPrompt: true,
		ChatTemplateKwargs:  r.opts.ChatTemplateKwargs,
	})
	r.Requests++
	if err != nil {
		return 0, fmt.Errorf("rollout: tokenize turn of %s: %w", role, err)
	}
	r.startSequence(role, st, kind, tok.Tokens)
	return tok.MaxModelLen, nil
}

// added returns the messages msgs adds to the agent's last view: msgs must
// be that view, then the agent's reply (as an assistant message whose
// visible text is the reply's), then anything. ok is false when the view
// did not grow by appending.
func (st *agentState) added(msgs []llm.Message) ([]llm.Message, bool) {
	n := len(st.view)
	if len(msgs) <= n {
		return nil, false
	}
	for i, m := range st.view {
		if !sameMessage(m, msgs[i]) {
			return nil, false
		}
	}
	if reply := msgs[n]; reply.Role != "assistant" || CleanText(reply.Content) != CleanText(st.raw) {
		return nil, false
	}
	return msgs[n+1:], true
}

func sameMessage(a, b llm.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || (a.Reasoning == nil) != (b.Reasoning == nil) {
		return false
	}
	return a.Reasoning == nil || *a.Reasoning == *b.Reasoning
}

// version is the weight version now served (RecorderOptions.WeightVersion).
func (r *Recorder) version() int32 {
	if r.opts.WeightVersion == nil {
		return 0
	}
	return int32(r.opts.WeightVersion())
}

// startSequence starts a new training sequence for role with a rendered
// prompt.
func (r *Recorder) startSequence(role string, st *agentState, kind string, prompt []int32) {
	r.seqs = append(r.seqs, dataset.Sequence{Role: role, Kind: kind})
	st.seq = len(r.seqs) - 1
	r.appendPrompt(&r.seqs[st.seq], prompt)
}

// appendPrompt appends tokens the policy did not sample: mask 0, logprob 0.
func (r *Recorder) appendPrompt(s *dataset.Sequence, ids []int32) {
	s.InputIDs = append(s.InputIDs, ids...)
	s.LossMask = append(s.LossMask, make([]int8, len(ids))...)
	s.Logprobs = append(s.Logprobs, make([]float32, len(ids))...)
	r.PromptTokens += len(ids)
}

// appendSampled appends sampled tokens verbatim: mask 1, their logprobs.
func appendSampled(s *dataset.Sequence, ids []int32, logprobs []float32) {
	s.InputIDs = append(s.InputIDs, ids...)
	for range ids {
		s.LossMask = append(s.LossMask, 1)
	}
	s.Logprobs = append(s.Logprobs, logprobs...)
}

// Player returns what plays role: its entry in Players, or the trained
// policy.
func (r *Recorder) Player(role string) Player {
	if pl, ok := r.opts.Players[role]; ok {
		if pl.Tokens == nil && pl.Chat == nil {
			pl.Tokens = r.opts.Policy
		}
		return pl
	}
	return Player{Kind: dataset.PolicyTrained, Model: r.opts.Model, Tokens: r.opts.Policy, Trained: true}
}

// bridgeFor returns the Bridge of pl's client: its own, the recorder's for
// the trained policy's client, or one made for this recorder.
func (r *Recorder) bridgeFor(pl Player) *Bridge {
	if pl.Bridge != nil {
		return pl.Bridge
	}
	if pl.Tokens == r.opts.Policy {
		return r.opts.Bridge
	}
	if r.bridges == nil {
		r.bridges = map[Policy]*Bridge{}
	}
	b := r.bridges[pl.Tokens]
	if b == nil {
		b = NewBridge(pl.Tokens)
		r.bridges[pl.Tokens] = b
	}
	return b
}

// chatTurn asks an external player for its turn through the chat API: no
// token sequence is recorded (the role cannot be trained).
func (r *Recorder) chatTurn(ctx context.Context, role string, st *agentState, pl Player, msgs []llm.Message, opts TurnOptions) (Reply, error) {
	turn := st.turns
	st.turns++
	seed := DeriveSeed(r.opts.Seed, role, int64(turn))
	req := chat.Request{Seed: &seed, MaxTokens: opts.MaxTokens}
	if opts.MaxTokens <= 0 {
		req.MaxTokens = r.opts.Sampling.MaxTokens
	}
	temp := r.opts.Sampling.Temperature
	req.Temperature = &temp
	for _, m := range msgs {
		req.Messages = append(req.Messages, chat.Message{Role: m.Role, Content: m.Content})
	}
	resp, err := pl.Chat.Chat(ctx, req)
	r.Requests++
	if err != nil {
		return Reply{}, fmt.Errorf("rollout: turn %d of %s (external model %s): %w", turn+1, role, pl.Chat.Model(), err)
	}
	return Reply{Text: CleanText(resp.Content), Raw: resp.Content, Tokens: resp.CompletionTokens, FinishReason: resp.FinishReason}, nil
}

// Sequences returns the recorded training sequences in creation order.
func (r *Recorder) Sequences() []dataset.Sequence {
	r.padVersions()
	return r.seqs
}

// padVersions gives the tokens after each sequence's last sampled ones
// (its closing tokens) the version of those.
func (r *Recorder) padVersions() {
	for i := range r.seqs {
		s := &r.seqs[i]
		v := r.version()
		if n := len(s.Versions); n > 0 {
			v = s.Versions[n-1]
		}
		for len(s.Versions) < len(s.InputIDs) {
			s.Versions = append(s.Versions, v)
		}
	}
}

// SystemPrompts returns the system prompt each role was first given (the
// first message of its first turn, when it is a system message), in the
// order the roles first spoke.
func (r *Recorder) SystemPrompts() []dataset.SystemPrompt { return r.systems }

// Fill copies what the recorder holds into rec once its game is played:
// the sequences, the system prompts and the counts of prefix breaks,
// prompt and sampled tokens and requests.
func (r *Recorder) Fill(rec *dataset.Rollout) {
	rec.Sequences = r.Sequences()
	rec.SystemPrompts = r.systems
	rec.PrefixBreaks = int32(r.PrefixBreaks)
	rec.PromptTokens = int32(r.PromptTokens)
	rec.SampledTokens = int32(r.SampledTokens)
	rec.Requests = int32(r.Requests)
}

func hasPrefix(s, prefix []int32) bool {
	if len(prefix) > len(s) {
		return false
	}
	for i, v := range prefix {
		if s[i] != v {
			return false
		}
	}
	return true
}

var (
	thinkBlock = regexp.MustCompile(`(?s)<think>.*?</think>`)
	endTokens  = []string{"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>"}
)

// CleanText is the visible part of a sampled turn: private <think> blocks
// and end-of-turn tokens removed, whitespace trimmed.
func CleanText(s string) string {
	if i := strings.Index(s, "<think>"); i >= 0 {
		s = s[:i] + thinkBlock.ReplaceAllString(s[i:], "")
		if i := strings.Index(s, "<think>"); i >= 0 { // unterminated reasoning
			s = s[:i]
		}
	}
	if strings.IndexByte(s, '<') >= 0 {
		for _, e := range endTokens {
			s = strings.ReplaceAll(s, e, "")
		}
	}
	return strings.TrimSpace(s)
}

// TrimEndTokens removes the end-of-turn tokens a server may leave at the
// end of a sampled text, and nothing else: the rest is the agent's own turn
// as its chat template must render it again.
func TrimEndTokens(s string) string {
	for {
		cut := false
		for _, e := range endTokens {
			if t, ok := strings.CutSuffix(s, e); ok {
				s, cut = t, true
			}
		}
		if !cut {
			return s
		}
	}
}

// DeriveSeed derives a child seed from a parent seed and labels,
// deterministically (FNV-1a over the parts, then a splitmix64 finaliser).
func DeriveSeed(parent int64, label string, n int64) int64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(parent))
	h.Write(b[:])
	h.Write([]byte(label))
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
	z := h.Sum64() + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return int64(z & 0x7fffffff) // vLLM seeds are non-negative ints
}
