package dataset

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestRolloutsRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		groupN   int
		wantRGs  int
		metadata map[string]string
	}{
		{"empty", 0, 4, 0, nil},
		{"one group", 3, 4, 1, nil},
		{"exact groups", 8, 4, 2, nil},
		{"partial last group", 11, 4, 3, map[string]string{"run_id": "run"}},
		{"default group", 300, 0, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rollouts", "step-000001.parquet")
			w, err := NewRolloutWriter(path, RolloutWriterOptions{RowGroupRows: tt.groupN, Metadata: tt.metadata})
			mustNoErr(t, err)
			var want []Rollout
			for i := 0; i < tt.n; i++ {
				want = append(want, testRollout(1, i))
			}
			// Write in uneven chunks.
			for i := 0; i < len(want); {
				j := min(len(want), i+1+i%3)
				mustNoErr(t, w.Write(want[i:j]...))
				i = j
			}
			if w.Rows() != int64(tt.n) {
				t.Errorf("Rows() = %d, want %d", w.Rows(), tt.n)
			}
			mustNoErr(t, w.Close())
			if left := tempFiles(t, filepath.Dir(path)); len(left) > 0 {
				t.Errorf("temporary files left after Close: %v", left)
			}
			got, err := ReadAllRollouts(path)
			mustNoErr(t, err)
			if len(got) != len(want) {
				t.Fatalf("ReadAllRollouts = %d rows, want %d", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(normalize(got[i]), normalize(want[i])) {
					t.Fatalf("row %d = %+v\nwant %+v", i, got[i], want[i])
				}
			}
			f, pf, err := OpenParquet(path)
			mustNoErr(t, err)
			defer f.Close()
			if n := len(pf.RowGroups()); n != tt.wantRGs {
				t.Errorf("row groups = %d, want %d", n, tt.wantRGs)
			}
			for k, v := range tt.metadata {
				if got, _ := pf.Lookup(k); got != v {
					t.Errorf("metadata %q = %q, want %q", k, got, v)
				}
			}
			checkZstd(t, pf)
		})
	}
}

// normalize maps nil and empty slices alike, as parquet does.
func normalize(r Rollout) Rollout {
	if len(r.Turns) == 0 {
		r.Turns = nil
	}
	if len(r.Sequences) == 0 {
		r.Sequences = nil
	}
	for i := range r.Sequences {
		s := &r.Sequences[i]
		if len(s.InputIDs) == 0 {
			s.InputIDs = nil
		}
		if len(s.LossMask) == 0 {
			s.LossMask = nil
		}
		if len(s.Logprobs) == 0 {
			s.Logprobs = nil
		}
	}
	return r
}

func TestRolloutWriterAbortAndClose(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.parquet")

	w, err := NewRolloutWriter(path, RolloutWriterOptions{RowGroupRows: 2})
	mustNoErr(t, err)
	mustNoErr(t, w.Write(testRollout(1, 0), testRollout(1, 1), testRollout(1, 2)))
	w.Abort()
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("after Abort, temporary files left: %v", left)
	}
	for _, p := range []string{path} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("after Abort, Stat(%q) = %v, want not exist", p, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close after Abort = %v, want nil", err)
	}
	if err := w.Write(testRollout(1, 3)); err == nil {
		t.Error("Write after Abort = nil, want an error")
	}

	// Close twice: the second is a no-op; Abort after Close keeps the file.
	w, err = NewRolloutWriter(path, RolloutWriterOptions{})
	mustNoErr(t, err)
	mustNoErr(t, w.Write(testRollout(1, 0)))
	mustNoErr(t, w.Close())
	mustNoErr(t, w.Close())
	w.Abort()
	if got, err := ReadAllRollouts(path); err != nil || len(got) != 1 {
		t.Errorf("ReadAllRollouts after Close, Close, Abort = %d rows, %v; want 1", len(got), err)
	}

	// A writer over an existing file replaces it only on Close.
	w, err = NewRolloutWriter(path, RolloutWriterOptions{})
	mustNoErr(t, err)
	mustNoErr(t, w.Write(testRollout(2, 0), testRollout(2, 1)))
	if got, _ := ReadAllRollouts(path); len(got) != 1 {
		t.Errorf("before Close the old file has %d rows, want 1", len(got))
	}
	mustNoErr(t, w.Close())
	if got, _ := ReadAllRollouts(path); len(got) != 2 {
		t.Errorf("after Close the file has %d rows, want 2", len(got))
	}
}

