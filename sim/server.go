package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// SessionHeader is the header a completion's session id arrives in
// (llm.DefaultSessionHeader); serve-sim counts completions with and
// without it in MetricSessionHeader and echoes it on the response, so a
// test sees whether a router in front forwarded it.
const SessionHeader = "X-Session-ID"

// MetricSessionHeader is serve-sim's /metrics counter of completions by
// whether they carried SessionHeader (label present="true" or "false").
const MetricSessionHeader = "sim_session_header_total"

// Paths the server answers.
const (
	PathHealth       = "/health"
	PathVersion      = "/version"
	PathMetrics      = "/metrics"
	PathModels       = "/v1/models"
	PathTokenize     = "/tokenize"
	PathDetokenize   = "/detokenize"
	PathCompletions  = "/v1/completions"
	PathChat         = "/v1/chat/completions"
	PathLoadLoRA     = "/v1/load_lora_adapter"
	PathUnloadLoRA   = "/v1/unload_lora_adapter"
	pathOther        = "other"
	maxRequestBytes  = 64 << 20
	simVersionString = "0.11.0+sim"
)

var countedPaths = []string{PathHealth, PathVersion, PathMetrics, PathModels, PathTokenize, PathDetokenize,
	PathCompletions, PathChat, PathLoadLoRA, PathUnloadLoRA, pathOther}

// Server is a simulated vLLM server. Create it with New; it is safe for
// concurrent use.
type Server struct {
	opts    Options
	tok     *Tokenizer
	log     *zap.Logger
	faults  *faultRNG
	started time.Time

	loraMu sync.RWMutex
	loras  map[string]loraAdapter // by name
	loraN  []string               // names in load order
	// loraLoads counts the distinct adapters loaded (loraAdapter.ord).
	loraLoads int

	sem   chan struct{} // nil when unbounded
	cache *prefixCache  // nil when disabled
	// sessions counts completions by whether they carried the session
	// header ([1]) or not ([0]).
	sessions  [2]atomic.Int64
	running   atomic.Int64
	waiting   atomic.Int64
	promptTok atomic.Int64
	genTok    atomic.Int64
	// chatCache is the chat completions' own prefix-cache model (nil when
	// disabled), kept apart from the policy's so that judge traffic does
	// not move the vllm:prefix_cache counters; it reports cached_tokens.
	chatCache *prefixCache
	// chatPrompt, chatCompletion and chatCached total the usage reported
	// by served chat completions; fingerprint is the system_fingerprint
	// they carry (SetFingerprint).
	chatPrompt, chatCompletion, chatCached atomic.Int64
	fingerprint                            atomic.Pointer[string]
	reqSeq                                 atomic.Uint64
	engineN                                atomic.Int64 // completion requests seen, for EngineDiesAfter
	requests                               map[string]*atomic.Int64
	faultsN                                map[string]*atomic.Int64

	rl rlState

	closeOnce sync.Once
	closed    chan struct{}
}

type loraAdapter struct {
	name, path string
	created    int64
	// ord counts the adapters loaded before it, over the server's life.
	ord int
}

// New returns a simulated server configured by opts.
func New(opts Options) (*Server, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("sim.New: %w", err)
	}
	tok := NewTokenizer()
	if o.Tokenizer != "" {
		if tok, err = LoadTokenizer(o.Tokenizer); err != nil {
			return nil, fmt.Errorf("sim.New: Tokenizer: %w", err)
		}
	}
	s := &Server{
		opts:     o,
		tok:      tok,
		log:      o.Logger,
		faults:   newFaultRNG(o.FaultSeed),
		started:  time.Now(),
		loras:    map[string]loraAdapter{},
		requests: map[string]*atomic.Int64{},
		faultsN:  map[string]*atomic.Int64{},
		closed:   make(chan struct{}),
	}
	for _, p := range countedPaths {
		s.requests[p] = new(atomic.Int64)
	}
	for _, k := range faultKinds {
		s.faultsN[k] = new(atomic.Int64)
	}
	if o.MaxConcurrent > 0 {
		s.sem = make(chan struct{}, o.MaxConcurrent)
	}
	if o.PrefixCacheBlocks > 0 {
		s.cache = newPrefixCache(o.PrefixCacheBlocks)
		s.chatCache = newPrefixCache(o.PrefixCacheBlocks)
	}
	fp := DefaultFingerprint
	s.fingerprint.Store(&fp)
	if o.Weights != "" {
		if err := s.rl.load(o.Weights); err != nil {
			return nil, fmt.Errorf("sim.New: %w", err)
		}
	}
	return s, nil
}

