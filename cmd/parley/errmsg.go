package main

import "regexp"

// goOp matches the operation prefixes that wrapped errors carry
// ("harness.Suite.ReadResponses: ", "train.Rescore in.parquet: "): a
// package name and exported identifiers, at the start of the message or
// after a ": ", followed by ": " or by the argument it names.
var goOp = regexp.MustCompile(`(^|: )[a-z][a-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)+(?:: | )`)

// userMessage is err's message for the terminal: the operation prefixes of
// the wrap chain (kept for debugging: --log-level debug prints the chain)
// are removed, so that what remains names the file, the line or row, the
// key, and the problem.
func userMessage(err error) string {
	msg := err.Error()
	for {
		out := goOp.ReplaceAllString(msg, "$1")
		if out == msg {
			return out
		}
		msg = out
	}
}
