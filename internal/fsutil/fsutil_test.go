package fsutil

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestAtomicFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	if err := WriteFileAtomic(path, []byte("one"), 0o640); err != nil {
		t.Fatal(err)
	}
	// A failed streamed write leaves the old file and no temporary file.
	err := WriteWith(path, 0o644, func(w io.Writer) error {
		w.Write([]byte("half"))
		return errors.New("boom")
	})
	if err == nil {
		t.Fatal("WriteWith(failing fn) = nil error")
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Errorf("after a failed write the file holds %q, want the old %q", b, "one")
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", st.Mode().Perm())
	}
	// Abort after Create, and an interrupted write's leftover, are cleaned.
	a, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("x"))
	a.Abort()
	a.Abort() // twice is harmless
	if err := a.Commit(); err == nil {
		t.Error("Commit after Abort = nil error")
	}
	stale, err := os.CreateTemp(dir, tempPattern("state.json"))
	if err != nil {
		t.Fatal(err)
	}
	stale.Close()
	removed, err := RemoveTemps(dir)
	if err != nil || len(removed) != 1 || removed[0] != filepath.Base(stale.Name()) {
		t.Errorf("RemoveTemps = %v, %v; want the one stale file", removed, err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != "f.txt" {
		t.Errorf("directory holds %v, want only f.txt", left)
	}
	// A missing directory: WriteFileAtomic fails, WriteWith creates it.
	deep := filepath.Join(dir, "a", "b", "g.txt")
	if err := WriteFileAtomic(deep, []byte("x"), 0o644); err == nil {
		t.Error("WriteFileAtomic into a missing directory = nil error")
	}
	if err := WriteWith(deep, 0o644, func(w io.Writer) error { _, err := w.Write([]byte("y")); return err }); err != nil {
		t.Errorf("WriteWith into a missing directory = %v", err)
	}
	if removed, err := RemoveTemps(filepath.Join(dir, "nope")); err != nil || removed != nil {
		t.Errorf("RemoveTemps(missing) = %v, %v", removed, err)
	}
}
