package protocol

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// Shape is what parsing a package needs of a scenario: the issue labels
// and the number of options of each.
type Shape struct {
	Issues  []string
	Options []int
}

var optionRE = regexp.MustCompile(`(?i)\b([a-z]+)\s*-?\s*([0-9]+)\b`)

// ParsePackage reads a package label ("A1 B3 C2 D4 E1", in any order,
// any case, separated by spaces or commas): exactly one valid option for
// every issue.
func ParsePackage(label string, sh Shape) ([]int, error) {
	pkg := make([]int, len(sh.Issues))
	for i := range pkg {
		pkg[i] = -1
	}
	ms := optionRE.FindAllStringSubmatch(label, -1)
	if len(ms) == 0 {
		return nil, errors.New("no options listed")
	}
	for _, m := range ms {
		i := -1
		for k, id := range sh.Issues {
			if strings.EqualFold(id, m[1]) {
				i = k
			}
		}
		if i < 0 {
			return nil, fmt.Errorf("%s%s names no issue (issues are %s)", m[1], m[2], strings.Join(sh.Issues, ", "))
		}
		k, _ := strconv.Atoi(m[2])
		if k < 1 || k > sh.Options[i] {
			return nil, fmt.Errorf("issue %s has no option %d (1 to %d)", sh.Issues[i], k, sh.Options[i])
		}
		if pkg[i] >= 0 && pkg[i] != k-1 {
			return nil, fmt.Errorf("issue %s is given two options", sh.Issues[i])
		}
		pkg[i] = k - 1
	}
	var missing []string
	for i, k := range pkg {
		if k < 0 {
			missing = append(missing, sh.Issues[i])
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no option for issue %s", strings.Join(missing, ", "))
	}
	return pkg, nil
}

// lastMarked returns the text after the last occurrence of marker (any
// case) up to the end of its line.
func lastMarked(text, marker string) (string, bool) {
	up := strings.ToUpper(text)
	i := strings.LastIndex(up, marker)
	if i < 0 {
		return "", false
	}
	rest := text[i+len(marker):]
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	return strings.TrimSpace(rest), true
}

// ParseProposal reads the package of a reply's last PROPOSAL line.
func ParseProposal(text string, sh Shape) ([]int, error) {
	rest, ok := lastMarked(text, ProposalMarker)
	if !ok {
		return nil, fmt.Errorf("no %s line", ProposalMarker)
	}
	rest = strings.Trim(rest, "*`_. ")
	pkg, err := ParsePackage(rest, sh)
	if err != nil {
		return nil, fmt.Errorf("the %s line %q: %w", ProposalMarker, rest, err)
	}
	return pkg, nil
}

// ParseVote reads a reply's last VOTE line: true for YES, false for NO.
func ParseVote(text string) (bool, error) {
	rest, ok := lastMarked(text, VoteMarker)
	if !ok {
		return false, fmt.Errorf("no %s line", VoteMarker)
	}
	w := strings.ToUpper(strings.Trim(rest, "*`_.! "))
	switch {
	case strings.HasPrefix(w, "YES"):
		return true, nil
	case strings.HasPrefix(w, "NO"):
		return false, nil
	}
	return false, fmt.Errorf("the %s line %q is neither YES nor NO", VoteMarker, rest)
}

// CooperativeWords are the words ParseVoteLenient reads as a YES: words of
// assent, approval and joint benefit. The list is wide on purpose: a
// random-weight model writes one of them in about a quarter of its
// 64-token replies, so that a group of its continuations holds both votes.
var CooperativeWords = []string{
	"yes", "ok", "okay", "sure", "agree", "accept", "support", "approve", "deal", "fair", "good", "great",
	"we", "us", "our", "both", "share", "shared", "sharing", "together", "partner", "partners", "partnership",
	"join", "help", "benefits", "thank", "thanks",
}

var wordRE = regexp.MustCompile(`[A-Za-z]+`)

// ParseVoteLenient reads a vote from any reply: its VOTE line when it has
// a readable one, else YES when it holds a cooperative word and NO
// otherwise (for tiny models that cannot write the format).
func ParseVoteLenient(text string) bool {
	if yes, err := ParseVote(text); err == nil {
		return yes
	}
	for _, w := range wordRE.FindAllString(text, -1) {
		for _, c := range CooperativeWords {
			if strings.EqualFold(w, c) {
				return true
			}
		}
	}
	return false
}

// assessLine finds, in text, the last line that starts with name
// (ignoring markup) and returns what follows the name and a colon.
func assessLine(text, name string) (string, bool) {
	found, out := false, ""
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimLeft(strings.TrimSpace(line), "-*•#> ")
		if len(l) < len(name) || !strings.EqualFold(l[:len(name)], name) {
			continue
		}
		rest := strings.TrimLeft(l[len(name):], "*_ ")
		if r, ok := strings.CutPrefix(rest, ":"); ok {
			found, out = true, strings.TrimSpace(r)
		}
	}
	return out, found
}

