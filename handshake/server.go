package handshake

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/fsutil"
	"go.uber.org/zap"
)

// Defaults of Options.
const (
	DefaultAddr             = "127.0.0.1:0"
	DefaultMaxWait          = 30 * time.Second
	DefaultPollInterval     = 250 * time.Millisecond
	DefaultMaxUploadBytes   = 16 << 30
	DefaultMaxUploadEntries = 10000
)

// Options configure NewServer.
type Options struct {
	// Dir is the run directory.
	Dir string
	// Token is the bearer token every request must carry. Required; see
	// NewToken.
	Token string
	// Addr is the listen address; empty means DefaultAddr. A
	// non-loopback address (including ":port", all interfaces) is refused
	// unless AllowRemote.
	Addr        string
	AllowRemote bool
	// Logger receives request logs; nil means none. The token is never
	// logged.
	Logger *zap.Logger
	// MaxWait caps the long poll of /v1/batches/next; 0 means
	// DefaultMaxWait.
	MaxWait time.Duration
	// PollInterval is how often a long poll looks at batches/; 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// MaxUploadBytes caps a done upload's body; 0 means
	// DefaultMaxUploadBytes.
	MaxUploadBytes int64
	// MaxUploadEntries caps the members of a done upload; 0 means
	// DefaultMaxUploadEntries.
	MaxUploadEntries int

	// pollHook, when set (tests), runs after each long-poll scan that
	// found nothing.
	pollHook func()
}

// Server is the orchestrator's side of the HTTP handshake: it
// serves a run directory's batches to a trainer on another machine and
// receives its checkpoints. The trainer's side must follow this wire format.
//
// Every request carries "Authorization: Bearer <token>"; anything else is
// 401. Errors are JSON {"error": "…"}.
//
//	GET /v1/health
//	    200 {"status":"ok"}: checks the address and the token.
//	GET /v1/batches/next?after=N&wait=S
//	    The smallest step > N (default -1) whose batch is ready and whose
//	    checkpoint has no DONE yet (a restarted trainer skips finished steps):
//	    200 {"step": 42, "ready": {schema_version, step, policy_version,
//	    rows, tokens, sha256}, "metrics": {…}}, metrics being parley's
//	    metrics of the step's sampling (the sidecar's; absent when it is
//	    lost), which the trainer reports beside its own (TensorBoard,
//	    W&B). When there is none it waits up to S
//	    seconds (default and maximum Options.MaxWait, 30 s;
//	    0 answers at once), then answers 204 with no body. A client sets
//	    its read timeout above S.
//	GET /v1/batches/{step}
//	    The parquet file of a ready step (Range requests work), with
//	    Content-Type application/vnd.apache.parquet and headers
//	    X-Parley-Step and X-Parley-Batch-Sha256; 404 if it is not ready.
//	POST /v1/batches/{step}/done
//	    Body: a tar archive (plain, or gzip-compressed: detected by its
//	    magic bytes) of the checkpoint: the adapter's files at the top
//	    level or in subdirectories (e.g. adapter_config.json,
//	    adapter_model.safetensors), plus a member named DONE holding the
//	    Done JSON {"step": N, "metrics": {…}}, whose step must equal the
//	    URL's. Only regular files and directories are accepted; names must
//	    be relative, clean and local (no "..", no absolute paths, no
//	    backslashes); the total size is capped. The server extracts into a
//	    temporary directory under checkpoints/, renames it to
//	    checkpoints/step-N/, then writes DONE there atomically with
//	    adapter_path set to that directory. 200 {"status":"ok", "done": …}
//	    (or "status":"exists" when the step was already done: a retried
//	    upload is harmless); 400 on a bad archive, 404 if the batch was
//	    never ready, 413 over the size cap.
//	POST /v1/batches/{step}/refused
//	    Body: {"reason": "…"} (at most 64 KiB): the trainer refuses the
//	    step's batch (a schema it does not read, a checksum that does not
//	    match). The server writes checkpoints/step-N/REFUSED (Refused) and
//	    parley stops the run with the reason. 200 {"status":"ok"}; 409 if
//	    the step is already done.
//
// {step} is parsed as a decimal integer; every path the server opens is
// built from that integer through dataset.RunDir. The only request data that names
// a file is a tar member name, validated as above and opened through an
// os.Root confined to the temporary directory.
type Server struct {
	dir      dataset.RunDir
	tokenSum [sha256.Size]byte
	log      *zap.Logger
	opts     Options
	ln       net.Listener
	srv      *http.Server
	handler  http.Handler
	closing  chan struct{}
	closeErr error
	once     sync.Once
	served   chan struct{}
	doneMu   sync.Mutex // serializes finalizing uploads
}

