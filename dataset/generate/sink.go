package generate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/textfile"
)

// JournalSuffix names the JSON lines journal beside a parquet output: new
// prompts are appended to it as they are accepted, and Close turns the
// output and the journal into one parquet file.
const JournalSuffix = ".partial.jsonl"

// FileSink writes prompts to a curriculum file as they are accepted, so an
// interrupted run loses nothing. A .jsonl (or .ndjson, .json) output is
// appended to directly, one line per prompt; a .parquet output, which
// cannot be appended to, gets a JSON lines journal (path + JournalSuffix)
// that Close merges into the parquet file (written atomically). The file
// reads back with dataset.LoadPrompts. Not safe for concurrent use.
type FileSink struct {
	path    string
	parquet bool
	f       *os.File
	w       *bufio.Writer
	rows    []dataset.Prompt // every prompt, for the parquet output
	closed  bool
}

var _ Sink = (*FileSink)(nil)

// OpenFile opens path for a resumable run and returns the prompts it
// already holds (with, for parquet, those of an unmerged journal). A torn
// last line (a crash during a write) is cut off; any other malformed line
// is an error naming the file and line.
func OpenFile(path string) (*FileSink, []dataset.Prompt, error) {
	s, existing, err := openFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("generate.OpenFile: %w", err)
	}
	return s, existing, nil
}

func openFile(path string) (*FileSink, []dataset.Prompt, error) {
	var (
		isParquet bool
		journal   = path
		existing  []dataset.Prompt
	)
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson", ".json":
	case ".parquet":
		isParquet = true
		journal = path + JournalSuffix
		if _, err := os.Stat(path); err == nil {
			rows, err := dataset.LoadPrompts(path, dataset.LoadOptions{})
			if err != nil {
				return nil, nil, err
			}
			existing = rows
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
	default:
		return nil, nil, fmt.Errorf("%s: unknown file format %q (want .jsonl or .parquet)", path, filepath.Ext(path))
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
	}
	f, err := os.OpenFile(journal, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	rows, end, err := readJournal(journal, f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	// Cut a torn last line and append from the end of the good data.
	if err := f.Truncate(end); err != nil {
		f.Close()
		return nil, nil, err
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	// A crash between writing the parquet file and removing the journal
	// leaves journal prompts that the parquet file already holds.
	merged := map[string]bool{}
	for _, p := range existing {
		merged[p.ID] = true
	}
	for _, p := range rows {
		if !merged[p.ID] {
			existing = append(existing, p)
		}
	}
	s := &FileSink{path: path, parquet: isParquet, f: f, w: bufio.NewWriter(f)}
	if isParquet {
		s.rows = append(s.rows, existing...)
	}
	return s, existing, nil
}

// readJournal reads the prompts of a JSON lines file and the offset where
// its good data ends (after the last complete line; a final line that
// does not decode and has no newline is torn and excluded).
func readJournal(name string, r io.Reader) ([]dataset.Prompt, int64, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, 0, err
	}
	// A byte-order mark (an editor's) is skipped; offsets still count it.
	stripped := textfile.StripBOM(data)
	var (
		rows []dataset.Prompt
		off  = int64(len(data) - len(stripped))
		ids  = map[string]int{}
	)
	data = stripped
	for line := 1; len(data) > 0; line++ {
		raw, rest, hasNL := bytes.Cut(data, []byte{'\n'})
		trimmed := bytes.TrimSpace(raw)
		if len(trimmed) > 0 {
			var p dataset.Prompt
			dec := json.NewDecoder(bytes.NewReader(trimmed))
			dec.DisallowUnknownFields()
			err := dec.Decode(&p)
			if err == nil && dec.InputOffset() != int64(len(trimmed)) {
				err = errors.New("extra data after the object")
			}
			if err != nil {
				if !hasNL {
					break // a torn last line: drop it
				}
				return nil, 0, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			if p.ID == "" || p.Task == "" {
				return nil, 0, fmt.Errorf("%s:%d: prompt without id or task", name, line)
			}
			if first, dup := ids[p.ID]; dup {
				return nil, 0, fmt.Errorf("%s:%d: duplicate id %q (first at line %d)", name, line, p.ID, first)
			}
			ids[p.ID] = line
			rows = append(rows, p)
		}
		if !hasNL {
			// A complete object without its newline: keep it, and end
			// the line so the next prompt starts cleanly.
			off += int64(len(raw))
			data = nil
			break
		}
		off += int64(len(raw)) + 1
		data = rest
	}
	return rows, off, nil
}

// Write appends p to the file (the journal for parquet) and flushes it.
func (s *FileSink) Write(p dataset.Prompt) error {
	if s.closed {
		return errors.New("generate.FileSink.Write: closed")
	}
	line, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("generate.FileSink.Write: %w", err)
	}
	if err := s.ensureNewline(); err != nil {
		return fmt.Errorf("generate.FileSink.Write: %w", err)
	}
	s.w.Write(line)
	s.w.WriteByte('\n')
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("generate.FileSink.Write: %w", err)
	}
	if s.parquet {
		s.rows = append(s.rows, p)
	}
	return nil
}

// ensureNewline terminates a last line that lacks its newline.
func (s *FileSink) ensureNewline() error {
	off, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil || off == 0 {
		return err
	}
	var b [1]byte
	if _, err := s.f.ReadAt(b[:], off-1); err != nil {
		return err
	}
	if b[0] != '\n' {
		_, err = s.f.Write([]byte{'\n'})
	}
	return err
}

// Close syncs and closes the file. For a parquet output it writes every
// prompt (the old file's and the journal's) to the parquet file
// atomically and removes the journal.
func (s *FileSink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.w.Flush()
	if serr := s.f.Sync(); err == nil {
		err = serr
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("generate.FileSink.Close: %w", err)
	}
	if !s.parquet {
		return nil
	}
	if len(s.rows) > 0 {
		if err := dataset.WritePromptsParquet(s.path, s.rows); err != nil {
			return fmt.Errorf("generate.FileSink.Close: %w", err)
		}
	}
	if err := os.Remove(s.path + JournalSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("generate.FileSink.Close: %w", err)
	}
	return nil
}
