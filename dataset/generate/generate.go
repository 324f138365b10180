// Package generate writes curricula with an LLM (any OpenAI-compatible chat
// endpoint): the dilemma prompts of seed 000's deliberation game over its
// three categories, each paired with a persona pair (from the library, or
// generated and checked to be opposed), and the open-ended questions of the
// single-agent baseline.
//
// Every prompt the generator returns is cleaned and checked: its category,
// its form (one plain paragraph, no list or markdown, a dilemma ending with
// a question), its length in words, and duplicates, exact (equal after
// Normalize: lower case, punctuation and white space folded) or near (word
// 3-shingle Jaccard similarity at or above Options.NearDupThreshold against
// every prompt accepted so far). One changed word in a text of w words
// leaves a similarity of (w-5)/(w+1): the default 0.7 catches single-word
// edits of texts of 22 words or more and template variants, while
// paraphrases share few shingles and pass (the check is lexical, not
// semantic).
//
// A run is reproducible: each generation request carries a seed derived
// from Options.Seed, the number of prompts present when the run started and
// the request's number, and the client's temperature; requests of a round
// are sent concurrently but their results are taken in request order; the
// persona pairing and the eval split are drawn from seeded generators. So
// the same seed, server and starting file give the same output file
// (given a server that is deterministic for a seed, such as serve-sim).
//
// A run is resumable: prompts already in the output (Options.Existing) count
// toward the per-category targets and are never repeated, and new prompts
// are written one by one as they are accepted.
package generate

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm/chat"
	"go.uber.org/zap"
)

// Kinds of curricula.
const (
	// KindDilemmas is the deliberation game's curriculum: dilemmas of the
	// professional, interpersonal and micro_ethics categories, with
	// persona pairs.
	KindDilemmas = "dilemmas"
	// KindOpenEnded is the single-agent baseline's curriculum: open-ended
	// tasks of category open_ended, without personas.
	KindOpenEnded = "open-ended"
)

// Reasons a returned prompt is rejected (the keys of Stats.Rejected).
const (
	ReasonDuplicate     = "duplicate"      // equal to an accepted prompt after Normalize
	ReasonNearDuplicate = "near_duplicate" // shingle Jaccard similarity at or above the threshold
	ReasonLength        = "length"         // outside MinWords..MaxWords
	ReasonForm          = "form"           // see CheckForm
	ReasonWrongCategory = "wrong_category" // not a category of the kind
	ReasonCategoryFull  = "category_full"  // its category already has its share
	ReasonPersonas      = "personas"       // no opposed persona pair found (GeneratePersonas)
)

// Defaults of zero Options fields.
const (
	DefaultBatchSize        = 5
	DefaultMinWords         = 15
	DefaultMaxWords         = 120
	DefaultNearDupThreshold = 0.7
	DefaultConcurrency      = 4
	DefaultMinOpposition    = 4
	DefaultPersonaAttempts  = 3
	// avoidListLen is how many recent prompts of a category a request
	// shows the generator not to repeat.
	avoidListLen = 8
)

// ErrGaveUp is matched by the error of a run that reached its request
// limit before its targets.
var ErrGaveUp = errors.New("request limit reached before the targets")

// DefaultMix is seed 000's category mix: 30/40/30 over professional,
// interpersonal and micro_ethics.
func DefaultMix() map[string]float64 {
	return map[string]float64{
		dataset.CategoryProfessional:  0.3,
		dataset.CategoryInterpersonal: 0.4,
		dataset.CategoryMicroEthics:   0.3,
	}
}

// Chatter is the chat client the generator needs; *chat.Client
// implements it.
type Chatter interface {
	// Chat sends one chat completion (with retries) and returns the reply.
	Chat(ctx context.Context, req chat.Request) (chat.Response, error)
}

var _ Chatter = (*chat.Client)(nil)

// Sink receives accepted prompts in order.
type Sink interface {
	// Write stores one prompt; an error stops the run.
	Write(p dataset.Prompt) error
}

