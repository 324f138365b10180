package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/view/games"
)

// ExportOptions chooses what an export holds.
type ExportOptions struct {
	// From and To bound the steps exported (0: no bound). A rollout
	// output's one file is step 0 and always exported.
	From, To int
	// Filter selects the groups exported (and the filter the page opens
	// with).
	Filter Filter
}

// snapshotMarker is where index.html's snapshot script goes in an export.
const snapshotMarker = "<!--PARLEY_SNAPSHOT-->"

// Export writes one self-contained HTML file: index.html with its CSS and
// JavaScript inlined and window.PARLEY_SNAPSHOT, a map of every API URL
// the pages fetch for the chosen steps and filter to its JSON answer, so
// that it opens in a browser without parley and without a network. It
// returns the number of URLs snapshotted.
func (s *Server) Export(w io.Writer, o ExportOptions) (int, error) {
	urls, err := s.exportURLs(o)
	if err != nil {
		return 0, err
	}
	h := s.Handler()
	snap := make(map[string]json.RawMessage, len(urls))
	for _, u := range urls {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		body := bytes.TrimSpace(rec.Body.Bytes())
		if !json.Valid(body) {
			return 0, fmt.Errorf("view: export: %s answered %d with no JSON: %.200s", u, rec.Code, body)
		}
		snap[u] = body
	}
	snapJSON, err := json.Marshal(snap) // escapes <, > and &: safe inside <script>
	if err != nil {
		return 0, fmt.Errorf("view: export: %w", err)
	}
	meta, _ := json.Marshal(map[string]any{"filter": strings.TrimPrefix(o.Filter.Query(), "&"), "from": o.From, "to": o.To})
	page, err := s.inlinedPage()
	if err != nil {
		return 0, err
	}
	script := "<script>window.PARLEY_SNAPSHOT = " + string(snapJSON) + ";\nwindow.PARLEY_EXPORT = " + string(meta) + ";</script>"
	page = strings.Replace(page, snapshotMarker, script, 1)
	if _, err := io.WriteString(w, page); err != nil {
		return 0, fmt.Errorf("view: export: %w", err)
	}
	return len(snap), nil
}

// inlinedPage is index.html with its stylesheets and scripts inlined.
func (s *Server) inlinedPage() (string, error) {
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		return "", err
	}
	page := string(b)
	read := func(path string) (string, error) {
		if p, ok := strings.CutPrefix(path, "/assets/games/"); ok {
			b, err := fs.ReadFile(gamesAssets(), p)
			return string(b), err
		}
		b, err := assets.ReadFile("assets/" + strings.TrimPrefix(path, "/assets/"))
		return string(b), err
	}
	for _, css := range []string{"/assets/style.css", "/assets/games/games.css"} {
		tag := `<link rel="stylesheet" href="` + css + `">`
		text, err := read(css)
		if err != nil {
			return "", fmt.Errorf("view: export: %s: %w", css, err)
		}
		page = strings.Replace(page, tag, "<style>\n"+strings.ReplaceAll(text, "</style", `<\/style`)+"\n</style>", 1)
	}
	for _, js := range []string{"/assets/app.js", "/assets/games/games.js"} {
		tag := `<script src="` + js + `"></script>`
		text, err := read(js)
		if err != nil {
			return "", fmt.Errorf("view: export: %s: %w", js, err)
		}
		page = strings.Replace(page, tag, "<script>\n"+strings.ReplaceAll(text, "</script", `<\/script`)+"\n</script>", 1)
	}
	return page, nil
}

// GroupsURL, GroupURL and DialogueURL are the API URLs app.js builds, in
// the same form (so that an export's snapshot has the page's keys).
func GroupsURL(run, step int, f Filter, page int) string {
	u := "/api/run/groups?run=" + strconv.Itoa(run) + "&step=" + strconv.Itoa(step) + f.Query()
	if page > 0 {
		u += "&page=" + strconv.Itoa(page)
	}
	return u
}

// GroupURL is /api/run/group's URL for one group.
func GroupURL(run, step int, group string) string {
	return "/api/run/group?run=" + strconv.Itoa(run) + "&step=" + strconv.Itoa(step) + "&group=" + queryEscape(group)
}

// DialogueURL is /api/run/dialogue's URL for one rollout.
func DialogueURL(run, step int, rollout string) string {
	return "/api/run/dialogue?run=" + strconv.Itoa(run) + "&step=" + strconv.Itoa(step) + "&rollout=" + queryEscape(rollout)
}

// exportURLs lists the URLs an export snapshots: the index, each run's
// overview, and for each step in range every page of its filtered groups,
// each listed group and each of its members' dialogues; then the game
// pages' URLs.
func (s *Server) exportURLs(o ExportOptions) ([]string, error) {
	urls := []string{"/api/index"}
	h := s.Handler()
	get := func(u string, v any) error {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		if rec.Code != http.StatusOK {
			return nil // the error answer is snapshotted as is
		}
		return json.Unmarshal(rec.Body.Bytes(), v)
	}
	for i := range s.runs {
		urls = append(urls, "/api/run/overview?run="+strconv.Itoa(i))
		_, steps, _, err := s.runInfo(i)
		if err != nil {
			return nil, err
		}
		for _, st := range steps {
			if st.Step != 0 && ((o.From > 0 && st.Step < o.From) || (o.To > 0 && st.Step > o.To)) {
				continue
			}
			for page := 0; ; page++ {
				u := GroupsURL(i, st.Step, o.Filter, page)
				urls = append(urls, u)
				var g struct {
					Pages  int `json:"pages"`
					Groups []struct {
						GroupID string `json:"group_id"`
						Members []struct {
							RolloutID string `json:"rollout_id"`
						} `json:"members"`
					} `json:"groups"`
				}
				if err := get(u, &g); err != nil {
					return nil, fmt.Errorf("view: export: %s: %w", u, err)
				}
				for _, gr := range g.Groups {
					urls = append(urls, GroupURL(i, st.Step, gr.GroupID))
					for _, m := range gr.Members {
						urls = append(urls, DialogueURL(i, st.Step, m.RolloutID))
					}
				}
				if page+1 >= g.Pages {
					break
				}
			}
		}
	}
	gu, err := games.URLs(s.games)
	if err != nil {
		return nil, fmt.Errorf("view: export: the game pages: %w", err)
	}
	return append(urls, gu...), nil
}
