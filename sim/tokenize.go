package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// msgContent is a chat message content: a string, or OpenAI content parts
// whose text parts are concatenated.
type msgContent string

// UnmarshalJSON reads a string, null, or a list of content parts.
func (c *msgContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if n := len(b); n >= 2 && b[0] == '"' && bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		// Fast path: a string without escapes is its own content
		// (encoding/json has already validated it).
		*c = msgContent(b[1 : n-1])
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var sb strings.Builder
		for _, p := range parts {
			sb.WriteString(p.Text)
		}
		*c = msgContent(sb.String())
		return nil
	}
	if string(b) == "null" {
		*c = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*c = msgContent(s)
	return nil
}

type chatMessage struct {
	Role    string     `json:"role"`
	Content msgContent `json:"content"`
	// Reasoning is an assistant message's reasoning: vLLM (0.11 and
	// later) reads "reasoning" and hands it to the template as
	// reasoning_content; older servers read "reasoning_content".
	Reasoning        *string `json:"reasoning"`
	ReasoningContent *string `json:"reasoning_content"`
}

func toMessages(in []chatMessage) []Message {
	out := make([]Message, len(in))
	for i, m := range in {
		out[i] = Message{Role: m.Role, Content: string(m.Content)}
		if m.Role == "assistant" {
			out[i].Reasoning = m.Reasoning
			if out[i].Reasoning == nil {
				out[i].Reasoning = m.ReasoningContent
			}
		}
	}
	return out
}

// thinkingDisabled reads chat_template_kwargs.enable_thinking == false.
func thinkingDisabled(kw map[string]any) bool {
	v, ok := kw["enable_thinking"]
	if !ok {
		return false
	}
	switch v := v.(type) {
	case bool:
		return !v
	case string:
		return strings.EqualFold(v, "false")
	}
	return false
}

type tokenizeRequest struct {
	Model                string         `json:"model"`
	Prompt               *string        `json:"prompt"`
	Messages             []chatMessage  `json:"messages"`
	AddGenerationPrompt  *bool          `json:"add_generation_prompt"`
	ContinueFinalMessage bool           `json:"continue_final_message"`
	AddSpecialTokens     *bool          `json:"add_special_tokens"`
	ChatTemplateKwargs   map[string]any `json:"chat_template_kwargs"`
	ReturnTokenStrs      bool           `json:"return_token_strs"`
}

type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int32  `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if !s.readJSON(w, r, &req) {
		return
	}
	if s.injectFault(w, r) {
		return
	}
	if _, ok := s.checkModel(w, req.Model); !ok {
		return
	}
	var toks []int32
	switch {
	case req.Messages != nil:
		addGen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
		if addGen && req.ContinueFinalMessage {
			s.badRequest(w, "Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
			return
		}
		toks = s.tok.ApplyChatTemplate(toMessages(req.Messages), TemplateOptions{
			AddGenerationPrompt:  addGen,
			DisableThinking:      thinkingDisabled(req.ChatTemplateKwargs),
			ContinueFinalMessage: req.ContinueFinalMessage,
			Qwen3:                s.opts.Template == TemplateQwen3,
		})
	case req.Prompt != nil:
		toks = s.tok.Encode(*req.Prompt)
	default:
		s.badRequest(w, "Either `prompt` or `messages` must be provided.")
		return
	}
	resp := tokenizeResponse{Count: len(toks), MaxModelLen: s.opts.MaxModelLen, Tokens: toks}
	if req.ReturnTokenStrs {
		resp.TokenStrs = make([]string, len(toks))
		for i, id := range toks {
			resp.TokenStrs[i] = s.tok.Piece(id)
		}
	}
	if !s.sleep(r.Context(), s.latencyNoTail(s.opts.TokenizeLatency)) {
		return
	}
	s.writeRaw(w, func(dst []byte) []byte { return appendTokenize(dst, &resp) })
}

func (s *Server) latencyNoTail(median time.Duration) time.Duration { return s.latency(median, false) }

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string  `json:"model"`
		Tokens []int32 `json:"tokens"`
	}
	if !s.readJSON(w, r, &req) {
		return
	}
	if s.injectFault(w, r) {
		return
	}
	if _, ok := s.checkModel(w, req.Model); !ok {
		return
	}
	for _, id := range req.Tokens {
		if !s.tok.ValidID(id) {
			s.badRequest(w, fmt.Sprintf("Token id %d is out of vocabulary", id))
			return
		}
	}
	if !s.sleep(r.Context(), s.latencyNoTail(s.opts.TokenizeLatency)) {
		return
	}
	s.writeJSON(w, http.StatusOK, map[string]string{"prompt": s.tok.Decode(req.Tokens)})
}