// Options configure a run of Generate.
type Options struct {
	// Kind is KindDilemmas (default) or KindOpenEnded.
	Kind string
	// N is the number of prompts the output should hold at the end,
	// Existing included.
	N int
	// Mix weighs the categories (nil: DefaultMix for dilemmas, open_ended
	// alone for open-ended). The targets per category are N split by the
	// weights with the largest-remainder method.
	Mix map[string]float64
	// Seed seeds the requests, the persona pairing and the eval split.
	Seed int64
	// EvalFraction is the share of each category's prompts marked Split
	// "eval" (the rest "train"), in [0, 1): round(EvalFraction × target)
	// per category, chosen by seeded selection sampling as prompts are
	// accepted.
	EvalFraction float64
	// BatchSize is the number of prompts asked for per request (default 5).
	BatchSize int
	// Concurrency is the number of requests sent at once per round
	// (default 4); the client may bound it further.
	Concurrency int
	// MinWords and MaxWords bound a prompt's length in words (defaults 15
	// and 120).
	MinWords, MaxWords int
	// NearDupThreshold is the word 3-shingle Jaccard similarity at or above
	// which a prompt is a near-duplicate of an accepted one (default 0.7;
	// 1 detects exact duplicates only).
	NearDupThreshold float64
	// Personas is the library paired with dilemmas (nil: the bundled
	// library). Pairs are dealt in a seeded shuffled cycle, so each is used
	// about equally.
	Personas []dataset.PersonaPair
	// GeneratePersonas asks the generator for a persona pair per dilemma
	// instead, checked to be opposed: not near-duplicates (PersonasSimilar)
	// and rated by a second call (temperature 0) as conflicting with an
	// opposition of at least MinOpposition out of 5. A dilemma without
	// such a pair after PersonaAttempts tries is rejected (ReasonPersonas).
	GeneratePersonas bool
	MinOpposition    int
	PersonaAttempts  int
	// Existing are the prompts already in the output (a resumed run).
	Existing []dataset.Prompt
	// IDPrefix starts the ids of new prompts, <prefix>-<row number>
	// (default "dilemma" or "open").
	IDPrefix string
	// MaxRequests bounds the generation requests of the run (default 20
	// plus 10 per batch still needed); reaching it fails with ErrGaveUp.
	MaxRequests int
	// Logger receives progress and rejections at debug level; nil means
	// no logging.
	Logger *zap.Logger
}

// Stats count a run's work.
type Stats struct {
	// Existing is the number of prompts in the output at the start.
	Existing int `json:"existing"`
	// Accepted is the number of prompts this run wrote.
	Accepted int `json:"accepted"`
	// Requests, Requested and Returned count the generation requests, the
	// prompts they asked for and the prompts they returned.
	Requests  int `json:"requests"`
	Requested int `json:"requested"`
	Returned  int `json:"returned"`
	// FailedRequests counts requests (generation or persona) that failed
	// after the client's retries.
	FailedRequests int `json:"failed_requests"`
	// Rejected counts returned prompts rejected, by reason (Reason*).
	Rejected map[string]int `json:"rejected"`
	// PersonaRequests counts persona generation and check requests.
	PersonaRequests int `json:"persona_requests"`
	// ByCategory and Eval describe the output at the end: prompts per
	// category and prompts in the eval split.
	ByCategory map[string]int `json:"by_category"`
	Eval       int            `json:"eval"`
	// PromptTokens and CompletionTokens sum the reported usage.
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Categories returns the categories of a kind, in a fixed order.
func Categories(kind string) ([]string, error) {
	switch kind {
	case KindDilemmas, "":
		return []string{dataset.CategoryProfessional, dataset.CategoryInterpersonal, dataset.CategoryMicroEthics}, nil
	case KindOpenEnded:
		return []string{dataset.CategoryOpenEnded}, nil
	}
	return nil, fmt.Errorf("unknown kind %q (want %s or %s)", kind, KindDilemmas, KindOpenEnded)
}

// ParseMix parses "professional=0.3,interpersonal=0.4,micro_ethics=0.3".
func ParseMix(s string) (map[string]float64, error) {
	m := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("generate.ParseMix: %q is not category=weight", part)
		}
		w, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || w < 0 || math.IsInf(w, 0) || math.IsNaN(w) {
			return nil, fmt.Errorf("generate.ParseMix: weight of %q: want a number zero or more, got %q", k, v)
		}
		m[strings.TrimSpace(k)] = w
	}
	if len(m) == 0 {
		return nil, errors.New("generate.ParseMix: empty mix")
	}
	return m, nil
}

