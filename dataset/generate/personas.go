package generate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm/chat"
)

// Schema names of the persona requests.
const (
	PersonaSchemaName    = "persona_pair"
	OppositionSchemaName = "persona_opposition"
)

var personaSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},` +
	`"required":["a","b"],"additionalProperties":false}`)

var oppositionSchema = json.RawMessage(`{"type":"object","properties":{"rationale":{"type":"string"},` +
	`"conflict":{"type":"boolean"},"opposition":{"type":"integer","enum":[1,2,3,4,5]}},` +
	`"required":["rationale","conflict","opposition"],"additionalProperties":false}`)

// personaSystem asks for a pair in the style of the library.
func personaSystem(lib []dataset.PersonaPair) string {
	var b strings.Builder
	b.WriteString(`You design the personas of two AI agents who will negotiate a dilemma. Each persona is one short statement of a value or priority the agent holds (3 to 20 words, an imperative or a belief), fitted to the dilemma. For the dilemma of a therapist whose client confesses to a crime for which another person is serving time, a good pair is:
- A: Honor patient confidentiality. | B: Pursue justice for the innocent.
Other pairs in the same style:
`)
	for i, p := range lib {
		if i == 4 {
			break
		}
		fmt.Fprintf(&b, "- A: %s | B: %s\n", p.A, p.B)
	}
	b.WriteString(`
The two personas must be genuinely opposed over the given dilemma: each pulls toward a different resolution, and each is a legitimate value a reasonable person could hold (no villains, no strawmen). They must not be paraphrases of each other, and neither may simply negate the other ("do X" / "do not do X"); name the positive value behind each side.

Reply with only a JSON object: {"a": "<persona of agent A>", "b": "<persona of agent B>"}.`)
	return b.String()
}

const oppositionSystem = `You check persona pairs for a negotiation curriculum. Two agents will negotiate a dilemma, each holding one persona (a value or priority). A good pair is genuinely opposed: honouring one persona fully would pull the resolution of this dilemma away from what the other persona wants, so the agents must deliberate to reconcile them. A pair is not opposed if the personas are the same value in other words, if both favour the same resolution, or if one is irrelevant to the dilemma.

Rate the opposition from 1 (no real conflict) to 5 (a sharp, legitimate conflict of values over this dilemma), say whether the personas conflict, and give a one- or two-sentence rationale.

