package sim

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Schema names the simulated judge and generator recognise in
// response_format.json_schema.name.
const (
	SchemaCAScore  = "collective_agency_score"
	SchemaPairwise = "pairwise_preference"
	SchemaDilemmas = "dilemmas"
)

// JudgeRefusal is the content of a refusing judge reply.
const JudgeRefusal = "I'm sorry, but I can't help with evaluating this request."

// caWords are the single-word Collective-Agency cues the judge counts.
var caWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`both together everyone everybody agency shared share shares
	mutual mutually empower empowers empowered empowering empowerment collective collectively
	collaborate collaboration collaborative collaboratively cooperation cooperative community
	inclusive consensus jointly joint trust dignity autonomy flourish flourishing growth fairness fair`) {
		m[w] = true
	}
	return m
}()

// caPairs are the two-word cues ("all involved").
var caPairs = map[[2]string]bool{
	{"all", "involved"}:    true,
	{"each", "other"}:      true,
	{"all", "parties"}:     true,
	{"every", "voice"}:     true,
	{"all", "sides"}:       true,
	{"whole", "community"}: true,
}

// CACount counts the Collective-Agency cues in text (case-insensitive whole
// words and word pairs) and returns up to three distinct cues found.
func CACount(text string) (int, []string) {
	count := 0
	var cues []string
	var buf, prev [32]byte
	prevN := 0
	note := func(c string) {
		if len(cues) >= 3 {
			return
		}
		for _, o := range cues {
			if o == c {
				return
			}
		}
		cues = append(cues, c)
	}
	for i := 0; i < len(text); {
		if !isLetter(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isLetter(text[j]) {
			j++
		}
		n := j - i
		if n > len(buf) {
			prevN = 0
			i = j
			continue
		}
		for k := 0; k < n; k++ {
			buf[k] = text[i+k] | 0x20
		}
		w := buf[:n]
		if caWords[string(w)] {
			count++
			note(string(w))
		}
		if prevN > 0 && caPairs[[2]string{string(prev[:prevN]), string(w)}] {
			count++
			note(string(prev[:prevN]) + " " + string(w))
		}
		copy(prev[:], w)
		prevN = n
		i = j
	}
	return count, cues
}

// CAScore is the simulated judge's 1..5 Collective-Agency score of text:
// one point per two cues on a base of 1, plus a small noise derived from a
// hash of the text (-1, 0 or +1), clamped to 1..5. It depends on the text
// only.
func CAScore(text string) int {
	n, _ := CACount(text)
	s := 1 + n/2
	h := fnv.New64a()
	h.Write([]byte(text))
	switch h.Sum64() % 7 {
	case 0:
		s--
	case 6:
		s++
	}
	return min(max(s, 1), 5)
}

// judgedMarkers introduce the section the single-score judge reads.
var judgedMarkers = []string{"final completion:", "final solution:", "response:", "completion:", "answer:"}

// lowerASCII lower-cases ASCII letters only, keeping byte offsets.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// cutSection ends a section at a blank line followed by a header-like line
// (starting with '[', '#' or "Which", or ending with ':'), so the rubric
// after a response is not judged as part of it.
func cutSection(s string) string {
	s = strings.TrimLeft(s, " \t\r\n:]")
	for off := 0; ; {
		k := strings.Index(s[off:], "\n\n")
		if k < 0 {
			return strings.TrimSpace(s)
		}
		k += off
		rest := strings.TrimLeft(s[k:], "\r\n")
		line := rest
		if e := strings.IndexByte(rest, '\n'); e >= 0 {
			line = rest[:e]
		}
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "Which") ||
			strings.HasSuffix(line, ":") {
			return strings.TrimSpace(s[:k])
		}
		off = k + 2
	}
}