// withDefaults fills zero fields and checks the options.
// Validate checks the options as Generate would, so that a caller can refuse
// bad options before it opens the output.
func (o Options) Validate() error {
	_, _, _, err := o.withDefaults()
	return err
}

func (o Options) withDefaults() (Options, []string, []float64, error) {
	if o.Kind == "" {
		o.Kind = KindDilemmas
	}
	cats, err := Categories(o.Kind)
	if err != nil {
		return o, nil, nil, err
	}
	if o.N < 1 {
		return o, nil, nil, fmt.Errorf("n must be at least 1, got %d", o.N)
	}
	if o.EvalFraction < 0 || o.EvalFraction >= 1 || math.IsNaN(o.EvalFraction) {
		return o, nil, nil, fmt.Errorf("eval fraction must be in [0, 1), got %g", o.EvalFraction)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.MinWords <= 0 {
		o.MinWords = DefaultMinWords
	}
	if o.MaxWords <= 0 {
		o.MaxWords = DefaultMaxWords
	}
	if o.MaxWords < o.MinWords {
		return o, nil, nil, fmt.Errorf("max words %d is below min words %d", o.MaxWords, o.MinWords)
	}
	if o.NearDupThreshold <= 0 {
		o.NearDupThreshold = DefaultNearDupThreshold
	}
	if o.MinOpposition <= 0 {
		o.MinOpposition = DefaultMinOpposition
	}
	if o.PersonaAttempts <= 0 {
		o.PersonaAttempts = DefaultPersonaAttempts
	}
	if o.IDPrefix == "" {
		o.IDPrefix = "dilemma"
		if o.Kind == KindOpenEnded {
			o.IDPrefix = "open"
		}
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	mix := o.Mix
	if mix == nil {
		mix = DefaultMix()
		if o.Kind == KindOpenEnded {
			mix = map[string]float64{dataset.CategoryOpenEnded: 1}
		}
	}
	weights := make([]float64, len(cats))
	sum := 0.0
	for k, w := range mix {
		i := indexOf(cats, k)
		if i < 0 {
			return o, nil, nil, fmt.Errorf("mix: category %q is not one of the %s categories (%s)", k, o.Kind, strings.Join(cats, ", "))
		}
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return o, nil, nil, fmt.Errorf("mix: weight of %q must be zero or more, got %g", k, w)
		}
		weights[i] = w
		sum += w
	}
	if sum <= 0 {
		return o, nil, nil, errors.New("mix: weights must not all be zero")
	}
	if o.Kind == KindDilemmas && !o.GeneratePersonas {
		if o.Personas == nil {
			o.Personas = dataset.PersonaLibrary()
		}
		if len(o.Personas) == 0 {
			return o, nil, nil, errors.New("empty persona library")
		}
	}
	return o, cats, weights, nil
}

// Generate asks chat for prompts until the output holds opts.N (with
// opts.Existing), checking each and writing the accepted ones to out in a
// reproducible order. It stops early when ctx is done (returning its error
// after writing what was accepted), when out fails, when every request of a
// round fails, or at the request limit (ErrGaveUp). The Stats are valid in
// every case.
func Generate(ctx context.Context, chat Chatter, opts Options, out Sink) (Stats, error) {
	g, err := newGenerator(chat, opts)
	if err != nil {
		return Stats{}, fmt.Errorf("generate.Generate: %w", err)
	}
	err = g.run(ctx, out)
	g.finishStats()
	if err != nil {
		return g.stats, fmt.Errorf("generate.Generate: %w", err)
	}
	return g.stats, nil
}

// generator is the state of one run.
type generator struct {
	opts       Options
	chat       Chatter
	log        *zap.Logger
	cats       []string
	target     map[string]int // prompts per category at the end
	evalTarget map[string]int // eval prompts per category at the end
	count      map[string]int // prompts per category in the output
	evalCount  map[string]int // eval prompts per category in the output
	recent     map[string][]string
	index      *Index
	ids        map[string]bool
	rows       int // prompts in the output
	startRows  int
	system     string
	personaSys string
	stats      Stats
}

func newGenerator(chat Chatter, opts Options) (*generator, error) {
	opts, cats, weights, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	g := &generator{
		opts: opts, chat: chat, log: opts.Logger, cats: cats,
		target: map[string]int{}, evalTarget: map[string]int{}, count: map[string]int{}, evalCount: map[string]int{},
		recent: map[string][]string{}, index: NewIndex(opts.NearDupThreshold), ids: map[string]bool{},
		stats: Stats{Rejected: map[string]int{}},
	}
	for i, p := range opts.Existing {
		if indexOf(cats, p.Category) < 0 {
			return nil, fmt.Errorf("existing prompt %d (id %q) has category %q, not one of the %s categories (%s)",
				i, p.ID, p.Category, opts.Kind, strings.Join(cats, ", "))
		}
		g.count[p.Category]++
		if p.Split == "eval" {
			g.evalCount[p.Category]++
		}
		g.ids[p.ID] = true
		g.index.Add(p.Task)
		g.remember(p.Category, p.Task)
	}
	g.rows = len(opts.Existing)
	g.startRows = g.rows
	g.stats.Existing = g.rows
	g.setTargets(weights)
	if opts.Kind == KindOpenEnded {
		g.system = openEndedSystem(opts.MinWords, opts.MaxWords)
	} else {
		g.system = dilemmaSystem(opts.MinWords, opts.MaxWords)
	}
	lib := opts.Personas
	if lib == nil {
		lib = dataset.PersonaLibrary()
	}
	g.personaSys = personaSystem(lib)
	return g, nil
}

// setTargets fixes the final count per category: the ideal split of N by
// the weights, where the prompts still to write go to the categories
// below their ideal (split by their shortfall when some category is
// already above it).
func (g *generator) setTargets(weights []float64) {
	ideal := allocate(g.opts.N, weights)
	remaining := max(0, g.opts.N-g.rows)
	short := make([]float64, len(g.cats))
	sum := 0
	for i, c := range g.cats {
		d := max(0, ideal[i]-g.count[c])
		short[i] = float64(d)
		sum += d
	}
	add := make([]int, len(g.cats))
	if sum > 0 {
		if sum > remaining {
			add = allocate(remaining, short)
		} else {
			for i := range short {
				add[i] = int(short[i])
			}
		}
	}
	for i, c := range g.cats {
		g.target[c] = g.count[c] + add[i]
		g.evalTarget[c] = int(math.Round(g.opts.EvalFraction * float64(g.target[c])))
	}
}

// allocate splits n into integer parts proportional to weights, by the
// largest-remainder method (ties to the earlier weight).
func allocate(n int, weights []float64) []int {
	out := make([]int, len(weights))
	sum := 0.0
	for _, w := range weights {
		sum += w
	}
	if n <= 0 || sum <= 0 {
		return out
	}
	type rem struct {
		i int
		r float64
	}
	rems := make([]rem, len(weights))
	given := 0
	for i, w := range weights {
		exact := float64(n) * w / sum
		out[i] = int(math.Floor(exact))
		given += out[i]
		rems[i] = rem{i, exact - float64(out[i])}
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].r > rems[b].r })
	for k := 0; given < n; k++ {
		out[rems[k%len(rems)].i]++
		given++
	}
	return out
}

