package sim

import "strings"

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// TemplateOptions are the chat-template switches of /tokenize.
type TemplateOptions struct {
	// AddGenerationPrompt appends "<|im_start|>assistant\n".
	AddGenerationPrompt bool
	// DisableThinking is chat_template_kwargs.enable_thinking=false (Qwen3):
	// the generation prompt then ends with an empty think block
	// "<think>\n\n</think>\n\n".
	DisableThinking bool
	// ContinueFinalMessage leaves the last message open (no <|im_end|>).
	ContinueFinalMessage bool
	// StripHistoryThink renders assistant messages that come before the last
	// user message as Qwen3's template does: think blocks stripped, and no
	// empty think block added. Re-rendering then does not extend the earlier
	// sequence when thinking is disabled (a prefix break). When false, every
	// assistant message is rendered after the empty think block whenever
	// thinking is disabled, exactly as it was generated, so re-rendering
	// always extends.
	StripHistoryThink bool
}

const emptyThink = "<think>\n\n</think>\n\n"

// RenderChat renders messages with the simulator's ChatML template:
// "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then the
// generation prompt when asked.
func RenderChat(msgs []Message, o TemplateOptions) string {
	var b strings.Builder
	n := 32
	for _, m := range msgs {
		n += len(m.Role) + len(m.Content) + 32
	}
	b.Grow(n)
	lastUser := -1
	for i, m := range msgs {
		if m.Role == "user" {
			lastUser = i
		}
	}
	for i, m := range msgs {
		b.WriteString("<|im_start|>")
		b.WriteString(m.Role)
		b.WriteByte('\n')
		content := m.Content
		if m.Role == "assistant" {
			switch {
			case o.StripHistoryThink && i < lastUser:
				if k := strings.LastIndex(content, "</think>"); k >= 0 {
					content = strings.TrimLeft(content[k+len("</think>"):], "\n")
				}
			case o.DisableThinking:
				b.WriteString(emptyThink)
			}
		}
		b.WriteString(content)
		if o.ContinueFinalMessage && i == len(msgs)-1 {
			return b.String()
		}
		b.WriteString("<|im_end|>\n")
	}
	if o.AddGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
		if o.DisableThinking {
			b.WriteString(emptyThink)
		}
	}
	return b.String()
}

// ApplyChatTemplate renders messages and tokenizes the result, as vLLM's
// /tokenize does in its messages form.
func (t *Tokenizer) ApplyChatTemplate(msgs []Message, o TemplateOptions) []int32 {
	return t.Encode(RenderChat(msgs, o))
}

// chatPrompt is a token prompt parsed back into ChatML messages.
type chatPrompt struct {
	msgs []Message
	// open is true when the prompt ends inside a message (normally the
	// generation prompt "<|im_start|>assistant\n"); openRole is its role.
	open     bool
	openRole string
}

// parsePrompt recovers ChatML messages from prompt token ids. Think blocks
// are dropped from contents; text outside messages is ignored.
func (t *Tokenizer) parsePrompt(ids []int32) chatPrompt {
	var p chatPrompt
	var b strings.Builder
	for i := 0; i < len(ids); i++ {
		if ids[i] != TokenIMStart {
			continue
		}
		i++
		b.Reset()
		for ; i < len(ids) && ids[i] != tokenNewline && ids[i] != TokenIMEnd && ids[i] != TokenIMStart; i++ {
			b.WriteString(t.Piece(ids[i]))
		}
		role := b.String()
		if i < len(ids) && ids[i] == tokenNewline {
			i++
		}
		b.Reset()
		inThink := false
		closed := false
		for ; i < len(ids); i++ {
			id := ids[i]
			if id == TokenIMEnd {
				closed = true
				break
			}
			if id == TokenIMStart {
				i--
				closed = true
				break
			}
			switch id {
			case TokenThinkStart:
				inThink = true
				continue
			case TokenThinkEnd:
				inThink = false
				// Skip the newlines that follow a think block.
				for i+1 < len(ids) && ids[i+1] == tokenNewline {
					i++
				}
				continue
			}
			if !inThink && !IsSpecial(id) {
				b.WriteString(t.Piece(id))
			}
		}
		if closed {
			p.msgs = append(p.msgs, Message{Role: role, Content: b.String()})
		} else {
			p.open = true
			p.openRole = role
			if c := b.String(); c != "" {
				p.msgs = append(p.msgs, Message{Role: role, Content: c})
			}
		}
	}
	return p
}
