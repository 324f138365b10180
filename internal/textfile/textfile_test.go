package textfile

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBOMDropped(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"bom", BOM + `{"a":1}`, `{"a":1}`},
		{"no bom", `{"a":1}`, `{"a":1}`},
		{"bom only", BOM, ""},
		{"empty", "", ""},
		{"short", "x", "x"},
		{"bom later is kept", "a" + BOM, "a" + BOM},
		{"two boms: one dropped", BOM + BOM + "x", BOM + "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(StripBOM([]byte(tt.in))); got != tt.want {
				t.Errorf("StripBOM(%q) = %q, want %q", tt.in, got, tt.want)
			}
			got, err := io.ReadAll(NewReader(strings.NewReader(tt.in), 16))
			if err != nil || string(got) != tt.want {
				t.Errorf("NewReader(%q) read %q, %v, want %q", tt.in, got, err, tt.want)
			}
			path := filepath.Join(t.TempDir(), "f.jsonl")
			if err := os.WriteFile(path, []byte(tt.in), 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := ReadFile(path)
			if err != nil || string(b) != tt.want {
				t.Errorf("ReadFile(%q) = %q, %v, want %q", tt.in, b, err, tt.want)
			}
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b, err = io.ReadAll(f)
			if err != nil || string(b) != tt.want {
				t.Errorf("Open(%q) read %q, %v, want %q", tt.in, b, err, tt.want)
			}
		})
	}
}
