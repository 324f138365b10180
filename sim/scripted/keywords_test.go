package scripted

import (
	"strings"
	"testing"
)

func TestKeywords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Persona: Honor patient confidentiality. Honor it.", []string{"honor", "patient", "confidentiality"}},
		{"about which their would", nil},
		{"brief tiny ok", []string{"brief"}},
	}
	for _, tt := range tests {
		got := keywords(tt.in, 10)
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("keywords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
