package games_test

import (
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/parleyhq/parley/view"
	"github.com/parleyhq/parley/view/browsertest"
	"github.com/parleyhq/parley/view/games"
)

// viewServer serves parley view (its real pages: app.js routes #/g/… to
// games.js) over the game outputs under root, and the outputs found.
func viewServer(t *testing.T, root string) (*view.Server, string, []games.Found) {
	t.Helper()
	s, err := view.NewServer([]string{root}, view.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	found, err := games.Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	return s, srv.URL, found
}

func route(found []games.Found, kind string) string {
	for _, f := range found {
		if kind == "pairwise" && f.Kind == "compare" && strings.HasSuffix(f.Dir, ".jsonl") || f.Kind == kind && !strings.HasSuffix(f.Dir, ".jsonl") {
			return f.Route
		}
	}
	return ""
}

// TestBrowser opens the tournament matrix and clicks a cell, opens the
// league's ratings and cross-play heatmap and clicks a cell, and opens the
// series and compare pages, in headless Chromium at 1280×800, asserting
// on the page's content and saving screenshots.
func TestBrowser(t *testing.T) {
	f := shared(t)
	ctx := browsertest.New(t, browsertest.Options{})
	_, base, found := viewServer(t, f.Root)
	out := browsertest.ArtifactsDir(t)
	shot := func(name string) error {
		browsertest.Screenshot(t, ctx, out, "games-"+strings.TrimSuffix(name, ".png"))
		return nil
	}
	m, err := games.ReadTournament(f.Tournament)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, kind, wait string
		click            bool
		want             []string
	}{
		{"tournament", "tournament", "svg.g-heatmap", true, []string{"Tournament tour", m.Rows[0], "holder", "requester", "balance", "moved"}},
		{"league", "league", "svg.g-heatmap", true, []string{"League run", "snapshot-000002", "1530 ± 150", "Ratings over training", "Cross-play step-000004", "step-000002"}},
		{"series", "series", "svg.g-chart", false, []string{"(adversary)", "Trust of", "Adversary:"}},
		{"compare", "compare", ".g-verdict", false, []string{"dilemma-01", "Verdicts, both orders", "base shown first", "step 4's answer"}},
		{"pairwise", "pairwise", ".g-verdict", false, []string{"Pairwise ca-lora vs base", "greedy, run 1", "ca-lora shown first", "base shown first"}},
	} {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"+route(found, tc.kind)), chromedp.WaitVisible(chromedp.CSS(tc.wait))); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := shot(tc.name + ".png"); err != nil {
			t.Fatal(err)
		}
		if tc.click {
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(".g-click")), chromedp.WaitVisible(chromedp.CSS(".g-games"))); err != nil {
				t.Fatalf("%s: click a cell: %v", tc.name, err)
			}
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`document.querySelector(".g-games").scrollIntoView(), 0`)); err != nil {
				t.Fatal(err)
			}
			if err := shot(tc.name + "-cell.png"); err != nil {
				t.Fatal(err)
			}
		}
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s page lacks %q:\n%.2000s", tc.name, w, text)
			}
		}
		if strings.Contains(text, "Could not load") {
			t.Errorf("%s page: %.500s", tc.name, text)
		}
	}
	// The tournament cell opened is the first clickable one: its heading
	// gives the matrix's game count.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"+route(found, "tournament")), chromedp.WaitVisible(chromedp.CSS(".g-click")),
		chromedp.Click(chromedp.CSS(".g-click")), chromedp.WaitVisible(chromedp.CSS(".g-games h3"))); err != nil {
		t.Fatal(err)
	}
	head, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".g-games h3")))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("holder %s × requester %s: %d game", m.Rows[0], m.Cols[0], m.Count[0][0]); m.Count[0][0] > 0 && !strings.HasPrefix(head, want) {
		t.Errorf("cell heading %q, want %q", head, want)
	}
	// A cell's route opens it: #/g/tournament/<id>/<row>/<col>.
	cellRoute := route(found, "tournament") + "/" + url.PathEscape(m.Rows[3]) + "/" + url.PathEscape(m.Cols[0])
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"+cellRoute), chromedp.WaitVisible(chromedp.CSS(".g-games h3"))); err != nil {
		t.Fatal(err)
	}
	if head, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".g-games h3"))); err != nil || !strings.HasPrefix(head, "holder "+m.Rows[3]+" × requester "+m.Cols[0]) {
		t.Errorf("route %s opened %q (%v)", cellRoute, head, err)
	}
	t.Logf("screenshots in %s", out)
}

// TestBrowserExport: parley view --export over the game outputs, opened
// from file:// with networking off and no server: the pages fetch only
// what the export holds (games.URLs, as the pages spell them), so every
// page and the first cell of each heatmap still load.
func TestBrowserExport(t *testing.T) {
	f := shared(t)
	s, _, found := viewServer(t, f.Root)
	export := filepath.Join(t.TempDir(), "games.html")
	w, err := os.Create(export)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Export(w, view.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := browsertest.New(t, browsertest.Options{Offline: true})
	for _, kind := range []string{"tournament", "league", "series", "compare", "pairwise"} {
		browsertest.Do(t, ctx, kind, chromedp.Navigate("file://"+export+route(found, kind)), chromedp.WaitVisible(chromedp.CSS("h2")))
		if kind == "tournament" || kind == "league" {
			browsertest.Do(t, ctx, kind+": click a cell", chromedp.Click(chromedp.CSS(".g-click")), chromedp.WaitVisible(chromedp.CSS(".g-games h3")))
		}
		if kind == "compare" || kind == "pairwise" {
			browsertest.Do(t, ctx, kind, chromedp.WaitVisible(chromedp.CSS(".g-verdict")))
		}
		text := browsertest.Text(t, ctx, "body")
		if strings.Contains(text, "Could not load") || strings.Contains(text, "Not in this export") {
			t.Errorf("%s from the export: %.600s", kind, text)
		}
	}
}