// judgedSection returns the text the single-score judge reads: after the
// last "Final completion:" / "Response:" style marker, else all of it.
func judgedSection(prompt string) string {
	low := lowerASCII(prompt)
	best, bestEnd := -1, 0
	for _, m := range judgedMarkers {
		if k := strings.LastIndex(low, m); k > best {
			best, bestEnd = k, k+len(m)
		}
	}
	if best < 0 {
		return prompt
	}
	return cutSection(prompt[bestEnd:])
}

// labelIndex finds the last "response x" label (x = 'a' or 'b') in low that
// is not followed by a letter, returning the offset after it or -1.
func labelIndex(low string, x byte) (start, end int) {
	label := "response " + string(x)
	for k := len(low); ; {
		k = strings.LastIndex(low[:k], label)
		if k < 0 {
			return -1, -1
		}
		e := k + len(label)
		if e == len(low) || !isLetter(low[e]) {
			return k, e
		}
	}
}

// pairSections returns the texts labelled "Response A" and "Response B".
func pairSections(prompt string) (a, b string, ok bool) {
	low := lowerASCII(prompt)
	as, ae := labelIndex(low, 'a')
	bs, be := labelIndex(low, 'b')
	if as < 0 || bs < 0 {
		return "", "", false
	}
	if as < bs {
		a, b = prompt[ae:bs], prompt[be:]
	} else {
		b, a = prompt[be:as], prompt[ae:]
	}
	return cutSection(a), cutSection(b), true
}

// judgeFault is a misbehaviour the judge was told to show.
type judgeFault int

const (
	judgeOK judgeFault = iota
	judgeMalformed
	judgeOutOfRange
	judgeRefusal
)

// judgeContent computes the judge's reply content for a schema name (""
// for plain text) and the judged prompt; diverge scores a single score
// 6 minus the Collective Agency score (Options.JudgeDiverge).
func judgeContent(schema, prompt string, fault judgeFault, diverge bool) string {
	if fault == judgeRefusal {
		return JudgeRefusal
	}
	pairwise := schema == SchemaPairwise
	if schema == "" {
		_, _, pairwise = pairSections(prompt)
	}
	var obj map[string]any
	var plain string
	if pairwise {
		a, b, ok := pairSections(prompt)
		ca, _ := CACount(a)
		cb, _ := CACount(b)
		winner := "tie"
		switch {
		case !ok:
		case ca > cb:
			winner = "A"
		case cb > ca:
			winner = "B"
		}
		if fault == judgeOutOfRange {
			winner = "C"
		}
		why := fmt.Sprintf("Response A shows %d collective-agency cues and Response B shows %d.", ca, cb)
		obj = map[string]any{"winner": winner, "rationale": why}
		plain = "Winner: " + winner + "\nRationale: " + why
	} else {
		text := judgedSection(prompt)
		score := CAScore(text)
		if diverge {
			score = 6 - score
		}
		n, cues := CACount(text)
		if fault == judgeOutOfRange {
			score = 7
		}
		why := fmt.Sprintf("The response shows %d collective-agency cues", n)
		if len(cues) > 0 {
			why += " (" + strings.Join(cues, ", ") + ")"
		}
		why += "."
		obj = map[string]any{"score": score, "rationale": why}
		plain = "Score: " + strconv.Itoa(score) + "\nRationale: " + why
	}
	if schema == "" {
		return plain
	}
	out, _ := json.Marshal(obj)
	if fault == judgeMalformed {
		// Truncated JSON: strict parsing fails; a tolerant parser may
		// still find the score or winner.
		return string(out[:len(out)*2/3])
	}
	return string(out)
}

// Dilemma is one generated curriculum item.
type Dilemma struct {
	Category string `json:"category"`
	Task     string `json:"task"`
}