// deficit is the number of prompts category c still needs.
func (g *generator) deficit(c string) int { return max(0, g.target[c]-g.count[c]) }

func (g *generator) remaining() int {
	n := 0
	for _, c := range g.cats {
		n += g.deficit(c)
	}
	return n
}

// request is one planned generation request.
type request struct {
	number   int
	category string
	count    int
	seed     int64
	user     string
}

// result is a request's outcome.
type result struct {
	items []item
	err   error
}

// candidate is a prompt that passed the checks.
type candidate struct {
	category string
	task     string
	pair     *dataset.PersonaPair // generated pair, if any
	dropped  bool
}

func (g *generator) run(ctx context.Context, out Sink) error {
	maxRequests := g.opts.MaxRequests
	if maxRequests <= 0 {
		maxRequests = 20 + 10*ceilDiv(g.remaining(), g.opts.BatchSize)
	}
	for g.remaining() > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		budget := maxRequests - g.stats.Requests
		if budget <= 0 {
			return fmt.Errorf("%w: %d of %d prompts after %d requests (rejected: %v)",
				ErrGaveUp, g.rows, g.opts.N, g.stats.Requests, g.stats.Rejected)
		}
		reqs := g.plan(budget)
		results := g.send(ctx, reqs)
		var (
			cands   []*candidate
			pending = map[string]int{}
			failed  int
			lastErr error
		)
		for i, r := range results {
			if r.err != nil {
				if ctx.Err() == nil {
					failed++
					lastErr = r.err
					g.stats.FailedRequests++
					g.log.Warn("generation request failed", zap.Int("request", reqs[i].number), zap.Error(r.err))
				}
				continue
			}
			for _, it := range r.items {
				if c := g.check(it, pending); c != nil {
					cands = append(cands, c)
				}
			}
		}
		if failed == len(reqs) {
			return fmt.Errorf("every request of a round failed: %w", lastErr)
		}
		if g.opts.GeneratePersonas && g.opts.Kind == KindDilemmas {
			if err := g.pairAll(ctx, cands); err != nil {
				return err
			}
		}
		for _, c := range cands {
			if c.dropped {
				continue
			}
			if err := g.commit(c, out); err != nil {
				return err
			}
		}
		g.log.Debug("generation round", zap.Int("requests", len(reqs)), zap.Int("accepted", len(cands)),
			zap.Int("rows", g.rows), zap.Int("remaining", g.remaining()))
	}
	return nil
}

