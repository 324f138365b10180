// Package proc supervises the local child processes parley may start for a
// run — the trainer and the inference server (vLLM): it starts them in
// their own process group with output to a log file, restarts the ones that
// should keep running, and stops them (and their children) when parley
// exits or dies. A process is a group: a launcher (torchrun, vLLM's API
// server) and the workers it started are ended together, and what is left
// of a group whose launcher exited is killed before the next start, so a
// restart never runs beside an orphaned rank of the last one.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// Options configure a Supervisor.
type Options struct {
	// Name labels log lines ("trainer", "server").
	Name string
	// Argv is the command and its arguments.
	Argv []string
	// Env is added to the child's environment.
	Env []string
	// Environ, when not nil, is the child's environment instead of
	// parley's (Env is still added): FilterEnv makes one without secrets.
	Environ []string
	// Dir is the working directory ("" = parley's).
	Dir string
	// LogPath receives stdout and stderr (appended).
	LogPath string
	// Restart restarts the process when it exits before Stop, up to
	// MaxRestarts times in a row (ResetRestarts starts the count again
	// once the process has made progress), waiting RestartDelay between
	// tries.
	Restart      bool
	MaxRestarts  int
	RestartDelay time.Duration
	// FatalExitCodes are exit statuses that are never restarted: the
	// process said its input is wrong (a usage or config error, status 2
	// for argparse), which another try cannot fix.
	FatalExitCodes []int
	Logger         *zap.Logger
}

// Supervisor runs one child process.
type Supervisor struct {
	opts     Options
	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	lastErr  error
	restarts int
	stopping bool
	gaveUp   error
	done     chan struct{}
}

// ErrGaveUp is returned by GaveUp once a process that should keep running
// has exited and will not be restarted.
var ErrGaveUp = errors.New("gave up restarting")

