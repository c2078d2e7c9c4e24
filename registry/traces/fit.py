"""Fit a ``WorkloadProfile`` from a request trace in one streaming pass.

Trace forms read (CSV with a header row, or JSON Lines with one object per request):

* **Azure LLM inference trace**: ``TIMESTAMP,ContextTokens,GeneratedTokens``; timestamps
  are wall-clock strings with up to 7 fractional digits and no zone (read as UTC).
* **Mooncake trace**: ``timestamp`` (ms since the trace's start), ``input_length``,
  ``output_length``, ``hash_ids`` (one id per 512-token prompt block; equal ids are shared
  prefix blocks). Timestamps are relative, so ``trace_start`` must be given.
* **Generic form**: ``timestamp`` (ISO 8601 text, zone optional and UTC assumed, or Unix
  seconds as a number), ``prompt_tokens``, ``output_tokens``; optional ``latency_s`` (the
  request's end-to-end time, which makes concurrency measurable) and any other column, e.g.
  one to split classes by (``class_by``).

Two optional columns are read in every form: ``hash_ids`` (block ids of the prompt, a JSON
list, or in CSV a cell such as ``"[1, 2]"`` or ``"1 2"``) gives the prefix-cache share
(``registry.traces.prefix``), and ``cancelled`` (true/false, 1/0, yes/no) the cancellation
rate. A trace without them says nothing about either, so the profile stores them as unknown
(null, with the reason under ``unknown``), never as 0. The first row (the CSV header, or the
first JSON object) decides which columns the trace has; later rows must carry them too.

Memory is bounded by the trace's shape, not its length: token lengths go into fixed
log-spaced histograms (``registry.importers.stats.LengthSketch``, relative quantile error
under ~1.1 %) and (prompt, output) pairs into a fixed 2-D grid per class
(``JointLengthSketch``, stored as at most 29 x 29 cells), arrivals into running moments
and per-window counts (one integer per window of the trace's span), concurrency into a
heap of in-flight end times, and prefix blocks into a set of the distinct block ids. Rows
are processed in chunks with numpy.

This module runs the pass and turns what was gathered into the profile; ``trace_reading``
reads the file and its cells, ``class_sketch`` gathers each class's figures.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from registry.errors import FieldProblem, InvalidInput
from registry.importers.build_record import slug
from registry.records.common import TraceWindow
from registry.records.workload import (
    ClassSLO,
    UnknownShare,
    WorkloadProfile,
)
from registry.traces.class_sketch import ClassSketch, traffic_class
from registry.traces.prefix import (
    MOONCAKE_BLOCK_TOKENS,
    BadHashes,
    ClassReuse,
    PrefixReuse,
    parse_hash_ids,
)
from registry.traces.trace_reading import (
    HashingReader,
    bad_cell,
    flag_cell,
    number_cell,
    parse_timestamp,
    trace_columns,
    trace_rows,
)

_FORM_NAMES = {"azure": "Azure", "mooncake": "Mooncake", "generic": "generic"}
_CHUNK = 65_536
_SECOND = timedelta(seconds=1)
_MAX_CLASSES = 64
# Timestamps below this many seconds are offsets, not Unix times (2001-09-09).
_EPOCH_FLOOR = 1e9


@dataclass(frozen=True)
class TraceFit:
    """The fitted profile and what was learnt on the way (for reports and the CLI)."""

    profile: WorkloadProfile
    form: str
    rows: int
    digest: str
    size_bytes: int
    notes: tuple[str, ...]
    # Per class, prompt and hit tokens behind prefix_cache_share (None: no hash ids).
    prefix_reuse: Mapping[str, ClassReuse] | None = None


def fit_trace(
    path: Path,
    *,
    name: str,
    slo: ClassSLO | Mapping[str, ClassSLO],
    class_by: str | None = None,
    window_s: float = 60.0,
    priorities: Mapping[str, int] | None = None,
    trace_start: datetime | None = None,
    assumed_service_time_s: float | None = None,
    default_class: str = "default",
    trace_ref: str | None = None,
    hash_block_tokens: int = MOONCAKE_BLOCK_TOKENS,
    prefix_cache_tokens: int | None = None,
) -> TraceFit:
    """The full result of fitting a trace; ``workload_from_trace`` returns its profile."""
    source = str(path)
    if window_s <= 0:
        raise InvalidInput("window_s must be positive", source=source)
    if hash_block_tokens <= 0:
        raise InvalidInput("hash_block_tokens must be positive", source=source)
    if prefix_cache_tokens is not None and prefix_cache_tokens < hash_block_tokens:
        raise InvalidInput(
            f"prefix_cache_tokens must hold at least one {hash_block_tokens}-token block",
            problems=[FieldProblem(loc="prefix_cache_tokens", message="below one block")],
            source=source,
        )
    if assumed_service_time_s is not None and assumed_service_time_s <= 0:
        raise InvalidInput("assumed_service_time_s must be positive", source=source)
    notes: list[str] = []
    accs: dict[str, ClassSketch] = {}
    t0_dt: datetime | None = None
    t0_num: float | None = None
    prev = -math.inf
    last = 0.0
    rows = 0
    with path.open("rb") as fh:
        hashing = HashingReader(fh)
        buffered = io.BufferedReader(hashing, buffer_size=1 << 20)
        it = trace_rows(buffered, source=source)
        line, head = next(it)
        if isinstance(head, dict):
            cols = trace_columns(list(head.keys()), source=source)
            pending: list[tuple[int, dict[str, Any] | list[str]]] = [(line, head)]
            index: dict[str, int] = {}
        else:
            cols = trace_columns(head, source=source)
            pending = []
            index = {k: i for i, k in enumerate(head)}
        if class_by is not None and class_by not in (index or head):
            raise InvalidInput(
                f"{source}: no column {class_by!r} to split classes by",
                problems=[FieldProblem(loc="class_by", message=f"column {class_by!r} not found")],
                source=source,
            )
        latency_col = cols.latency
        hash_col, cancel_col = cols.hashes, cols.cancelled
        reuse = (
            PrefixReuse(
                block_tokens=hash_block_tokens,
                capacity_blocks=(
                    None
                    if prefix_cache_tokens is None
                    else prefix_cache_tokens // hash_block_tokens
                ),
            )
            if hash_col is not None
            else None
        )

        def field_of(row: dict[str, Any] | list[str], key: str, ln: int) -> Any:
            if isinstance(row, dict):
                if key not in row:
                    raise bad_cell(ln, key, "missing", source)
                return row[key]
            i = index[key]
            if i >= len(row):
                raise bad_cell(ln, key, "missing (short row)", source)
            return row[i]

        def rows_iter() -> Iterator[tuple[int, dict[str, Any] | list[str]]]:
            yield from pending
            yield from it

        for ln, row in rows_iter():
            ts = parse_timestamp(
                field_of(row, cols.timestamp, ln),
                cols,
                line=ln,
                source=source,
                iso_first=t0_dt is not None,
            )
            if isinstance(ts, datetime):
                if t0_dt is None:
                    t0_dt = ts
                elif (ts.tzinfo is None) != (t0_dt.tzinfo is None):
                    # Zoned and zone-less stamps mixed: zone-less ones are UTC. (Kept naive
                    # while they all are: replacing the zone on every row is costly.)
                    ts = ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)
                    t0_dt = t0_dt if t0_dt.tzinfo is not None else t0_dt.replace(tzinfo=UTC)
                t = (ts - t0_dt) / _SECOND
            else:
                if t0_num is None:
                    t0_num = ts
                t = ts - t0_num
            if t < prev:
                raise bad_cell(
                    ln,
                    cols.timestamp,
                    "timestamps go backwards; the trace must be sorted by time",
                    source,
                )
            prev = last = t
            if class_by is not None:
                cls = slug(str(field_of(row, class_by, ln)), max_len=60) or default_class
            else:
                cls = default_class
            acc = accs.get(cls)
            if acc is None:
                if len(accs) >= _MAX_CLASSES:
                    raise bad_cell(ln, class_by or "", f"more than {_MAX_CLASSES} classes", source)
                acc = accs[cls] = ClassSketch()
            acc.t.append(t)
            prompt = number_cell(
                field_of(row, cols.prompt, ln), line=ln, column=cols.prompt, source=source
            )
            acc.p.append(prompt)
            if reuse is not None:
                assert hash_col is not None
                try:
                    reuse.add(cls, parse_hash_ids(field_of(row, hash_col, ln)), prompt)
                except BadHashes as exc:
                    raise bad_cell(ln, hash_col, str(exc), source) from None
            if cancel_col is not None and flag_cell(
                field_of(row, cancel_col, ln), line=ln, column=cancel_col, source=source
            ):
                acc.cancelled += 1
            acc.o.append(
                number_cell(
                    field_of(row, cols.output, ln), line=ln, column=cols.output, source=source
                )
            )
            if latency_col is not None:
                acc.lat.append(
                    number_cell(
                        field_of(row, latency_col, ln), line=ln, column=latency_col, source=source
                    )
                )
            elif assumed_service_time_s is not None:
                acc.lat.append(assumed_service_time_s)
            rows += 1
            if len(acc.t) >= _CHUNK:
                acc.flush(window_s)
        for acc in accs.values():
            acc.flush(window_s)
        # The row iterator ran to end of file, so every byte has passed through the hash.
        digest = "sha256:" + hashing.sha.hexdigest()
        size = hashing.size

    if rows < 2:
        raise InvalidInput(f"{source}: a trace needs at least two requests", source=source)
    span = last
    if span <= 0:
        raise InvalidInput(f"{source}: every request has the same timestamp", source=source)
    if t0_dt is not None:
        start = t0_dt if t0_dt.tzinfo is not None else t0_dt.replace(tzinfo=UTC)
    else:
        assert t0_num is not None
        if t0_num < _EPOCH_FLOOR or cols.form == "mooncake":
            if trace_start is None:
                raise InvalidInput(
                    f"{source}: timestamps are offsets from the trace's start; pass trace_start",
                    problems=[
                        FieldProblem(
                            loc="trace_start",
                            message="needed: the trace's timestamps are relative, not Unix time",
                        )
                    ],
                    source=source,
                )
            start = trace_start + timedelta(seconds=t0_num)
        else:
            start = datetime.fromtimestamp(t0_num, tz=UTC)
    end = start + timedelta(seconds=span)

    if latency_col is not None:
        notes.append(f"concurrency measured from arrivals and {latency_col} (in flight at arrival)")
    elif assumed_service_time_s is not None:
        notes.append(
            f"concurrency ASSUMED: every request held for {assumed_service_time_s:g} s "
            "(the trace has no completion times)"
        )
    else:
        notes.append("concurrency not stated: the trace has no completion times")
    unknown_why: dict[UnknownShare, str] = {}
    if reuse is not None:
        notes.extend(_reuse_notes(reuse, hash_col or "", prefix_cache_tokens))
    else:
        unknown_why["prefix_cache_share"] = (
            f"the {_FORM_NAMES[cols.form]} trace has no hash_ids (prompt block hashes): "
            "prefix reuse cannot be measured from it"
        )
        if prefix_cache_tokens is not None:
            notes.append("prefix_cache_tokens ignored: the trace has no hash_ids")
    if cancel_col is not None:
        notes.append(f"cancellation_rate measured: requests with {cancel_col} true over all")
    else:
        unknown_why["cancellation_rate"] = (
            f"the {_FORM_NAMES[cols.form]} trace has no cancelled column: it records no "
            "cancellations"
        )
    notes.extend(f"{field} unknown: {why}" for field, why in unknown_why.items())

    classes = [
        traffic_class(
            cls_name,
            accs[cls_name],
            span=span,
            window_s=window_s,
            slo=slo,
            priorities=priorities,
            latency_col=latency_col,
            assumed_service_time_s=assumed_service_time_s,
            reuse=reuse,
            prefix_cache_tokens=prefix_cache_tokens,
            cancel_col=cancel_col,
            unknown_why=unknown_why,
            notes=notes,
            source=source,
        )
        for cls_name in sorted(accs)
    ]
    description = (
        f"Measured from {cols.form} trace {path.name}: {rows} requests, "
        f"{start.isoformat()} to {end.isoformat()}; SLOs given, not measured; " + "; ".join(notes)
    )
    profile = WorkloadProfile(
        name=name,
        description=description,
        measurement=TraceWindow(
            trace_ref=trace_ref or str(path),
            trace_digest=digest,
            window_start=start,
            window_end=end,
            requests=rows,
        ),
        classes=classes,
    )
    return TraceFit(
        profile=profile,
        form=cols.form,
        rows=rows,
        digest=digest,
        size_bytes=size,
        notes=tuple(notes),
        prefix_reuse=None if reuse is None else dict(reuse.classes),
    )


def _reuse_notes(reuse: PrefixReuse, column: str, cache_tokens: int | None) -> list[str]:
    """How prefix_cache_share was measured, and the figures of both caches per class."""
    b = reuse.block_tokens
    unbounded = ", ".join(f"{n} {c.share():.4f}" for n, c in sorted(reuse.classes.items()))
    notes = [
        f"prefix_cache_share from {column} ({b}-token blocks): prompt tokens in each request's "
        "leading blocks already seen earlier in the trace, over all prompt tokens; an upper "
        "bound, as if every request reached a replica holding its prefix"
    ]
    if cache_tokens is None:
        notes.append(f"prefix_cache_share with an unbounded cache (stored): {unbounded}")
    else:
        bounded = ", ".join(
            f"{n} {c.share(bounded=True):.4f}" for n, c in sorted(reuse.classes.items())
        )
        notes.append(
            f"prefix_cache_share with an LRU cache of {cache_tokens} tokens "
            f"({cache_tokens // b} blocks) (stored): {bounded}; unbounded cache: {unbounded}"
        )
    uncovered = sum(c.uncovered_rows for c in reuse.classes.values())
    if uncovered:
        notes.append(
            f"{uncovered} request(s) list fewer {column} than their prompt has {b}-token "
            "blocks; the uncovered tokens count as misses"
        )
    return notes


def workload_from_trace(
    path: Path,
    *,
    name: str,
    class_by: str | None = None,
    window_s: float = 60.0,
    slo: ClassSLO | Mapping[str, ClassSLO],
    priorities: Mapping[str, int] | None = None,
    trace_start: datetime | None = None,
    assumed_service_time_s: float | None = None,
    default_class: str = "default",
    trace_ref: str | None = None,
    hash_block_tokens: int = MOONCAKE_BLOCK_TOKENS,
    prefix_cache_tokens: int | None = None,
) -> WorkloadProfile:
    """A ``WorkloadProfile`` measured from a request trace (CSV or JSON Lines), in one pass.

    Measured from the trace: prompt and output token quantiles (p1..p99.9), coarse
    power-of-two histograms, mean/min/max and sample counts per class, and how the two
    lengths occur together (``joint_lengths``: a sparse 2-D histogram, at most 29 bins a
    side cut at the marginals' quantiles, so the planner draws (prompt, output) pairs as
    the trace has them); the mean arrival rate
    (requests over the trace's span), the peak rate (most requests in any ``window_s``
    window aligned to the trace's first request, divided by ``window_s``) and the
    coefficient of variation of inter-arrival times; the trace's sha256 and time window.

    Not measurable from a trace, so taken as arguments: ``slo`` (one ``ClassSLO`` for every
    class, or a mapping class -> ``ClassSLO``; a class without one is an error) and
    ``priorities`` (class -> priority, default 0).

    Concurrency is *measured* only when the trace has per-request latencies (the generic
    ``latency_s`` column): the number in flight at each arrival. Given
    ``assumed_service_time_s`` instead, the same count is computed with that constant
    service time and stored with ``basis: assumed`` and the reason; otherwise it is left out.

    ``prefix_cache_share`` is measured only from a ``hash_ids`` column (Mooncake): the share
    of prompt tokens in each request's leading blocks already seen earlier in the trace
    (blocks of ``hash_block_tokens``, 512 for Mooncake), with an unbounded cache, or with an
    LRU cache of ``prefix_cache_tokens`` tokens when given; either is an upper bound (every
    request is taken to reach a replica holding its prefix). ``cancellation_rate`` is
    measured only from a ``cancelled`` column. Without those columns both are stored as
    unknown (null, with the reason under ``unknown``), never as 0.

    ``class_by`` names a column whose values (slugged) become class names. ``trace_start``
    anchors relative timestamps (Mooncake). Timestamps without a zone are read as UTC.
    Rows must be sorted by time. Raises ``InvalidInput`` for unreadable traces.
    """
    return fit_trace(
        path,
        name=name,
        slo=slo,
        class_by=class_by,
        window_s=window_s,
        priorities=priorities,
        trace_start=trace_start,
        assumed_service_time_s=assumed_service_time_s,
        default_class=default_class,
        trace_ref=trace_ref,
        hash_block_tokens=hash_block_tokens,
        prefix_cache_tokens=prefix_cache_tokens,
    ).profile
