package command

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// reset empties the registries for a test and restores them after it.
func reset(t *testing.T) {
	t.Helper()
	mu.Lock()
	savedCmds, savedFlags := commands, simFlags
	commands, simFlags = map[string]Command{}, map[string]SimFlag{}
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		commands, simFlags = savedCmds, savedFlags
		mu.Unlock()
	})
}

// panics returns the message fn panics with, or "".
func panics(fn func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
		}
	}()
	fn()
	return ""
}

func TestRegister(t *testing.T) {
	reset(t)
	newCmd := func() *cobra.Command { return &cobra.Command{Use: "x"} }
	Register(Command{Name: "zeta", New: newCmd})
	Register(Command{Name: "alpha", New: newCmd})
	var names []string
	for _, c := range Commands() {
		names = append(names, c.Name)
	}
	if want := []string{"alpha", "zeta"}; !slices.Equal(names, want) {
		t.Errorf("Commands() = %v, want %v", names, want)
	}
	for _, tc := range []struct {
		name string
		c    Command
		want string
	}{
		{"duplicate", Command{Name: "zeta", New: newCmd}, `command "zeta" registered twice`},
		{"no name", Command{New: newCmd}, "needs a name and New"},
		{"no New", Command{Name: "beta"}, "needs a name and New"},
	} {
		if got := panics(func() { Register(tc.c) }); !strings.Contains(got, tc.want) {
			t.Errorf("Register(%s) panics with %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRegisterSimFlag(t *testing.T) {
	reset(t)
	RegisterSimFlag(SimFlag{Name: "mode-b", Game: "g", Option: "b"})
	RegisterSimFlag(SimFlag{Name: "mode-a", Game: "g", Option: "a", Default: "x"})
	got := SimFlags()
	if len(got) != 2 || got[0].Name != "mode-a" || got[1].Name != "mode-b" {
		t.Errorf("SimFlags() = %+v, want mode-a then mode-b", got)
	}
	if opt := got[0].GameOption("strict"); opt != "g.a=strict" {
		t.Errorf("GameOption(strict) = %q, want g.a=strict", opt)
	}
	for _, tc := range []struct {
		name string
		f    SimFlag
		want string
	}{
		{"duplicate", SimFlag{Name: "mode-a", Game: "h", Option: "c"}, "flag --mode-a registered twice"},
		{"no game", SimFlag{Name: "m", Option: "c"}, "needs a name, a game and an option"},
		{"no option", SimFlag{Name: "m", Game: "g"}, "needs a name, a game and an option"},
	} {
		if got := panics(func() { RegisterSimFlag(tc.f) }); !strings.Contains(got, tc.want) {
			t.Errorf("RegisterSimFlag(%s) panics with %q, want %q", tc.name, got, tc.want)
		}
	}
}
