package games

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/tournament"
)

// Assets are the pages: games.js and games.css, served by view under
// /assets/games/.
//
//go:embed assets/games.js assets/games.css
var assets embed.FS

// Assets is assets/ itself: games.js and games.css at its root.
var Assets, _ = fs.Sub(assets, "assets")

// Kinds of game output.
const (
	KindTournament = "tournament"
	KindSeries     = "series"
	KindLeague     = "league"
	KindCompare    = "compare"
)

// Found is one game output found under a directory given to parley view.
type Found struct {
	// Kind is KindTournament, KindSeries, KindLeague or KindCompare;
	// Route the page's hash route ("#/g/tournament/<id>", id a hash of
	// Dir, stable whatever else is found).
	Kind, Title, Dir, Route string
}

// id is the found output's id in routes and API URLs.
func (f Found) id() string { return idOf(f.Kind, f.Dir) }

func idOf(kind, dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	h := sha256.Sum256([]byte(kind + "\x00" + abs))
	return hex.EncodeToString(h[:6])
}

func newFound(kind, title, dir string) Found {
	f := Found{Kind: kind, Title: title, Dir: dir}
	f.Route = "#/g/" + kind + "/" + f.id()
	return f
}

// Scan finds the game outputs in dir: dir itself or its direct children
// (a tournament directory, a series output, a run with a league or
// cross-play, a run with held-out evaluations). None is not an error; a
// dir that cannot be read is.
func Scan(dir string) ([]Found, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("games.Scan: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("games.Scan: %s is not a directory (looked for a tournament, a series, a league or evaluations in one)", dir)
	}
	out := scanOne(dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("games.Scan: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name()[0] != '.' && !isOwnSubdir(e.Name()) {
			out = append(out, scanOne(filepath.Join(dir, e.Name()))...)
		}
	}
	return out, nil
}

// isOwnSubdir names the folders of the outputs themselves, not searched
// for other outputs.
func isOwnSubdir(name string) bool {
	switch name {
	case tournament.GamesDir, tournament.PromptsDir, dataset.EvalsDirName, "series", "league", "crossplay",
		"batches", "rollouts", "checkpoints", "audit":
		return true
	}
	return false
}

// scanOne finds the outputs dir itself holds.
func scanOne(dir string) []Found {
	var out []Found
	base := filepath.Base(filepath.Clean(dir))
	if tournament.IsDir(dir) {
		out = append(out, newFound(KindTournament, "tournament "+base, dir))
	}
	if isDir(filepath.Join(dir, "series")) {
		out = append(out, newFound(KindSeries, "series "+base, dir))
	}
	rd := dataset.RunDir(dir)
	if isDir(rd.LeagueDir()) || isDir(filepath.Join(dir, "crossplay")) {
		out = append(out, newFound(KindLeague, "league "+base, dir))
	}
	if m, _ := filepath.Glob(filepath.Join(rd.EvalsDir(), "step-*.json")); len(m) > 0 {
		out = append(out, newFound(KindCompare, "held-out evaluations "+base, dir))
	}
	details, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	for _, p := range details {
		if isPairwiseDetails(p) {
			out = append(out, newFound(KindCompare, "pairwise "+filepath.Base(p), p))
		}
	}
	return out
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Handler serves the JSON API for found outputs under /api/games/:
//
//	/api/games/tournament?id=ID                      the holder × requester matrix
//	/api/games/tournament/games?id=ID&row=A&col=B    a cell's games, their turns and ledgers
//	/api/games/series?id=ID                          the series, games in order, trust after each
//	/api/games/league?id=ID                          members, ratings, cross-play matrices
//	/api/games/league/games?id=ID&xp=step-N&row=A&col=B  a cross-play cell's games
//	/api/games/compare?id=ID                         the evaluated steps and their prompts
//	/api/games/compare/prompt?id=ID&prompt=P         one prompt under every evaluated step
func Handler(found []Found) http.Handler {
	byID := map[string]Found{}
	for _, f := range found {
		byID[f.id()] = f
	}
	mux := http.NewServeMux()
	get := func(kind string, fn func(Found, url.Values) (any, error)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			f, ok := byID[q.Get("id")]
			if !ok || f.Kind != kind {
				writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no %s output with id %q was found", kind, q.Get("id"))})
				return
			}
			v, err := fn(f, q)
			if err != nil {
				status := http.StatusInternalServerError
				if errors.Is(err, errBadRequest) {
					status = http.StatusBadRequest
				}
				writeJSON(w, status, map[string]string{"error": err.Error()})
				return
			}
			writeJSON(w, http.StatusOK, v)
		}
	}
	mux.Handle("GET /api/games/tournament", get(KindTournament, func(f Found, q url.Values) (any, error) {
		return ReadTournament(f.Dir)
	}))
	mux.Handle("GET /api/games/tournament/games", get(KindTournament, func(f Found, q url.Values) (any, error) {
		return ReadCell(f.Dir, q.Get("row"), q.Get("col"))
	}))
	mux.Handle("GET /api/games/series", get(KindSeries, func(f Found, q url.Values) (any, error) {
		return ReadSeries(f.Dir)
	}))
	mux.Handle("GET /api/games/league", get(KindLeague, func(f Found, q url.Values) (any, error) {
		return ReadLeague(f.Dir)
	}))
	mux.Handle("GET /api/games/league/games", get(KindLeague, func(f Found, q url.Values) (any, error) {
		xp, err := crossPlayDir(f.Dir, q.Get("xp"))
		if err != nil {
			return nil, err
		}
		return ReadCell(xp, q.Get("row"), q.Get("col"))
	}))
	mux.Handle("GET /api/games/compare", get(KindCompare, func(f Found, q url.Values) (any, error) {
		return ReadCompare(f.Dir)
	}))
	mux.Handle("GET /api/games/compare/prompt", get(KindCompare, func(f Found, q url.Values) (any, error) {
		return ReadComparePrompt(f.Dir, q.Get("prompt"))
	}))
	mux.HandleFunc("/api/games/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no games API at " + r.URL.Path})
	})
	return mux
}

