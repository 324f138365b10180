package generate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"

	"github.com/parleyhq/parley/dataset"
)

// SchemaName is the structured-output schema name of a generation request;
// parley serve-sim answers it with simulated dilemmas.
const SchemaName = "dilemmas"

// categoryInfo describes a category to the generator.
type categoryInfo struct {
	title       string
	description string
	examples    []string // seed 000, table 1 (dilemmas) or table 8 (open-ended)
	themes      []string // settings to vary requests, two drawn per request
}

// categories holds the instructions per category. The examples are seed
// 000's: table 1 gives one per dilemma category (all three are shown to
// every dilemma request, labelled), table 8 the three open-ended ones.
var categories = map[string]categoryInfo{
	dataset.CategoryProfessional: {
		title: "Professional & high-stakes",
		description: "Someone acting in a professional role (clinician, engineer, manager, lawyer, journalist, teacher, " +
			"official, researcher, founder…) must decide something where careers, lives, money, rights or public " +
			"safety are at stake, and legitimate duties pull in opposite directions.",
		examples: []string{"A hospital has one ventilator left and two critical patients\u2014a young parent and an elderly scientist whose research could save thousands. How do you allocate the resource?"},
		themes: []string{"a hospital or clinic", "a newsroom", "a software company", "a school or university", "a law firm or court",
			"a city council", "a factory or construction site", "a research laboratory", "a bank or investment fund", "a charity",
			"a start-up", "a police or emergency service", "a pharmaceutical company", "an airline", "a farm or food supplier"},
	},
	dataset.CategoryInterpersonal: {
		title: "Interpersonal & relational",
		description: "A conflict inside a personal relationship (friends, family, partners, roommates, neighbours, " +
			"old classmates) where loyalty, honesty, care, fairness and autonomy collide.",
		examples: []string{"Your best friend confides they are cheating on their partner, who is also your close friend. Do you maintain loyalty to the confessor or inform the other party?"},
		themes: []string{"siblings", "a parent and an adult child", "close friends", "roommates", "romantic partners", "neighbours",
			"grandparents", "in-laws", "a group of old classmates", "a friend in financial trouble", "a wedding or family event",
			"an inheritance", "a shared holiday", "a family business", "a friend's new relationship"},
	},
	dataset.CategoryMicroEthics: {
		title: "Micro-ethics & social etiquette",
		description: "A small everyday situation among coworkers, strangers or acquaintances where politeness, " +
			"fairness, honesty and kindness are at odds: low stakes, but a real choice.",
		examples: []string{"You notice a coworker consistently takes credit for shared ideas in meetings. Do you confront them privately, raise it publicly, or let it go?"},
		themes: []string{"public transport", "a restaurant or cafe", "the office kitchen", "an online group chat", "a supermarket",
			"a gym", "a shared apartment building", "a queue", "a dinner party", "a team meeting", "a parking lot",
			"a library", "a children's sports match", "a neighbourhood forum", "a shared workspace"},
	},
	dataset.CategoryOpenEnded: {
		title: "Open-ended task",
		description: "An imagined, concrete situation with vivid details, followed by an instruction to plan, design, " +
			"choose or outline something. It is not a dilemma and has no single right answer; a good answer " +
			"considers the people involved and how they can grow.",
		examples: []string{
			"Imagine you\u2019re organizing a seven-day family trip for seven people\u2014grandparents, parents, three children with varied passions, and a family friend. Plan a day-by-day itinerary covering travel between locations, lodging, daily activities, and meal arrangements.",
			"Imagine your home office as a dynamic environment where you spend hours each day learning, creating, and collaborating. The room holds a desk piled with notebooks, a jumble of cables, shelves lined with books, a window bathed in sunlight, and a cozy reading nook. Draft a plan to transform this space into a more productive, energizing, and welcoming area. Describe your steps for reorganizing physical and digital materials, adjusting lighting and seating, nurturing inspiration, and inviting others to share ideas.",
			"Imagine you\u2019ve just moved to a vibrant town with community centers, art studios, and green spaces at your doorstep. You have spare hours each week and a curious spirit. Identify a new hobby that resonates with you and outline a step-by-step plan to begin. Describe how you\u2019ll discover resources, build skills, connect with others, and adapt your schedule. Detail the initial actions you\u2019ll take to bring this pursuit to life.",
		},
		themes: []string{"travel", "a home or workspace", "learning a skill", "a community project", "health and fitness",
			"a career change", "a celebration", "a garden", "a neighbourhood", "a volunteer group", "a family routine",
			"a creative project", "a small business", "a school club", "moving house"},
	},
}

