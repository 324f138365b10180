package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

// TestFormatVersion: the version names the commit parley was built from,
// marks a modified tree, and says when the commit is unknown.
func TestFormatVersion(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	tests := []struct {
		name     string
		settings []debug.BuildSetting
		ok       bool
		want     string
	}{
		{"no build information", nil, false, "unknown"},
		{"no VCS information", vcs("GOOS", "linux"), true, "v1.2.3, commit unknown (built without VCS information)"},
		{"clean", vcs("vcs.revision", "0123abcd", "vcs.time", "2025-01-02T03:04:05Z", "vcs.modified", "false"), true,
			"v1.2.3, commit 0123abcd, 2025-01-02T03:04:05Z, go1.24.0"},
		{"modified", vcs("vcs.revision", "0123abcd", "vcs.time", "2025-01-02T03:04:05Z", "vcs.modified", "true"), true,
			"v1.2.3, commit 0123abcd (modified), 2025-01-02T03:04:05Z, go1.24.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bi := &debug.BuildInfo{GoVersion: "go1.24.0", Main: debug.Module{Version: "v1.2.3"}, Settings: tt.settings}
			if got := formatVersion(bi, tt.ok); got != tt.want {
				t.Errorf("formatVersion = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestVersionFlag: parley --version prints the version line, with the
// commit or a note that it is unknown (a test binary may carry no VCS
// information).
func TestVersionFlag(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if got != "parley version "+version()+"\n" || !strings.Contains(got, "commit ") {
		t.Errorf("parley --version printed %q, want %q naming the commit", got, "parley version "+version())
	}
}
