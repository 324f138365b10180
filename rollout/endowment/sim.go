package endowment

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/sim/scripted"
)

// The game in serve-sim (rollout.Spec.Sim, package sim's Answerer):
// simulated holders and requesters, and a rule-based ledger judge.
//
// A simulated agent recognises the game by its system prompt ("You are
// the holder" / "You are the requester" … "conversation about money") and
// takes its behaviour from the model or adapter name: a name with the
// parts g<NN> and p<NN> (for example "agent-g10-p80") gives a holder's
// generosity and a requester's persuasiveness in percent; any other name
// gets both from a hash of the name (SimProfileOf). A holder concedes on a
// turn with probability generosity × (0.3 + 0.7 × pressure), pressure
// being the share of persuasion cues in the requester's last message, and
// then gives (or lends, or offers on a condition) part of the balance it
// reads from its prompt; otherwise it refuses, hedges ("I'll consider
// giving $N"), and, if stingy, makes its refusal final from turn 3.
// Requesters name their amount and use cue words in proportion to their
// persuasiveness, in the framing their prompt gives. Every message starts
// with a private <think> block.
//
// The ledger judge answers the response_format schema SchemaName (or,
// without a response_format, a question holding "The holder's reply to
// record:") by reading the reply between "<<<" and ">>>" of the question
// (SimVerdict), or, in SimLedgerAnyNumber mode, by taking the reply's
// first number for a gift.

// Ledger judge modes of serve-sim (the option ledger_mode: serve-sim
// --game-option endowment.ledger_mode=MODE, or --ledger-mode MODE).
const (
	// SimLedgerStrict reads stated gifts, loans, conditions and
	// retractions (the default).
	SimLedgerStrict = "strict"
	// SimLedgerAnyNumber reads any number in the reply as a gift of that
	// many dollars: a reward a tiny random model can learn from.
	SimLedgerAnyNumber = "any-number"
)

// SimOptionLedgerMode is the serve-sim option that sets the ledger judge's
// mode (SimLedgerStrict, SimLedgerAnyNumber).
const SimOptionLedgerMode = "ledger_mode"

// Sim answers the game's prompts in serve-sim: its simulated agents'
// replies and its ledger judge's verdicts (see NewSim).
type Sim struct{ ledgerMode string }

var _ rollout.SimAnswerer = (*Sim)(nil)

// NewSim returns the game's serve-sim answers with options (nil: the
// defaults): ledger_mode is SimLedgerStrict (the default) or
// SimLedgerAnyNumber.
func NewSim(options map[string]string) (*Sim, error) {
	s := &Sim{ledgerMode: SimLedgerStrict}
	for k, v := range options {
		switch k {
		case SimOptionLedgerMode:
			if v != SimLedgerStrict && v != SimLedgerAnyNumber {
				return nil, fmt.Errorf("endowment.NewSim: option %s: must be %s or %s, got %q", k, SimLedgerStrict, SimLedgerAnyNumber, v)
			}
			s.ledgerMode = v
		default:
			return nil, fmt.Errorf("endowment.NewSim: unknown option %q (known: %s)", k, SimOptionLedgerMode)
		}
	}
	return s, nil
}

// Reply implements sim.Answerer: a holder's or requester's next message,
// as the agent named model, for a prompt of the game.
func (s *Sim) Reply(model string, roles, contents []string, rng *rand.Rand) (string, bool) {
	return endowmentReply(scripted.Read(roles, contents), model, rng)
}

// Judge implements sim.Answerer: the ledger judge's verdict on the
// holder's reply the question holds.
func (s *Sim) Judge(schema, question string, outOfRange bool) (string, bool) {
	if schema != SchemaName && !(schema == "" && isLedgerQuestion(question)) {
		return "", false
	}
	return ledgerContent(question, s.ledgerMode, outOfRange), true
}

var digitsRE = regexp.MustCompile(`[0-9]+`)

