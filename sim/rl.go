package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/parleyhq/parley/llm/weights"
)

// paramPrefix is what vLLM puts before a parameter's name in
// /weight_checker's answer (data, pipeline, context and tensor parallel
// ranks 0).
const paramPrefix = "dp0:pp0:pcp0:tp0:"

// rlState is the simulated engine's weights, version and pause state
// (Options.Weights).
type rlState struct {
	mu       sync.Mutex
	sums     map[string]string // /weight_checker's checksums
	version  *string
	paused   bool
	resumed  chan struct{} // closed on resume; nil while not paused
	reloads  int
	cacheGen int
}

// load makes the folder dir's tensors the engine's weights.
func (st *rlState) load(dir string) error {
	f, err := weights.Read(dir)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(f.Tensors))
	for _, n := range f.Names() {
		keys = append(keys, paramPrefix+n)
	}
	sums, _, err := weights.Expected(f, keys)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sums != nil && !sameKeys(st.sums, sums) {
		return fmt.Errorf("reload_weights from %s: its parameters are not the engine's", dir)
	}
	st.sums = sums
	st.reloads++
	return nil
}

func sameKeys(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// waitResumed blocks a generation request while the engine is paused.
func (st *rlState) waitResumed(r *http.Request) {
	st.mu.Lock()
	ch := st.resumed
	st.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-r.Context().Done():
	}
}

// RLState reports the simulated engine's weight checksums, version ("" if
// unset), whether it is paused and how many times it reloaded weights
// (Options.Weights).
func (s *Server) RLState() (sums map[string]string, version string, paused bool, reloads int) {
	st := &s.rl
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.version != nil {
		version = *st.version
	}
	return maps(st.sums), version, st.paused, st.reloads
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// rlRoutes adds vLLM's RL and dev routes.
func (s *Server) rlRoutes(mux *http.ServeMux) {
	st := &s.rl
	mux.HandleFunc("POST /pause", func(w http.ResponseWriter, r *http.Request) {
		mode := r.URL.Query().Get("mode")
		if mode == "" {
			mode = "abort"
		}
		if !slices.Contains([]string{"abort", "wait", "keep"}, mode) {
			s.writeError(w, http.StatusUnprocessableEntity, "RequestValidationError", "mode: Input should be 'abort', 'wait' or 'keep'", "mode")
			return
		}
		st.mu.Lock()
		if !st.paused {
			st.paused, st.resumed = true, make(chan struct{})
		}
		st.mu.Unlock()
		s.writeJSON(w, http.StatusOK, map[string]string{"status": "paused"})
	})
	mux.HandleFunc("POST /resume", func(w http.ResponseWriter, _ *http.Request) {
		st.mu.Lock()
		if st.paused {
			close(st.resumed)
			st.paused, st.resumed = false, nil
		}
		st.mu.Unlock()
		s.writeJSON(w, http.StatusOK, map[string]string{"status": "resumed"})
	})
	mux.HandleFunc("GET /is_paused", func(w http.ResponseWriter, _ *http.Request) {
		st.mu.Lock()
		p := st.paused
		st.mu.Unlock()
		s.writeJSON(w, http.StatusOK, map[string]bool{"is_paused": p})
	})
	mux.HandleFunc("POST /collective_rpc", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string            `json:"method"`
			Kwargs map[string]string `json:"kwargs"`
		}
		if !s.readJSON(w, r, &req) {
			return
		}
		if req.Method != "reload_weights" {
			s.writeError(w, http.StatusInternalServerError, "InternalServerError", "the simulated engine has no method "+req.Method, "")
			return
		}
		if err := st.load(req.Kwargs["weights_path"]); err != nil {
			s.writeError(w, http.StatusInternalServerError, "InternalServerError", err.Error(), "")
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("POST /update_weight_version", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			NewVersion string `json:"new_version"`
		}
		if !s.readJSON(w, r, &req) {
			return
		}
		st.mu.Lock()
		st.version = &req.NewVersion
		st.mu.Unlock()
		s.writeJSON(w, http.StatusOK, map[string]any{"success": true, "new_version": req.NewVersion})
	})
	mux.HandleFunc("GET /weight_info", func(w http.ResponseWriter, _ *http.Request) {
		st.mu.Lock()
		v := st.version
		st.mu.Unlock()
		s.writeJSON(w, http.StatusOK, map[string]*string{"weight_version": v})
	})
	mux.HandleFunc("POST /weight_checker", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Action string `json:"action"`
		}
		if !s.readJSON(w, r, &req) {
			return
		}
		if req.Action != "checksum" {
			s.writeError(w, http.StatusBadRequest, "BadRequestError", "the simulated checker answers only action checksum", "action")
			return
		}
		st.mu.Lock()
		sums := maps(st.sums)
		st.mu.Unlock()
		for _, n := range s.opts.Repacked {
			if k := paramPrefix + n; sums[k] != "" {
				sums[k] = weights.EmptyDigest
			}
		}
		b, _ := json.Marshal(map[string]any{"checksums": sums})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
	mux.HandleFunc("POST /reset_prefix_cache", func(w http.ResponseWriter, _ *http.Request) {
		st.mu.Lock()
		st.cacheGen++
		st.mu.Unlock()
		if s.cache != nil {
			s.cache.reset()
		}
		s.writeJSON(w, http.StatusOK, map[string]bool{"success": true})
	})
}
