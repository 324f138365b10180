package sim

import (
	"slices"
	"strings"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// Reasoning is an assistant message's reasoning_content (nil when the
	// message has none; Qwen3's template then reads it from a <think>
	// block in Content).
	Reasoning *string `json:"reasoning_content,omitempty"`
}

// Chat templates of the simulator (Options.Template).
const (
	// TemplateChatML is plain ChatML; with thinking disabled every
	// assistant message, earlier ones included, is rendered after the empty
	// think block, so a re-rendered conversation always extends the prompt
	// its last reply was sampled from.
	TemplateChatML = "chatml"
	// TemplateQwen3 renders exactly as Qwen3's chat template does:
	// enable_thinking, the empty think block at the generation prompt only,
	// reasoning stripped from assistant turns before the last user query,
	// reasoning_content. Re-rendering then breaks the prefix.
	TemplateQwen3 = "qwen3"
)

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
	// Qwen3 renders as Qwen3's template does (TemplateQwen3) instead of
	// ChatML.
	Qwen3 bool
}

const emptyThink = "<think>\n\n</think>\n\n"

// RenderChat renders messages with the simulator's template: ChatML
// ("<|im_start|>{role}\n{content}<|im_end|>\n" per message, then the
// generation prompt when asked), or Qwen3's template when o.Qwen3 is set.
func RenderChat(msgs []Message, o TemplateOptions) string {
	var b strings.Builder
	n := 32
	for _, m := range msgs {
		n += len(m.Role) + len(m.Content) + 32
	}
	b.Grow(n)
	if o.Qwen3 {
		return renderQwen3(&b, msgs, o)
	}
	for i, m := range msgs {
		b.WriteString("<|im_start|>")
		b.WriteString(m.Role)
		b.WriteByte('\n')
		if m.Role == "assistant" && o.DisableThinking {
			b.WriteString(emptyThink)
		}
		b.WriteString(m.Content)
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

// renderQwen3 follows Qwen3's chat template (the qwen3.jinja that trl
// ships, as Qwen3's tokenizer_config.json carries it), tools aside:
//
//   - a first system message, user messages and later system messages
//     render as ChatML;
//   - an assistant message's reasoning is its reasoning_content, or else
//     the text of a <think> block in its content (which is then cut after
//     the last </think>); it is rendered as "<think>\n{reasoning}\n</think>\n\n"
//     only for assistant messages after the last user query, and among
//     those only for the last message or one with non-empty reasoning:
//     earlier turns lose their reasoning and their (empty) think block;
//   - tool messages render as <tool_response> blocks in a user message;
//     other roles render nothing;
//   - the generation prompt is "<|im_start|>assistant\n", plus the empty
//     think block when enable_thinking is false.
func renderQwen3(b *strings.Builder, msgs []Message, o TemplateOptions) string {
	if len(msgs) > 0 && msgs[0].Role == "system" {
		b.WriteString("<|im_start|>system\n")
		b.WriteString(msgs[0].Content)
		b.WriteString("<|im_end|>\n")
	}
	lastQuery := len(msgs) - 1
	for i := len(msgs) - 1; i >= 0; i-- {
		c := msgs[i].Content
		if msgs[i].Role == "user" && !(strings.HasPrefix(c, "<tool_response>") && strings.HasSuffix(c, "</tool_response>")) {
			lastQuery = i
			break
		}
	}
	for i, m := range msgs {
		last := i == len(msgs)-1
		switch {
		case m.Role == "user" || (m.Role == "system" && i > 0):
			b.WriteString("<|im_start|>")
			b.WriteString(m.Role)
			b.WriteByte('\n')
			b.WriteString(m.Content)
			b.WriteString("<|im_end|>\n")
		case m.Role == "assistant":
			content, reasoning := qwen3Reasoning(m)
			b.WriteString("<|im_start|>assistant\n")
			if i > lastQuery && (last || reasoning != "") {
				b.WriteString("<think>\n")
				b.WriteString(strings.Trim(reasoning, "\n"))
				b.WriteString("\n</think>\n\n")
				content = strings.TrimLeft(content, "\n")
			}
			b.WriteString(content)
			if o.ContinueFinalMessage && last {
				return b.String()
			}
			b.WriteString("<|im_end|>\n")
		case m.Role == "tool":
			if i == 0 || msgs[i-1].Role != "tool" {
				b.WriteString("<|im_start|>user")
			}
			b.WriteString("\n<tool_response>\n")
			b.WriteString(m.Content)
			b.WriteString("\n</tool_response>")
			if last || msgs[i+1].Role != "tool" {
				b.WriteString("<|im_end|>\n")
			}
		}
	}
	if o.AddGenerationPrompt {
		b.WriteString("<|im_start|>assistant\n")
		if o.DisableThinking {
			b.WriteString(emptyThink)
		}
	}
	return b.String()
}

// qwen3Reasoning splits an assistant message as Qwen3's template does: the
// reasoning is reasoning_content when given; otherwise, when the content
// holds "</think>", the text between the last <think> before the first
// </think> and that </think>, and the content is what follows the last
// </think>. Newlines around both are trimmed as the template trims them.
func qwen3Reasoning(m Message) (content, reasoning string) {
	content = m.Content
	if m.Reasoning != nil {
		return content, *m.Reasoning
	}
	if k := strings.Index(content, "</think>"); k >= 0 {
		before := strings.TrimRight(content[:k], "\n")
		if j := strings.LastIndex(before, "<think>"); j >= 0 {
			before = before[j+len("<think>"):]
		}
		reasoning = strings.TrimLeft(before, "\n")
		content = strings.TrimLeft(content[strings.LastIndex(content, "</think>")+len("</think>"):], "\n")
	}
	return content, reasoning
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
		if ids[i] != t.imStart {
			continue
		}
		i++
		b.Reset()
		for ; i < len(ids) && ids[i] != t.newline && ids[i] != t.imEnd && ids[i] != t.imStart; i++ {
			b.WriteString(t.Piece(ids[i]))
		}
		role := b.String()
		if i < len(ids) && ids[i] == t.newline {
			i++
		}
		b.Reset()
		inThink := false
		closed := false
		for ; i < len(ids); i++ {
			id := ids[i]
			if id == t.imEnd {
				closed = true
				break
			}
			if id == t.imStart {
				i--
				closed = true
				break
			}
			switch {
			case id == t.thinkStart && id >= 0:
				inThink = true
				continue
			case id == t.thinkEnd && id >= 0:
				inThink = false
				// Skip the newlines that follow a think block.
				for i+1 < len(ids) && ids[i+1] == t.newline {
					i++
				}
				continue
			}
			if !inThink && !t.IsSpecial(id) {
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

// bareGenerationPrompt is the generation prompt without a think block.
const bareGenerationPrompt = "<|im_start|>assistant\n"

// endsWithBareGenerationPrompt reports whether a prompt ends with the
// generation prompt and nothing after it: with Qwen3's template, thinking
// is enabled and the model opens its reply with a <think> block.
func (t *Tokenizer) endsWithBareGenerationPrompt(p []int32) bool {
	gp := t.bareGenPrompt()
	return len(p) >= len(gp) && slices.Equal(p[len(p)-len(gp):], gp)
}

func (t *Tokenizer) bareGenPrompt() []int32 {
	t.bareGenPromptOnce.Do(func() { t.bareGenPromptIDs = t.Encode(bareGenerationPrompt) })
	return t.bareGenPromptIDs
}