// NewToken returns a random 256-bit bearer token, hex-encoded.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("handshake.NewToken: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// NewServer listens on opts.Addr and serves the handshake until
// Close. It creates the run directory's subdirectories if missing.
func NewServer(opts Options) (*Server, error) {
	if opts.Dir == "" {
		return nil, errors.New("handshake.NewServer: Dir is empty")
	}
	if opts.Token == "" {
		return nil, errors.New("handshake.NewServer: Token is empty")
	}
	if opts.Addr == "" {
		opts.Addr = DefaultAddr
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.MaxUploadBytes <= 0 {
		opts.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if opts.MaxUploadEntries <= 0 {
		opts.MaxUploadEntries = DefaultMaxUploadEntries
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("handshake.NewServer: address %q: %w", opts.Addr, err)
	}
	if !opts.AllowRemote && !isLoopbackHost(host) {
		return nil, fmt.Errorf("handshake.NewServer: address %q is not loopback; set AllowRemote to serve other machines", opts.Addr)
	}
	abs, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("handshake.NewServer: %w", err)
	}
	dir := dataset.RunDir(abs)
	if err := dir.Create(); err != nil {
		return nil, fmt.Errorf("handshake.NewServer: %w", err)
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("handshake.NewServer: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !opts.AllowRemote && !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("handshake.NewServer: %q resolved to non-loopback %s", opts.Addr, tcp)
	}
	s := &Server{
		dir:      dir,
		tokenSum: sha256.Sum256([]byte(opts.Token)),
		log:      opts.Logger.Named("handshake"),
		opts:     opts,
		ln:       ln,
		closing:  make(chan struct{}),
		served:   make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", s.handleHealth)
	mux.HandleFunc("GET /v1/batches/next", s.handleNext)
	mux.HandleFunc("GET /v1/batches/{step}", s.handleBatch)
	mux.HandleFunc("POST /v1/batches/{step}/done", s.handleDone)
	mux.HandleFunc("POST /v1/batches/{step}/refused", s.handleRefused)
	s.handler = s.authenticate(mux)
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          zap.NewStdLog(s.log),
	}
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve", zap.Error(err))
		}
	}()
	s.log.Info("listening", zap.String("addr", ln.Addr().String()), zap.String("dir", abs))
	return s, nil
}

// isLoopbackHost reports whether a listen host is a loopback name or IP; an
// empty host (all interfaces) is not.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if i := strings.IndexByte(host, '%'); i >= 0 {
		host = host[:i]
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Addr is the address the server listens on (host:port).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is "http://" + Addr().
func (s *Server) URL() string { return "http://" + s.Addr() }

// Handler is the server's authenticated handler, for embedding in another
// server.
func (s *Server) Handler() http.Handler { return s.handler }

// Close stops the server: long polls answer 204 at once, other requests get
// up to five seconds to finish, then connections are closed.
func (s *Server) Close() error {
	s.once.Do(func() {
		close(s.closing)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			s.closeErr = errors.Join(err, s.srv.Close())
		}
		<-s.served
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("handshake.Server.Close: %w", s.closeErr)
		}
	})
	return s.closeErr
}

