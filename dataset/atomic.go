package dataset

import (
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/internal/fsutil"
)

// atomicFile is a file written under path+".tmp" and renamed onto path on
// commit, after an fsync of the file; the directory is fsynced after the
// rename. A crash at any point leaves either no file at path or a complete
// one (a stale .tmp may remain; the next writer truncates it).
type atomicFile struct {
	f    *os.File
	path string
	tmp  string
	done bool
}

// createAtomic creates path's directory if needed and opens path+".tmp".
func createAtomic(path string) (*atomicFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &atomicFile{f: f, path: path, tmp: tmp}, nil
}

// Write writes to the temporary file.
func (a *atomicFile) Write(p []byte) (int, error) { return a.f.Write(p) }

// commit fsyncs and closes the temporary file, renames it onto the final
// path and fsyncs the directory. On failure the temporary file is removed.
func (a *atomicFile) commit() error {
	if a.done {
		return errors.New("file already closed")
	}
	a.done = true
	if err := a.f.Sync(); err != nil {
		a.f.Close()
		os.Remove(a.tmp)
		return err
	}
	if err := a.f.Close(); err != nil {
		os.Remove(a.tmp)
		return err
	}
	if err := os.Rename(a.tmp, a.path); err != nil {
		os.Remove(a.tmp)
		return err
	}
	return fsutil.SyncDir(filepath.Dir(a.path))
}

// abort closes and removes the temporary file; the final path is untouched.
func (a *atomicFile) abort() {
	if a.done {
		return
	}
	a.done = true
	a.f.Close()
	os.Remove(a.tmp)
}

// writeAtomicWith streams content produced by fn to path the atomic way.
func writeAtomicWith(path string, fn func(w io.Writer) error) error {
	a, err := createAtomic(path)
	if err != nil {
		return err
	}
	if err := fn(a); err != nil {
		a.abort()
		return err
	}
	return a.commit()
}
