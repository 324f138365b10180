package export

import (
	"fmt"
	"strings"
)

// Export formats: the names of the entries of formats.
const (
	FormatJSONL = "jsonl" // one JSON object a line
	FormatHF    = "hf"    // a Hugging Face dataset folder: parquet shards and a README.md card
)

// A Format is one way to write an export: its --format name, what it
// writes (for help texts), and the sink that writes it.
type Format struct {
	// Name is the --format value.
	Name string
	// Short names what it writes, in a few words ("JSONL chat messages").
	Short string
	// Long says what it writes and how it is laid out ("JSONL (one
	// rollout a line, its dialogue as chat messages)").
	Long string
	// open starts the output: source says what is exported, for the
	// dataset card.
	open func(opts Options, source string) (sink, error)
}

// formats is the format → sink table, in the order help lists them.
var formats = []Format{
	{
		Name: FormatJSONL, Short: "JSONL chat messages",
		Long: "JSONL (one rollout a line, its dialogue as chat messages)",
		open: func(opts Options, _ string) (sink, error) { return newJSONLSink(opts.Out) },
	},
	{
		Name: FormatHF, Short: "a Hugging Face dataset folder",
		Long: "a Hugging Face dataset folder (parquet shards and a README.md card)",
		open: func(opts Options, source string) (sink, error) { return newHFSink(opts, source) },
	},
}

// Formats returns the formats an export writes, in the order help lists
// them.
func Formats() []Format { return append([]Format(nil), formats...) }

// FormatNames returns the formats' names, in order.
func FormatNames() []string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f.Name
	}
	return names
}

// formatOf looks a format up by name.
func formatOf(name string) (Format, error) {
	for _, f := range formats {
		if f.Name == name {
			return f, nil
		}
	}
	return Format{}, fmt.Errorf("unknown format %q (want %s)", name, strings.Join(FormatNames(), " or "))
}

// sink receives export records and finishes or discards the output.
type sink interface {
	// write adds a record to the output.
	write(*Record) error
	// close finishes the output and returns the files written; stats are
	// the export's, for the dataset card.
	close(stats Stats) ([]string, error)
	// abort removes what was written.
	abort()
}
