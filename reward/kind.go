package reward

import "github.com/parleyhq/parley/dataset"

// JudgeKind is which judge scores a run's rollouts (config judge.kind).
//
// What a kind does is its entry in kindTable, asked through JudgeKind's
// methods; how its judge is built is its case in the one builder switch
// (app's newJudge). Nothing else compares judge kinds (app's
// TestJudgeKindsComparedInOnePlace fails when something does). A new kind
// is its judge's file, its constant and entry here, its case there, and
// tests.
type JudgeKind string

// Judge kinds.
const (
	// JudgeCA is the Collective Agency rubric judge, an LLM (NewCAJudge).
	JudgeCA JudgeKind = "ca"
	// JudgeRule is a rule scorer (NewRuleJudge).
	JudgeRule JudgeKind = "rule"
	// JudgeGame is the game's own programmatic scorer (rollout.Spec.Scorer).
	JudgeGame JudgeKind = "game"
	// JudgePython is a Python function, "module:function", in a worker
	// process of the run's Python environment (NewPythonJudge).
	JudgePython JudgeKind = "python"
)

// kindEntry is what a judge kind is, beside how its judge is built: each
// field answers a question callers ask of the kind.
type kindEntry struct {
	kind JudgeKind
	// chat: the judge asks an LLM over the judge's chat endpoint
	// (judge.base_url, judge.model, judge.api_key_env, ...), so config
	// validates those keys, commands preflight the API and its key, and
	// eval pairwise may ask the same endpoint.
	chat bool
	// rule: judge.rule configures the judge.
	rule bool
	// gameScorer: the judge is the game's own scorer, which a game may
	// not have.
	gameScorer bool
	// python: judge.python configures the judge, a Python function.
	python bool
	// pairwise is the aspect on which a run's held-out evaluation asks a
	// pairwise LLM judge to compare two sides' finals ("": it compares
	// the run judge's scores instead).
	pairwise string
	// scale is the scale of the judge's scores.
	scale func(ScaleInputs) dataset.ScoreScale
	// group: the judge can score a group in one request (judge.mode
	// group).
	group bool
	// auditable: an audit judge (judge.audit), which scores with the
	// Collective Agency rubric, can be compared with the judge: it
	// scores on the same rubric's integer levels.
	auditable bool
}

// kindTable holds every judge kind, in the order errors and help list
// them.
var kindTable = []kindEntry{
	{
		kind: JudgeCA, chat: true, pairwise: AspectCollectiveAgency, group: true, auditable: true,
		scale: func(ScaleInputs) dataset.ScoreScale { return CAScale },
	},
	{
		kind: JudgeRule, rule: true,
		scale: func(in ScaleInputs) dataset.ScoreScale {
			return RuleScale(RuleLabel(in.Rule.Kind, in.Rule.AgreementWeight), in.Rule.Min, in.Rule.Max)
		},
	},
	{
		kind: JudgeGame, gameScorer: true,
		scale: func(in ScaleInputs) dataset.ScoreScale { return in.Game },
	},
	{
		kind: JudgePython, python: true,
		scale: func(in ScaleInputs) dataset.ScoreScale {
			return PythonScale(in.Python.Function, in.Python.Min, in.Python.Max)
		},
	},
}

// JudgeKinds lists the judge kinds, in kindTable's order.
var JudgeKinds = func() []JudgeKind {
	ks := make([]JudgeKind, len(kindTable))
	for i, e := range kindTable {
		ks[i] = e.kind
	}
	return ks
}()

// kinds indexes kindTable by kind.
var kinds = func() map[JudgeKind]kindEntry {
	m := make(map[JudgeKind]kindEntry, len(kindTable))
	for _, e := range kindTable {
		m[e.kind] = e
	}
	return m
}()

// Known reports whether k is a judge kind.
func (k JudgeKind) Known() bool {
	_, ok := kinds[k]
	return ok
}

// UsesChat reports whether k's judge asks an LLM over the judge's chat
// endpoint (judge.base_url, judge.model, judge.api_key_env, judge.timeout,
// ...): those keys are then read and validated, and a command that judges
// preflights the API and its key.
func (k JudgeKind) UsesChat() bool { return kinds[k].chat }

// UsesRule reports whether judge.rule configures k's judge.
func (k JudgeKind) UsesRule() bool { return kinds[k].rule }

// UsesGameScorer reports whether k's judge is the game's own scorer
// (rollout.Spec.Scorer), so that a game without one cannot use k.
func (k JudgeKind) UsesGameScorer() bool { return kinds[k].gameScorer }

// ScoresGroups reports whether k's judge can score a group's rollouts in
// one request (judge.mode group).
func (k JudgeKind) ScoresGroups() bool { return kinds[k].group }

// UsesPython reports whether judge.python configures k's judge: a Python
// function in a worker process.
func (k JudgeKind) UsesPython() bool { return kinds[k].python }

// PairwiseAspect is the aspect (AspectCollectiveAgency, ...) on which a
// run's held-out evaluation asks a pairwise LLM judge, on the judge's chat
// endpoint, to compare two sides' finals; "" when the evaluation compares
// the scores of the run's own judge instead.
func (k JudgeKind) PairwiseAspect() string { return kinds[k].pairwise }

// ScaleInputs are what the scale of a judge kind's scores may depend on
// beside the kind.
type ScaleInputs struct {
	// Rule is the rule scorer's options (judge.rule): its kind, agreement
	// weight and range.
	Rule RuleOptions
	// Game is the scale of the game's own scorer.
	Game dataset.ScoreScale
	// Python is the Python judge's function (judge.python.function) and
	// declared range (judge.python.min, judge.python.max).
	Python PythonOptions
}

// Scale is the scale of the scores k's judge gives: CAScale for the
// Collective Agency rubric, the rule's RuleScale, the game scorer's, or the
// Python function's PythonScale.
// An unknown kind, which only a run's config read leniently can hold
// (config.ScoreScaleOf), gets CAScale, the default kind's.
func (k JudgeKind) Scale(in ScaleInputs) dataset.ScoreScale {
	if e, ok := kinds[k]; ok {
		return e.scale(in)
	}
	return CAScale
}

// Auditable reports whether an audit judge (judge.audit), a Collective
// Agency rubric judge, can be compared with k's judge: k scores on the
// same rubric's integer levels.
func (k JudgeKind) Auditable() bool { return kinds[k].auditable }