// Options returns the server's options with defaults filled in.
func (s *Server) Options() Options { return s.opts }

// Tokenizer returns the server's tokenizer.
func (s *Server) Tokenizer() *Tokenizer { return s.tok }

// Close releases every request that is hanging or sleeping on simulated
// latency, so an enclosing http.Server or httptest.Server can shut down
// promptly. The handler keeps answering afterwards, without delays.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathHealth, s.handleHealth)
	mux.HandleFunc("GET "+PathVersion, s.handleVersion)
	mux.HandleFunc("GET "+PathMetrics, s.handleMetrics)
	mux.HandleFunc("GET "+PathModels, s.handleModels)
	mux.HandleFunc("POST "+PathTokenize, s.handleTokenize)
	mux.HandleFunc("POST "+PathDetokenize, s.handleDetokenize)
	mux.HandleFunc("POST "+PathCompletions, s.handleCompletions)
	mux.HandleFunc("POST "+PathChat, s.handleChat)
	mux.HandleFunc("POST "+PathLoadLoRA, s.handleLoadLoRA)
	mux.HandleFunc("POST "+PathUnloadLoRA, s.handleUnloadLoRA)
	if s.opts.Weights != "" {
		s.rlRoutes(mux)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, http.StatusNotFound, "NotFoundError", "Not Found: "+r.Method+" "+r.URL.Path, "")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.requests[r.URL.Path]
		if !ok {
			c = s.requests[pathOther]
		}
		c.Add(1)
		if s.opts.APIKey != "" && strings.HasPrefix(r.URL.Path, "/v1") &&
			r.Header.Get("Authorization") != "Bearer "+s.opts.APIKey {
			// vLLM's --api-key middleware answers exactly this.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"Unauthorized"}`)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// ListenAndServe serves the handler on addr until ctx is done, then shuts
// down gracefully (releasing hung requests first).
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("sim.ListenAndServe: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves the handler on ln until ctx is done, then shuts down
// gracefully (releasing hung requests first). It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("sim serving", zap.String("addr", ln.Addr().String()), zap.String("model", s.opts.Model))
	select {
	case err := <-errc:
		return fmt.Errorf("sim.Serve: %w", err)
	case <-ctx.Done():
	}
	s.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("sim.Serve: shutdown: %w", err)
	}
	return nil
}

// Stats is a snapshot of the server's counters.
type Stats struct {
	// Requests counts requests by path (unknown paths under "other"),
	// including those answered with a fault.
	Requests map[string]int64
	// Faults counts injected faults by kind (the Fault* constants).
	Faults map[string]int64
	// Running and Waiting are the completion requests being served and
	// waiting for a MaxConcurrent slot now.
	Running, Waiting int64
	// PromptTokens and GenerationTokens total the tokens of served
	// completions.
	PromptTokens, GenerationTokens int64
	// PrefixCacheQueries and PrefixCacheHits are the prefix-cache model's
	// counters, in prompt tokens: PrefixCacheQueries-PrefixCacheHits is the
	// prefill computed.
	PrefixCacheQueries, PrefixCacheHits int64
	// SessionHeader and NoSessionHeader count completions that did and
	// did not carry the session header (SessionHeader).
	SessionHeader, NoSessionHeader int64
	// ChatPromptTokens, ChatCompletionTokens and ChatCachedTokens total
	// the usage reported by served chat completions (judge, generator,
	// agents); ChatCachedTokens is prompt_tokens_details.cached_tokens.
	ChatPromptTokens, ChatCompletionTokens, ChatCachedTokens int64
}