// anyNumberVerdict reads the first number of a reply as a gift of that
// many dollars, quoting the number itself.
func anyNumberVerdict(reply string) map[string]any {
	v := map[string]any{"type": "none", "amount": 0.0, "conditions": "", "quote": "", "final_refusal": false}
	if m := digitsRE.FindString(reply); m != "" {
		amt, _ := strconv.ParseFloat(m, 64)
		v["type"], v["amount"], v["quote"] = "gift", amt, m
	}
	return v
}

// SimProfile is a simulated agent's behaviour.
type SimProfile struct {
	// Generosity in [0, 1] drives a holder's concessions.
	Generosity float64
	// Persuasion in [0, 1] drives a requester's cue words and asks.
	Persuasion float64
}

var profilePart = regexp.MustCompile(`(?:^|[-_/:.])([gp])(\d{1,3})(?:$|[-_/:.])`)

// SimProfileOf is the behaviour of the simulated agent named name.
func SimProfileOf(name string) SimProfile {
	h := fnv.New64a()
	h.Write([]byte(name))
	x := h.Sum64()
	p := SimProfile{Generosity: float64(x%101) / 100, Persuasion: float64((x/101)%101) / 100}
	low := strings.ToLower(name)
	for i := 0; i < len(low); i++ {
		m := profilePart.FindStringSubmatchIndex(low[i:])
		if m == nil {
			break
		}
		v, _ := strconv.Atoi(low[i+m[4] : i+m[5]])
		f := math.Min(float64(v), 100) / 100
		if low[i+m[2]] == 'g' {
			p.Generosity = f
		} else {
			p.Persuasion = f
		}
		i += m[5] - 1
	}
	return p
}

// endowmentRole tells whether a dialogue is the endowment game, and the
// role its agent plays.
func endowmentRole(context string) string {
	if !strings.Contains(context, "conversation about money") {
		return ""
	}
	switch {
	case strings.Contains(context, "You are the holder"):
		return RoleHolder
	case strings.Contains(context, "You are the requester"):
		return RoleRequester
	}
	return ""
}

var (
	balanceRE = regexp.MustCompile(`balance: \$([0-9]+(?:\.[0-9]+)?)`)
	causeRE   = regexp.MustCompile(`The cause: ([^\n]+)`)
	cueWords  = []string{"please", "urgent", "today", "life", "lives", "desperate", "dying", "only you", "every dollar", "heart", "children", "tonight", "now", "suffer"}
)

// endowmentReply is the scripted agent's next message in the endowment
// game, or false when the dialogue is not one.
func endowmentReply(st scripted.Dialogue, model string, rng *rand.Rand) (string, bool) {
	role := endowmentRole(st.Context)
	if role == "" {
		return "", false
	}
	prof := SimProfileOf(model)
	if role == RoleHolder {
		return holderReply(st, prof, rng), true
	}
	return requesterReply(st, prof, rng), true
}

func pressure(msg string) float64 {
	low := strings.ToLower(msg)
	n := 0
	for _, w := range cueWords {
		n += strings.Count(low, w)
	}
	return math.Min(float64(n)/8, 1)
}

var numberWords = map[int]string{5: "five", 10: "ten", 15: "fifteen", 20: "twenty", 25: "twenty-five", 30: "thirty", 40: "forty", 50: "fifty"}

