// Package fsutil holds the crash-safe file writes parley's run directory
// relies on: write to a temp file, fsync, rename, fsync the directory.
package fsutil

import (
	"errors"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path so that a reader sees the old file or
// the whole new one, and a crash leaves one of them: a temp file in the same
// directory, fsynced, renamed over path, then the directory fsynced.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
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
