// Package browsertest drives headless Chromium for parley view's browser
// tests (chromedp): a browser at 1280×800, skipped when Chromium is
// missing unless PARLEY_REQUIRE_BROWSER=1 (CI), and screenshots saved
// under PARLEY_VIEW_ARTIFACTS (default: the test's TempDir).
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// Width and Height are the window the tests use.
const (
	Width  = 1280
	Height = 800
)

// RequireEnv makes a missing browser fail the test instead of skipping it.
const RequireEnv = "PARLEY_REQUIRE_BROWSER"

// ArtifactsEnv names the folder screenshots are saved in.
const ArtifactsEnv = "PARLEY_VIEW_ARTIFACTS"

// Path finds Chromium: /usr/bin/chromium (Debian's package), else
// chromium, chromium-browser or google-chrome on PATH; "" when none.
func Path() string {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Options tune New.
type Options struct {
	// Offline turns the browser's networking off (file:// still opens).
	Offline bool
}

// New starts a headless browser for the test and returns its context
// (with a timeout of a few minutes); the browser is closed at cleanup.
func New(t testing.TB, o Options) context.Context {
	t.Helper()
	path := Path()
	if path == "" {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("no Chromium found (/usr/bin/chromium or on PATH) and %s=1: install it (apt-get install chromium)", RequireEnv)
		}
		t.Skipf("no Chromium found (/usr/bin/chromium or on PATH); set %s=1 to make this a failure", RequireEnv)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.WindowSize(Width, Height),
		chromedp.Flag("headless", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", false),
	)
	if o.Offline {
		// Every host resolves nowhere: no request leaves the machine.
		opts = append(opts, chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"), chromedp.ProxyServer("http://127.0.0.1:9"))
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(Width, Height)); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// Do runs steps, failing the test with what and the page's text on an
// error.
func Do(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("%s: %v\npage: %.2000s", what, err, body)
	}
}

// Eval evaluates a JavaScript expression and decodes its value.
func Eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %.200s: %v", expr, err)
	}
	return v
}

// Text is the visible text of the first element css selects.
func Text(t testing.TB, ctx context.Context, css string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("the text of %s: %v", css, err)
	}
	return v
}

// Hover moves the mouse over the centre of the first element css selects
// (scrolled into view) with a real input event, as a user's mouse would.
func Hover(t testing.TB, ctx context.Context, css string) {
	t.Helper()
	at := Eval[[]float64](t, ctx, `(() => { const e = document.querySelector(`+strconv.Quote(css)+`);
		e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2]; })()`)
	Do(t, ctx, "hover "+css, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at[0], at[1]))
}

// ArtifactsDir is where screenshots go: $PARLEY_VIEW_ARTIFACTS, else the
// test's TempDir.
func ArtifactsDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(ArtifactsEnv); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// Screenshot saves the viewport as name.png in dir and returns its path.
func Screenshot(t testing.TB, ctx context.Context, dir, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", p)
	return p
}