// authenticate requires the bearer token on every request.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		sum := sha256.Sum256([]byte(tok))
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) != 1 {
			s.log.Warn("unauthorized", zap.String("remote", r.RemoteAddr), zap.String("method", r.Method), zap.String("path", r.URL.EscapedPath()))
			w.Header().Set("WWW-Authenticate", `Bearer realm="parley"`)
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		s.log.Debug("request", zap.String("remote", r.RemoteAddr), zap.String("method", r.Method), zap.String("path", r.URL.EscapedPath()))
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// parseStep parses a step from a request: decimal digits only, at most nine.
func parseStep(v string) (int, bool) {
	if len(v) == 0 || len(v) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// NextBatch is the 200 answer of GET /v1/batches/next.
type NextBatch struct {
	Step  int           `json:"step"`
	Ready dataset.Ready `json:"ready"`
	// Metrics are the step's sampling metrics (dataset.RunDir.SidecarPath),
	// nil when they are lost.
	Metrics map[string]any `json:"metrics,omitempty"`
}

// readStepMetrics reads the "metrics" object of step's sidecar
// (dataset.RunDir.SidecarPath), which the loop writes before the step's
// batch.
func readStepMetrics(d dataset.RunDir, step int) (map[string]any, error) {
	b, err := os.ReadFile(d.SidecarPath(step))
	if err != nil {
		return nil, err
	}
	var sc struct {
		Metrics map[string]any `json:"metrics"`
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		return nil, fmt.Errorf("%s: %w", d.SidecarPath(step), err)
	}
	return sc.Metrics, nil
}

func (s *Server) handleNext(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after := -1
	if v := q.Get("after"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < -1 || n > dataset.MaxStep {
			writeError(w, http.StatusBadRequest, "after must be an integer >= -1")
			return
		}
		after = n
	}
	wait := s.opts.MaxWait
	if v := q.Get("wait"); v != "" {
		sec, err := strconv.ParseFloat(v, 64)
		if err != nil || sec < 0 || math.IsNaN(sec) || math.IsInf(sec, 0) {
			writeError(w, http.StatusBadRequest, "wait must be a number of seconds >= 0")
			return
		}
		if d := time.Duration(sec * float64(time.Second)); d < wait {
			wait = d
		}
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	for {
		step, ready, found, err := s.nextReady(after)
		if err != nil {
			s.log.Error("scan batches", zap.Error(err))
			writeError(w, http.StatusInternalServerError, "cannot list batches")
			return
		}
		if found {
			nb := NextBatch{Step: step, Ready: ready}
			if m, err := readStepMetrics(s.dir, step); err == nil {
				nb.Metrics = m
			} else {
				s.log.Warn("the step's metrics are not sent with its batch", zap.Int("step", step), zap.Error(err))
			}
			writeJSON(w, http.StatusOK, nb)
			return
		}
		if s.opts.pollHook != nil {
			s.opts.pollHook()
		}
		select {
		case <-tick.C:
			continue
		case <-deadline.C:
		case <-r.Context().Done():
		case <-s.closing:
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
}

// nextReady finds the smallest step > after that is ready and not yet done.
// File names come from the directory listing, never from the request.
func (s *Server) nextReady(after int) (int, dataset.Ready, bool, error) {
	entries, err := os.ReadDir(s.dir.BatchesDir())
	if err != nil {
		return 0, dataset.Ready{}, false, err
	}
	best := -1
	var bestReady dataset.Ready
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), dataset.ReadyExt)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		step, ok := dataset.ParseStepName(name)
		if !ok || step <= after || (best >= 0 && step >= best) {
			continue
		}
		if _, err := os.Stat(s.dir.DonePath(step)); err == nil {
			continue // already trained
		}
		ready, err := s.readReady(step)
		if err != nil {
			s.log.Debug("ready marker not usable yet", zap.Int("step", step), zap.Error(err))
			continue
		}
		best, bestReady = step, ready
	}
	return best, bestReady, best >= 0, nil
}

// readReady reads and checks the .ready marker of step, and checks that its
// batch exists.
func (s *Server) readReady(step int) (dataset.Ready, error) {
	var ready dataset.Ready
	b, err := os.ReadFile(s.dir.ReadyPath(step))
	if err != nil {
		return ready, err
	}
	if err := json.Unmarshal(b, &ready); err != nil {
		return ready, fmt.Errorf("ready marker: %w", err)
	}
	if ready.Step != step {
		return ready, fmt.Errorf("ready marker of step %d says step %d", step, ready.Step)
	}
	info, err := os.Stat(s.dir.BatchPath(step))
	if err != nil {
		return ready, err
	}
	if !info.Mode().IsRegular() {
		return ready, fmt.Errorf("batch of step %d is not a regular file", step)
	}
	return ready, nil
}

func (s *Server) handleBatch(w http.ResponseWriter, r *http.Request) {
	step, ok := parseStep(r.PathValue("step"))
	if !ok {
		writeError(w, http.StatusBadRequest, "step must be a non-negative decimal integer")
		return
	}
	ready, err := s.readReady(step)
	if err != nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("batch of step %d is not ready", step))
		return
	}
	f, err := os.Open(s.dir.BatchPath(step))
	if err != nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("batch of step %d is not ready", step))
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "cannot stat batch")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/vnd.apache.parquet")
	h.Set("X-Parley-Step", strconv.Itoa(step))
	if ready.SHA256 != "" {
		h.Set("X-Parley-Batch-Sha256", ready.SHA256)
		h.Set("ETag", strconv.Quote(ready.SHA256))
	}
	http.ServeContent(w, r, "", info.ModTime(), f)
}

// uploadError is a done upload's failure with its HTTP status.
type uploadError struct {
	code int
	err  error
}

func (e *uploadError) Error() string { return e.err.Error() }
func (e *uploadError) Unwrap() error { return e.err }

func badUpload(format string, args ...any) error {
	return &uploadError{code: http.StatusBadRequest, err: fmt.Errorf(format, args...)}
}