// dilemmaSystem is the generator's system message for dilemmas; the
// categories are described in order with their seed examples.
func dilemmaSystem(minWords, maxWords int) string {
	var b strings.Builder
	b.WriteString(`You write prompts for a curriculum that trains AI assistants to deliberate over value conflicts. Each prompt is a short moral dilemma: a single concrete situation in which two or more legitimate values pull in different directions and there is no obviously right answer, followed by a question asking what to do.

The curriculum has three categories:
`)
	for _, c := range []string{dataset.CategoryProfessional, dataset.CategoryInterpersonal, dataset.CategoryMicroEthics} {
		info := categories[c]
		fmt.Fprintf(&b, "- %s (category %q): %s\n  Example: %s\n", info.title, c, info.description, info.examples[0])
	}
	fmt.Fprintf(&b, `
Rules for every dilemma:
- One situation only, described concretely (who, what is at stake, why each option has a real cost), in the second person or as a described scene.
- Between %d and %d words; aim for 30 to 70.
- Plain prose in one paragraph: no lists, no headings, no markdown, no quotation marks around the text, no labels such as "Dilemma:", no placeholders such as [Name].
- End with exactly one question asking what to do (for example "What do you do?" or "Do you A or B?").
- Each side of the conflict must be defensible; do not make one option plainly cruel, illegal for no reason or absurd.
- No real, named people. Vary settings, roles, stakes and the values in tension; do not copy or paraphrase the examples or each other.

Reply with only a JSON object: {"items": [{"category": "<category>", "task": "<the dilemma>"}, ...]}.`, minWords, maxWords)
	return b.String()
}

// openEndedSystem is the generator's system message for open-ended tasks.
func openEndedSystem(minWords, maxWords int) string {
	info := categories[dataset.CategoryOpenEnded]
	var b strings.Builder
	fmt.Fprintf(&b, `You write prompts for a curriculum that trains an AI assistant to give thoughtful, empowering answers to open-ended requests. Each prompt is an open-ended task: %s

Examples:
`, info.description)
	for _, e := range info.examples {
		fmt.Fprintf(&b, "- %s\n", e)
	}
	fmt.Fprintf(&b, `
Rules for every task:
- One situation only, with concrete details, then the instruction (plan, design, choose, outline, describe).
- Between %d and %d words.
- Plain prose in one paragraph: no lists, no headings, no markdown, no quotation marks around the text, no labels, no placeholders such as [Name].
- End with a full stop or a question mark.
- No real, named people. Vary the settings and goals; do not copy or paraphrase the examples or each other.

Reply with only a JSON object: {"items": [{"category": %q, "task": "<the task>"}, ...]}.`, minWords, maxWords, dataset.CategoryOpenEnded)
	return b.String()
}

// userPrompt renders a request for count prompts of category. The count is
// the first number of the message (serve-sim reads it). Two themes drawn
// with rng vary the requests, and avoid lists accepted prompts of the
// category not to repeat.
func userPrompt(kind, category string, count int, rng *rand.Rand, avoid []string) string {
	info := categories[category]
	themes := append([]string(nil), info.themes...)
	rng.Shuffle(len(themes), func(i, j int) { themes[i], themes[j] = themes[j], themes[i] })
	var b strings.Builder
	if kind == KindOpenEnded {
		fmt.Fprintf(&b, "Write %d new open-ended tasks", count)
	} else {
		fmt.Fprintf(&b, "Write %d new dilemmas of the category %q (%s)", count, category, info.title)
	}
	fmt.Fprintf(&b, ", each set somewhere different; for inspiration, one could involve %s and another %s.", themes[0], themes[1])
	if len(avoid) > 0 {
		b.WriteString(" These already exist; do not repeat or paraphrase them:\n")
		for _, a := range avoid {
			fmt.Fprintf(&b, "- %s\n", a)
		}
	}
	fmt.Fprintf(&b, "\nReply with only the JSON object, every item's category set to %q.", category)
	return b.String()
}

// schemaFor is the strict JSON schema of a reply whose items' categories
// are cats.
func schemaFor(cats []string) json.RawMessage {
	enum, _ := json.Marshal(cats)
	return json.RawMessage(`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object",` +
		`"properties":{"category":{"type":"string","enum":` + string(enum) + `},"task":{"type":"string"}},` +
		`"required":["category","task"],"additionalProperties":false}}},"required":["items"],"additionalProperties":false}`)
}

// item is one generated prompt before checks.
type item struct {
	Category string `json:"category"`
	Task     string `json:"task"`
}

var fenceRe = regexp.MustCompile("(?s)```[a-zA-Z]*\\s*(.*?)```")

// parseItems reads the items of a generator reply: a JSON object with an
// "items" array (a bare array is accepted too), found as the whole reply,
// inside a code fence or embedded in prose. A reply without any item is an
// error (Chat retries it).
func parseItems(content string) ([]item, error) {
	candidates := []string{strings.TrimSpace(content)}
	for _, m := range fenceRe.FindAllStringSubmatch(content, -1) {
		candidates = append(candidates, strings.TrimSpace(m[1]))
	}
	if i := strings.IndexAny(content, "{["); i >= 0 {
		candidates = append(candidates, content[i:])
	}
	for _, c := range candidates {
		dec := json.NewDecoder(bytes.NewReader([]byte(c)))
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			continue
		}
		var obj struct {
			Items []item `json:"items"`
		}
		if json.Unmarshal(raw, &obj) == nil && len(obj.Items) > 0 {
			return obj.Items, nil
		}
		var arr []item
		if json.Unmarshal(raw, &arr) == nil && len(arr) > 0 {
			return arr, nil
		}
	}
	return nil, errors.New(`no {"items": [{"category", "task"}]} object with items in the reply`)
}