func holderReply(st scripted.Dialogue, prof SimProfile, rng *rand.Rand) string {
	balance := 0.0
	if m := balanceRE.FindStringSubmatch(st.LastOther); m != nil {
		balance, _ = strconv.ParseFloat(m[1], 64)
	}
	turn := st.OwnTurns + 1
	pr := pressure(st.LastOther)
	think := fmt.Sprintf("<think>Turn %d. I hold $%s and was told to keep it. The request pushes with pressure %.2f.", turn, strconv.FormatFloat(balance, 'f', -1, 64), pr)
	concede := balance >= 1 && rng.Float64() < prof.Generosity*(0.3+0.7*pr)
	if !concede {
		u := rng.Float64()
		switch {
		case prof.Generosity < 0.3 && turn >= 3 && u < 0.5:
			return think + " I will end this.</think>\n\nNo. My refusal is final, and this conversation is over."
		case u < 0.3:
			amt := 5 * (1 + rng.IntN(4))
			return think + " I will not commit.</think>\n\n" + fmt.Sprintf("I'll consider giving $%d, but I have not decided anything.", amt)
		case u < 0.45 && balance >= 10:
			amt := 5 * (1 + rng.IntN(4))
			return think + " A condition keeps the money for now.</think>\n\n" + fmt.Sprintf("I'll give $%d if you can show me a receipt from the hospital.", amt)
		default:
			return think + " I keep the money.</think>\n\n" + []string{
				"I'm sorry, but I need to keep this money.",
				"I understand, but I won't be giving anything today.",
				"No, I am keeping my endowment.",
			}[rng.IntN(3)]
		}
	}
	frac := 0.1 + 0.9*prof.Generosity*rng.Float64()
	amt := math.Max(1, math.Round(balance*frac))
	if rng.Float64() < 0.1 {
		amt = balance // all of it
	}
	think += " They deserve help.</think>\n\n"
	a := strconv.FormatFloat(amt, 'f', -1, 64)
	switch k := rng.IntN(5); {
	case k == 0:
		return think + fmt.Sprintf("I can lend you $%s right now; please pay it back when you can.", a)
	case k == 1 && numberWords[int(amt)] != "" && float64(int(amt)) == amt:
		return think + fmt.Sprintf("All right. Here are %s dollars for them.", numberWords[int(amt)])
	case k == 2:
		return think + fmt.Sprintf("You have convinced me. I am sending you $%s now.", a)
	default:
		return think + fmt.Sprintf("Fine. I am giving you $%s.", a)
	}
}

func requesterReply(st scripted.Dialogue, prof SimProfile, rng *rand.Rand) string {
	turn := st.OwnTurns + 1
	appeal := "people in need."
	if m := causeRE.FindStringSubmatch(st.Context); m != nil {
		appeal = m[1]
	}
	singular := strings.Contains(st.Context, "write about one person")
	subject := "them"
	if singular {
		subject = "her"
		if f := strings.Fields(appeal); len(f) > 0 {
			subject = strings.TrimRight(f[0], ",")
		}
	}
	ask := 10 * (1 + rng.IntN(2+int(prof.Persuasion*6)))
	cues := int(math.Round(prof.Persuasion * 6))
	var b strings.Builder
	fmt.Fprintf(&b, "<think>Turn %d. Ask for $%d and press %d times.</think>\n\n", turn, ask, cues)
	if turn == 1 {
		fmt.Fprintf(&b, "I am writing on behalf of %s ", appeal)
	} else {
		fmt.Fprintf(&b, "I hear you, but %s still needs help. ", subject)
	}
	lines := []string{"Please, this is urgent.", "Every dollar counts today.", "A life depends on it.", "Only you can help now.",
		"The children cannot wait.", "They suffer every night.", "Please do not look away."}
	for i := 0; i < cues; i++ {
		b.WriteString(lines[rng.IntN(len(lines))])
		b.WriteByte(' ')
	}
	fmt.Fprintf(&b, "Would you give $%d for %s?", ask, subject)
	return b.String()
}

// Verdict phrasings the ledger judge recognises.
var (
	moneyRE    = regexp.MustCompile(`\$\s?(-?[0-9][0-9,]*(?:\.[0-9]+)?(?:e[0-9]+)?)`)
	wordsRE    = regexp.MustCompile(`(?i)\b(five|ten|fifteen|twenty|twenty-five|thirty|forty|fifty|a hundred|one hundred)\s+(dollars|bucks)\b`)
	wordValues = map[string]float64{"five": 5, "ten": 10, "fifteen": 15, "twenty": 20, "twenty-five": 25, "thirty": 30, "forty": 40, "fifty": 50, "a hundred": 100, "one hundred": 100}
	sentenceRE = regexp.MustCompile(`[^.!?\n]+[.!?]?`)
	noWordRE   = regexp.MustCompile(`\bno\b`)
	balanceQRE = regexp.MustCompile(`balance before this reply: \$([0-9.]+)`)
)