// DefaultFingerprint is the system_fingerprint of chat completions until
// SetFingerprint changes it.
const DefaultFingerprint = "fp_sim0"

// SetFingerprint changes the system_fingerprint chat completions report
// from now on: the judge's backend changing under a run.
func (s *Server) SetFingerprint(fp string) { s.fingerprint.Store(&fp) }

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() Stats {
	st := Stats{
		Requests:         map[string]int64{},
		Faults:           map[string]int64{},
		Running:          s.running.Load(),
		Waiting:          s.waiting.Load(),
		PromptTokens:     s.promptTok.Load(),
		GenerationTokens: s.genTok.Load(),
		NoSessionHeader:  s.sessions[0].Load(),
		SessionHeader:    s.sessions[1].Load(),

		ChatPromptTokens:     s.chatPrompt.Load(),
		ChatCompletionTokens: s.chatCompletion.Load(),
		ChatCachedTokens:     s.chatCached.Load(),
	}
	st.PrefixCacheQueries, st.PrefixCacheHits = s.cache.counts()
	for p, c := range s.requests {
		if n := c.Load(); n > 0 {
			st.Requests[p] = n
		}
	}
	for k, c := range s.faultsN {
		if n := c.Load(); n > 0 {
			st.Faults[k] = n
		}
	}
	return st
}

func (s *Server) countFault(kind string) { s.faultsN[kind].Add(1) }

// acquire takes a MaxConcurrent slot, counting the request as waiting until
// it has one and as running after. It returns false if the client left.
func (s *Server) acquire(ctx context.Context) bool {
	if s.sem != nil {
		select {
		case s.sem <- struct{}{}:
		default:
			s.waiting.Add(1)
			select {
			case s.sem <- struct{}{}:
				s.waiting.Add(-1)
			case <-ctx.Done():
				s.waiting.Add(-1)
				return false
			}
		}
	}
	s.running.Add(1)
	return true
}

func (s *Server) release() {
	s.running.Add(-1)
	if s.sem != nil {
		<-s.sem
	}
}

// errorBody is vLLM's error shape: {"error": {...}}, or the older flat
// {"object": "error", ...} with Options.LegacyErrors.
type errorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

type legacyError struct {
	Object string `json:"object"`
	errorInfo
}

func (s *Server) writeError(w http.ResponseWriter, status int, typ, msg, param string) {
	info := errorInfo{Message: msg, Type: typ, Code: status}
	if param != "" {
		info.Param = &param
	}
	var body any = map[string]errorInfo{"error": info}
	if s.opts.LegacyErrors {
		body = legacyError{Object: "error", errorInfo: info}
	}
	s.writeJSON(w, status, body)
}

func (s *Server) badRequest(w http.ResponseWriter, msg string) {
	s.writeError(w, http.StatusBadRequest, "BadRequestError", msg, "")
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	buf, err := json.Marshal(v)
	if err != nil {
		s.log.Error("sim: encode response", zap.Error(err))
		http.Error(w, "encode response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf)
}

// writeRaw writes a 200 JSON answer encoded by enc into a pooled buffer.
func (s *Server) writeRaw(w http.ResponseWriter, enc func([]byte) []byte) {
	bp := bufPool.Get().(*[]byte)
	buf := enc((*bp)[:0])
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(buf)
	if cap(buf) <= 1<<20 {
		*bp = buf
		bufPool.Put(bp)
	}
}

// readBody reads the request body, answering 400 on failure.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	var body []byte
	if n := r.ContentLength; n > 0 && n <= maxRequestBytes {
		body = make([]byte, 0, n+1)
	}
	buf := bytes.NewBuffer(body)
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, maxRequestBytes)); err != nil {
		s.badRequest(w, "reading request body: "+err.Error())
		return nil, false
	}
	return buf.Bytes(), true
}

