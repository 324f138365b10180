package games_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/parleyhq/parley/view/games"
)

// stubPage stands in for view's index.html and app.js until they land: a
// window.parley with api (fetch), el and route, routing #/g/<kind>/<args>
// to window.parleyGames.render, then the games assets.
const stubPage = `<!doctype html><html><head><meta charset="utf-8"><title>parley view (games test page)</title>
<link rel="stylesheet" href="/assets/games/games.css"></head><body style="margin:12px">
<main id="main"></main>
<script>
window.parley = {
  api: function (url) { return fetch(url).then(function (r) { return r.json().then(function (j) { if (!r.ok) throw new Error(j.error || r.status); return j; }); }); },
  el: function (tag, attrs) {
    var n = document.createElement(tag);
    for (var k in attrs || {}) n.setAttribute(k, attrs[k]);
    for (var i = 2; i < arguments.length; i++) { var c = arguments[i]; n.appendChild(typeof c === "string" ? document.createTextNode(c) : c); }
    return n;
  },
  route: function (hash) {
    if (location.hash !== hash) { location.hash = hash; return; }
    var p = hash.replace(/^#\/g\//, "").split("/").map(decodeURIComponent);
    window.parleyGames.render(p[0], document.getElementById("main"), p.slice(1));
  }
};
window.addEventListener("hashchange", function () { window.parley.route(location.hash); });
</script>
<script src="/assets/games/games.js"></script>
<script>if (location.hash) window.parley.route(location.hash);</script>
</body></html>`

// testServer serves the stub page, the games assets and the games API over
// the outputs found under root.
func testServer(t *testing.T, root string) (string, []games.Found) {
	t.Helper()
	found, err := games.Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/games/", games.Handler(found))
	mux.Handle("/assets/games/", http.StripPrefix("/assets/games/", http.FileServerFS(games.Assets)))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, stubPage)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, found
}

// browser starts headless Chromium at 1280×800, or skips when there is
// none (unless PARLEY_REQUIRE_BROWSER=1).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := "/usr/bin/chromium"
	if _, err := os.Stat(path); err != nil {
		if p, err := exec.LookPath("chromium"); err == nil {
			path = p
		} else if os.Getenv("PARLEY_REQUIRE_BROWSER") == "1" {
			t.Fatal("PARLEY_REQUIRE_BROWSER=1 and no chromium (looked for /usr/bin/chromium and chromium on PATH)")
		} else {
			t.Skip("no chromium (looked for /usr/bin/chromium and chromium on PATH)")
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 800), chromedp.Flag("headless", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel3)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
	return ctx
}

func artifacts(t *testing.T) string {
	if d := os.Getenv("PARLEY_VIEW_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
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
	ctx := browser(t)
	base, found := testServer(t, f.Root)
	out := artifacts(t)
	shot := func(name string) error {
		b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(out, name), b, 0o644)
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

// TestBrowserSnapshot: the pages fetch only URLs that games.URLs lists,
// spelled as it spells them: served from a snapshot of those URLs alone
// (as the export embeds them, no API behind it), every page and the
// first cell of each heatmap still load.
func TestBrowserSnapshot(t *testing.T) {
	f := shared(t)
	ctx := browser(t)
	found, err := games.Scan(f.Root)
	if err != nil {
		t.Fatal(err)
	}
	urls, err := games.URLs(found)
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(games.Handler(found))
	defer api.Close()
	snap := map[string]json.RawMessage{}
	for _, u := range urls {
		code, body := get(t, api.URL+u)
		if code != 200 {
			t.Fatalf("GET %s: %d", u, code)
		}
		snap[u] = json.RawMessage(body)
	}
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	page := strings.Replace(stubPage, "api: function (url) {", "api: function (url) { if (!(url in window.PARLEY_SNAPSHOT)) return Promise.reject(new Error(\"not in the snapshot: \" + url)); return Promise.resolve(window.PARLEY_SNAPSHOT[url]);", 1)
	page = strings.Replace(page, "<script>", "<script>window.PARLEY_SNAPSHOT = "+string(b)+";</script><script>", 1)
	mux := http.NewServeMux()
	mux.Handle("/assets/games/", http.StripPrefix("/assets/games/", http.FileServerFS(games.Assets)))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, page) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, kind := range []string{"tournament", "league", "series", "compare", "pairwise"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"+route(found, kind)), chromedp.WaitVisible(chromedp.CSS("h2"))); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if kind == "tournament" || kind == "league" {
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(".g-click")), chromedp.WaitVisible(chromedp.CSS(".g-games h3"))); err != nil {
				t.Fatalf("%s: click a cell: %v", kind, err)
			}
		}
		if kind == "compare" || kind == "pairwise" {
			if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(".g-verdict"))); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
		}
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(text, "Could not load") || strings.Contains(text, "not in the snapshot") {
			t.Errorf("%s from the snapshot: %.600s", kind, text)
		}
	}
}
