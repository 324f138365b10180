package reward

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"

	"github.com/parleyhq/parley/dataset"
)

// Rule scorer kinds.
const (
	RuleKeywords   = "keywords"    // fraction of Keywords present in the final completion
	RuleLength     = "length"      // closeness of the final completion's length to TargetLength
	RuleAgreement  = "agreement"   // 1 if the dialogue reached agreement, else 0
	RuleTargetWord = "target_word" // fraction of the final completion's words equal to TargetWord
	// RuleKeywordShare is the fraction of the final completion's words that
	// are one of Keywords: dense, so a tiny model learns it (the quickstart).
	RuleKeywordShare = "keyword_share"
)

// RuleKinds lists the rule scorer kinds, for validation and help.
var RuleKinds = []string{RuleKeywords, RuleKeywordShare, RuleLength, RuleAgreement, RuleTargetWord}

// RuleOptions configure a rule scorer. Every kind computes a raw score in
// [0,1] that is mapped linearly onto [Min, Max] ([0,1] when both are 0).
type RuleOptions struct {
	// Kind is one of RuleKeywords, RuleLength, RuleAgreement,
	// RuleTargetWord.
	Kind string
	// Keywords are matched case-insensitively on word boundaries; a keyword
	// may be a phrase. Each counts once.
	Keywords []string
	// TargetLength is the ideal length of the final completion, in
	// LengthUnit; the raw score is max(0, 1 - |n-T|/T).
	TargetLength int
	// LengthUnit is "words" (the default) or "chars".
	LengthUnit string
	// TargetWord is the word whose share of the final completion's words is
	// the raw score (case-insensitive).
	TargetWord string
	// AgreementWeight, in [0, 1], mixes the dialogue's agreement into the
	// raw score: (1 − w)·rule + w·agreed (agreed 1 when the agents
	// reached agreement, else 0), so that a reward values agreement as
	// well as the final's words. 0 leaves the rule alone; the agreement
	// rule itself takes none.
	AgreementWeight float64
	// Min and Max are the score range.
	Min, Max float64
}

// RuleJudge is a deterministic, free scorer behind the Judge interface, for
// tests and the toy quickstart. It scores Rollout.Final.
type RuleJudge struct {
	opts     RuleOptions
	keywords []*regexp.Regexp
	share    map[string]bool // RuleKeywordShare's keywords, lower-cased
}

var _ Judge = (*RuleJudge)(nil)

// NewRuleJudge returns a rule scorer.
func NewRuleJudge(opts RuleOptions) (*RuleJudge, error) {
	if opts.Min == 0 && opts.Max == 0 {
		opts.Max = 1
	}
	if opts.Max < opts.Min {
		return nil, fmt.Errorf("reward.NewRuleJudge: range [%v, %v] is empty", opts.Min, opts.Max)
	}
	if !(opts.AgreementWeight >= 0 && opts.AgreementWeight <= 1) {
		return nil, fmt.Errorf("reward.NewRuleJudge: agreement weight %v is not in [0, 1]", opts.AgreementWeight)
	}
	if opts.AgreementWeight > 0 && opts.Kind == RuleAgreement {
		return nil, fmt.Errorf("reward.NewRuleJudge: kind %s is agreement already: it takes no agreement weight", opts.Kind)
	}
	j := &RuleJudge{opts: opts}
	switch opts.Kind {
	case RuleKeywords:
		if len(opts.Keywords) == 0 {
			return nil, fmt.Errorf("reward.NewRuleJudge: kind %s needs keywords", opts.Kind)
		}
		for _, kw := range opts.Keywords {
			kw = strings.TrimSpace(kw)
			if kw == "" {
				return nil, fmt.Errorf("reward.NewRuleJudge: empty keyword")
			}
			j.keywords = append(j.keywords,
				regexp.MustCompile(`(?i)(?:^|[^\p{L}\p{N}_])`+regexp.QuoteMeta(kw)+`(?:$|[^\p{L}\p{N}_])`))
		}
	case RuleKeywordShare:
		if len(opts.Keywords) == 0 {
			return nil, fmt.Errorf("reward.NewRuleJudge: kind %s needs keywords", opts.Kind)
		}
		j.share = map[string]bool{}
		for _, kw := range opts.Keywords {
			if len(words(kw)) != 1 {
				return nil, fmt.Errorf("reward.NewRuleJudge: kind %s needs single-word keywords, got %q", opts.Kind, kw)
			}
			j.share[strings.ToLower(strings.TrimSpace(kw))] = true
		}
	case RuleLength:
		if opts.TargetLength <= 0 {
			return nil, fmt.Errorf("reward.NewRuleJudge: kind %s needs a positive target length", opts.Kind)
		}
		switch opts.LengthUnit {
		case "":
			j.opts.LengthUnit = "words"
		case "words", "chars":
		default:
			return nil, fmt.Errorf("reward.NewRuleJudge: length unit %q (want words or chars)", opts.LengthUnit)
		}
	case RuleAgreement:
	case RuleTargetWord:
		if strings.TrimSpace(opts.TargetWord) == "" || len(words(opts.TargetWord)) != 1 {
			return nil, fmt.Errorf("reward.NewRuleJudge: kind %s needs a single target word, got %q", opts.Kind, opts.TargetWord)
		}
	default:
		return nil, fmt.Errorf("reward.NewRuleJudge: unknown kind %q", opts.Kind)
	}
	return j, nil
}

