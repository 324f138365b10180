"""The math-verify scorer of `parley bench aime24|aime25 --scorer math-verify`:
Hugging Face's math-verify package (math_verify.parse and math_verify.verify
with their defaults, as its README uses them) over JSON lines.

    python -m parley_tools.mathverify < pairs.jsonl > verdicts.jsonl

Each input line is {"gold": "33", "response": "...the whole text..."}; the gold
answer is parsed as "$<gold>$", the response as it is. The first output line
is {"math_verify": VERSION}; then one line per input, in order:
{"correct": true|false, "got": "what math-verify extracted"} ("" when nothing).
Exit status 3: math-verify is not installed (the message names the fix); 2: a
bad input line (the message names the line).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

EXIT_MISSING = 3
EXIT_BAD_INPUT = 2


def extracted(parsed: list[Any]) -> str:
    """The text math-verify matched: parse's string fallback (its last item), or the expression."""
    if not parsed:
        return ""
    return str(parsed[-1])


def verdicts(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Verdicts on {"gold", "response"} lines, in order (ValueError names a bad line)."""
    from math_verify import parse, verify

    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            pair = json.loads(line)
            gold, response = pair["gold"], pair["response"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(f"stdin line {n}: want a JSON object with gold and response: {e}") from e
        if not isinstance(gold, str) or not isinstance(response, str):
            raise ValueError(f"stdin line {n}: gold and response must be strings")
        pred = parse(response)
        yield {"correct": bool(verify(parse(f"${gold}$"), pred)), "got": extracted(pred)}


def run(stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    """Verify every line of stdin, writing the version line then the verdicts."""
    try:
        from importlib.metadata import version

        import math_verify  # noqa: F401
    except ImportError as e:
        print(
            f"parley_tools.mathverify: {e}: this Python ({sys.executable}) lacks the math-verify package; "
            "install parley's environment (make venv, or pip install -r scripts/requirements.txt) "
            "or point parley at a Python that has it (--python, PARLEY_PYTHON)",
            file=stderr,
        )
        return EXIT_MISSING
    stdout.write(json.dumps({"math_verify": version("math-verify")}) + "\n")
    try:
        for v in verdicts(stdin):
            stdout.write(json.dumps(v) + "\n")
    except ValueError as e:
        print(f"parley_tools.mathverify: {e}", file=stderr)
        return EXIT_BAD_INPUT
    stdout.flush()
    return 0


def main() -> None:
    sys.exit(run(sys.stdin, sys.stdout, sys.stderr))


if __name__ == "__main__":
    main()
