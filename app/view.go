package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/view"
	"go.uber.org/zap"
)

// DefaultViewAddr is parley view's address: loopback, and a fixed port so
// that a port in use is an error naming --addr, not a surprise.
const DefaultViewAddr = "127.0.0.1:8471"

// ViewOptions are `parley view`'s inputs.
type ViewOptions struct {
	// Dirs are the run, rollout, tournament, series or league directories.
	Dirs []string
	// Addr is the address served (DefaultViewAddr when "").
	Addr string
	// Export, when set, writes one self-contained HTML file there instead
	// of serving.
	Export string
	// Steps is the export's step range, "A-B", "A-" or "N" ("": all).
	Steps string
	// Filter holds the groups filter, as the page's query keys (prompt,
	// category, persona, member, reward_min, reward_max, adv_min,
	// adv_max, agreed).
	Filter map[string][]string
}

// View serves the viewer over o.Dirs until ctx ends, printing its URL, or
// with o.Export writes the self-contained HTML file.
func View(ctx context.Context, env Env, o ViewOptions) error {
	log := env.log()
	filter, err := view.ParseFilter(o.Filter)
	if err != nil {
		return fmt.Errorf("view: %w", err)
	}
	srv, err := view.NewServer(o.Dirs, view.Options{Logger: log})
	if err != nil {
		return err
	}
	if o.Export != "" {
		from, to, err := parseSteps(o.Steps)
		if err != nil {
			return err
		}
		return exportView(srv, o.Export, view.ExportOptions{From: from, To: to, Filter: filter}, env)
	}
	if o.Steps != "" {
		return errors.New("view: flag --steps chooses the steps of an export: give --export FILE.html too")
	}
	addr := o.Addr
	if addr == "" {
		addr = DefaultViewAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("view: flag --addr %s: %w (another process may hold the port: give another, e.g. --addr 127.0.0.1:0 for any free port)", addr, err)
	}
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); !isLoopback(host) {
		log.Warn("parley view serves on a non-loopback address: anyone who can reach it can read these runs' dialogues and metrics", zap.String("addr", ln.Addr().String()))
		fmt.Fprintf(os.Stderr, "warning: --addr %s is not loopback: the data is exposed to anyone who can reach this address\n", addr)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.out(), "http://%s/\n", displayAddr(ln.Addr().(*net.TCPAddr)))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("view: %w", err)
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(shut)
		return nil
	}
}

// exportView writes the export atomically and prints its path.
func exportView(srv *view.Server, path string, o view.ExportOptions, env Env) error {
	if !strings.HasSuffix(strings.ToLower(path), ".html") {
		return fmt.Errorf("view: flag --export %s: want a file name ending in .html", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("view: flag --export: %w", err)
	}
	var n int
	err := fsutil.WriteWith(path, 0o644, func(w io.Writer) error {
		var err error
		n, err = srv.Export(w, o)
		return err
	})
	if err != nil {
		return err
	}
	env.log().Info("parley view: exported", zap.String("file", path), zap.Int("responses", n))
	fmt.Fprintln(env.out(), path)
	return nil
}

// parseSteps reads --steps: "A-B", "A-", "-B" or "N".
func parseSteps(s string) (from, to int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	bad := fmt.Errorf("view: flag --steps %q: want A-B (steps A to B), A- (from A), -B (up to B) or N (step N alone)", s)
	a, b, isRange := strings.Cut(s, "-")
	num := func(x string) (int, error) {
		if x == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil || n < 1 {
			return 0, bad
		}
		return n, nil
	}
	if from, err = num(a); err != nil {
		return 0, 0, err
	}
	if !isRange {
		if from == 0 {
			return 0, 0, bad
		}
		return from, from, nil
	}
	if to, err = num(b); err != nil {
		return 0, 0, err
	}
	if (from == 0 && to == 0) || (to > 0 && from > to) {
		return 0, 0, bad
	}
	return from, to, nil
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// displayAddr is the address to print: an unspecified host (":8471",
// "0.0.0.0") as 127.0.0.1, which reaches it from this machine.
func displayAddr(a *net.TCPAddr) string {
	if a.IP == nil || a.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))
	}
	return a.String()
}
