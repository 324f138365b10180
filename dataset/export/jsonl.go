package export

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/internal/fsutil"
)

// jsonlFileName is the file a JSONL export writes when Out is a directory.
const jsonlFileName = "rollouts.jsonl"

// jsonlSink writes one JSON object a line to an atomic file.
type jsonlSink struct {
	file *fsutil.File
	bw   *bufio.Writer
	enc  *json.Encoder
}

// newJSONLSink writes out, or out/rollouts.jsonl when out does not end in
// ".jsonl".
func newJSONLSink(out string) (*jsonlSink, error) {
	path := out
	if !strings.HasSuffix(strings.ToLower(out), ".jsonl") {
		path = filepath.Join(out, jsonlFileName)
	}
	f, err := fsutil.MkdirCreate(path, 0o644)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &jsonlSink{file: f, bw: bw, enc: enc}, nil
}

func (s *jsonlSink) write(r *Record) error { return s.enc.Encode(r) }

func (s *jsonlSink) close(Stats) ([]string, error) {
	if err := s.bw.Flush(); err != nil {
		s.file.Abort()
		return nil, err
	}
	if err := s.file.Commit(); err != nil {
		return nil, err
	}
	return []string{s.file.Name()}, nil
}

func (s *jsonlSink) abort() { s.file.Abort() }