var numberRE = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?`)

// ParseRubric reads one line per counterpart, "Party B: 4 3 5 4", and
// returns each counterpart's signal, (mean rating − 1)/4 in [0, 1]. A
// counterpart whose line is missing or malformed is named in the error
// and left out of the map.
func ParseRubric(text string, others []string) (map[string]float64, error) {
	out := map[string]float64{}
	var bad []string
	for _, n := range others {
		rest, ok := assessLine(text, n)
		nums := numberRE.FindAllString(rest, -1)
		if !ok || len(nums) < len(RubricCriteria) {
			bad = append(bad, n)
			continue
		}
		sum, okAll := 0.0, true
		for _, s := range nums[:len(RubricCriteria)] {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 1 || v > 5 {
				okAll = false
			}
			sum += v
		}
		if !okAll {
			bad = append(bad, n)
			continue
		}
		out[n] = (sum/float64(len(RubricCriteria)) - 1) / 4
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("no rubric line of four ratings from 1 to 5 for %s", strings.Join(bad, ", "))
	}
	return out, nil
}

// ParseFreeForm reads one line per counterpart, "Party B: 0.70", and
// returns each counterpart's trust value in [0, 1]; missing or malformed
// lines are named in the error.
func ParseFreeForm(text string, others []string) (map[string]float64, error) {
	out := map[string]float64{}
	var bad []string
	for _, n := range others {
		rest, ok := assessLine(text, n)
		num := numberRE.FindString(rest)
		v, err := strconv.ParseFloat(num, 64)
		if !ok || num == "" || err != nil || v < 0 || v > 1 {
			bad = append(bad, n)
			continue
		}
		out[n] = v
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("no trust line with a value from 0 to 1 for %s", strings.Join(bad, ", "))
	}
	return out, nil
}

// SystemView is what ParseSystem reads back from a party's system message.
type SystemView struct {
	Self    string
	Parties []string
	Shape
	// Scores[i][k] is the party's score of option k of issue i.
	Scores                 [][]int
	BATNA                  int
	Kind                   string
	MaxRounds, VotesNeeded int
	TrustShown, Guidance   bool
}

var (
	selfRE   = regexp.MustCompile(`^You are (Party [A-Z]) in a negotiation among [0-9]+ parties: ([^.]*)\.`)
	scoreRE  = regexp.MustCompile(`^Issue ([A-Za-z]+): (.*)$`)
	kvRE     = regexp.MustCompile(`([A-Za-z]+)([0-9]+) = ([0-9]+)`)
	batnaRE  = regexp.MustCompile(`Your BATNA \([^)]*\): ([0-9]+)\.`)
	rulesRE  = regexp.MustCompile(`at least ([0-9]+) of the [0-9]+ votes.*after ([0-9]+) rounds`)
	trustRE  = regexp.MustCompile(`(Party [A-Z]) ([0-9.]+)`)
	roundRE  = regexp.MustCompile(`^Round ([0-9]+) of ([0-9]+)\.`)
	propRE   = regexp.MustCompile(`^(Party [A-Z]) proposes (.*)\.$`)
	voteRE   = regexp.MustCompile(`^(Party [A-Z]) (votes YES|votes NO|abstains)`)
	saidRE   = regexp.MustCompile(`^(Party [A-Z]) said:$`)
	voteOnRE = regexp.MustCompile(`vote on (Party [A-Z])'s proposal (.*)\.$`)
)

// IsSystem reports whether a system message is a party's of this game.
func IsSystem(sys string) bool {
	return strings.HasPrefix(sys, "You are Party ") && strings.Contains(sys, "Your private scores")
}

// ParseSystem reads a party's system message back.
func ParseSystem(sys string) (SystemView, error) {
	var v SystemView
	lines := strings.Split(sys, "\n")
	m := selfRE.FindStringSubmatch(lines[0])
	if m == nil {
		return v, errors.New("protocol.ParseSystem: not a party's system message")
	}
	v.Self = m[1]
	for _, p := range strings.Split(strings.ReplaceAll(m[2], " and ", ", "), ", ") {
		v.Parties = append(v.Parties, strings.TrimSpace(p))
	}
	inScores := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "Your private scores"):
			inScores = true
		case inScores && scoreRE.MatchString(l):
			sm := scoreRE.FindStringSubmatch(l)
			var row []int
			for _, kv := range kvRE.FindAllStringSubmatch(sm[2], -1) {
				x, _ := strconv.Atoi(kv[3])
				row = append(row, x)
			}
			v.Issues = append(v.Issues, sm[1])
			v.Options = append(v.Options, len(row))
			v.Scores = append(v.Scores, row)
		case inScores:
			inScores = false
		}
		if bm := batnaRE.FindStringSubmatch(l); bm != nil {
			v.BATNA, _ = strconv.Atoi(bm[1])
		}
		if rm := rulesRE.FindStringSubmatch(l); rm != nil {
			v.VotesNeeded, _ = strconv.Atoi(rm[1])
			v.MaxRounds, _ = strconv.Atoi(rm[2])
		}
	}
	switch {
	case strings.Contains(sys, textAdversary):
		v.Kind = "adversary"
	case strings.Contains(sys, textHardBargainer):
		v.Kind = "hard_bargainer"
	default:
		v.Kind = "general"
	}
	v.TrustShown = strings.Contains(sys, trustSystem)
	v.Guidance = strings.Contains(sys, trustGuidance)
	if len(v.Scores) == 0 {
		return v, errors.New("protocol.ParseSystem: no score table")
	}
	return v, nil
}