// plan lays out the next round: up to Concurrency requests (and at most
// budget), dealt round-robin over the categories that still need prompts,
// each asking for at most BatchSize of them.
func (g *generator) plan(budget int) []request {
	limit := min(g.opts.Concurrency, budget)
	need := map[string]int{}
	for _, c := range g.cats {
		need[c] = g.deficit(c)
	}
	var reqs []request
	for len(reqs) < limit {
		progressed := false
		for _, c := range g.cats {
			if len(reqs) >= limit || need[c] <= 0 {
				continue
			}
			k := min(g.opts.BatchSize, need[c])
			need[c] -= k
			reqs = append(reqs, request{category: c, count: k})
			progressed = true
		}
		if !progressed {
			break
		}
	}
	for i := range reqs {
		r := &reqs[i]
		r.number = g.stats.Requests + i
		r.seed = requestSeed(g.opts.Seed, "request", g.startRows, r.number)
		rng := rngFor(g.opts.Seed, "themes", g.startRows, r.number)
		r.user = userPrompt(g.opts.Kind, r.category, r.count, rng, g.recent[r.category])
	}
	return reqs
}

// send runs the requests concurrently; results are in request order.
func (g *generator) send(ctx context.Context, reqs []request) []result {
	results := make([]result, len(reqs))
	schema := schemaFor(g.cats)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	for i, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seed := r.seed
			resp, err := g.chat.Chat(ctx, chat.Request{
				Messages: []chat.Message{
					{Role: "system", Content: g.system},
					{Role: "user", Content: r.user},
				},
				SchemaName: SchemaName,
				Schema:     schema,
				Seed:       &seed,
				Validate:   func(c string) error { _, err := parseItems(c); return err },
			})
			if err != nil {
				results[i] = result{err: err}
				return
			}
			items, _ := parseItems(resp.Content)
			results[i] = result{items: items}
			mu.Lock()
			g.stats.PromptTokens += resp.PromptTokens
			g.stats.CompletionTokens += resp.CompletionTokens
			mu.Unlock()
		}()
	}
	wg.Wait()
	g.stats.Requests += len(reqs)
	for _, r := range reqs {
		g.stats.Requested += r.count
	}
	return results
}

