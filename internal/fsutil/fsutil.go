// Package fsutil holds the crash-safe file writes parley's run directory
// relies on: write to a temp file, fsync, rename, fsync the directory. It is
// the one atomic writer of the tree: every file a reader may see half
// written (batches, rollouts, state, reports, charts, exports) goes through
// it.
package fsutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// tempPattern names the temporary file of path's base name: a dot file in
// the same directory, so that the rename is atomic and a listing of the
// directory's regular names never shows it.
func tempPattern(base string) string { return "." + base + ".tmp-*" }

// IsTemp reports whether name (a base name) is a temporary file left by an
// interrupted atomic write.
func IsTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// File is a file being written atomically: its bytes go to a temporary file
// in the destination's directory; Commit fsyncs it, renames it onto the
// destination and fsyncs the directory, Abort removes it. A crash at any
// point leaves either the old destination (or none) or the whole new one,
// plus at most a stale temporary file that RemoveTemps clears.
type File struct {
	f    *os.File
	path string
	perm os.FileMode
	done bool
}

// Create opens a temporary file for path, in path's directory, which must
// exist (MkdirCreate creates it). The caller must Commit or Abort it.
func Create(path string, perm os.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, tempPattern(base))
	if err != nil {
		return nil, fmt.Errorf("fsutil.Create: %w", err)
	}
	return &File{f: f, path: path, perm: perm}, nil
}

// MkdirCreate is Create after creating path's directory if needed.
func MkdirCreate(path string, perm os.FileMode) (*File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("fsutil.Create: %w", err)
	}
	return Create(path, perm)
}

// Write writes to the temporary file.
func (a *File) Write(p []byte) (int, error) { return a.f.Write(p) }

// Name is the destination path.
func (a *File) Name() string { return a.path }

// Commit fsyncs and closes the temporary file, renames it onto the
// destination and fsyncs the directory. On failure the temporary file is
// removed and the destination is untouched.
func (a *File) Commit() error {
	if a.done {
		return errors.New("fsutil.File.Commit: already committed or aborted")
	}
	a.done = true
	tmp := a.f.Name()
	err := a.f.Chmod(a.perm)
	if err == nil {
		err = a.f.Sync()
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, a.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fsutil: write %s: %w", a.path, err)
	}
	if err := SyncDir(filepath.Dir(a.path)); err != nil {
		return fmt.Errorf("fsutil: write %s: %w", a.path, err)
	}
	return nil
}

// Abort closes and removes the temporary file; the destination is
// untouched. Abort after Commit does nothing.
func (a *File) Abort() {
	if a.done {
		return
	}
	a.done = true
	a.f.Close()
	os.Remove(a.f.Name())
}

// WriteFileAtomic writes data to path so that a reader sees the old file or
// the whole new one, and a crash leaves one of them. path's directory must
// exist.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	a, err := Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := a.Write(data); err != nil {
		a.Abort()
		return fmt.Errorf("fsutil: write %s: %w", path, err)
	}
	return a.Commit()
}

// WriteWith streams what fn writes to path atomically, creating path's
// directory if needed; an error from fn leaves the destination untouched.
func WriteWith(path string, perm os.FileMode, fn func(w io.Writer) error) error {
	a, err := MkdirCreate(path, perm)
	if err != nil {
		return err
	}
	if err := fn(a); err != nil {
		a.Abort()
		return fmt.Errorf("fsutil: write %s: %w", path, err)
	}
	return a.Commit()
}

// RemoveTemps removes the temporary files that interrupted atomic writes
// left in dir (not recursively) and returns their names. A missing dir is
// not an error.
func RemoveTemps(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fsutil.RemoveTemps: %w", err)
	}
	var removed []string
	for _, e := range entries {
		if e.Type().IsRegular() && IsTemp(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return removed, fmt.Errorf("fsutil.RemoveTemps: %w", err)
			}
			removed = append(removed, e.Name())
		}
	}
	return removed, nil
}

// SyncDir fsyncs a directory so that a rename or create in it is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, os.ErrInvalid) { // file systems that cannot sync directories
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
