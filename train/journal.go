package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/crashpoint"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
)

// journalEntry is one line of a streaming run's journal
// (dataset.RunDir.StreamJournalPath): a group finished and judged, its
// rollouts in its own file (dataset.RunDir.StreamGroupPath) — or, with
// Batch set, the step whose written batch took the groups named.
//
// A group's file and line are written before any batch may take it, and a
// batch's line after its .ready: so a crash anywhere loses no finished
// group, judges none again, and lets no group into two batches (one whose
// batch line a crash cut off is found in that batch's rollouts on resume).
type journalEntry struct {
	Group       string            `json:"group,omitempty"`
	Prompt      string            `json:"prompt,omitempty"`
	Version     int               `json:"version"`
	Model       string            `json:"model,omitempty"`
	Informative bool              `json:"informative,omitempty"`
	Judge       reward.ScoreStats `json:"judge"`
	// PromptTokensSent and ClosedTurns total the group's recorder counts.
	PromptTokensSent int `json:"prompt_tokens_sent,omitempty"`
	ClosedTurns      int `json:"closed_turns,omitempty"`
	// Series is the cursor of the group's series slot after its game
	// (series training).
	Series *SeriesCursor `json:"series,omitempty"`

	Batch  int      `json:"batch,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

// journalGroup records g, judged: its rollouts in their file, then its
// line. The stream takes it only after.
func (s *stream) journalGroup(g *streamGroup) error {
	d := s.l.opts.Dir
	w, err := dataset.NewRolloutWriter(d.StreamGroupPath(g.id), dataset.RolloutWriterOptions{Scale: reward.ScaleOf(s.l.opts.Judge)})
	if err != nil {
		return err
	}
	if err := w.Write(g.rs...); err != nil {
		w.Abort()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	e := journalEntry{Group: g.id, Version: g.version, Model: g.model, Informative: g.informative, Judge: g.stats, Series: g.after}
	if len(g.rs) > 0 {
		e.Prompt = g.rs[0].PromptID
	}
	for _, p := range g.played {
		e.PromptTokensSent += p.PromptTokensSent
		e.ClosedTurns += p.ClosedTurns
	}
	if err := appendJournal(d, e); err != nil {
		return err
	}
	crashpoint.Hit("group-journaled") // the group recorded, no batch has it
	return nil
}

// journalBatch records that step's written batch took groups, then
// removes their files (their rollouts are in the step's).
func (l *Loop) journalBatch(step int, groups []string) error {
	d := l.opts.Dir
	if err := appendJournal(d, journalEntry{Batch: step, Groups: groups}); err != nil {
		return err
	}
	for _, id := range groups {
		if err := os.Remove(d.StreamGroupPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("train: stream journal: %w", err)
		}
	}
	return nil
}

// appendJournal appends e to d's journal, durably.
func appendJournal(d dataset.RunDir, e journalEntry) error {
	if err := os.MkdirAll(d.StreamDir(), 0o755); err != nil {
		return fmt.Errorf("train: stream journal: %w", err)
	}
	if err := AppendMetrics(d.StreamJournalPath(), e); err != nil {
		return fmt.Errorf("train: stream journal: %w", err)
	}
	return nil
}

// journalRead is what the journal says: the groups finished that no
// written batch took, in the order they finished; the largest group
// number (rollout.GroupID's) under each step prefix; and the furthest
// cursor of each series slot (series training).
type journalRead struct {
	untaken []journalEntry
	seqs    map[int]int
	series  map[int]SeriesCursor
}

// readJournal reads the journal (journalRead). A torn last line (a crash
// while appending) is dropped; any other line that does not parse is an
// error naming the file and line. A batch is written when its .ready
// verifies (dataset.VerifyBatch): the groups of a written batch whose
// line a crash cut off are found in its rollouts file.
func readJournal(d dataset.RunDir) (journalRead, error) {
	out := journalRead{seqs: map[int]int{}, series: map[int]SeriesCursor{}}
	path := d.StreamJournalPath()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("train: read %s: %w", path, err)
	}
	if n := len(b); n > 0 && b[n-1] != '\n' {
		b = b[:bytes.LastIndexByte(b, '\n')+1]
		if err := os.Truncate(path, int64(len(b))); err != nil {
			return out, fmt.Errorf("train: drop the torn last line of %s: %w", path, err)
		}
	}
	var groups []journalEntry
	taken := map[string]bool{}
	batches := map[int]bool{}
	seqs := out.seqs
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		var e journalEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || (e.Group == "" && e.Batch == 0) {
			return out, fmt.Errorf("train: %s line %d is not a stream journal line (%q): remove the run's stream/ folder to sample its unbatched groups anew", path, line, clip(sc.Text()))
		}
		if e.Batch > 0 {
			batches[e.Batch] = true
			for _, id := range e.Groups {
				taken[id] = true
			}
			continue
		}
		groups = append(groups, e)
		if c := e.Series; c != nil {
			if was, ok := out.series[c.Slot]; !ok || c.Generation > was.Generation || (c.Generation == was.Generation && c.Index > was.Index) {
				out.series[c.Slot] = *c
			}
		}
		var step, seq int
		if _, err := fmt.Sscanf(e.Group, "s%06d-g%05d", &step, &seq); err == nil {
			seqs[step] = max(seqs[step], seq)
		}
	}
	// A crash between a batch's .ready and its journal line: find the
	// batch's groups in its rollouts.
	var missing []int
	for _, e := range groups {
		if !taken[e.Group] {
			var st int
			fmt.Sscanf(e.Group, "s%06d-", &st)
			missing = append(missing, st)
		}
	}
	if len(missing) > 0 {
		sort.Ints(missing)
		for step := missing[0]; ; step++ {
			if _, err := dataset.VerifyBatch(d.BatchPath(step), step); err != nil {
				if _, serr := os.Stat(d.ReadyPath(step)); serr != nil {
					break // the first step with no batch: none after it has one either
				}
				continue
			}
			if batches[step] {
				continue
			}
			if err := dataset.ReadRollouts(d.RolloutsPath(step), func(r dataset.Rollout) error {
				taken[r.GroupID] = true
				return nil
			}); err != nil {
				return out, err
			}
		}
	}
	for _, e := range groups {
		if !taken[e.Group] {
			out.untaken = append(out.untaken, e)
		}
	}
	return out, nil
}

// clip shortens s for a message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// resumeGroups puts the groups the journal holds untaken into the stream's
// ready queue, read from their files, and returns how many, so that a
// resumed run samples none of them again, and the furthest cursor of each
// series slot. Called before the stream runs.
func (s *stream) resumeGroups() (int, map[int]SeriesCursor, error) {
	jr, err := readJournal(s.l.opts.Dir)
	if err != nil {
		return 0, nil, err
	}
	untaken, seqs := jr.untaken, jr.seqs
	s.seq = max(s.seq, seqs[s.first]+1)
	if _, ok := seqs[s.first]; !ok {
		s.seq = 0
	}
	n := 0
	for _, e := range untaken {
		path := s.l.opts.Dir.StreamGroupPath(e.Group)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue // dropped as stale (its file removed)
		}
		rs, err := dataset.ReadAllRollouts(path)
		if err != nil {
			return n, nil, fmt.Errorf("train: the stream journal's group %s: %w (remove %s to sample it anew)", e.Group, err, filepath.Join(s.l.opts.Dir.StreamDir()))
		}
		g := &streamGroup{id: e.Group, model: e.Model, version: e.Version, rs: rs, stats: e.Judge, informative: e.Informative, resumed: true, slot: -1}
		for i := range rs {
			p := rollout.Played{Rollout: &rs[i]}
			if rs[i].Failed {
				p.Err = errors.New(rs[i].Error)
			}
			if i == 0 {
				p.PromptTokensSent, p.ClosedTurns = e.PromptTokensSent, e.ClosedTurns
			}
			g.played = append(g.played, p)
		}
		s.ready = append(s.ready, g)
		n++
	}
	return n, jr.series, nil
}
