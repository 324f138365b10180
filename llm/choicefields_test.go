package llm

import (
	"reflect"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/jsonfast"
)

func TestReadTokenIDs(t *testing.T) {
	tests := []struct {
		in      string
		want    []int32
		present bool
		wantErr bool
	}{
		{`[]`, []int32{}, true, false},
		{`[ 1 , 2,3 ]`, []int32{1, 2, 3}, true, false},
		{"[\n0,\t2147483647\n]", []int32{0, 2147483647}, true, false},
		{`null`, nil, false, false},
		{`[2147483648]`, nil, true, true},
		{`[-1]`, nil, true, true},
		{`[1.0]`, nil, true, true},
		{`[1e3]`, nil, true, true},
		{`["1"]`, nil, true, true},
		{`[01]`, nil, true, true},
		{`[1,]`, nil, true, true},
		{`[1 2]`, nil, true, true},
		{`[1`, nil, true, true},
		{`{}`, nil, true, true},
	}
	for _, tt := range tests {
		r := jsonfast.NewReader([]byte(tt.in))
		got, present, err := readTokenIDs(r)
		if err == nil {
			err = r.End()
		}
		if (err != nil) != tt.wantErr {
			t.Errorf("readTokenIDs(%s) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if tt.wantErr {
			continue
		}
		if present != tt.present || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("readTokenIDs(%s) = %v (present %v), want %v (present %v)", tt.in, got, present, tt.want, tt.present)
		}
	}
}

func TestReadLogprobs(t *testing.T) {
	tests := []struct {
		in      string
		want    []float32
		present bool
		wantErr string
	}{
		{`{"token_logprobs":[-0.5, -1e-05,0,-9999.0],"tokens":["a"]}`, []float32{-0.5, -1e-05, 0, -9999}, true, ""},
		{`{"tokens":["a"],"token_logprobs":[]}`, []float32{}, true, ""},
		{`{"token_logprobs":null}`, nil, false, ""},
		{`{}`, nil, false, ""},
		{`null`, nil, false, ""},
		{`{"token_logprobs":[-0.5,null]}`, nil, true, "token_logprobs[1] is null"},
		{`{"token_logprobs":[true]}`, nil, true, "want a value"},
		{`{"token_logprobs":[-]}`, nil, true, "want a value"},
	}
	for _, tt := range tests {
		got, present, err := readLogprobs(jsonfast.NewReader([]byte(tt.in)))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("readLogprobs(%s) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || present != tt.present || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("readLogprobs(%s) = %v, %v, %v; want %v, %v", tt.in, got, present, err, tt.want, tt.present)
		}
	}
}

func TestDigest(t *testing.T) {
	ids := []int32{151644, 872, 198, 0, 5}
	d, present, err := readDigest(jsonfast.NewReader([]byte(`[151644,872,198,0,5]`)))
	if err != nil || !present || d != digestOf(ids) {
		t.Errorf("readDigest = %+v, %v, %v; want %+v", d, present, err, digestOf(ids))
	}
	for _, other := range [][]int32{{151644, 872, 198, 0}, {151644, 872, 198, 5, 0}, {151644, 872, 198, 0, 6}} {
		if digestOf(other) == d {
			t.Errorf("digestOf(%v) equals digestOf(%v), want them to differ", other, ids)
		}
	}
}
