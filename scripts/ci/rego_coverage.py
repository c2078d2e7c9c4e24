"""Print the Rego test coverage from ``opa test --coverage --format=json`` output.

Usage: rego_coverage.py FILE [--min PERCENT]

Exits 1 when the coverage is below the minimum (default 90 %), 2 when the file is not
an OPA coverage report. Also lists the files below the minimum, with uncovered lines.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

DEFAULT_MIN = 90.0


def _uncovered_lines(report: dict[str, Any]) -> list[str]:
    spans = report.get("not_covered") or []
    lines: list[str] = []
    for span in spans:
        start, end = span["start"]["row"], span["end"]["row"]
        lines.append(str(start) if start == end else f"{start}-{end}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--min", type=float, default=DEFAULT_MIN, dest="minimum")
    args = parser.parse_args(argv)
    try:
        report = json.loads(args.file.read_text(encoding="utf-8"))
        coverage = float(report["coverage"])
        files: dict[str, Any] = report.get("files") or {}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"rego coverage: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    for name in sorted(files):
        file_coverage = float(files[name].get("coverage", 0.0))
        if file_coverage < args.minimum:
            lines = ", ".join(_uncovered_lines(files[name])) or "-"
            print(f"  {name}: {file_coverage:.1f} % (not covered: lines {lines})")
    verdict = "ok" if coverage >= args.minimum else "below"
    print(f"rego coverage: {coverage:.1f} % ({verdict} the minimum of {args.minimum:g} %)")
    return 0 if coverage >= args.minimum else 1


if __name__ == "__main__":
    sys.exit(main())