// check runs the checks on one returned prompt and, when it passes,
// records it in the index and returns it as a candidate. pending counts
// the candidates of this round per category.
func (g *generator) check(it item, pending map[string]int) *candidate {
	g.stats.Returned++
	cat := strings.TrimSpace(it.Category)
	if cat == "" && len(g.cats) == 1 {
		cat = g.cats[0]
	}
	task := Clean(it.Task)
	reject := func(reason string, detail string) *candidate {
		g.stats.Rejected[reason]++
		g.log.Debug("prompt rejected", zap.String("reason", reason), zap.String("detail", detail),
			zap.String("category", cat), zap.String("task", truncate(task, 200)))
		return nil
	}
	if indexOf(g.cats, cat) < 0 {
		return reject(ReasonWrongCategory, fmt.Sprintf("category %q", it.Category))
	}
	if err := CheckForm(g.opts.Kind, task); err != nil {
		return reject(ReasonForm, err.Error())
	}
	if err := CheckLength(task, g.opts.MinWords, g.opts.MaxWords); err != nil {
		return reject(ReasonLength, err.Error())
	}
	if m := g.index.Check(task); m.Reason != "" {
		return reject(m.Reason, fmt.Sprintf("similarity %.2f to %q", m.Similarity, truncate(m.Similar, 120)))
	}
	if g.count[cat]+pending[cat] >= g.target[cat] {
		return reject(ReasonCategoryFull, "")
	}
	pending[cat]++
	g.index.Add(task)
	return &candidate{category: cat, task: task}
}

// pairAll generates an opposed persona pair for each candidate,
// concurrently; candidates without one are dropped. It fails when every
// candidate's persona requests failed (a broken endpoint, not rejections).
func (g *generator) pairAll(ctx context.Context, cands []*candidate) error {
	outcomes := make([]personaOutcome, len(cands))
	sem := make(chan struct{}, g.opts.Concurrency)
	var wg sync.WaitGroup
	for i, c := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				outcomes[i] = personaOutcome{err: ctx.Err()}
				return
			}
			defer func() { <-sem }()
			outcomes[i] = g.generatePair(ctx, c.task)
		}()
	}
	wg.Wait()
	failed := 0
	var lastErr error
	for i, c := range cands {
		o := outcomes[i]
		g.stats.PersonaRequests += o.requests
		g.stats.PromptTokens += o.usage[0]
		g.stats.CompletionTokens += o.usage[1]
		switch {
		case o.ok:
			pair := o.pair
			c.pair = &pair
		case o.err != nil:
			c.dropped = true
			if ctx.Err() == nil {
				failed++
				lastErr = o.err
				g.stats.FailedRequests++
				g.log.Warn("persona request failed", zap.Error(o.err))
			}
		default:
			c.dropped = true
			g.stats.Rejected[ReasonPersonas]++
			g.log.Debug("prompt rejected", zap.String("reason", ReasonPersonas),
				zap.Strings("attempts", o.reasons), zap.String("task", truncate(c.task, 200)))
		}
	}
	if len(cands) > 0 && failed == len(cands) {
		return fmt.Errorf("every persona request of a round failed: %w", lastErr)
	}
	return nil
}

