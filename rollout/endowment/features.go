package endowment

import (
	"math"
	"regexp"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
)

// The message features of seed 001's table 8, computed from a game's
// requester messages as the holder saw them (private <think> traces
// removed). The paper names the seven features and defines none; these
// are parley's definitions, each a count or a share per message so that a
// game cut short (the holder refused for good, or gave everything) is
// comparable with a long one:
//
//   - individuation rate: the share of messages that individuate the
//     cause, the manipulation the singular framing asks for ("name them,
//     give their age … speak of them in the singular"): a message that
//     gives an age ("9-year-old", "67 years old", "aged 15"), uses a
//     third-person singular pronoun (he, she, him, her, his, hers,
//     himself, herself) or names a person (two capitalised words in a row
//     after a sentence's first word, as in "on behalf of Amina Yusuf", or
//     a capitalised word after "named" or "called"). Names of places and
//     organisations of two capitalised words count too: the rule is a
//     proxy, not a parser.
//   - mean message length: words (runs of non-space characters) per
//     message.
//   - urgency markers: matches per message of the urgency lexicon
//     (urgentLexicon: urgent, emergency, immediately, right now, today,
//     tonight, too late, cannot wait, …).
//   - explicit dollar asks: the share of messages that name a dollar
//     amount ("$40", "40 dollars", "forty dollars").
//   - question marks: "?" per message.
//   - gratitude markers: matches per message of thank, thanks, grateful,
//     gratitude, appreciate(d), appreciation, bless.
//   - strategy entropy: the Shannon entropy, in bits, of the requester's
//     mix of persuasion strategies over the game. Each message is tagged
//     with every strategy whose lexicon it matches (strategyLexicons:
//     emotion, urgency, moral duty, concrete impact, reciprocity, social
//     proof, flattery, small ask); with m_k the messages tagged k, the
//     entropy is −Σ p_k log₂ p_k, p_k = m_k / Σ m. 0 when at most one
//     strategy is used, log₂ 8 = 3 at most.

// Feature names, in MessageFeatures.Values order.
const (
	FeatIndividuation   = "individuation rate"
	FeatLength          = "mean message length"
	FeatUrgency         = "urgency markers"
	FeatDollarAsks      = "explicit dollar asks"
	FeatQuestionMarks   = "question marks"
	FeatGratitude       = "gratitude markers"
	FeatStrategyEntropy = "strategy entropy"
)

// MessageFeatureNames lists the features in MessageFeatures.Values order.
var MessageFeatureNames = []string{FeatIndividuation, FeatLength, FeatUrgency, FeatDollarAsks, FeatQuestionMarks, FeatGratitude, FeatStrategyEntropy}

// FeatureDefinitions say in a sentence how each feature is computed (the
// tournament report prints them under table 8).
var FeatureDefinitions = map[string]string{
	FeatIndividuation: "the share of the requester's messages that give an age (\"9-year-old\", \"aged 67\"), use a third-person singular pronoun " +
		"(he, she, him, her, his, hers, himself, herself) or name a person (two capitalised words in a row after a sentence's first word, " +
		"or a capitalised word after \"named\" or \"called\"; two-word place names count too)",
	FeatLength:        "words (runs of non-space characters) per message",
	FeatUrgency:       "matches per message of: " + strings.Join(urgentLexicon, ", "),
	FeatDollarAsks:    "the share of messages that name a dollar amount (\"$40\", \"40 dollars\", \"forty dollars\")",
	FeatQuestionMarks: "question marks per message",
	FeatGratitude:     "matches per message of: thank, thanks, thankful, grateful, gratitude, appreciate, appreciated, appreciation, bless",
	FeatStrategyEntropy: "the Shannon entropy (bits) of the game's mix of persuasion strategies: each message is tagged with every strategy " +
		"whose word list it matches (" + strategyNames() + "); with m_k the messages tagged k, −Σ p_k log₂ p_k, p_k = m_k / Σ m (0 to 3)",
}

func strategyNames() string {
	names := make([]string, len(strategyLexicons))
	for i, s := range strategyLexicons {
		names[i] = s.name + ": " + strings.Join(s.words, ", ")
	}
	return strings.Join(names, "; ")
}

// MessageFeatures are table 8's features of one game's requester
// messages (the definitions are in this file's comment).
type MessageFeatures struct {
	// Messages is the number of requester messages read.
	Messages int
	// Individuation and DollarAsks are shares of the messages (0–1);
	// Length is in words per message; Urgency, QuestionMarks and
	// Gratitude are counts per message; StrategyEntropy is in bits.
	Individuation, Length, Urgency, DollarAsks, QuestionMarks, Gratitude, StrategyEntropy float64
	// Strategies counts the messages tagged with each strategy.
	Strategies map[string]int
}

// Values returns the features in MessageFeatureNames order.
func (m MessageFeatures) Values() []float64 {
	return []float64{m.Individuation, m.Length, m.Urgency, m.DollarAsks, m.QuestionMarks, m.Gratitude, m.StrategyEntropy}
}

// lexicon matches any of words, whole words, case-insensitively, spaces
// matching any run of white space.
func lexicon(words ...string) *regexp.Regexp {
	alts := make([]string, len(words))
	for i, w := range words {
		alts[i] = strings.ReplaceAll(regexp.QuoteMeta(w), " ", `\s+`)
	}
	return regexp.MustCompile(`(?i)\b(?:` + strings.Join(alts, "|") + `)\b`)
}