// readJSON decodes the request body into v, answering 400 on failure.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := s.readBody(w, r)
	if !ok {
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		s.badRequest(w, "invalid JSON body: "+err.Error())
		return false
	}
	return true
}

// checkModel resolves a request's model: "" and the base model are the base,
// a loaded adapter's name is that adapter. Unknown names get vLLM's 404.
func (s *Server) checkModel(w http.ResponseWriter, model string) (adapter bool, ok bool) {
	if model == "" || model == s.opts.Model {
		return false, true
	}
	s.loraMu.RLock()
	_, found := s.loras[model]
	s.loraMu.RUnlock()
	if found {
		return true, true
	}
	s.writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", model), "model")
	return false, false
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if s.isEngineDead() {
		// vLLM's /health answers 503 with no body once EngineDeadError is raised.
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// EngineDeadMessage is what vLLM (0.8 and later, V1 engine) answers every
// request with once its engine core has died (EngineDeadError).
const EngineDeadMessage = "EngineCore encountered an issue. See stack trace (above) for the root cause."

func (s *Server) isEngineDead() bool {
	return s.opts.EngineDiesAfter > 0 && s.engineN.Load() >= int64(s.opts.EngineDiesAfter)
}

// engineDead answers vLLM's 500 for a dead engine and reports true once
// Options.EngineDiesAfter completion requests have been seen; count makes
// this request one of them.
func (s *Server) engineDead(w http.ResponseWriter, count bool) bool {
	if s.opts.EngineDiesAfter <= 0 {
		return false
	}
	if s.isEngineDead() {
		s.writeError(w, http.StatusInternalServerError, "InternalServerError", EngineDeadMessage, "")
		return true
	}
	if count {
		s.engineN.Add(1)
	}
	return false
}

func (s *Server) handleVersion(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, map[string]string{"version": simVersionString})
}

type modelCard struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Created     int64             `json:"created"`
	OwnedBy     string            `json:"owned_by"`
	Root        string            `json:"root"`
	Parent      *string           `json:"parent"`
	MaxModelLen *int              `json:"max_model_len"`
	Permission  []modelPermission `json:"permission"`
}

type modelPermission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