var errBadRequest = errors.New("bad request")

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(fmt.Sprintf(`{"error":%q}`, err.Error()))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
}

// URLs lists every API URL (path and query) the pages of found may fetch,
// for the export to snapshot: each page's own and each cell's or prompt's.
func URLs(found []Found) ([]string, error) {
	var out []string
	q := func(path string, kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return path + "?" + v.Encode()
	}
	for _, f := range found {
		id := f.id()
		switch f.Kind {
		case KindTournament:
			out = append(out, q("/api/games/tournament", "id", id))
			t, err := ReadTournament(f.Dir)
			if err != nil {
				return nil, err
			}
			for _, c := range t.cells() {
				out = append(out, q("/api/games/tournament/games", "id", id, "row", c[0], "col", c[1]))
			}
		case KindSeries:
			out = append(out, q("/api/games/series", "id", id))
		case KindLeague:
			out = append(out, q("/api/games/league", "id", id))
			l, err := ReadLeague(f.Dir)
			if err != nil {
				return nil, err
			}
			for _, xp := range l.CrossPlay {
				for _, c := range xp.Matrix.cells() {
					out = append(out, q("/api/games/league/games", "id", id, "xp", xp.Name, "row", c[0], "col", c[1]))
				}
			}
		case KindCompare:
			out = append(out, q("/api/games/compare", "id", id))
			c, err := ReadCompare(f.Dir)
			if err != nil {
				return nil, err
			}
			for _, p := range c.Prompts {
				out = append(out, q("/api/games/compare/prompt", "id", id, "prompt", p))
			}
		default:
			return nil, fmt.Errorf("games.URLs: %s: kind %q is none of tournament, series, league, compare", f.Dir, f.Kind)
		}
	}
	sort.Strings(out)
	return out, nil
}

// readJSON reads the JSON file path into a T; a file that cannot be read
// or does not parse is named in errs, skipped (ok false), never fatal.
func readJSON[T any](path string, errs *[]string) (v T, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		*errs = append(*errs, err.Error())
		return v, false
	}
	if err := json.Unmarshal(b, &v); err != nil {
		*errs = append(*errs, fmt.Sprintf("%s: skipped, does not parse: %v", path, err))
		return v, false
	}
	return v, true
}
