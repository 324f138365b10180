// Package view is parley view: a local web viewer for what parley writes.
// A Server finds, in the directories it is given, training runs
// (dataset.RunDir: config.yaml, state.json, metrics.jsonl, batches/,
// rollouts/), `parley rollout` outputs (rollouts.parquet and summary.json)
// and the game outputs package view/games finds, and serves a JSON API
// over them with the embedded pages (assets/: index.html, app.js,
// style.css; no CDN, nothing downloaded):
//
//	GET /                                         index.html
//	GET /api/index                                what was found
//	GET /api/run/overview?run=I                   a run's curves (metrics.jsonl)
//	GET /api/run/groups?run=I&step=N[&filters]    a step's groups, summaries only
//	GET /api/run/group?run=I&step=N&group=G       one group, its members side by side
//	GET /api/run/dialogue?run=I&step=N&rollout=ID one rollout: turns, tokens, judge, rewards
//
// A run being written is read as it grows: every request lists the
// directory again; a batch without its .ready marker and temporary files
// are skipped, and a parquet file that cannot be read (cut short, still
// being written) is named in the answer and the log, never served blank.
// Nothing from the environment is served: the config is read for a few
// named fields (run name, models, game), never passed through.
package view

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/view/games"
	"go.uber.org/zap"
)

//go:embed assets
var assets embed.FS

// Options configures a Server.
type Options struct {
	// Logger gets the files skipped (nil: none).
	Logger *zap.Logger
	// PageGroups is the number of groups a groups page holds (0: 20).
	PageGroups int
}

// Server serves the viewer over the directories it was given.
type Server struct {
	opts  Options
	log   *zap.Logger
	runs  []*source
	games []games.Found

	mu     sync.Mutex
	checks map[string]fileCheck // parquet path → its last check
	toks   map[string]*Tokenizer
}

// fileCheck is a parquet file's check, valid while its size and modtime
// stay.
type fileCheck struct {
	size  int64
	mtime int64
	err   error
}

// Kinds of source.
const (
	KindRun     = "run"
	KindRollout = "rollout"
)

// source is one training run or `parley rollout` output.
type source struct {
	Kind string
	Dir  string
	Name string
}

// NewServer finds the runs, rollout outputs and game outputs in dirs. A
// directory that holds none of them is an error naming what was looked
// for.
func NewServer(dirs []string, opts Options) (*Server, error) {
	if len(dirs) == 0 {
		return nil, errors.New("view: no directory given: give a run directory (runs/<name>), a parley rollout output, a tournament, series or league")
	}
	if opts.PageGroups <= 0 {
		opts.PageGroups = 20
	}
	s := &Server{opts: opts, log: opts.Logger, checks: map[string]fileCheck{}, toks: map[string]*Tokenizer{}}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("view: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("view: %s is not a directory: give a run directory, a parley rollout output, a tournament, series or league directory", dir)
		}
		found, err := games.Scan(dir)
		if err != nil {
			return nil, fmt.Errorf("view: %s: %w", dir, err)
		}
		src, ok, err := detect(dir)
		if err != nil {
			return nil, err
		}
		if ok {
			s.runs = append(s.runs, src)
		}
		s.games = append(s.games, found...)
		if !ok && len(found) == 0 {
			return nil, fmt.Errorf("view: %s is not a parley output: found no training run (%s, %s, %s, %s/ or %s/), no parley rollout output (%s with summary.json) and no tournament, series, league or evaluation",
				dir, dataset.ConfigFile, dataset.StateFile, dataset.MetricsFile, dataset.BatchesDirName, dataset.RolloutsDirName, dataset.RolloutFileName)
		}
	}
	return s, nil
}

// detect says what dir is: a training run or a rollout output.
func detect(dir string) (*source, bool, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, false, fmt.Errorf("view: %w", err)
	}
	name := filepath.Base(abs)
	if _, err := os.Stat(filepath.Join(dir, dataset.RolloutFileName)); err == nil {
		return &source{Kind: KindRollout, Dir: dir, Name: name}, true, nil
	}
	files, err := dataset.RunDir(dir).Files()
	if err != nil {
		return nil, false, fmt.Errorf("view: %w", err)
	}
	if len(files) == 0 {
		return nil, false, nil
	}
	return &source{Kind: KindRun, Dir: dir, Name: name}, true, nil
}

// Handler serves the pages and the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.Handle("GET /assets/games/", http.StripPrefix("/assets/games/", http.FileServerFS(gamesAssets())))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		b, err := assets.ReadFile("assets/index.html")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("GET /api/index", s.api(s.index))
	mux.HandleFunc("GET /api/run/overview", s.api(s.overview))
	mux.HandleFunc("GET /api/run/groups", s.api(s.groups))
	mux.HandleFunc("GET /api/run/group", s.api(s.group))
	mux.HandleFunc("GET /api/run/dialogue", s.api(s.dialogue))
	mux.Handle("/api/games/", games.Handler(s.games))
	return mux
}

// gamesAssets is view/games' assets folder.
func gamesAssets() fs.FS {
	if sub, err := fs.Sub(games.Assets, "assets"); err == nil {
		if _, err := fs.Stat(sub, "games.js"); err == nil {
			return sub
		}
	}
	return games.Assets
}

// apiError is an error with its HTTP status.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, a ...any) error {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

func notFound(format string, a ...any) error {
	return &apiError{http.StatusNotFound, fmt.Sprintf(format, a...)}
}

// api wraps a JSON endpoint: its value as JSON, or {"error": …} with the
// error's status (500 for an unreadable file, logged).
func (s *Server) api(fn func(r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := fn(r)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			status := http.StatusInternalServerError
			var ae *apiError
			if errors.As(err, &ae) {
				status = ae.status
			} else {
				s.log.Warn("view: "+r.URL.Path, zap.Error(err))
			}
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}
}

// runParam is the run a request names (?run=I).
func (s *Server) runParam(r *http.Request) (*source, int, error) {
	i, err := strconv.Atoi(r.URL.Query().Get("run"))
	if err != nil || i < 0 || i >= len(s.runs) {
		return nil, 0, notFound("run %q: want an index from /api/index (0 to %d)", r.URL.Query().Get("run"), len(s.runs)-1)
	}
	return s.runs[i], i, nil
}

// stepParam is the step a request names (?step=N).
func stepParam(r *http.Request) (int, error) {
	n, err := strconv.Atoi(r.URL.Query().Get("step"))
	if err != nil || n < 0 || n > dataset.MaxStep {
		return 0, badRequest("step %q: want a step number", r.URL.Query().Get("step"))
	}
	return n, nil
}

// checkParquet opens a parquet file's footer once per size and modtime,
// and returns why it cannot be read (nil when it can).
func (s *Server) checkParquet(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	s.mu.Lock()
	c, ok := s.checks[path]
	s.mu.Unlock()
	if ok && c.size == st.Size() && c.mtime == st.ModTime().UnixNano() {
		return c.err
	}
	f, _, err := dataset.OpenParquet(path)
	if err == nil {
		f.Close()
	} else {
		s.log.Warn("view: skipped a parquet file that cannot be read", zap.String("file", path), zap.Error(err))
	}
	s.mu.Lock()
	s.checks[path] = fileCheck{st.Size(), st.ModTime().UnixNano(), err}
	s.mu.Unlock()
	return err
}