func (s *Server) permission(created int64, id string) []modelPermission {
	return []modelPermission{{ID: "modelperm-" + id, Object: "model_permission", Created: created,
		AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*"}}
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	created := s.started.Unix()
	mml := s.opts.MaxModelLen
	cards := []modelCard{{ID: s.opts.Model, Object: "model", Created: created, OwnedBy: "vllm",
		Root: s.opts.Model, MaxModelLen: &mml, Permission: s.permission(created, "base")}}
	s.loraMu.RLock()
	for _, name := range s.loraN {
		a := s.loras[name]
		parent := s.opts.Model
		cards = append(cards, modelCard{ID: a.name, Object: "model", Created: a.created, OwnedBy: "vllm",
			Root: a.path, Parent: &parent, Permission: s.permission(a.created, a.name)})
	}
	s.loraMu.RUnlock()
	s.writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": cards})
}

type loadLoRARequest struct {
	LoRAName    string `json:"lora_name"`
	LoRAPath    string `json:"lora_path"`
	LoadInplace bool   `json:"load_inplace"`
}

func writeText(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, msg)
}

func (s *Server) handleLoadLoRA(w http.ResponseWriter, r *http.Request) {
	var req loadLoRARequest
	if !s.readJSON(w, r, &req) {
		return
	}
	if req.LoRAName == "" || req.LoRAPath == "" {
		s.writeError(w, http.StatusBadRequest, "InvalidUserInput", "Both 'lora_name' and 'lora_path' must be provided.", "")
		return
	}
	if req.LoRAName == s.opts.Model {
		s.writeError(w, http.StatusBadRequest, "InvalidUserInput",
			fmt.Sprintf("The lora adapter '%s' has the name of the base model.", req.LoRAName), "")
		return
	}
	if s.opts.RequireLoRAPath {
		if _, err := os.Stat(req.LoRAPath); err != nil {
			s.writeError(w, http.StatusNotFound, "NotFoundError",
				fmt.Sprintf("Loading lora %s failed: No adapter found for %s", req.LoRAName, req.LoRAPath), "")
			return
		}
	}
	s.loraMu.Lock()
	_, exists := s.loras[req.LoRAName]
	if exists && !req.LoadInplace {
		s.loraMu.Unlock()
		s.writeError(w, http.StatusBadRequest, "InvalidUserInput",
			fmt.Sprintf("The lora adapter '%s' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.", req.LoRAName), "")
		return
	}
	ord := s.loraLoads
	if !exists {
		s.loraN = append(s.loraN, req.LoRAName)
		s.loraLoads++
	} else {
		ord = s.loras[req.LoRAName].ord
	}
	s.loras[req.LoRAName] = loraAdapter{name: req.LoRAName, path: req.LoRAPath, created: time.Now().Unix(), ord: ord}
	s.loraMu.Unlock()
	s.log.Info("sim: loaded LoRA adapter", zap.String("name", req.LoRAName), zap.String("path", req.LoRAPath))
	writeText(w, fmt.Sprintf("Success: LoRA adapter '%s' added successfully.", req.LoRAName))
}

func (s *Server) handleUnloadLoRA(w http.ResponseWriter, r *http.Request) {
	var req struct {
		LoRAName string `json:"lora_name"`
	}
	if !s.readJSON(w, r, &req) {
		return
	}
	if req.LoRAName == "" {
		s.writeError(w, http.StatusBadRequest, "InvalidUserInput", "'lora_name' needs to be provided to unload a LoRA adapter.", "")
		return
	}
	s.loraMu.Lock()
	_, exists := s.loras[req.LoRAName]
	if exists {
		delete(s.loras, req.LoRAName)
		for i, n := range s.loraN {
			if n == req.LoRAName {
				s.loraN = append(s.loraN[:i:i], s.loraN[i+1:]...)
				break
			}
		}
	}
	s.loraMu.Unlock()
	if !exists {
		s.writeError(w, http.StatusNotFound, "NotFoundError",
			fmt.Sprintf("The lora adapter '%s' cannot be found.", req.LoRAName), "")
		return
	}
	writeText(w, fmt.Sprintf("Success: LoRA adapter '%s' removed successfully.", req.LoRAName))
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	label := fmt.Sprintf(`{engine="0",model_name=%q}`, s.opts.Model)
	metric := func(name, typ, help string, v int64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s%s %d.0\n", name, help, name, typ, name, label, v)
	}
	metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", s.running.Load())
	metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", s.waiting.Load())
	metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", s.promptTok.Load())
	metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", s.genTok.Load())
	st := s.Stats()
	if s.cache != nil {
		metric("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", st.PrefixCacheQueries)
		metric("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", st.PrefixCacheHits)
	}
	fmt.Fprintf(&b, "# HELP %[1]s Completions received by the simulator, by whether they carried the %[2]s header.\n# TYPE %[1]s counter\n%[1]s{present=\"false\"} %[3]d.0\n%[1]s{present=\"true\"} %[4]d.0\n",
		MetricSessionHeader, SessionHeader, st.NoSessionHeader, st.SessionHeader)
	b.WriteString("# HELP sim_requests_total Requests received by the simulator, by path.\n# TYPE sim_requests_total counter\n")
	for _, p := range sortedKeys(st.Requests) {
		fmt.Fprintf(&b, "sim_requests_total{path=%q} %d.0\n", p, st.Requests[p])
	}
	b.WriteString("# HELP sim_faults_total Faults injected by the simulator, by kind.\n# TYPE sim_faults_total counter\n")
	for _, k := range sortedKeys(st.Faults) {
		fmt.Fprintf(&b, "sim_faults_total{kind=%q} %d.0\n", k, st.Faults[k])
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	io.WriteString(w, b.String())
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
