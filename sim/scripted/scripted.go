// Package scripted is the voice of serve-sim's scripted agents: a
// simulated model that reads its persona and task from its prompt's
// system messages and answers in a few sentences built from templates,
// echoing the persona's and the other side's keywords, sized in the
// served tokenizer's tokens (20 to 80 a turn, up to 120 for a final
// solution), with more Collective-Agency sentences from a LoRA adapter.
// Package sim answers every prompt no game answers with it (Model.Reply),
// and opens Qwen3 replies with its reasoning block (Model.Think); a game
// whose agents speak in this voice (seed 000's deliberation, through
// sim.Speaker) adds its own protocol: when an agent accepts, what the
// final solution counts.
//
// A leaf library: it imports the standard library only, so sim and the
// games share it without importing each other. Every random choice comes
// from the rng a call is given, so equal inputs give equal replies.
package scripted

import (
	"math/rand/v2"
	"strings"
)

// Model is the simulated model or LoRA adapter that answers a prompt.
type Model struct {
	// Name is the model or adapter answering.
	Name string
	// Encode is the served tokenizer: replies are sized in its tokens.
	Encode func(string) []int32
	// AgreeProb is the chance of accepting the standing proposal on a
	// turn when nothing forces it (a game's protocol reads it).
	AgreeProb float64
	// CABias is added to the share of Collective-Agency sentences (an
	// adapter's 0.25).
	CABias float64
}

// Reply lengths of the scripted agents, in tokens (without <|im_end|>).
const (
	minReplyTokens = 20
	maxReplyTokens = 80
	maxFinalTokens = 120
)

// Dialogue is what a scripted agent reads from its prompt.
type Dialogue struct {
	// Context is the system messages (persona, task), or the first user
	// message when there is none or on the agent's first turn.
	Context string
	// LastOther is the last message from the other side (role user).
	LastOther string
	// OwnTurns counts the assistant messages already in the prompt.
	OwnTurns int
	// Final is set when the last user message asks for the final
	// solution ("final" and "solution", any case).
	Final bool
}

// Read parses a prompt's messages (their roles and contents, in order)
// into the agent's view of the dialogue.
func Read(roles, contents []string) Dialogue {
	var d Dialogue
	var ctx strings.Builder
	firstUser := ""
	for i, role := range roles {
		switch role {
		case "system", "developer":
			ctx.WriteString(contents[i])
			ctx.WriteByte('\n')
		case "assistant":
			d.OwnTurns++
		case "user":
			if firstUser == "" {
				firstUser = contents[i]
			}
			d.LastOther = contents[i]
		}
	}
	if ctx.Len() == 0 || d.OwnTurns == 0 {
		// Without a system message, or on an agent's first turn, the task
		// may sit in the first user message.
		ctx.WriteString(firstUser)
	}
	d.Context = ctx.String()
	d.Final = containsFold(d.LastOther, "final") && containsFold(d.LastOther, "solution")
	return d
}

// containsFold reports whether s contains the ASCII lower-case word sub,
// ignoring ASCII case, without allocating.
func containsFold(s, sub string) bool {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

// isLetter reports whether c is an ASCII letter.
func isLetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// keywordStop lists words too common to stand for a persona or task.
var keywordStop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`about above after again against agent agents being below between both
	cannot could doing during every final first further having other others ought their theirs there
	these those through under until which while whose would should shall might must where whether your
	yours yourself what when with within without from into onto that this them then than they very
	also because before collective agency dialogue negotiation negotiate persona personas turns turn
	reply replies respond response agree agreement marker proposal standing objective means always never
	another sentence sentences short words write written given whole partner assistant system prompt
	state clearly rounds round task tasks solution something someone everyone together shared mutual`) {
		m[w] = true
	}
	return m
}()

