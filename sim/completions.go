package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/jsonfast"
	"github.com/parleyhq/parley/sim/scripted"
)

// completionRequest is the subset of vLLM's CompletionRequest the simulator
// reads; other fields are accepted and ignored, as vLLM does.
type completionRequest struct {
	Model                  string          `json:"model"`
	Prompt                 json.RawMessage `json:"prompt"`
	MaxTokens              *int            `json:"max_tokens"`
	Temperature            *float64        `json:"temperature"`
	TopP                   *float64        `json:"top_p"`
	TopK                   *int            `json:"top_k"`
	MinP                   *float64        `json:"min_p"`
	N                      *int            `json:"n"`
	Seed                   *int64          `json:"seed"`
	Stop                   json.RawMessage `json:"stop"`
	Logprobs               *int            `json:"logprobs"`
	Echo                   bool            `json:"echo"`
	Stream                 bool            `json:"stream"`
	ReturnTokenIDs         *bool           `json:"return_token_ids"`
	ReturnTokensAsTokenIDs *bool           `json:"return_tokens_as_token_ids"`
	SkipSpecialTokens      *bool           `json:"skip_special_tokens"`
}

type usageInfo struct {
	PromptTokens        int `json:"prompt_tokens"`
	TotalTokens         int `json:"total_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails any `json:"prompt_tokens_details"`
}

// completionOut is a completion response as the encoder writes it.
type completionOut struct {
	id       string
	created  int64
	model    string
	choices  []choiceOut
	tokenIDs bool
	usage    usageInfo
}

type choiceOut struct {
	index     int
	gen       generation
	promptIDs []int32
}

// parsePrompts reads a prompt: token ids, a string, or a batch of either.
func (s *Server) parsePrompts(raw json.RawMessage) ([][]int32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		//lint:ignore ST1005 vLLM's own message to the client, verbatim
		return nil, fmt.Errorf("Either prompt or prompt_embeds must be provided and non-empty.")
	}
	switch raw[0] {
	case '"':
		var p string
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		return [][]int32{s.tok.Encode(p)}, nil
	case '[':
	default:
		return nil, fmt.Errorf("prompt must be a string, a list of token ids, or a list of either")
	}
	var ids []int32
	if err := json.Unmarshal(raw, &ids); err == nil {
		return [][]int32{ids}, nil
	}
	var batch [][]int32
	if err := json.Unmarshal(raw, &batch); err == nil {
		return batch, nil
	}
	var texts []string
	if err := json.Unmarshal(raw, &texts); err != nil {
		return nil, fmt.Errorf("prompt must be a string, a list of token ids, or a list of either")
	}
	batch = make([][]int32, len(texts))
	for i, t := range texts {
		batch[i] = s.tok.Encode(t)
	}
	return batch, nil
}

func parseStop(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	var l []string
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("stop must be a string or a list of strings")
	}
	return l, nil
}

// sampling is a validated completion request's sampling parameters.
type sampling struct {
	maxTokens   int
	temperature float64
	topP, minP  float64
	topK        int
	n           int
	seed        *int64
	stop        []string
	logprobs    int // -1: none
	tokenIDs    bool
	asTokenIDs  bool
	skipSpecial bool
}

const maxLogprobs = 20

func (req *completionRequest) sampling() (sampling, error) {
	sp := sampling{maxTokens: 16, temperature: 1, topP: 1, n: 1, seed: req.Seed, logprobs: -1, skipSpecial: true}
	if req.MaxTokens != nil {
		sp.maxTokens = *req.MaxTokens
	}
	if sp.maxTokens < 1 {
		//lint:ignore ST1005 vLLM's own message to the client, verbatim
		return sp, fmt.Errorf("max_tokens must be at least 1, got %d.", sp.maxTokens)
	}
	if req.Temperature != nil {
		sp.temperature = *req.Temperature
	}
	if sp.temperature < 0 {
		//lint:ignore ST1005 vLLM's own message to the client, verbatim
		return sp, fmt.Errorf("temperature must be non-negative, got %g.", sp.temperature)
	}
	if req.TopP != nil {
		sp.topP = *req.TopP
	}
	if sp.topP <= 0 || sp.topP > 1 {
		//lint:ignore ST1005 vLLM's own message to the client, verbatim
		return sp, fmt.Errorf("top_p must be in (0, 1], got %g.", sp.topP)
	}
	if req.TopK != nil {
		sp.topK = *req.TopK
	}
	if sp.topK < -1 {
		//lint:ignore ST1005 vLLM's own message to the client, verbatim
		return sp, fmt.Errorf("top_k must be -1 (disable), or at least 1, got %d.", sp.topK)
	}
	if req.MinP != nil {
		sp.minP = *req.MinP
	}
	if req.N != nil {
		sp.n = *req.N
	}
	if sp.n < 1 || sp.n > 256 {
		//lint:ignore ST1005 vLLM's own message to the client, verbatim
		return sp, fmt.Errorf("n must be in [1, 256], got %d.", sp.n)
	}
	if req.Logprobs != nil {
		sp.logprobs = *req.Logprobs
		if sp.logprobs < 0 {
			//lint:ignore ST1005 vLLM's own message to the client, verbatim
			return sp, fmt.Errorf("`logprobs` must be a positive value.")
		}
		if sp.logprobs > maxLogprobs {
			//lint:ignore ST1005 vLLM's own message to the client, verbatim
			return sp, fmt.Errorf("Requested sample logprobs of %d, which is greater than max allowed: %d", sp.logprobs, maxLogprobs)
		}
	}
	stop, err := parseStop(req.Stop)
	if err != nil {
		return sp, err
	}
	sp.stop = stop
	sp.tokenIDs = req.ReturnTokenIDs != nil && *req.ReturnTokenIDs
	sp.asTokenIDs = req.ReturnTokensAsTokenIDs != nil && *req.ReturnTokensAsTokenIDs
	if req.SkipSpecialTokens != nil {
		sp.skipSpecial = *req.SkipSpecialTokens
	}
	return sp, nil
}

// contentKey hashes everything a completion's content may depend on: the
// prompt, the model and (when sampling) the sampling parameters. It is a
// fixed function (FNV-1a over 32-bit words, then a splitmix64 finish), so
// content is reproducible across processes and never depends on request
// order.
func contentKey(prompt []int32, model string, sp sampling) uint64 {
	const prime = 0x100000001b3
	h := uint64(0xcbf29ce484222325)
	for _, id := range prompt {
		h = (h ^ uint64(uint32(id))) * prime
	}
	for i := 0; i < len(model); i++ {
		h = (h ^ uint64(model[i])) * prime
	}
	if sp.temperature > 0 {
		for _, f := range []float64{sp.temperature, sp.topP, sp.minP, float64(sp.topK)} {
			h = (h ^ math.Float64bits(f)) * prime
		}
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// choiceSeed is the RNG seed of choice i: greedy sampling ignores the seed;
// an absent seed is a random draw.
func choiceSeed(sp sampling, i int) uint64 {
	switch {
	case sp.temperature == 0:
		return 0
	case sp.seed != nil:
		return uint64(*sp.seed + int64(i))
	default:
		return rand.Uint64()
	}
}

// generation is one sampled choice before it is shaped into JSON.
type generation struct {
	tokens     []int32
	text       string
	finish     string
	stopReason any
	logprobs   *genLogprobs
}

// generate samples choice i of a completion for prompt. With think set (a
// Qwen3 generation prompt with thinking enabled) the reply opens with a
// reasoning block, as Qwen3's does.
func (s *Server) generate(st dialogueState, key uint64, m scripted.Model, sp sampling, i int, think bool) generation {
	seed := choiceSeed(sp, i)
	rng := rand.New(rand.NewPCG(key, seed))
	_, toks := s.reply(st, m, rng)
	var full []int32
	if think {
		full = s.tok.thinkBlock(st, rng)
	}
	full = append(full, toks...)
	full = append(full, s.tok.imEnd)

	g := generation{tokens: full, finish: "stop"}
	eos := true // finished by <|im_end|>, whose text is not part of the output
	if len(sp.stop) > 0 {
		if k, text, stop, ok := s.applyStop(full, sp); ok {
			g.tokens, g.text, g.stopReason, eos = full[:k], text, stop, false
		}
	}
	if len(g.tokens) > sp.maxTokens {
		g.tokens, g.finish, g.stopReason, eos = g.tokens[:sp.maxTokens], "length", nil, false
	}
	if g.stopReason == nil {
		body := g.tokens
		if eos {
			body = body[:len(body)-1]
		}
		if sp.skipSpecial {
			g.text = s.tok.DecodeSkipSpecial(body)
		} else {
			g.text = s.tok.Decode(body)
		}
	}
	if sp.logprobs >= 0 {
		g.logprobs = s.logprobs(g.tokens, key, seed, sp)
	}
	return g
}

// applyStop finds the earliest stop string in the generated text; it
// returns the number of tokens up to the one that completes it, the text
// before it and the stop string.
func (s *Server) applyStop(toks []int32, sp sampling) (int, string, string, bool) {
	var sb strings.Builder
	ends := make([]int, len(toks))
	for i, id := range toks {
		if !(sp.skipSpecial && s.tok.IsSpecial(id)) && id != s.tok.imEnd {
			sb.WriteString(s.tok.Piece(id))
		}
		ends[i] = sb.Len()
	}
	text := sb.String()
	best, bestStop := -1, ""
	for _, st := range sp.stop {
		if st == "" {
			continue
		}
		if k := strings.Index(text, st); k >= 0 && (best < 0 || k < best) {
			best, bestStop = k, st
		}
	}
	if best < 0 {
		return 0, "", "", false
	}
	need := best + len(bestStop)
	for i, e := range ends {
		if e >= need {
			return i + 1, text[:best], bestStop, true
		}
	}
	return len(toks), text[:best], bestStop, true
}

// lpTableSize is the number of distinct logprob values the simulator
// emits; their text is precomputed so encoding them costs nothing.
const lpTableSize = 1024

// lpText holds the JSON text of logprobs in decreasing order: -0.005 -
// 0.6*E where E runs over the quantiles of a unit exponential, at float32
// precision.
var lpText = func() (txt [lpTableSize]string) {
	for k := range txt {
		u := (float64(k) + 0.5) / lpTableSize
		x := float64(float32(-0.005 + 0.6*math.Log1p(-u)))
		txt[k] = string(jsonfast.AppendFloat32(nil, max(x, -20)))
	}
	return txt
}()

// genLogprobs is a choice's logprobs as the encoder writes them.
type genLogprobs struct {
	ids     []int32
	offsets []int
	lp      []uint16     // per token, an index into lpText
	alts    []altLogprob // k per token, flattened
	k       int          // alternatives per token
	asIDs   bool
}

type altLogprob struct {
	id int32
	lp uint16
}

// logprobs draws deterministic logprobs for the generated tokens: the
// sampled token is always the most likely of those listed.
func (s *Server) logprobs(toks []int32, key, seed uint64, sp sampling) *genLogprobs {
	rng := rand.New(rand.NewPCG(key^0x9e3779b97f4a7c15, seed))
	g := &genLogprobs{ids: toks, offsets: make([]int, len(toks)), lp: make([]uint16, len(toks)),
		k: max(sp.logprobs-1, 0), asIDs: sp.asTokenIDs}
	g.alts = make([]altLogprob, 0, g.k*len(toks))
	off := 0
	for i, id := range toks {
		k := rng.IntN(lpTableSize / 2)
		g.lp[i] = uint16(k)
		g.offsets[i] = off
		if !(sp.skipSpecial && s.tok.IsSpecial(id)) {
			off += len(s.tok.Piece(id))
		}
		for j := 0; j < g.k; j++ {
			alt := int32(256 + rng.IntN(len(s.tok.pieces)-256))
			if alt == id {
				alt = s.tok.byteID['x']
			}
			g.alts = append(g.alts, altLogprob{id: alt, lp: uint16(min(k+1+j+rng.IntN(64), lpTableSize-1))})
		}
	}
	return g
}

// dialogueFromPrompt parses a prompt into the agent's view of the dialogue;
// a prompt without ChatML messages is all context (for Options.Games, one
// system message).
func (s *Server) dialogueFromPrompt(prompt []int32) dialogueState {
	p := s.tok.parsePrompt(prompt)
	if len(p.msgs) == 0 {
		text := s.tok.Decode(prompt)
		return dialogueState{Dialogue: scripted.Dialogue{Context: text}, roles: []string{"system"}, contents: []string{text}}
	}
	return readDialogue(p)
}

func (s *Server) nextID(prefix string) string {
	return fmt.Sprintf("%s-%x%06x", prefix, s.started.UnixNano()&0xffffffffff, s.reqSeq.Add(1))
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	s.rl.waitResumed(r)
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var req completionRequest
	fastPrompt, rest, fast := extractIntArray(body, "prompt")
	if fast {
		body = rest
	}
	if err := json.Unmarshal(body, &req); err != nil {
		s.badRequest(w, "invalid JSON body: "+err.Error())
		return
	}
	if fast && len(req.Prompt) > 0 && string(req.Prompt) != "null" {
		fast = false // a duplicate "prompt" key: the last one wins, as in encoding/json
	}
	if s.engineDead(w, true) {
		return
	}
	if s.injectFault(w, r) {
		return
	}
	adapter, ok := s.checkModel(w, req.Model)
	if !ok {
		return
	}
	if req.Stream {
		s.badRequest(w, "stream=true is not supported by the simulator")
		return
	}
	sp, err := req.sampling()
	if err != nil {
		s.badRequest(w, err.Error())
		return
	}
	if s.opts.NoTokenIDs {
		sp.tokenIDs = false
	}
	prompts := [][]int32{fastPrompt}
	if !fast {
		if prompts, err = s.parsePrompts(req.Prompt); err != nil {
			s.badRequest(w, err.Error())
			return
		}
	}
	promptTokens := 0
	for _, p := range prompts {
		if len(p) == 0 {
			s.badRequest(w, "Either prompt or prompt_embeds must be provided and non-empty.")
			return
		}
		for _, id := range p {
			if !s.tok.ValidID(id) {
				s.badRequest(w, fmt.Sprintf("Token id %d is out of vocabulary", id))
				return
			}
		}
		if len(p)+sp.maxTokens > s.opts.MaxModelLen {
			s.writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(
				"This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains %d input tokens, for a total of %d tokens. Please reduce the length of the input prompt or the number of requested output tokens.",
				s.opts.MaxModelLen, sp.maxTokens, len(p), len(p)+sp.maxTokens), "max_tokens")
			return
		}
		promptTokens += len(p)
	}
	model := req.Model
	if model == "" {
		model = s.opts.Model
	}
	if id := r.Header.Get(SessionHeader); id != "" {
		w.Header().Set(SessionHeader, id)
		s.sessions[1].Add(1)
	} else {
		s.sessions[0].Add(1)
	}
	if !s.acquire(r.Context()) {
		return
	}
	computed := 0
	for _, p := range prompts {
		computed += len(p) - s.cache.lookup(model, p)
	}
	m := s.model(model, adapter)
	resp := completionOut{id: s.nextID("cmpl"), created: time.Now().Unix(), model: model}
	completionTokens, longest := 0, 0
	for pi, p := range prompts {
		st := s.dialogueFromPrompt(p)
		key := contentKey(p, model, sp)
		think := s.opts.Template == TemplateQwen3 && s.tok.endsWithBareGenerationPrompt(p)
		for i := 0; i < sp.n; i++ {
			g := s.generate(st, key, m, sp, i, think)
			c := choiceOut{index: pi*sp.n + i, gen: g}
			if sp.tokenIDs {
				c.promptIDs = p
			}
			resp.choices = append(resp.choices, c)
			if s.cache != nil {
				s.cache.insert(model, append(slices.Clip(p), g.tokens...))
			}
			completionTokens += len(g.tokens)
			longest = max(longest, len(g.tokens))
		}
	}
	resp.tokenIDs = sp.tokenIDs
	resp.usage = usageInfo{PromptTokens: promptTokens, CompletionTokens: completionTokens, TotalTokens: promptTokens + completionTokens}
	d := s.latency(s.opts.LatencyMedian, true) + time.Duration(longest)*s.opts.PerTokenLatency +
		time.Duration(computed)*s.opts.PrefillTokenLatency
	slept := s.sleep(r.Context(), d)
	s.release()
	if !slept && r.Context().Err() != nil {
		return
	}
	s.promptTok.Add(int64(promptTokens))
	s.genTok.Add(int64(completionTokens))
	s.writeRaw(w, func(dst []byte) []byte { return s.appendCompletion(dst, &resp) })
}
