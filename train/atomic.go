package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// AppendMetrics appends record as one JSON line to path (metrics.jsonl),
// creating the file, in a single write followed by fsync.
func AppendMetrics(path string, record any) error {
	b, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("train.AppendMetrics: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("train.AppendMetrics: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err != nil {
		return fmt.Errorf("train.AppendMetrics: %w", err)
	}
	return nil
}
