"""Reading a request trace file: which form it is (Azure, Mooncake, generic, from its columns),
its rows from CSV or JSON Lines, and each cell as a timestamp, token count or flag.

Every bad cell is refused naming its line and column, and the bytes are hashed as they are
read, so the fit (``registry.traces.fit``) digests and parses the trace in one pass.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

from registry.errors import FieldProblem, InvalidInput


class HashingReader(io.RawIOBase):
    """A raw binary stream that hashes every byte it hands on, so digest and parse are one pass."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.sha = hashlib.sha256()
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._raw.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.sha.update(data)
        self.size += n
        return n


@dataclass(frozen=True)
class Columns:
    form: str  # "azure", "mooncake", "generic"
    timestamp: str
    prompt: str
    output: str
    latency: str | None
    ts_scale: float  # seconds per numeric timestamp unit
    hashes: str | None = None  # prompt block ids: prefix reuse
    cancelled: str | None = None  # per-request cancellation flag


def trace_columns(keys: list[str], *, source: str) -> Columns:
    lower = {k.strip().lower(): k for k in keys}
    extra = {"hashes": lower.get("hash_ids"), "cancelled": lower.get("cancelled")}
    if {"timestamp", "contexttokens", "generatedtokens"} <= lower.keys():
        return Columns(
            "azure",
            lower["timestamp"],
            lower["contexttokens"],
            lower["generatedtokens"],
            None,
            1.0,
            **extra,
        )
    if {"timestamp", "input_length", "output_length"} <= lower.keys():
        return Columns(
            "mooncake",
            lower["timestamp"],
            lower["input_length"],
            lower["output_length"],
            None,
            1e-3,
            **extra,
        )
    if {"timestamp", "prompt_tokens", "output_tokens"} <= lower.keys():
        return Columns(
            "generic",
            lower["timestamp"],
            lower["prompt_tokens"],
            lower["output_tokens"],
            lower.get("latency_s"),
            1.0,
            **extra,
        )
    raise InvalidInput(
        f"{source}: unknown trace columns",
        problems=[
            FieldProblem(
                loc="timestamp",
                message=(
                    f"columns {sorted(keys)} match no trace form; expected Azure "
                    "(TIMESTAMP, ContextTokens, GeneratedTokens), Mooncake (timestamp, "
                    "input_length, output_length) or generic (timestamp, prompt_tokens, "
                    "output_tokens[, latency_s])"
                ),
            )
        ],
        source=source,
    )


def trace_rows(
    stream: IO[bytes], *, source: str
) -> Iterator[tuple[int, dict[str, Any] | list[str]]]:
    """(line number, row) pairs; the first item is the header (CSV) or first object (JSONL)."""
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
    first = ""
    while not first.strip():
        first = text.readline()
        if not first:
            raise InvalidInput(f"{source}: the trace is empty", source=source)
    if first.lstrip().startswith("{"):
        for i, line in enumerate(_chain([first], text), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(
                    f"{source}: line {i} is not JSON",
                    problems=[FieldProblem(loc=f"line {i}", message=exc.msg)],
                    source=source,
                ) from exc
            if not isinstance(obj, dict):
                raise InvalidInput(f"{source}: line {i} is not an object", source=source)
            yield i, obj
    else:
        reader = csv.reader(_chain([first], text))
        for i, row in enumerate(reader, start=1):
            if row:
                yield i, row


def _chain(head: list[str], rest: IO[str]) -> Iterator[str]:
    yield from head
    yield from rest


def parse_timestamp(
    value: Any, cols: Columns, *, line: int, source: str, iso_first: bool = False
) -> datetime | float:
    """A number (scaled to seconds) or a datetime; zone-less datetimes stay naive here.

    ``iso_first``: the trace's first stamp was ISO text, so try that first; failing a
    ``float()`` on every row costs an exception each (a third of a 1M-row Azure fit).
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) * cols.ts_scale
    text = str(value).strip()
    if iso_first:
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            pass
    try:
        return float(text) * cols.ts_scale
    except ValueError:
        pass
    if cols.form == "mooncake":
        raise bad_cell(line, cols.timestamp, f"{text!r} is not a number of ms", source)
    try:
        return datetime.fromisoformat(text)
    except ValueError as exc:
        raise bad_cell(
            line, cols.timestamp, f"{text!r} is neither ISO 8601 nor a number", source
        ) from exc


def bad_cell(line: int, column: str, message: str, source: str) -> InvalidInput:
    return InvalidInput(
        f"{source}: line {line}: {column}: {message}",
        problems=[FieldProblem(loc=f"line {line}.{column}", message=message)],
        source=source,
    )


_TRUE = frozenset({"true", "1", "yes", "y", "t"})
_FALSE = frozenset({"false", "0", "no", "n", "f"})


def flag_cell(value: Any, *, line: int, column: str, source: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise bad_cell(line, column, f"{value!r} is not true/false (or 1/0, yes/no)", source)


def number_cell(value: Any, *, line: int, column: str, source: str) -> float:
    try:
        f = float(value)
    except (TypeError, ValueError) as exc:
        raise bad_cell(line, column, f"{value!r} is not a number", source) from exc
    if not math.isfinite(f) or f < 0:
        raise bad_cell(line, column, f"{value!r} is not a non-negative number", source)
    return f