// Start starts the process and, with Restart, a goroutine that restarts it.
func Start(opts Options) (*Supervisor, error) {
	if len(opts.Argv) == 0 {
		return nil, errors.New("proc.Start: empty command")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.RestartDelay <= 0 {
		opts.RestartDelay = 2 * time.Second
	}
	s := &Supervisor{opts: opts, done: make(chan struct{})}
	if err := s.spawn(); err != nil {
		return nil, err
	}
	go s.watch()
	return s, nil
}

func (s *Supervisor) spawn() error {
	cmd := exec.Command(s.opts.Argv[0], s.opts.Argv[1:]...)
	cmd.Dir = s.opts.Dir
	base := s.opts.Environ
	if base == nil {
		base = os.Environ()
	}
	cmd.Env = append(append([]string(nil), base...), s.opts.Env...)
	// Own process group, so Stop reaches grandchildren; killed with parley.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.opts.LogPath != "" {
		f, err := os.OpenFile(s.opts.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("proc.Start %s: %w", s.opts.Name, err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping { // Stop ran while we waited to restart
		return errors.New("proc: stopping")
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("proc.Start %s: %w", s.opts.Name, err)
	}
	exited := make(chan struct{})
	s.cmd, s.exited = cmd, exited
	s.opts.Logger.Info("started "+s.opts.Name, zap.Int("pid", cmd.Process.Pid), zap.String("log", s.opts.LogPath))
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.lastErr = err
		s.mu.Unlock()
		close(exited)
	}()
	return nil
}

func (s *Supervisor) watch() {
	defer close(s.done)
	for {
		s.mu.Lock()
		exited := s.exited
		s.mu.Unlock()
		<-exited
		s.mu.Lock()
		stopping, err, pid := s.stopping, s.lastErr, s.cmd.Process.Pid
		s.mu.Unlock()
		killGroup(pid)
		if stopping {
			return
		}
		tail := TailFile(s.opts.LogPath, 20)
		s.opts.Logger.Warn(s.opts.Name+" exited", zap.Error(err), zap.String("log", s.opts.LogPath), zap.String("last_lines", tail))
		s.mu.Lock()
		restarts := s.restarts
		s.mu.Unlock()
		if fatal := s.fatalExit(err); fatal || !s.opts.Restart || (s.opts.MaxRestarts > 0 && restarts >= s.opts.MaxRestarts) {
			if fatal {
				s.mu.Lock()
				s.gaveUp = fmt.Errorf("%s exited (%v), an error a restart cannot fix: %w; the last lines of %s:\n%s", s.opts.Name, err, ErrGaveUp, s.opts.LogPath, tail)
				s.mu.Unlock()
				return
			}
			s.mu.Lock()
			s.gaveUp = fmt.Errorf("%s exited (%v) after %d restarts in a row: %w; the last lines of %s:\n%s", s.opts.Name, err, restarts, ErrGaveUp, s.opts.LogPath, tail)
			s.mu.Unlock()
			return
		}
		time.Sleep(s.opts.RestartDelay)
		s.mu.Lock()
		stopping = s.stopping
		s.mu.Unlock()
		if stopping {
			return
		}
		s.mu.Lock()
		s.restarts++
		restarts = s.restarts
		s.mu.Unlock()
		s.opts.Logger.Warn("restarting "+s.opts.Name, zap.Int("restart", restarts))
		if err := s.spawn(); err != nil {
			s.mu.Lock()
			if !s.stopping {
				s.gaveUp = fmt.Errorf("restart of %s failed: %w: %w", s.opts.Name, err, ErrGaveUp)
				s.opts.Logger.Error("restart failed", zap.String("name", s.opts.Name), zap.Error(err))
			}
			s.mu.Unlock()
			return
		}
	}
}

// killGroup SIGKILLs what is left of the process group led by pid, whose
// leader has exited: the workers a launcher left behind (a torchrun whose
// rank died ends the others, but one stuck in a collective may linger).
// The group id cannot be reused while a member lives.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// fatalExit reports whether err is an exit with one of FatalExitCodes.
func (s *Supervisor) fatalExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && slices.Contains(s.opts.FatalExitCodes, ee.ExitCode())
}

// ResetRestarts starts the count of restarts in a row again: the process
// made progress (a training step completed).
func (s *Supervisor) ResetRestarts() {
	s.mu.Lock()
	s.restarts = 0
	s.mu.Unlock()
}

// TailFile returns the last n lines of the file at path ("" when it cannot
// be read), for error messages.
func TailFile(path string, n int) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 64 << 10
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-window, 0)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FilterEnv returns the entries of env (NAME=value) whose names keep
// accepts: a child's environment without the secrets it does not need.
func FilterEnv(env []string, keep func(name string) bool) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if keep(name) {
			out = append(out, kv)
		}
	}
	return out
}

// Alive reports nil while the process runs, or why it is not running.
func (s *Supervisor) Alive() error {
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	select {
	case <-exited:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.lastErr != nil {
			return fmt.Errorf("%s exited: %w (see %s)", s.opts.Name, s.lastErr, s.opts.LogPath)
		}
		return fmt.Errorf("%s exited (see %s)", s.opts.Name, s.opts.LogPath)
	default:
		return nil
	}
}

// GaveUp reports non-nil once the process has exited for good: it was not
// to be restarted, or its restarts are spent.
func (s *Supervisor) GaveUp() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gaveUp
}

// Pid is the current process id.
func (s *Supervisor) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace.
func (s *Supervisor) Stop(grace time.Duration) {
	s.mu.Lock()
	s.stopping = true
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	<-s.done
}

// Kill ends the running process (SIGTERM to its group, SIGKILL after
// grace) without stopping the supervisor: a process with Restart is then
// started again (a dead inference engine that did not exit by itself).
func (s *Supervisor) Kill(grace time.Duration) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

// WaitHealthy polls check until it returns nil, the process exits, or ctx
// ends.
func (s *Supervisor) WaitHealthy(ctx context.Context, check func(context.Context) error, poll time.Duration) error {
	for {
		if err := check(ctx); err == nil {
			return nil
		}
		if err := s.Alive(); err != nil && !s.opts.Restart {
			return fmt.Errorf("proc: waiting for %s: %w", s.opts.Name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("proc: waiting for %s: %w", s.opts.Name, ctx.Err())
		case <-time.After(poll):
		}
	}
}
