package dataset

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestContractsDoc: docs/contracts.md, the contracts a trainer of one's
// own is written against, names every column of the batch (BatchRow's
// parquet columns), every field of the .ready marker and every file and
// folder of the run directory, so that the page cannot fall behind the
// code unnoticed.
func TestContractsDoc(t *testing.T) {
	b, err := os.ReadFile("../docs/contracts.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var want []string
	columns := func(v any, tag string) {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get(tag), ",")
			want = append(want, name)
		}
	}
	columns(BatchRow{}, "parquet")
	columns(Ready{}, "json")
	want = append(want, ConfigFile, StateFile, LockFile, MetricsFile, DoneFile, SchemaVersionKey,
		BatchesDirName+"/", RolloutsDirName+"/", CheckpointsDirName+"/", EvalsDirName+"/", LeagueDirName+"/",
		StepName(42), ReadyExt, SidecarExt)
	for _, w := range want {
		if !strings.Contains(doc, w) {
			t.Errorf("docs/contracts.md does not name %q", w)
		}
	}
}