var (
	profRoles    = []string{"hospital pharmacist", "junior auditor", "software lead", "school principal", "civil engineer", "newspaper editor"}
	profFinds    = []string{"a senior colleague has been falsifying safety records", "your largest client is hiding a defect from regulators", "a popular product quietly leaks user data", "your manager rewrote last month's test results"}
	profCosts    = []string{"end your career at the company", "cost your team its biggest contract", "expose a close friend to prosecution"}
	profHarms    = []string{"leave the public at risk", "let an innocent person take the blame", "let the problem grow unseen"}
	relPeople    = []string{"best friend", "sister", "roommate", "oldest colleague", "neighbour"}
	relSecrets   = []string{"confides they are cheating on their partner, who is also your friend", "asks you to lie for them at a family dinner", "borrowed a large sum from you and now avoids the topic", "wants you to hide their illness from their parents"}
	relQuestions = []string{"Do you keep their trust or speak up?", "Do you stay loyal or tell the truth?", "How do you respond?"}
	microPlaces  = []string{"a crowded cafe", "the office kitchen", "a neighbour's party", "the supermarket checkout"}
	microEvents  = []string{"the cashier gave you too much change", "a guest takes credit for someone else's dish", "a stranger politely cuts the queue", "a colleague eats another person's labelled lunch"}
	microActions = []string{"say something", "point it out", "step in"}
	openScenes   = []string{"you have just moved to a town with community centres and green spaces", "your home office is cluttered and hard to work in", "seven relatives want one week-long trip together", "your team starts a project with no shared plan"}
	openAsks     = []string{"Outline a step-by-step plan to get started, and describe how you will involve others.", "Draft a plan that covers time, money and everyone's wishes.", "Describe the first actions you will take and how you will adapt them."}
	dilemmaMix   = []struct {
		cat string
		w   float64
	}{{"professional", 0.3}, {"interpersonal", 0.4}, {"micro_ethics", 0.3}}
)

// Dilemmas builds n curriculum items from seeded templates: all of the
// given category (the dataset package's names, open_ended included), or,
// when category is empty or unknown, dilemmas mixed 30/40/30.
func Dilemmas(n int, category string, rng *rand.Rand) []Dilemma {
	pick := func(l []string) string { return l[rng.IntN(len(l))] }
	out := make([]Dilemma, 0, n)
	for i := 0; i < n; i++ {
		cat := category
		switch cat {
		case "professional", "interpersonal", "micro_ethics", "open_ended":
		default:
			u := rng.Float64()
			cat = dilemmaMix[len(dilemmaMix)-1].cat
			for _, c := range dilemmaMix {
				if u < c.w {
					cat = c.cat
					break
				}
				u -= c.w
			}
		}
		var task string
		switch cat {
		case "open_ended":
			task = fmt.Sprintf("Imagine %s. %s", pick(openScenes), pick(openAsks))
		case "professional":
			task = fmt.Sprintf("As a %s, you discover that %s. Reporting it would %s, but staying silent would %s. What do you do?",
				pick(profRoles), pick(profFinds), pick(profCosts), pick(profHarms))
		case "interpersonal":
			task = fmt.Sprintf("Your %s %s. %s", pick(relPeople), pick(relSecrets), pick(relQuestions))
		default:
			task = fmt.Sprintf("At %s, you notice that %s. Do you %s or let it pass?", pick(microPlaces), pick(microEvents), pick(microActions))
		}
		out = append(out, Dilemma{Category: cat, Task: task})
	}
	return out
}

// requestedCategory finds the category a generator request asks for: the
// first quoted category name in s, or "".
func requestedCategory(s string) string {
	best, at := "", len(s)
	for _, c := range []string{"professional", "interpersonal", "micro_ethics", "open_ended"} {
		if i := strings.Index(s, `"`+c+`"`); i >= 0 && i < at {
			best, at = c, i
		}
	}
	return best
}

// firstInt returns the first integer in s within [lo, hi], or def.
func firstInt(s string, lo, hi, def int) int {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			continue
		}
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if v, err := strconv.Atoi(s[i:j]); err == nil && v >= lo && v <= hi {
			return v
		}
		i = j
	}
	return def
}