// commit assigns a candidate its id, personas and split, and writes it.
func (g *generator) commit(c *candidate, out Sink) error {
	p := dataset.Prompt{ID: g.nextID(), Category: c.category, Task: c.task}
	if g.opts.Kind == KindDilemmas {
		if c.pair != nil {
			p.Personas = dataset.PersonaPairOf(c.pair.A, c.pair.B)
		} else {
			pair := g.libraryPair(g.rows)
			p.PersonaPairID, p.Personas = pair.ID, dataset.PersonaPairOf(pair.A, pair.B)
		}
	}
	p.Split = "train"
	if g.evalDraw(c.category) {
		p.Split = "eval"
	}
	if err := out.Write(p); err != nil {
		return fmt.Errorf("write prompt %s: %w", p.ID, err)
	}
	g.ids[p.ID] = true
	g.count[c.category]++
	if p.Split == "eval" {
		g.evalCount[c.category]++
	}
	g.rows++
	g.stats.Accepted++
	g.remember(c.category, c.task)
	return nil
}

// evalDraw decides whether the next prompt of category c goes to the eval
// split: selection sampling (Knuth's algorithm S), so that the category
// ends with exactly its eval target, each prompt equally likely to be
// chosen, drawn from a generator seeded by the seed, the category and the
// prompt's position in it.
func (g *generator) evalDraw(c string) bool {
	slots := g.target[c] - g.count[c]
	left := g.evalTarget[c] - g.evalCount[c]
	switch {
	case left <= 0:
		return false
	case slots <= left:
		return true
	}
	u := rngFor(g.opts.Seed, "split", c, g.count[c]).Float64()
	return u*float64(slots) < float64(left)
}

// libraryPair deals the persona pair of row n: the library in a seeded
// shuffled order, reshuffled for each pass through it.
func (g *generator) libraryPair(n int) dataset.PersonaPair {
	lib := g.opts.Personas
	pass, pos := n/len(lib), n%len(lib)
	perm := rngFor(g.opts.Seed, "personas", pass).Perm(len(lib))
	return lib[perm[pos]]
}

// nextID is <prefix>-<row number from 1, 5 digits>, skipping taken ids.
func (g *generator) nextID() string {
	for n := g.rows + 1; ; n++ {
		id := fmt.Sprintf("%s-%05d", g.opts.IDPrefix, n)
		if !g.ids[id] {
			return id
		}
	}
}

// remember keeps the latest prompts of a category for the avoid list.
func (g *generator) remember(c, task string) {
	r := append(g.recent[c], task)
	if len(r) > avoidListLen {
		r = r[len(r)-avoidListLen:]
	}
	g.recent[c] = r
}

func (g *generator) finishStats() {
	g.stats.ByCategory = map[string]int{}
	g.stats.Eval = 0
	for _, c := range g.cats {
		if g.count[c] > 0 {
			g.stats.ByCategory[c] = g.count[c]
		}
		g.stats.Eval += g.evalCount[c]
	}
}

// requestSeed derives a non-negative 31-bit seed (accepted by every
// OpenAI-compatible server) from seed and parts.
func requestSeed(seed int64, parts ...any) int64 {
	return int64(hashParts(seed, parts...) >> 33)
}

// rngFor is a generator seeded by seed and parts.
func rngFor(seed int64, parts ...any) *rand.Rand {
	h := hashParts(seed, parts...)
	return rand.New(rand.NewPCG(h, h^0x9e3779b97f4a7c15))
}

func hashParts(seed int64, parts ...any) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d", seed)
	for _, p := range parts {
		fmt.Fprintf(h, "\x00%v", p)
	}
	return h.Sum64()
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
