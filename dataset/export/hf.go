package export

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parquet-go/parquet-go"
)

const (
	hfRowGroupRows = 1_000 // rows per row group of an HF shard
	hfBufferRows   = 64    // rows buffered before they are handed to the parquet writer
)

// hfSink writes parquet shards of Record under hidden temporary names and
// renames them to data/train-%05d-of-%05d.parquet once their number is
// known, then writes README.md.
type hfSink struct {
	opts    Options
	source  string // what was exported, for the card
	dataDir string
	shardN  int
	shards  []string // committed temporary shard paths
	cur     *fsutil.File
	pw      *parquet.GenericWriter[Record]
	buf     []Record // rows not yet handed to pw
	inShard int
	inGroup int
}

func newHFSink(opts Options, source string) (*hfSink, error) {
	if opts.ShardRows <= 0 {
		opts.ShardRows = DefaultShardRows
	}
	dataDir := filepath.Join(opts.Out, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	return &hfSink{opts: opts, source: source, dataDir: dataDir, shardN: opts.ShardRows}, nil
}

func (s *hfSink) openShard() error {
	f, err := fsutil.MkdirCreate(filepath.Join(s.dataDir, fmt.Sprintf(".shard-%05d.parquet", len(s.shards))), 0o644)
	if err != nil {
		return err
	}
	s.cur = f
	s.pw = parquet.NewGenericWriter[Record](f, schema, parquet.Compression(&parquet.Zstd))
	s.inShard, s.inGroup = 0, 0
	return nil
}

// flushBuf hands the buffered rows to the parquet writer.
func (s *hfSink) flushBuf() error {
	if len(s.buf) == 0 {
		return nil
	}
	_, err := s.pw.Write(s.buf)
	clear(s.buf)
	s.buf = s.buf[:0]
	return err
}

func (s *hfSink) closeShard() error {
	if err := s.flushBuf(); err != nil {
		s.cur.Abort()
		s.cur = nil
		return err
	}
	if err := s.pw.Close(); err != nil {
		s.cur.Abort()
		s.cur = nil
		return err
	}
	err := s.cur.Commit()
	if err == nil {
		s.shards = append(s.shards, s.cur.Name())
	}
	s.cur = nil
	return err
}

func (s *hfSink) write(r *Record) error {
	if s.cur == nil {
		if err := s.openShard(); err != nil {
			return err
		}
	}
	s.buf = append(s.buf, *r)
	s.inShard++
	s.inGroup++
	if len(s.buf) >= hfBufferRows {
		if err := s.flushBuf(); err != nil {
			return err
		}
	}
	if s.inGroup >= hfRowGroupRows {
		if err := s.flushBuf(); err != nil {
			return err
		}
		if err := s.pw.Flush(); err != nil {
			return err
		}
		s.inGroup = 0
	}
	if s.inShard >= s.shardN {
		return s.closeShard()
	}
	return nil
}

func (s *hfSink) close(stats Stats) ([]string, error) {
	if s.cur == nil && len(s.shards) == 0 {
		// No rows: still write one empty shard so the folder loads.
		if err := s.openShard(); err != nil {
			return nil, err
		}
	}
	if s.cur != nil {
		if err := s.closeShard(); err != nil {
			s.abort()
			return nil, err
		}
	}
	// Replace shards of an earlier export.
	old, _ := filepath.Glob(filepath.Join(s.dataDir, "train-*-of-*.parquet"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			s.abort()
			return nil, err
		}
	}
	var outs []string
	for i, tmp := range s.shards {
		final := filepath.Join(s.dataDir, fmt.Sprintf("train-%05d-of-%05d.parquet", i, len(s.shards)))
		if err := os.Rename(tmp, final); err != nil {
			s.abort()
			return nil, err
		}
		outs = append(outs, final)
	}
	s.shards = nil
	if err := fsutil.SyncDir(s.dataDir); err != nil {
		return nil, err
	}
	readme := filepath.Join(s.opts.Out, "README.md")
	if err := fsutil.WriteFileAtomic(readme, []byte(datasetCard(s.opts, s.source, stats)), 0o644); err != nil {
		return nil, err
	}
	return append(outs, readme), nil
}

func (s *hfSink) abort() {
	if s.cur != nil {
		s.cur.Abort()
		s.cur = nil
	}
	s.buf = s.buf[:0]
	for _, p := range s.shards {
		os.Remove(p)
	}
	s.shards = nil
}