func TestRolloutWriterCloseAfterWriteError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.parquet")
	w, err := NewRolloutWriter(path, RolloutWriterOptions{RowGroupRows: 1})
	mustNoErr(t, err)
	// Make the underlying file fail: close it behind the writer's back.
	// parquet-go buffers its output, so the error shows after a few rows.
	closeTempBehindWriter(t, dir)
	failed := false
	for i := 0; i < 500 && !failed; i++ {
		failed = w.Write(testRollout(1, i)) != nil
	}
	if !failed {
		t.Fatal("500 writes to a closed file succeeded, want an error")
	}
	if err := w.Write(testRollout(1, 1)); err == nil || !strings.Contains(err.Error(), "earlier error") {
		t.Errorf("Write after an error = %v, want the sticky earlier error", err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "discarded") {
		t.Errorf("Close after a write error = %v, want a discarded error", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Stat(%q) = %v, want not exist", path, err)
	}
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// closeTempBehindWriter closes the file descriptor of the one temporary file
// an atomic writer holds open in dir, so that its next writes fail.
func closeTempBehindWriter(t *testing.T, dir string) {
	t.Helper()
	tmps := tempFiles(t, dir)
	if len(tmps) != 1 {
		t.Fatalf("want one temporary file in %s, found %v", dir, tmps)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, e := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == tmps[0] {
			fd, _ := strconv.Atoi(e.Name())
			mustNoErr(t, syscall.Close(fd))
			return
		}
	}
	t.Fatalf("no open descriptor of %s", tmps[0])
}

// TestRolloutWriterInterrupted kills a child process in the middle of
// writing and checks that the final path holds no partial file.
func TestRolloutWriterInterrupted(t *testing.T) {
	if path := os.Getenv("PARLEY_TEST_CRASH_WRITER"); path != "" {
		w, err := NewRolloutWriter(path, RolloutWriterOptions{RowGroupRows: 2})
		if err != nil {
			os.Exit(3)
		}
		for i := 0; i < 500; i++ { // enough to pass parquet-go's write buffer
			if err := w.Write(testRollout(1, i)); err != nil {
				os.Exit(4)
			}
		}
		p, _ := os.FindProcess(os.Getpid())
		p.Kill() // SIGKILL: no deferred code, no Close
		select {}
	}
	path := filepath.Join(t.TempDir(), "step-000001.parquet")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRolloutWriterInterrupted$")
	cmd.Env = append(os.Environ(), "PARLEY_TEST_CRASH_WRITER="+path)
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 {
		t.Fatalf("child = %v, want killed by a signal", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("after a crash, Stat(final path) = %v, want not exist", err)
	}
	tmps := tempFiles(t, filepath.Dir(path))
	if len(tmps) != 1 {
		t.Fatalf("after a crash, temporary files %v, want one partial file", tmps)
	}
	if st, err := os.Stat(tmps[0]); err != nil || st.Size() == 0 {
		t.Errorf("after a crash, Stat(%s) = %v, %v; want a partial temporary file", tmps[0], st, err)
	}
	if _, err := ReadAllRollouts(path); err == nil {
		t.Error("ReadAllRollouts(missing file) = nil error, want one")
	}
	if _, err := ReadAllRollouts(tmps[0]); err == nil {
		t.Error("ReadAllRollouts(partial .tmp) = nil error, want one (no footer)")
	}
}

func TestReadRolloutsCallbackError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.parquet")
	w, err := NewRolloutWriter(path, RolloutWriterOptions{RowGroupRows: 3})
	mustNoErr(t, err)
	for i := 0; i < 10; i++ {
		mustNoErr(t, w.Write(testRollout(1, i)))
	}
	mustNoErr(t, w.Close())
	stop := errors.New("stop")
	seen := 0
	err = ReadRollouts(path, func(Rollout) error {
		seen++
		if seen == 5 {
			return stop
		}
		return nil
	})
	if err != stop || seen != 5 {
		t.Errorf("ReadRollouts with a failing callback = %v after %d rows, want stop after 5", err, seen)
	}
	// Not a parquet file.
	bad := filepath.Join(t.TempDir(), "bad.parquet")
	mustNoErr(t, os.WriteFile(bad, []byte("not parquet at all"), 0o644))
	if err := ReadRollouts(bad, func(Rollout) error { return nil }); err == nil || !strings.Contains(err.Error(), "bad.parquet") {
		t.Errorf("ReadRollouts(garbage) = %v, want an error naming the file", err)
	}
}

// tempFiles lists the temporary files of interrupted atomic writes in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	mustNoErr(t, err)
	return m
}

// rolloutV1 is the layout of a schema-version-1 rollouts file (the columns
// the upgrade reads; version 1 had no schema_version metadata).
type rolloutV1 struct {
	RolloutID string     `parquet:"rollout_id"`
	GroupID   string     `parquet:"group_id"`
	Env       string     `parquet:"env"`
	Final     string     `parquet:"final"`
	Failed    bool       `parquet:"failed"`
	PersonaA  string     `parquet:"persona_a"`
	PersonaB  string     `parquet:"persona_b"`
	Sequences []Sequence `parquet:"sequences,list"`
	Judged    bool       `parquet:"judged"`
	Score     float32    `parquet:"score"`
	Reward    float32    `parquet:"reward"`
	Advantage float32    `parquet:"advantage"`
}

func TestReadRolloutsVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.parquet")
	seq := func(role, kind string) Sequence {
		return Sequence{Role: role, Kind: kind, InputIDs: []int32{1, 2}, LossMask: []int8{0, 1}, Logprobs: []float32{0, -1}}
	}
	writeRaw(t, path, []rolloutV1{
		{RolloutID: "r0", GroupID: "g", PersonaA: "Be loyal.", PersonaB: "Be honest.",
			Sequences: []Sequence{seq("A", KindDialogue), seq("B", KindDialogue), seq("A", KindDialogue), seq("final", KindFinal)},
			Judged:    true, Score: 4, Reward: 4, Advantage: 0.5},
		{RolloutID: "r1", GroupID: "g", Judged: false},
	}, "")
	got, err := ReadAllRollouts(path)
	mustNoErr(t, err)
	if len(got) != 2 {
		t.Fatalf("read %d rollouts, want 2", len(got))
	}
	r := got[0]
	if r.Persona("A") != "Be loyal." || r.Persona("B") != "Be honest." {
		t.Errorf("personas = %+v, want A and B from persona_a and persona_b", r.Personas)
	}
	want := []RoleOutcome{
		{Role: "A", Policy: PolicyTrained, Trained: true, Scored: true, Score: 4, Reward: 4, Advantage: 0.5},
		{Role: "B", Policy: PolicyTrained, Trained: true, Scored: true, Score: 4, Reward: 4, Advantage: 0.5},
		{Role: "final", Policy: PolicyTrained, Trained: true, Scored: true, Score: 4, Reward: 4, Advantage: 0.5},
	}
	if !reflect.DeepEqual(r.Roles, want) {
		t.Errorf("upgraded roles = %+v, want %+v", r.Roles, want)
	}
	if roles := got[1].Roles; len(roles) != 1 || roles[0].Role != "final" || roles[0].Scored {
		t.Errorf("unjudged v1 rollout without sequences: roles %+v, want one unscored final role", roles)
	}
	// A file of a future version is refused by name.
	future := filepath.Join(t.TempDir(), "v9.parquet")
	writeRaw(t, future, []rolloutV1{{RolloutID: "x"}}, "9")
	if _, err := ReadAllRollouts(future); err == nil || !strings.Contains(err.Error(), `schema_version "9"`) {
		t.Errorf("ReadAllRollouts(version 9) = %v, want a schema_version error", err)
	}
}