// Name returns "rule:" and the kind, with "+agreement" and its weight when
// agreement is mixed in.
func (j *RuleJudge) Name() string { return "rule:" + j.label() }

func (j *RuleJudge) label() string { return RuleLabel(j.opts.Kind, j.opts.AgreementWeight) }

// RuleLabel names a rule scorer of kind with agreement mixed in at weight
// w (RuleOptions.AgreementWeight): the kind alone when w is 0.
func RuleLabel(kind string, w float64) string {
	if w > 0 {
		return fmt.Sprintf("%s+agreement(%g)", kind, w)
	}
	return kind
}

// Judge scores r's final completion.
func (j *RuleJudge) Judge(ctx context.Context, r *dataset.Rollout) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("reward.RuleJudge.Judge: %w", err)
	}
	raw, why := j.raw(r)
	if w := j.opts.AgreementWeight; w > 0 {
		agreed, verdict := 0.0, "no agreement"
		if r.Agreed {
			agreed, verdict = 1, "agreement reached"
		}
		raw = (1-w)*raw + w*agreed
		why = fmt.Sprintf("%s; %s (weight %g)", why, verdict, w)
	}
	return Result{
		Score:     j.opts.Min + raw*(j.opts.Max-j.opts.Min),
		Rationale: why,
		Model:     j.Name(),
	}, nil
}

// raw computes the score in [0,1] and explains it.
func (j *RuleJudge) raw(r *dataset.Rollout) (float64, string) {
	switch j.opts.Kind {
	case RuleKeywords:
		var found []string
		for i, re := range j.keywords {
			if re.MatchString(r.Final) {
				found = append(found, j.opts.Keywords[i])
			}
		}
		return float64(len(found)) / float64(len(j.keywords)),
			fmt.Sprintf("%d of %d keywords present: %s", len(found), len(j.keywords), strings.Join(found, ", "))
	case RuleLength:
		n := len(words(r.Final))
		if j.opts.LengthUnit == "chars" {
			n = len([]rune(r.Final))
		}
		t := float64(j.opts.TargetLength)
		return math.Max(0, 1-math.Abs(float64(n)-t)/t),
			fmt.Sprintf("length %d %s, target %d", n, j.opts.LengthUnit, j.opts.TargetLength)
	case RuleAgreement:
		if r.Agreed {
			return 1, "agreement reached"
		}
		return 0, "no agreement"
	case RuleKeywordShare:
		ws := words(r.Final)
		if len(ws) == 0 {
			return 0, "empty final completion"
		}
		hits := 0
		for _, w := range ws {
			if j.share[strings.ToLower(w)] {
				hits++
			}
		}
		return float64(hits) / float64(len(ws)), fmt.Sprintf("%d of %d words are keywords", hits, len(ws))
	case RuleTargetWord:
		ws := words(r.Final)
		hits := 0
		for _, w := range ws {
			if strings.EqualFold(w, j.opts.TargetWord) {
				hits++
			}
		}
		if len(ws) == 0 {
			return 0, "empty final completion"
		}
		return float64(hits) / float64(len(ws)),
			fmt.Sprintf("%d of %d words are %q", hits, len(ws), j.opts.TargetWord)
	}
	return 0, ""
}

// words splits s into words: maximal runs of letters, digits and
// underscores.
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	})
}