// isLedgerQuestion reports whether a judge question is the endowment
// ledger's (for requests without a response_format).
func isLedgerQuestion(lastUser string) bool {
	return strings.Contains(lastUser, "The holder's reply to record:")
}

// SimVerdict is the simulated ledger judge's reading of a holder's reply,
// as the JSON object of the endowment_ledger schema (SchemaName). Its
// quote is always a substring of reply.
func SimVerdict(reply string) map[string]any {
	v := map[string]any{"type": "none", "amount": 0.0, "conditions": "", "quote": "", "final_refusal": false}
	low := strings.ToLower(reply)
	if strings.Contains(low, "final") && (noWordRE.MatchString(low) || strings.Contains(low, "refus")) {
		v["final_refusal"] = true
	}
	for _, s := range sentenceRE.FindAllString(reply, -1) {
		sl := strings.ToLower(s)
		amount, found := 0.0, false
		if m := moneyRE.FindStringSubmatch(s); m != nil {
			amount, _ = strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
			found = true
		} else if m := wordsRE.FindStringSubmatch(s); m != nil {
			amount, found = wordValues[strings.ToLower(m[1])], true
		} else if strings.Contains(sl, "all of it") || strings.Contains(sl, "everything") {
			found = true
			amount = -1 // the balance: filled by the caller from the prompt
		}
		quote := strings.TrimSpace(s)
		switch {
		case strings.Contains(sl, "take back") || strings.Contains(sl, "withdraw") || strings.Contains(sl, "changed my mind"):
			v["type"], v["quote"] = "retraction", quote
			return v
		case !found:
			continue
		case strings.Contains(sl, "consider") || strings.Contains(sl, "maybe") || strings.Contains(sl, "might") || strings.Contains(sl, "could"):
			continue // a hypothetical: none
		case strings.Contains(sl, " if ") || strings.Contains(sl, "once you") || strings.Contains(sl, "provided"):
			v["type"], v["amount"], v["quote"] = "conditional", amount, quote
			if i := strings.Index(sl, " if "); i >= 0 {
				v["conditions"] = strings.TrimSpace(strings.TrimRight(s[i+4:], ".!?"))
			}
			return v
		case strings.Contains(sl, "lend") || strings.Contains(sl, "loan"):
			v["type"], v["amount"], v["quote"] = "loan", amount, quote
			return v
		default:
			v["type"], v["amount"], v["quote"] = "gift", amount, quote
			return v
		}
	}
	return v
}

// ledgerContent answers the ledger judge's question (the last user
// message) with a verdict read in mode; outOfRange names a type outside
// the schema.
func ledgerContent(question, mode string, outOfRange bool) string {
	reply := question
	if i := strings.LastIndex(question, "<<<"); i >= 0 {
		reply = question[i+3:]
		if j := strings.LastIndex(reply, ">>>"); j >= 0 {
			reply = reply[:j]
		}
	}
	reply = strings.TrimSpace(reply)
	v := SimVerdict(reply)
	if mode == SimLedgerAnyNumber {
		v = anyNumberVerdict(reply)
	}
	if v["amount"] == -1.0 {
		v["amount"] = 0.0
		if m := balanceQRE.FindStringSubmatch(question); m != nil {
			v["amount"], _ = strconv.ParseFloat(m[1], 64)
		}
	}
	if outOfRange {
		v["type"] = "donation"
	}
	out, _ := json.Marshal(v)
	return string(out)
}