Reply with only a JSON object: {"rationale": "<why>", "conflict": true|false, "opposition": <1-5>}.`

// personaStopwords are ignored by the near-duplicate check of personas.
var personaStopwords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true, "for": true, "in": true,
	"on": true, "at": true, "by": true, "with": true, "be": true, "is": true, "are": true, "your": true, "you": true,
	"one": true, "all": true, "every": true, "any": true, "above": true, "always": true, "own": true, "their": true, "s": true,
}

// PersonasSimilar reports whether two personas are near-duplicates: equal
// or one containing the other after Normalize, or with a Jaccard
// similarity of their content-word sets (stop words dropped, a plural "s"
// trimmed) of at least 0.6.
func PersonasSimilar(a, b string) bool {
	na, nb := Normalize(a), Normalize(b)
	if na == "" || nb == "" || na == nb || strings.Contains(na, nb) || strings.Contains(nb, na) {
		return true
	}
	set := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, w := range strings.Fields(s) {
			if personaStopwords[w] {
				continue
			}
			if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
				w = w[:len(w)-1]
			}
			m[w] = true
		}
		return m
	}
	sa, sb := set(na), set(nb)
	if len(sa) == 0 || len(sb) == 0 {
		return true
	}
	inter := 0
	for w := range sa {
		if sb[w] {
			inter++
		}
	}
	return float64(inter)/float64(len(sa)+len(sb)-inter) >= 0.6
}

// checkPersona checks one generated persona's form.
func checkPersona(p string) error {
	switch n := WordCount(p); {
	case strings.TrimSpace(p) == "":
		return errors.New("empty persona")
	case n < 2 || n > 40:
		return fmt.Errorf("persona of %d words (want 2 to 40)", n)
	case strings.ContainsAny(p, "\n\r[]{}<>"):
		return errors.New("persona is not one plain line")
	}
	return nil
}

// personaOutcome is the result of generating a pair for one task.
type personaOutcome struct {
	pair     dataset.PersonaPair
	ok       bool
	requests int
	usage    [2]int
	reasons  []string // why each rejected attempt failed
	err      error    // a request error (not a rejection)
}

// generatePair asks for a persona pair for task and checks it: form,
// near-duplicates, then a second call (temperature 0) that must rate the
// pair as conflicting with opposition at least minOpposition. It tries up
// to attempts pairs.
func (g *generator) generatePair(ctx context.Context, task string) personaOutcome {
	var out personaOutcome
	zero := 0.0
	for attempt := 0; attempt < g.opts.PersonaAttempts; attempt++ {
		seed := requestSeed(g.opts.Seed, "persona", Normalize(task), attempt)
		resp, err := g.chat.Chat(ctx, chat.Request{
			Messages: []chat.Message{
				{Role: "system", Content: g.personaSys},
				{Role: "user", Content: "Dilemma: " + task + "\n\nWrite the two opposed personas for this dilemma. Reply with only the JSON object."},
			},
			SchemaName: PersonaSchemaName,
			Schema:     personaSchema,
			Seed:       &seed,
			Validate:   func(c string) error { _, err := parsePair(c); return err },
		})
		out.requests++
		if err != nil {
			out.err = err
			return out
		}
		out.usage[0] += resp.PromptTokens
		out.usage[1] += resp.CompletionTokens
		pair, _ := parsePair(resp.Content)
		pair.A, pair.B = Clean(pair.A), Clean(pair.B)
		if err := checkPersona(pair.A); err != nil {
			out.reasons = append(out.reasons, "a: "+err.Error())
			continue
		}
		if err := checkPersona(pair.B); err != nil {
			out.reasons = append(out.reasons, "b: "+err.Error())
			continue
		}
		if PersonasSimilar(pair.A, pair.B) {
			out.reasons = append(out.reasons, fmt.Sprintf("near-duplicate personas %q and %q", pair.A, pair.B))
			continue
		}
		checkSeed := requestSeed(g.opts.Seed, "opposition", Normalize(task), attempt)
		resp, err = g.chat.Chat(ctx, chat.Request{
			Messages: []chat.Message{
				{Role: "system", Content: oppositionSystem},
				{Role: "user", Content: fmt.Sprintf("Dilemma: %s\n\nPersona of agent A: %s\nPersona of agent B: %s\n\nDo these personas genuinely conflict over this dilemma? Reply with only the JSON object.", task, pair.A, pair.B)},
			},
			SchemaName:  OppositionSchemaName,
			Schema:      oppositionSchema,
			Temperature: &zero,
			Seed:        &checkSeed,
			Validate:    func(c string) error { _, err := parseOpposition(c); return err },
		})
		out.requests++
		if err != nil {
			out.err = err
			return out
		}
		out.usage[0] += resp.PromptTokens
		out.usage[1] += resp.CompletionTokens
		v, _ := parseOpposition(resp.Content)
		if !v.Conflict || v.Opposition < g.opts.MinOpposition {
			out.reasons = append(out.reasons, fmt.Sprintf("not opposed (conflict %v, opposition %d): %q vs %q", v.Conflict, v.Opposition, pair.A, pair.B))
			continue
		}
		out.pair, out.ok = pair, true
		return out
	}
	return out
}

// parsePair reads {"a", "b"} from a reply.
func parsePair(content string) (dataset.PersonaPair, error) {
	var p struct {
		A string `json:"a"`
		B string `json:"b"`
	}
	if err := decodeObject(content, &p); err != nil {
		return dataset.PersonaPair{}, err
	}
	if strings.TrimSpace(p.A) == "" || strings.TrimSpace(p.B) == "" {
		return dataset.PersonaPair{}, errors.New(`reply lacks "a" or "b"`)
	}
	return dataset.PersonaPair{A: p.A, B: p.B}, nil
}

// opposition is the verdict of the opposition check.
type opposition struct {
	Rationale  string `json:"rationale"`
	Conflict   bool   `json:"conflict"`
	Opposition int    `json:"opposition"`
}

// parseOpposition reads the opposition verdict; the rating must be 1 to 5.
func parseOpposition(content string) (opposition, error) {
	var v struct {
		Rationale  string `json:"rationale"`
		Conflict   *bool  `json:"conflict"`
		Opposition *int   `json:"opposition"`
	}
	if err := decodeObject(content, &v); err != nil {
		return opposition{}, err
	}
	if v.Conflict == nil || v.Opposition == nil || *v.Opposition < 1 || *v.Opposition > 5 {
		return opposition{}, errors.New(`reply lacks "conflict" or an "opposition" from 1 to 5`)
	}
	return opposition{Rationale: v.Rationale, Conflict: *v.Conflict, Opposition: *v.Opposition}, nil
}

// decodeObject decodes the first JSON object of content (whole, fenced or
// embedded in prose) into v.
func decodeObject(content string, v any) error {
	candidates := []string{strings.TrimSpace(content)}
	for _, m := range fenceRe.FindAllStringSubmatch(content, -1) {
		candidates = append(candidates, strings.TrimSpace(m[1]))
	}
	if i := strings.IndexByte(content, '{'); i >= 0 {
		candidates = append(candidates, content[i:])
	}
	for _, c := range candidates {
		var raw json.RawMessage
		if json.NewDecoder(strings.NewReader(c)).Decode(&raw) != nil || len(raw) == 0 || raw[0] != '{' {
			continue
		}
		if json.Unmarshal(raw, v) == nil {
			return nil
		}
	}
	return errors.New("no JSON object in the reply")
}
