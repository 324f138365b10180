// Package textfile reads the text files users hand to parley (configs,
// curricula, persona libraries, benchmark data and responses, evaluation
// results) the same way everywhere: a UTF-8 byte-order mark at the start of
// the file, which Windows editors and Excel's "CSV UTF-8" export write, is
// dropped, so that it never reaches a JSON, YAML or CSV decoder as a stray
// character ("invalid character 'ï' looking for beginning of value").
package textfile

import (
	"bufio"
	"bytes"
	"io"
	"os"
)

// BOM is the UTF-8 encoding of U+FEFF, the byte-order mark.
const BOM = "\ufeff"

// StripBOM returns b without a leading byte-order mark.
func StripBOM(b []byte) []byte { return bytes.TrimPrefix(b, []byte(BOM)) }

// ReadFile is os.ReadFile without a leading byte-order mark.
func ReadFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return StripBOM(b), nil
}

// NewReader returns a buffered reader of r that skips a leading
// byte-order mark; size is the buffer size (at least 16 bytes).
func NewReader(r io.Reader, size int) *bufio.Reader {
	br := bufio.NewReaderSize(r, size)
	if head, err := br.Peek(len(BOM)); err == nil && string(head) == BOM {
		_, _ = br.Discard(len(BOM))
	}
	return br
}

// File is an open text file whose reads skip a leading byte-order mark.
type File struct {
	*bufio.Reader
	f *os.File
}

// Open opens path for reading through NewReader (64 KiB buffer).
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &File{Reader: NewReader(f, 64<<10), f: f}, nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }
