package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// MathVerifyModule is the Python module the math-verify scorer runs
// (scripts/parley_tools/mathverify.py).
const MathVerifyModule = "parley_tools.mathverify"

// MathVerifyPair is one response to verify against its gold answer.
type MathVerifyPair struct {
	Gold     string `json:"gold"`
	Response string `json:"response"`
}

// MathVerdict is math-verify's verdict on one pair: whether the response's
// answer equals the gold one, and the text it extracted ("" when none).
type MathVerdict struct {
	Correct bool   `json:"correct"`
	Got     string `json:"got"`
}

// MathVerifier verifies responses against gold answers, in order.
type MathVerifier interface {
	Verify(ctx context.Context, pairs []MathVerifyPair) ([]MathVerdict, error)
}

// MathVerify runs the math-verify package (pinned in
// scripts/requirements.txt) in a Python process: `Python -m
// parley_tools.mathverify`, every pair as a JSON line on its stdin, the
// verdicts read back from its stdout. It is the package itself, not a
// port.
type MathVerify struct {
	// Python is the interpreter of parley's environment (which has
	// parley_tools and math-verify installed).
	Python string
	// Env is added to the process's environment (a test's PYTHONPATH).
	Env []string
	// Version is set by Verify to the math-verify version that ran.
	Version string
}

var _ MathVerifier = (*MathVerify)(nil)

// mathVerifyMissing is parley_tools.mathverify's exit status when
// math-verify is not installed.
const mathVerifyMissing = 3

// Verify runs the pairs through math-verify in one process. The errors name
// the fix: a missing interpreter, a Python without parley_tools or without
// math-verify.
func (m *MathVerify) Verify(ctx context.Context, pairs []MathVerifyPair) ([]MathVerdict, error) {
	if m.Python == "" {
		return nil, errors.New("bench.MathVerify: no Python: the math-verify scorer runs parley's Python environment; pass --python PATH (or set PARLEY_PYTHON) to its interpreter, e.g. .venv/bin/python after make venv")
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, p := range pairs {
		if err := enc.Encode(p); err != nil {
			return nil, fmt.Errorf("bench.MathVerify: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, m.Python, "-m", MathVerifyModule)
	cmd.Env = append(os.Environ(), m.Env...)
	cmd.Stdin = &in
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	msg := strings.TrimSpace(stderr.String())
	var exit *exec.ExitError
	switch {
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("bench.MathVerify: %s: %w: pass --python PATH (or set PARLEY_PYTHON) to the interpreter of parley's environment", m.Python, err)
	case errors.As(err, &exit) && strings.Contains(msg, "No module named 'parley_tools'"):
		return nil, fmt.Errorf("bench.MathVerify: %s has no parley_tools: install parley's scripts into it (make venv, or pip install -e scripts)", m.Python)
	case errors.As(err, &exit) && exit.ExitCode() == mathVerifyMissing:
		return nil, fmt.Errorf("bench.MathVerify: %s", msg)
	case err != nil:
		return nil, fmt.Errorf("bench.MathVerify: %s -m %s: %w: %s", m.Python, MathVerifyModule, err, msg)
	}
	verdicts, version, err := readMathVerdicts(&out)
	if err != nil {
		return nil, fmt.Errorf("bench.MathVerify: %s -m %s: %w", m.Python, MathVerifyModule, err)
	}
	if len(verdicts) != len(pairs) {
		return nil, fmt.Errorf("bench.MathVerify: %s -m %s: %d verdicts for %d pairs", m.Python, MathVerifyModule, len(verdicts), len(pairs))
	}
	m.Version = version
	return verdicts, nil
}

// readMathVerdicts reads the version line, then a verdict a line.
func readMathVerdicts(r io.Reader) ([]MathVerdict, string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var head struct {
		Version string `json:"math_verify"`
	}
	if !sc.Scan() {
		return nil, "", errors.New("no output")
	}
	if err := json.Unmarshal(sc.Bytes(), &head); err != nil || head.Version == "" {
		return nil, "", fmt.Errorf("stdout line 1 = %.80q, want {\"math_verify\": VERSION}", sc.Text())
	}
	var out []MathVerdict
	for n := 2; sc.Scan(); n++ {
		var v MathVerdict
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, "", fmt.Errorf("stdout line %d: %w", n, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, "", err
	}
	return out, head.Version, nil
}