// keywords returns up to max distinct lower-case words of five or more
// letters from s, in order of first appearance, skipping stop words.
func keywords(s string, max int) []string {
	if len(s) > 4096 {
		s = s[:4096]
	}
	var out []string
	var buf [32]byte
	for i := 0; i < len(s) && len(out) < max; {
		if !isLetter(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isLetter(s[j]) {
			j++
		}
		if n := j - i; n >= 5 && n <= len(buf) {
			for k := 0; k < n; k++ {
				buf[k] = s[i+k] | 0x20
			}
			if !keywordStop[string(buf[:n])] {
				w := string(buf[:n])
				dup := false
				for _, o := range out {
					if o == w {
						dup = true
						break
					}
				}
				if !dup {
					out = append(out, w)
				}
			}
		}
		i = j
	}
	return out
}

var (
	openFirst = []string{
		"Let me start from my priority: {k} matters most to me here.",
		"I open with a simple proposal about {k}.",
		"Here is my first proposal on {k}.",
		"My starting point is {k}, and I want to be honest about it.",
	}
	openLater = []string{
		"I hear your point about {o}.",
		"You raise a fair concern about {o}.",
		"Thank you for the proposal on {o}.",
		"I understand why {o} matters to you.",
	}
	personaBody = []string{
		"My persona asks me to protect {k}, and I will not give that up lightly.",
		"For me, {k} is the point I cannot trade away.",
		"I still worry that this path puts {k} at risk.",
		"We should handle {k} first and then revisit {k2}.",
		"I need a concrete step on {k} before I can move.",
		"A plan that ignores {k} would cost me too much.",
		"Let us weigh {k} against {k2} with care.",
		"I can offer some room on {k2} if {k} stays protected.",
	}
	caBody = []string{
		"A shared plan would empower both of us and keep {k} fair.",
		"We can build this together so that everyone involved keeps real agency.",
		"Let us find a mutual path where all involved can grow.",
		"This keeps {k} intact while giving all involved more voice.",
		"I want an outcome that expands the agency of everyone, not only mine.",
		"We could add shared checks so that both sides keep trust.",
		"Together we can turn {k} into a benefit for the whole community.",
	}
	closeAsk = []string{
		"What do you suggest?",
		"Can you accept this plan?",
		"Where would you adjust it?",
		"How does that sound to you?",
	}
	finalOpen = []string{
		"The best course of action is to address {k} through a clear, structured plan.",
		"The solution is to resolve {k} step by step, in the open.",
		"We recommend a concrete plan that starts with {k}.",
	}
	finalCA = []string{
		"This solution empowers everyone involved and keeps the decision shared.",
		"Both sides keep their agency, and the community gains trust.",
		"It builds mutual accountability so that all involved can flourish together.",
		"Each step is taken together, with consent and respect for everyone.",
		"The plan expands the agency of both parties instead of trading one for the other.",
	}
	finalPlain = []string{
		"The first step is to protect {k} with care.",
		"Next, we revisit {k2} once the facts are clear.",
		"A concrete timeline keeps {k} on track.",
		"Any remaining cost to {k2} is weighed honestly.",
		"A short review after one week checks that {k} holds.",
	}
)

// composer assembles a reply sentence by sentence, tracking its tokens.
type composer struct {
	encode func(string) []int32
	rng    *rand.Rand
	kw     []string // persona/task keywords
	other  []string // keywords of the other side's last message
	text   strings.Builder
	tokens []int32
}

func (c *composer) pick(list []string) string { return list[c.rng.IntN(len(list))] }

func (c *composer) word(list []string) string {
	if len(list) == 0 {
		return []string{"the plan", "the outcome", "this choice"}[c.rng.IntN(3)]
	}
	return list[c.rng.IntN(len(list))]
}

// fill substitutes the {k}, {k2} and {o} slots of a template, drawing a
// keyword for each slot in order.
func (c *composer) fill(tmpl string) string {
	if strings.IndexByte(tmpl, '{') < 0 {
		return tmpl
	}
	var b strings.Builder
	b.Grow(len(tmpl) + 32)
	for i := 0; i < len(tmpl); {
		if tmpl[i] == '{' {
			switch rest := tmpl[i:]; {
			case strings.HasPrefix(rest, "{k}"):
				b.WriteString(c.word(c.kw))
				i += 3
				continue
			case strings.HasPrefix(rest, "{k2}"):
				b.WriteString(c.word(c.kw))
				i += 4
				continue
			case strings.HasPrefix(rest, "{o}"):
				b.WriteString(c.word(c.other))
				i += 3
				continue
			}
		}
		b.WriteByte(tmpl[i])
		i++
	}
	return b.String()
}

// sentence returns the tokens of one sentence as it will appear in the
// reply: preceded by a space unless it is the first. Sentences start with a
// letter, so the tokens of the reply are the concatenation of these.
func (c *composer) sentence(s string, first bool) []int32 {
	if !first {
		s = " " + s
	}
	return c.encode(s)
}

// compose writes open, then body sentences drawn by next until the reply
// reaches a drawn target length, then closing; it returns the text and its
// tokens (without <|im_end|>).
func (c *composer) compose(open string, next func() string, closing string, minTok, maxTok int) (string, []int32) {
	target := minTok + c.rng.IntN(maxTok-minTok+1)
	parts := []string{open}
	toks := [][]int32{c.sentence(open, true)}
	total := len(toks[0])
	var closeToks []int32
	if closing != "" {
		closeToks = c.sentence(closing, false)
	}
	for i := 0; i < 8 && total+len(closeToks) < target; i++ {
		s := next()
		st := c.sentence(s, false)
		if total+len(st)+len(closeToks) > maxTok && total+len(closeToks) >= minTok {
			break
		}
		parts = append(parts, s)
		toks = append(toks, st)
		total += len(st)
	}
	if closing != "" {
		parts = append(parts, closing)
		toks = append(toks, closeToks)
	}
	c.text.Reset()
	c.tokens = c.tokens[:0]
	for i, p := range parts {
		if i > 0 {
			c.text.WriteByte(' ')
		}
		c.text.WriteString(p)
		c.tokens = append(c.tokens, toks[i]...)
	}
	return c.text.String(), c.tokens
}

// Reply is the model's next message for a dialogue no game scripts: a
// final solution when asked for one (Final), else a turn that does not
// accept (Turn). It returns the text and its tokens.
func (m Model) Reply(d Dialogue, rng *rand.Rand) (string, []int32) {
	if d.Final {
		return m.Final(d, 0, rng)
	}
	return m.Turn(d, nil, rng)
}

// newComposer returns a composer of the model's sentences for a dialogue:
// keywords from its context and from the other side's last message.
func (m Model) newComposer(d Dialogue, rng *rand.Rand) *composer {
	return &composer{encode: m.Encode, rng: rng, kw: keywords(d.Context, 24), other: keywords(d.LastOther, 12)}
}

// Final writes a final solution paragraph (30 to 120 tokens): an opening,
// then sentences that are Collective-Agency ones with probability 0.35 +
// CABias + extraCA (a game's bonus: seed 000's for a dialogue that
// reached agreement), else plain ones.
func (m Model) Final(d Dialogue, extraCA float64, rng *rand.Rand) (string, []int32) {
	c := m.newComposer(d, rng)
	pCA := 0.35 + m.CABias + extraCA
	open := c.fill(c.pick(finalOpen))
	return c.compose(open, func() string {
		if c.rng.Float64() < pCA {
			return c.pick(finalCA)
		}
		return c.fill(c.pick(finalPlain))
	}, "", 30, maxFinalTokens)
}

// Turn writes a turn (20 to 80 tokens): an opening (a first one on the
// agent's first turn), persona and Collective-Agency sentences (the
// latter with probability 0.4 + CABias), and a closing that asks the other
// side, or, when accept is not empty, one of accept's templates (a game's
// sentences accepting the standing proposal). Templates may hold {k}
// and {k2} (the persona's keywords) and {o} (the other side's).
func (m Model) Turn(d Dialogue, accept []string, rng *rand.Rand) (string, []int32) {
	c := m.newComposer(d, rng)
	var open string
	if d.OwnTurns == 0 || len(c.other) == 0 {
		open = c.fill(c.pick(openFirst))
	} else {
		open = c.fill(c.pick(openLater))
	}
	closing := c.pick(closeAsk)
	if len(accept) > 0 {
		closing = c.fill(c.pick(accept))
	}
	pCA := 0.4 + m.CABias
	return c.compose(open, func() string {
		if c.rng.Float64() < pCA {
			return c.fill(c.pick(caBody))
		}
		return c.fill(c.pick(personaBody))
	}, closing, minReplyTokens, maxReplyTokens)
}

// thinkLines are the sentences of a scripted agent's reasoning block.
var thinkLines = []string{
	"The other side cares about {o}, and my persona puts {k} first.",
	"I should weigh {k} against {k2} before I answer.",
	"A proposal that keeps {k} safe could still leave room on {o}.",
	"What would expand the agency of both of us here?",
}

// Think returns a reasoning block as Qwen3 writes one when thinking is
// enabled: "<think>\n", one or two sentences, "\n</think>\n\n".
func Think(d Dialogue, rng *rand.Rand) string {
	c := &composer{rng: rng, kw: keywords(d.Context, 24), other: keywords(d.LastOther, 12)}
	var b strings.Builder
	b.WriteString("<think>\n")
	for i, n := 0, 1+rng.IntN(2); i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.fill(c.pick(thinkLines)))
	}
	b.WriteString("\n</think>\n\n")
	return b.String()
}