func (s *Server) handleRefused(w http.ResponseWriter, r *http.Request) {
	step, ok := parseStep(r.PathValue("step"))
	if !ok {
		writeError(w, http.StatusBadRequest, "step must be a non-negative decimal integer")
		return
	}
	var body struct {
		Reason string `json:"reason"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	if err := dec.Decode(&body); err != nil || strings.TrimSpace(body.Reason) == "" {
		writeError(w, http.StatusBadRequest, `body must be {"reason": "…"} with a reason`)
		return
	}
	ck := s.dir.CheckpointDir(step)
	if _, done, _ := ReadDone(ck); done {
		writeError(w, http.StatusConflict, fmt.Sprintf("step %d is already done", step))
		return
	}
	b, _ := json.Marshal(Refused{Step: step, Reason: body.Reason})
	if err := os.MkdirAll(ck, 0o755); err != nil {
		writeError(w, http.StatusInternalServerError, "cannot create the checkpoint directory")
		return
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(ck, RefusedFile), append(b, '\n'), 0o644); err != nil {
		writeError(w, http.StatusInternalServerError, "cannot write REFUSED")
		return
	}
	s.log.Warn("the trainer refused a batch", zap.Int("step", step), zap.String("reason", body.Reason))
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

func (s *Server) handleDone(w http.ResponseWriter, r *http.Request) {
	step, ok := parseStep(r.PathValue("step"))
	if !ok {
		writeError(w, http.StatusBadRequest, "step must be a non-negative decimal integer")
		return
	}
	if _, err := s.readReady(step); err != nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("batch of step %d was never ready", step))
		return
	}
	final := s.dir.CheckpointDir(step)
	if d, ok, err := ReadDone(final); err == nil && ok {
		writeJSON(w, http.StatusOK, map[string]any{"status": "exists", "done": d})
		return
	}
	body := http.MaxBytesReader(w, r.Body, s.opts.MaxUploadBytes)
	tmp, err := os.MkdirTemp(s.dir.CheckpointsDir(), ".upload-"+dataset.StepName(step)+"-")
	if err != nil {
		s.log.Error("upload temp dir", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "cannot create upload directory")
		return
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	done, files, size, err := s.extract(body, tmp, step)
	if err == nil {
		var exists bool
		done, exists, err = s.finalize(tmp, final, done)
		if err == nil && exists {
			writeJSON(w, http.StatusOK, map[string]any{"status": "exists", "done": done})
			return
		}
	}
	if err != nil {
		code := http.StatusInternalServerError
		var ue *uploadError
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			code = http.StatusRequestEntityTooLarge
		case errors.As(err, &ue):
			code = ue.code
		}
		s.log.Warn("done upload rejected", zap.Int("step", step), zap.Int("status", code), zap.Error(err))
		msg := err.Error()
		if code == http.StatusInternalServerError {
			msg = "cannot store the checkpoint"
		}
		writeError(w, code, msg)
		return
	}
	s.log.Info("checkpoint received", zap.Int("step", step), zap.Int("files", files), zap.Int64("bytes", size))
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "done": done, "files": files, "bytes": size})
}

// extract unpacks a done upload into dir and returns its DONE marker.
func (s *Server) extract(body io.Reader, dir string, step int) (Done, int, int64, error) {
	var done Done
	root, err := os.OpenRoot(dir)
	if err != nil {
		return done, 0, 0, err
	}
	defer root.Close()

	br := bufio.NewReader(body)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return done, 0, 0, badUpload("gzip: %w", err)
		}
		defer zr.Close()
		src = zr
	}
	tr := tar.NewReader(src)
	seen := map[string]bool{}
	var haveDone bool
	var files, entries int
	var total int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return done, 0, 0, wrapBody("tar", err)
		}
		if entries++; entries > s.opts.MaxUploadEntries {
			return done, 0, 0, badUpload("more than %d archive members", s.opts.MaxUploadEntries)
		}
		name, skip, err := memberName(hdr.Name, hdr.Typeflag == tar.TypeDir)
		if err != nil {
			return done, 0, 0, badUpload("member %q: %w", hdr.Name, err)
		}
		if skip {
			continue
		}
		if seen[name] {
			return done, 0, 0, badUpload("member %q appears twice", name)
		}
		seen[name] = true
		switch hdr.Typeflag {
		case tar.TypeDir:
			if name == dataset.DoneFile {
				return done, 0, 0, badUpload("DONE must be a regular file")
			}
			if err := root.MkdirAll(name, 0o755); err != nil {
				return done, 0, 0, badUpload("member %q: %w", name, err)
			}
			continue
		case tar.TypeReg, '\x00':
		default:
			return done, 0, 0, badUpload("member %q: only regular files and directories are accepted (type %q)", name, hdr.Typeflag)
		}
		if hdr.Size < 0 || hdr.Size > s.opts.MaxUploadBytes-total {
			return done, 0, 0, &uploadError{code: http.StatusRequestEntityTooLarge,
				err: fmt.Errorf("member %q: upload larger than %d bytes", name, s.opts.MaxUploadBytes)}
		}
		total += hdr.Size
		if name == dataset.DoneFile {
			if hdr.Size > maxDoneBytes {
				return done, 0, 0, badUpload("DONE is %d bytes, limit %d", hdr.Size, maxDoneBytes)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return done, 0, 0, wrapBody("DONE", err)
			}
			if done, err = parseDone(b); err != nil {
				return done, 0, 0, badUpload("DONE: %w", err)
			}
			if done.Step != step {
				return done, 0, 0, badUpload("DONE is for step %d, the URL for step %d", done.Step, step)
			}
			for k, v := range done.Metrics {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return done, 0, 0, badUpload("DONE metric %q is %v", k, v)
				}
			}
			haveDone = true
			continue
		}
		if d := path.Dir(name); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return done, 0, 0, badUpload("member %q: %w", name, err)
			}
		}
		if err := writeMember(root, name, tr, hdr.Size); err != nil {
			return done, 0, 0, err
		}
		files++
	}
	if !haveDone {
		return done, 0, 0, badUpload("the archive has no DONE member")
	}
	return done, files, total, nil
}

// wrapBody classifies an error reading the request body: the size cap stays
// a *http.MaxBytesError (413), a malformed archive is a 400.
func wrapBody(op string, err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return badUpload("%s: %w", op, err)
}

// writeMember copies one archive member into root and fsyncs it.
func writeMember(root *os.Root, name string, r io.Reader, size int64) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return badUpload("member %q: %w", name, err)
	}
	n, err := io.Copy(f, io.LimitReader(r, size))
	if err == nil && n != size {
		err = badUpload("member %q: %d of %d bytes", name, n, size)
	}
	if err != nil {
		f.Close()
		return wrapBody("member "+strconv.Quote(name), err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// memberName validates an archive member name and returns it in canonical
// form (slash-separated, relative, clean). skip is set for the archive root
// itself ("." or "./").
func memberName(name string, isDir bool) (clean string, skip bool, err error) {
	n := strings.TrimPrefix(name, "./")
	if isDir {
		n = strings.TrimSuffix(n, "/")
	}
	if n == "" || n == "." {
		if isDir {
			return "", true, nil
		}
		return "", false, errors.New("empty name")
	}
	if len(n) > 1024 {
		return "", false, errors.New("name too long")
	}
	for _, c := range n {
		if c < 0x20 || c == 0x7f || c == '\\' || c == ':' {
			return "", false, fmt.Errorf("character %q not allowed", c)
		}
	}
	if path.IsAbs(n) || !filepath.IsLocal(filepath.FromSlash(n)) || path.Clean(n) != n {
		return "", false, errors.New("name must be relative, clean and local")
	}
	parts := strings.Split(n, "/")
	if len(parts) > 16 {
		return "", false, errors.New("too deep")
	}
	for _, p := range parts {
		if p == "." || p == ".." || len(p) > 255 {
			return "", false, fmt.Errorf("component %q not allowed", p)
		}
	}
	if len(parts) > 1 && parts[0] == dataset.DoneFile {
		return "", false, errors.New("DONE must be a top-level file")
	}
	return n, false, nil
}

// finalize publishes an extracted checkpoint: rename to checkpoints/step-N/
// (replacing an incomplete one), then write DONE atomically. exists is set
// when another upload finished the step first.
func (s *Server) finalize(tmp, final string, done Done) (Done, bool, error) {
	s.doneMu.Lock()
	defer s.doneMu.Unlock()
	if d, ok, err := ReadDone(final); err == nil && ok {
		return d, true, nil
	}
	if err := syncTree(tmp); err != nil {
		return done, false, err
	}
	if err := os.RemoveAll(final); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return done, false, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return done, false, err
	}
	if err := fsutil.SyncDir(filepath.Dir(final)); err != nil {
		return done, false, err
	}
	done.AdapterPath = final
	if err := WriteDone(final, done); err != nil {
		return done, false, err
	}
	return done, false, nil
}

// syncTree fsyncs every directory under dir, dir included.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return fsutil.SyncDir(p)
	})
}
