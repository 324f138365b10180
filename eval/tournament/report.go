package tournament

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parleyhq/parley/eval/report"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/rollout"
)

// AnalysisFile holds a report's analysis as JSON beside it.
const AnalysisFile = "analysis.json"

// WriteReport has the game analyse the tournament in dir (in holds
// everything the frozen spec says: the game's section and analysis
// settings, seed, rounds, schedule, conditions, agents) and writes
// outDir/report.md with its figures, and analysis.json; it returns the
// report's path.
func WriteReport(dir, outDir string, hook *rollout.Tournament, in rollout.TournamentReport) (string, error) {
	path, err := writeReport(dir, outDir, hook, in)
	if err != nil {
		return "", fmt.Errorf("tournament.WriteReport: %w", err)
	}
	return path, nil
}

func writeReport(dir, outDir string, hook *rollout.Tournament, in rollout.TournamentReport) (string, error) {
	if hook == nil || hook.Report == nil {
		return "", fmt.Errorf("the game has no tournament report")
	}
	recs, err := ReadRecords(dir)
	if err != nil {
		return "", err
	}
	in.Scheduled = len(recs)
	if b, err := os.ReadFile(filepath.Join(dir, ScheduleFile)); err == nil {
		var ms []Match
		if json.Unmarshal(b, &ms) == nil {
			in.Scheduled = len(ms)
		}
	}
	for i := range recs {
		in.Games = append(in.Games, recs[i].Game())
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	in.Name, in.Dir, in.FilesSHA256 = filepath.Base(filepath.Clean(dir)), outDir, FilesHash(dir)
	md, analysis, err := hook.Report(in)
	if err != nil {
		return "", err
	}
	if b, err := json.MarshalIndent(analysis, "", " "); err == nil {
		if err := fsutil.WriteFileAtomic(filepath.Join(outDir, AnalysisFile), b, 0o644); err != nil {
			return "", err
		}
	}
	path := filepath.Join(outDir, report.ReportFile)
	return path, fsutil.WriteFileAtomic(path, []byte(md), 0o644)
}