// TestReadRolloutsRefusesOtherFiles: a training batch (or any other
// parquet) given as rollouts is refused, saying what it is.
func TestReadRolloutsRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	batch := batchPath(dir, 1)
	if _, err := WriteBatch(batch, 1, 0, testBatchRows(1, 4)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAllRollouts(batch); err == nil || !strings.Contains(err.Error(), "is a training batch") {
		t.Errorf("ReadAllRollouts(batch) = %v, want it named a training batch", err)
	}
	other := filepath.Join(dir, "prompts.parquet")
	mustNoErr(t, WritePromptsParquet(other, []Prompt{{ID: "a", Category: CategoryProfessional, Task: "t"}}))
	if _, err := ReadAllRollouts(other); err == nil || !strings.Contains(err.Error(), "not a rollouts file") {
		t.Errorf("ReadAllRollouts(prompts) = %v, want not a rollouts file", err)
	}
}

// rolloutPreLeague is a version-2 rollout as written before league
// members were recorded: its roles lack member and member_version.
type rolloutPreLeague struct {
	RolloutID string `parquet:"rollout_id"`
	GroupID   string `parquet:"group_id"`
	Env       string `parquet:"env"`
	Final     string `parquet:"final"`
	Failed    bool   `parquet:"failed"`
	Roles     []struct {
		Role    string     `parquet:"role"`
		Policy  PolicyKind `parquet:"policy"`
		Model   string     `parquet:"model"`
		Trained bool       `parquet:"trained"`
		Scored  bool       `parquet:"scored"`
		Score   float32    `parquet:"score"`
	} `parquet:"roles,list"`
}

