package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// chatRequest is the subset of an OpenAI chat completion request the
// simulated judge, generator and agents read.
type chatRequest struct {
	Model               string         `json:"model"`
	Messages            []chatMessage  `json:"messages"`
	MaxTokens           *int           `json:"max_tokens"`
	MaxCompletionTokens *int           `json:"max_completion_tokens"`
	Temperature         *float64       `json:"temperature"`
	N                   *int           `json:"n"`
	Seed                *int64         `json:"seed"`
	Stream              bool           `json:"stream"`
	ChatTemplateKwargs  map[string]any `json:"chat_template_kwargs"`
	ResponseFormat      *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name string `json:"name"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatOutMessage `json:"message"`
	Logprobs     any            `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
	StopReason   any            `json:"stop_reason"`
}

type chatOutMessage struct {
	Role             string `json:"role"`
	Content          string `json:"content"`
	ReasoningContent any    `json:"reasoning_content"`
	ToolCalls        []any  `json:"tool_calls"`
}

type chatResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []chatChoice `json:"choices"`
	Usage             usageInfo    `json:"usage"`
}

// promptDetails is usage.prompt_tokens_details as OpenAI reports it.
type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if !s.readJSON(w, r, &req) {
		return
	}
	if s.engineDead(w, false) {
		return
	}
	if s.injectFault(w, r) {
		return
	}
	if req.Stream {
		s.badRequest(w, "stream=true is not supported by the simulator")
		return
	}
	if len(req.Messages) == 0 {
		s.badRequest(w, "messages must not be empty")
		return
	}
	n := 1
	if req.N != nil {
		n = *req.N
	}
	if n < 1 || n > 256 {
		s.badRequest(w, fmt.Sprintf("n must be in [1, 256], got %d.", n))
		return
	}
	maxTok := 0
	if req.MaxTokens != nil {
		maxTok = *req.MaxTokens
	}
	if req.MaxCompletionTokens != nil {
		maxTok = *req.MaxCompletionTokens
	}
	model := req.Model
	if model == "" {
		model = s.opts.JudgeModel
	}
	if !s.acquire(r.Context()) {
		return
	}
	msgs := toMessages(req.Messages)
	tmpl := TemplateOptions{AddGenerationPrompt: true, DisableThinking: thinkingDisabled(req.ChatTemplateKwargs),
		Qwen3: s.opts.Template == TemplateQwen3}
	prompt := s.tok.ApplyChatTemplate(msgs, tmpl)
	content := s.chatContent(&req, msgs, prompt, model)
	toks := s.tok.Encode(content)
	finish := "stop"
	if maxTok > 0 && len(toks) > maxTok {
		toks, finish = toks[:maxTok], "length"
		content = s.tok.Decode(toks)
	}
	resp := chatResponse{ID: s.nextID("chatcmpl"), Object: "chat.completion", Created: time.Now().Unix(), Model: model,
		SystemFingerprint: *s.fingerprint.Load()}
	for i := 0; i < n; i++ {
		resp.Choices = append(resp.Choices, chatChoice{Index: i, FinishReason: finish,
			Message: chatOutMessage{Role: "assistant", Content: content, ToolCalls: []any{}}})
	}
	completion := n * (len(toks) + 1)
	cached := 0
	if len(prompt) > 0 {
		cached = s.chatCache.lookup(model, prompt)
		s.chatCache.insert(model, prompt)
	}
	resp.Usage = usageInfo{PromptTokens: len(prompt), CompletionTokens: completion, TotalTokens: len(prompt) + completion,
		PromptTokensDetails: promptDetails{CachedTokens: cached}}
	s.chatPrompt.Add(int64(len(prompt)))
	s.chatCompletion.Add(int64(completion))
	s.chatCached.Add(int64(cached))
	slept := s.sleep(r.Context(), s.latency(s.opts.LatencyMedian, true))
	s.release()
	if !slept && r.Context().Err() != nil {
		return
	}
	s.writeJSON(w, http.StatusOK, resp)
}

// chatContent decides a chat completion's reply: the dilemma generator
// (response_format schema "dilemmas") and its persona requests
// ("persona_pair", "persona_opposition"); else, without a schema, a reply of
// the simulated model when the model is the policy or an adapter
// (Server.reply); else a judge's: the first of Options.Games whose judge
// answers the question, else the built-in judge by schema (score,
// pairwise preference; plain text without a schema).
func (s *Server) chatContent(req *chatRequest, msgs []Message, prompt []int32, model string) string {
	lastUser := ""
	for _, m := range msgs {
		if m.Role == "user" {
			lastUser = m.Content
		}
	}
	schema := ""
	if rf := req.ResponseFormat; rf != nil {
		switch {
		case rf.Type == "json_schema" && rf.JSONSchema != nil:
			schema = rf.JSONSchema.Name
		case rf.Type == "json_object":
			schema = SchemaCAScore
			if _, _, ok := pairSections(lastUser); ok {
				schema = SchemaPairwise
			}
			if isGroupPrompt(lastUser) {
				schema = SchemaCAGroup
			}
		}
	}
	var seed uint64
	if req.Seed != nil {
		seed = uint64(*req.Seed)
	}
	if schema == SchemaDilemmas {
		rng := rand.New(rand.NewPCG(contentKey(prompt, model, sampling{}), seed))
		out, _ := json.Marshal(map[string]any{"items": Dilemmas(firstInt(lastUser, 1, 200, 5), requestedCategory(lastUser), rng)})
		return string(out)
	}
	switch schema {
	case SchemaPersonaPair:
		return personaPair(rand.New(rand.NewPCG(contentKey(prompt, model, sampling{}), seed)))
	case SchemaPersonaOpposition:
		return personaOpposition(lastUser)
	}
	if schema == "" && (model == s.opts.Model || s.isAdapter(model)) {
		p := s.tok.parsePrompt(prompt)
		text, _ := s.reply(readDialogue(p), s.model(model, model != s.opts.Model), rand.New(rand.NewPCG(contentKey(prompt, model, sampling{}), seed)))
		return text
	}
	fault := s.judgeFault()
	if fault == judgeRefusal {
		return JudgeRefusal
	}
	if schema == SchemaCAGroup || (schema == "" && isGroupPrompt(lastUser)) {
		return groupJudgeContent(lastUser, s.opts.JudgeGroupFault, fault)
	}
	for _, g := range s.opts.Games {
		if content, ok := g.Judge(schema, lastUser, fault == judgeOutOfRange); ok {
			if fault == judgeMalformed {
				// Truncated: strict parsing fails.
				content = content[:len(content)*2/3]
			}
			return content
		}
	}
	switch schema {
	case SchemaCAScore, SchemaPairwise, "":
		return judgeContent(schema, lastUser, fault, s.opts.JudgeDiverge)
	default:
		// An unknown schema: answer the score object, the most common ask.
		return judgeContent(SchemaCAScore, lastUser, fault, s.opts.JudgeDiverge)
	}
}

func (s *Server) isAdapter(name string) bool {
	s.loraMu.RLock()
	defer s.loraMu.RUnlock()
	_, ok := s.loras[name]
	return ok
}
