package dataset_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

// TestRunDirLock takes a run directory twice: the second taker fails at
// once with ErrLocked naming the holder's PID, the lock file does not count
// as a run file, and once released the directory can be taken again.
func TestRunDirLock(t *testing.T) {
	d := dataset.RunDir(filepath.Join(t.TempDir(), "run"))
	unlock, err := d.Lock()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(d.Root(), dataset.LockFile))
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file = %q, %v; want this process's pid", b, err)
	}
	if files, err := d.Files(); err != nil || len(files) != 0 {
		t.Errorf("Files of a locked, empty run directory = %v, %v; want none", files, err)
	}
	_, err = d.Lock()
	if !errors.Is(err, dataset.ErrLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second Lock = %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	unlock()
	unlock2, err := d.Lock()
	if err != nil {
		t.Fatalf("Lock after unlock = %v", err)
	}
	unlock2()
}