// TestReadRolloutsPreLeague: rollouts written before the league columns
// read with an empty member; the new columns round-trip.
func TestReadRolloutsPreLeague(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.parquet")
	old := rolloutPreLeague{RolloutID: "r0", GroupID: "g", Env: "endowment"}
	old.Roles = append(old.Roles, struct {
		Role    string     `parquet:"role"`
		Policy  PolicyKind `parquet:"policy"`
		Model   string     `parquet:"model"`
		Trained bool       `parquet:"trained"`
		Scored  bool       `parquet:"scored"`
		Score   float32    `parquet:"score"`
	}{Role: "requester", Policy: PolicyPool, Model: "m", Scored: true, Score: 0.25})
	writeRaw(t, path, []rolloutPreLeague{old}, "2")
	got, err := ReadAllRollouts(path)
	mustNoErr(t, err)
	if len(got) != 1 || len(got[0].Roles) != 1 || got[0].Roles[0].Score != 0.25 || got[0].Roles[0].Member != "" || got[0].Roles[0].MemberVersion != 0 {
		t.Fatalf("pre-league rollouts read as %+v", got)
	}
	now := filepath.Join(t.TempDir(), "new.parquet")
	w, err := NewRolloutWriter(now, RolloutWriterOptions{})
	mustNoErr(t, err)
	r := Rollout{RolloutID: "r1", Roles: []RoleOutcome{{Role: "requester", Policy: PolicyAdapter, Member: "snapshot-000004", MemberVersion: 4}}}
	mustNoErr(t, w.Write(r))
	mustNoErr(t, w.Close())
	back, err := ReadAllRollouts(now)
	mustNoErr(t, err)
	if m := back[0].Roles[0]; m.Member != "snapshot-000004" || m.MemberVersion != 4 {
		t.Errorf("league member round trip = %+v", m)
	}
}
