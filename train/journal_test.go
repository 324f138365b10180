package train

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

// TestReadJournal: the journal's groups not taken by a written batch are
// returned in order; a batch's groups count as taken by its journal line,
// or, when a crash cut that line off, by its rollouts file; a torn last
// line is dropped, any other bad line named.
func TestReadJournal(t *testing.T) {
	d := dataset.RunDir(t.TempDir())
	if err := d.Create(); err != nil {
		t.Fatal(err)
	}
	group := func(id string) journalEntry { return journalEntry{Group: id, Version: 1} }
	lines := []journalEntry{
		group("s000001-g00000"), group("s000001-g00001"), group("s000001-g00002"),
		{Batch: 1, Groups: []string{"s000001-g00000"}},
		group("s000001-g00003"), group("s000001-g00004"),
	}
	for _, e := range lines {
		if err := appendJournal(d, e); err != nil {
			t.Fatal(err)
		}
	}
	// Step 1's batch took g00000 (its line says so); step 2's took g00001
	// and g00003, and the crash cut its line off.
	rs1 := []dataset.Rollout{{RunID: "t", Step: 1, GroupID: "s000001-g00000", RolloutID: "s000001-g00000-000"}}
	if _, err := WriteStep(d, 1, 0, rs1, nil, dataset.ScoreScale{Name: "x"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	rs := []dataset.Rollout{{RunID: "t", Step: 2, GroupID: "s000001-g00001", RolloutID: "s000001-g00001-000"},
		{RunID: "t", Step: 2, GroupID: "s000001-g00003", RolloutID: "s000001-g00003-000"}}
	if _, err := WriteStep(d, 2, 1, rs, nil, dataset.ScoreScale{Name: "x"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	jr, err := readJournal(d)
	untaken, seqs := jr.untaken, jr.seqs
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range untaken {
		ids = append(ids, e.Group)
	}
	if want := []string{"s000001-g00002", "s000001-g00004"}; !slices.Equal(ids, want) || seqs[1] != 4 {
		t.Errorf("untaken %v, largest group number %d; want %v, 4", ids, seqs[1], want)
	}

	// A torn last line is dropped; a bad line before it is an error.
	f, _ := os.OpenFile(d.StreamJournalPath(), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprint(f, `{"group":"s000001-g00005","vers`)
	f.Close()
	if jr, err := readJournal(d); err != nil || len(jr.untaken) != 2 {
		t.Errorf("with a torn last line: %d untaken, %v; want 2, nil", len(jr.untaken), err)
	}
	f, _ = os.OpenFile(d.StreamJournalPath(), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprint(f, "garbage\n{\"batch\":3}\n")
	f.Close()
	if _, err := readJournal(d); err == nil || !strings.Contains(err.Error(), "journal.jsonl line 7") {
		t.Errorf("with a bad line = %v, want an error naming the file and line 7", err)
	}
}