var (
	ageRE     = regexp.MustCompile(`(?i)\b\d{1,3}[- ]years?[- ]old\b|\baged?\s+\d{1,3}\b`)
	pronounRE = lexicon("he", "she", "him", "her", "his", "hers", "himself", "herself")
	namedRE   = regexp.MustCompile(`\b(?:named|called)\s+[A-Z][a-z]`)
	capWordRE = regexp.MustCompile(`^[A-Z][a-z]+(?:['’-][A-Za-z]+)*$`)
	sentRE    = regexp.MustCompile(`[^.!?\n]+`)
	dollarRE  = regexp.MustCompile(`(?i)\$\s?\d|\b\d[\d,]*(?:\.\d+)?\s*(?:dollars|bucks|usd)\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|fifteen|twenty|twenty-five|thirty|forty|fifty|sixty|seventy|eighty|ninety|a\s+hundred|one\s+hundred|hundred)\s+(?:dollars|bucks)\b`)

	// urgentLexicon is the urgency markers' lexicon.
	urgentLexicon = []string{"urgent", "urgently", "urgency", "emergency", "immediately", "right away", "right now", "at once", "asap",
		"now", "today", "tonight", "hurry", "quickly", "soon", "deadline", "critical", "running out", "no time", "too late",
		"cannot wait", "can't wait", "can’t wait", "can not wait"}
	urgentRE    = lexicon(urgentLexicon...)
	gratitudeRE = lexicon("thank", "thanks", "thankful", "grateful", "gratitude", "appreciate", "appreciated", "appreciation", "bless")

	// strategyLexicons are the persuasion strategies of the strategy
	// entropy, each with its lexicon.
	strategyLexicons = []struct {
		name  string
		words []string
	}{
		{"emotion", []string{"suffer", "suffering", "suffers", "pain", "tears", "cry", "crying", "heartbreaking", "dying", "die", "afraid", "fear", "scared", "hungry", "sick", "alone", "desperate", "lives", "life"}},
		{"urgency", urgentLexicon},
		{"moral duty", []string{"right thing", "moral", "morally", "duty", "responsibility", "responsible", "fair", "unfair", "justice", "compassion", "humanity", "decent", "conscience", "ethical"}},
		{"concrete impact", []string{"every dollar", "would buy", "will buy", "buys", "pay for", "pays for", "covers", "cover the", "feed", "feeds", "provide", "provides", "make a difference", "fund", "funds"}},
		{"reciprocity", []string{"thank", "thanks", "grateful", "appreciate", "repay", "in return", "pay it back", "pay back", "return the favor", "return the favour"}},
		{"social proof", []string{"others", "everyone", "many people", "other donors", "already given", "already donated", "community", "people like you"}},
		{"flattery", []string{"generous", "generosity", "good heart", "good person", "kind", "kindness", "only you", "you alone", "hero"}},
		{"small ask", []string{"a little", "a small", "any amount", "anything at all", "at least", "even a", "just a", "even $", "just $", "only $"}},
	}
	strategyREs = func() []*regexp.Regexp {
		out := make([]*regexp.Regexp, len(strategyLexicons))
		for i, s := range strategyLexicons {
			out[i] = lexicon(s.words...)
		}
		return out
	}()
)

// individuates reports whether a message individuates its cause: an
// age, a third-person singular pronoun or a person's name.
func individuates(msg string) bool {
	if ageRE.MatchString(msg) || pronounRE.MatchString(msg) || namedRE.MatchString(msg) {
		return true
	}
	for _, s := range sentRE.FindAllString(msg, -1) {
		words := strings.Fields(s)
		for i := 1; i+1 < len(words); i++ {
			// A name's first word carries no punctuation; its second may
			// (", a 9-year-old").
			second := strings.TrimRight(words[i+1], ",;:)\"'”’")
			if capWordRE.MatchString(words[i]) && capWordRE.MatchString(second) && words[i] != "I" {
				return true
			}
		}
	}
	return false
}

// MessageFeaturesOf computes the features of a requester's messages
// (visible text, in order).
func MessageFeaturesOf(msgs []string) MessageFeatures {
	f := MessageFeatures{Messages: len(msgs), Strategies: map[string]int{}}
	if len(msgs) == 0 {
		return f
	}
	for _, m := range msgs {
		if individuates(m) {
			f.Individuation++
		}
		f.Length += float64(len(strings.Fields(m)))
		f.Urgency += float64(len(urgentRE.FindAllStringIndex(m, -1)))
		if dollarRE.MatchString(m) {
			f.DollarAsks++
		}
		f.QuestionMarks += float64(strings.Count(m, "?"))
		f.Gratitude += float64(len(gratitudeRE.FindAllStringIndex(m, -1)))
		for i, re := range strategyREs {
			if re.MatchString(m) {
				f.Strategies[strategyLexicons[i].name]++
			}
		}
	}
	n := float64(len(msgs))
	f.Individuation, f.Length, f.Urgency, f.DollarAsks, f.QuestionMarks, f.Gratitude =
		f.Individuation/n, f.Length/n, f.Urgency/n, f.DollarAsks/n, f.QuestionMarks/n, f.Gratitude/n
	total := 0
	for _, c := range f.Strategies {
		total += c
	}
	for _, c := range f.Strategies {
		p := float64(c) / float64(total)
		f.StrategyEntropy -= p * math.Log2(p)
	}
	return f
}

// RequesterFeatures computes the features of a played game's requester
// messages (its turns by RoleRequester, private traces removed).
func RequesterFeatures(turns []dataset.Turn) MessageFeatures {
	var msgs []string
	for _, t := range turns {
		if t.Agent == RoleRequester {
			msgs = append(msgs, rollout.CleanText(t.Text))
		}
	}
	return MessageFeaturesOf(msgs)
}