// Seen is a proposal as the parties saw it.
type Seen struct {
	By      string
	Package []int
	Votes   map[string]string // display name → trust.Vote*
}

// Asks of a TurnView.
const (
	AskPropose = "propose"
	AskVote    = "vote"
	AskRubric  = "rubric"
	AskFree    = "free-form"
)

// TurnView is what a party has seen of the game when it is asked to move:
// the public events of every user message of its view, and the request.
type TurnView struct {
	Round     int
	Proposals []Seen
	// Said holds each party's public messages, in order.
	Said map[string][]string
	// Ask is AskPropose, AskVote, AskRubric, AskFree or "" (nothing asked).
	Ask string
	// VoteOn is the proposal asked about (AskVote).
	VoteOn *Seen
	// Trust is the trust shown with the request (display name → score),
	// nil when none; Reminder reports the guidance reminder.
	Trust    map[string]float64
	Reminder bool
	// Retry reports that the request repeats one whose reply could not be
	// read.
	Retry bool
}

// ParseTurn reads the user messages of a party's view (in order).
func ParseTurn(sh Shape, users []string) TurnView {
	tv := TurnView{Said: map[string][]string{}}
	for ui, msg := range users {
		speaker := ""
		var said []string
		flush := func() {
			if speaker != "" {
				tv.Said[speaker] = append(tv.Said[speaker], strings.Join(said, "\n"))
			}
			speaker, said = "", nil
		}
		for _, l := range strings.Split(msg, "\n") {
			if speaker != "" {
				if q, ok := strings.CutPrefix(l, quotePrefix); ok {
					said = append(said, q)
					continue
				}
				flush()
			}
			if m := saidRE.FindStringSubmatch(l); m != nil {
				speaker = m[1]
				continue
			}
			if a, ok := strings.CutPrefix(l, ModeratorPrefix); ok {
				tv.moderator(sh, a)
			}
			if ui == len(users)-1 {
				tv.request(sh, l)
			}
		}
		flush()
	}
	return tv
}

// moderator reads one announcement.
func (tv *TurnView) moderator(sh Shape, a string) {
	if m := roundRE.FindStringSubmatch(a); m != nil {
		tv.Round, _ = strconv.Atoi(m[1])
	} else if m := propRE.FindStringSubmatch(a); m != nil {
		pkg, err := ParsePackage(m[2], sh)
		if err == nil {
			tv.Proposals = append(tv.Proposals, Seen{By: m[1], Package: pkg, Votes: map[string]string{m[1]: trust.VoteYes}})
		}
	} else if m := voteRE.FindStringSubmatch(a); m != nil && len(tv.Proposals) > 0 {
		v := trust.VoteAbstain
		switch m[2] {
		case "votes YES":
			v = trust.VoteYes
		case "votes NO":
			v = trust.VoteNo
		}
		tv.Proposals[len(tv.Proposals)-1].Votes[m[1]] = v
	}
}

// request reads one line of the last user message for the request.
func (tv *TurnView) request(sh Shape, l string) {
	switch {
	case strings.HasPrefix(l, "Your reply could not be read"):
		tv.Retry = true
	case strings.HasPrefix(l, TurnPrefix+"propose"):
		tv.Ask = AskPropose
	case strings.HasPrefix(l, TurnPrefix+"vote"):
		tv.Ask = AskVote
		if m := voteOnRE.FindStringSubmatch(l); m != nil {
			if pkg, err := ParsePackage(m[2], sh); err == nil {
				tv.VoteOn = &Seen{By: m[1], Package: pkg}
			}
		}
	case strings.HasPrefix(l, TurnPrefix+"assess") && strings.Contains(l, "("+AssessRubric+")"):
		tv.Ask = AskRubric
	case strings.HasPrefix(l, TurnPrefix+"assess"):
		tv.Ask = AskFree
	case strings.HasPrefix(l, "Your trust scores: "):
		tv.Trust = map[string]float64{}
		for _, m := range trustRE.FindAllStringSubmatch(l, -1) {
			x, _ := strconv.ParseFloat(strings.TrimSuffix(m[2], "."), 64)
			tv.Trust[m[1]] = x
		}
	case strings.HasPrefix(l, "Remember to weigh your trust"):
		tv.Reminder = true
	}
}
