"""The tool-neutral shape every importer fills: one stage of one result file, in capgate's units.

Each tool module only reads its file into ``ParsedStage`` objects (figures in ms, token counts,
rates); naming, linking stages, provenance and validation happen once in
``registry.importers.build_record``, so the tools cannot drift apart in how they fill the record.
Per-request figures and the list of what a file left unstated are filled here too, the one way
every reader does it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

import numpy as np
from numpy.typing import NDArray

from registry.importers.identity import Identity
from registry.importers.stats import (
    CvEstimate,
    cv_from_samples,
    length_distribution_from_samples,
    percentiles_from_samples,
)
from registry.records.common import Distribution
from registry.records.evidence import (
    ImportFindings,
    LoadTestEvidence,
    Percentiles,
    RuntimeInfo,
    Throughput,
)

DEFAULT_CLASS = "default"


# Per-request values: a list as parsed, or an array already masked.
Samples = Sequence[float] | NDArray[np.float64]


@dataclass
class ParsedStage:
    """One stage of one result file, in capgate's units, before it becomes a record."""

    tool: str
    tool_version: str | None = None
    stage: str | None = None  # stage label when the file holds several ("0", "1", ...)
    measured_at: datetime | None = None
    measured_at_naive: bool = False  # the file's time has no zone (a local wall clock)
    measured_at_is_end: bool = False  # the file's time marks the end of the run (vLLM's date)
    measured_at_basis: str | None = None  # the key the file's time was read from
    # Where the record's time came from, once settled (``MeasuredAtSource``).
    measured_at_source: MeasuredAtSource | None = None
    # The traffic class the file itself names (vLLM --metadata class=..., a label), if any.
    class_label: str | None = None
    # Ready replicas behind the tested endpoint, when the file states it, and where.
    replicas: int | None = None
    replicas_basis: str | None = None
    # The serving runtime measured (the server, not the tool), when the file states it.
    runtime: RuntimeInfo | None = None
    runtime_basis: str | None = None
    # The model(s), tokenizer and GPUs the file says the test ran on (registry.importers.identity).
    identity: Identity = field(default_factory=Identity)
    # offered
    request_rate_rps: float | None = None
    concurrency: int | None = None
    burstiness: float | None = None
    constant_arrivals: bool = False  # evenly spaced arrivals (no burstiness figure)
    requests: int | None = None
    duration_s: float | None = None
    cancellation_rate: float | None = None
    rate_unbounded: bool = False  # vLLM's request_rate "inf": all requests sent at once
    # What the client really sent; when it fell well short of the offered schedule the test
    # measured that lower load, and the record must say so (client_behind).
    achieved_rate_rps: float | None = None
    client_behind: bool = False
    client_behind_reason: str | None = None
    prompt_tokens: Distribution | None = None
    output_tokens: Distribution | None = None
    # results
    completed: int | None = None
    failed: int | None = None
    # Why requests failed, as the file states it ("20 x TimeoutError"), most frequent first.
    failure_reasons: list[str] = field(default_factory=list)
    cancelled: int | None = None
    incomplete: int | None = None  # cut off when the tool stopped measuring
    ttft_ms: Percentiles | None = None
    tpot_ms: Percentiles | None = None
    itl_ms: Percentiles | None = None
    e2e_ms: Percentiles | None = None
    queue_ms: Percentiles | None = None
    throughput: Throughput = field(default_factory=Throughput)
    # what the file did not state, named by record path
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # findings inputs
    prompt_cv: CvEstimate | None = None
    output_cv: CvEstimate | None = None
    cancellations_exercised: bool | None = None
    cancellation_basis: str | None = None
    priority_classes: int | None = None
    priority_basis: str | None = None


class MeasuredAtSource(StrEnum):
    """Where an imported record's ``measured_at`` came from."""

    FILE = "file"  # the file's own time, with a zone: nothing can move it
    ARGUMENT = "argument"  # --measured-at (form field measured_at)
    FILE_NO_ZONE = "file-no-zone"  # the file's wall-clock time without a zone, read as UTC


@dataclass(frozen=True)
class ImportedStage:
    """One imported stage: the evidence record and the findings computed with it."""

    evidence: LoadTestEvidence
    findings: ImportFindings
    # MeasuredAtSource: whether the file itself fixes the record's time (see the import
    # service, which keeps a re-imported file's first measured time otherwise).
    measured_at_source: MeasuredAtSource = MeasuredAtSource.FILE
    # What the file says the test ran on, with the keys read: the import service holds it
    # against the provider version the record pins.
    identity: Identity = field(default_factory=Identity)


@dataclass(frozen=True)
class ImportContext:
    """What the import was told besides the file: the bytes and name (for provenance), what
    the test measured against, and the flags that may fill or contradict the file."""

    data: bytes
    file_name: str
    workload: str
    provider: str
    plan: str | None
    traffic_class: str | None
    measured_at: datetime | None
    name: str | None
    replicas: int | None = None
    runtime: RuntimeInfo | None = None  # stated at import (--runtime NAME==VERSION)


def fill_from_requests(
    stage: ParsedStage,
    *,
    ttft_s: Samples,
    tpot_s: Samples,
    itl_s: Samples,
    e2e_s: Samples,
    prompt_tokens: Samples,
    output_tokens: Samples,
) -> None:
    """Percentiles (seconds in, ms stored), length distributions and CVs from per-request
    values: the one place every importer of per-request data computes them."""
    for attribute, values in (
        ("ttft_ms", ttft_s),
        ("tpot_ms", tpot_s),
        ("itl_ms", itl_s),
        ("e2e_ms", e2e_s),
    ):
        samples = np.asarray(values, dtype=float)
        setattr(stage, attribute, percentiles_from_samples(samples, scale_to_ms=1000.0))
    prompt = np.asarray(prompt_tokens, dtype=float)
    output = np.asarray(output_tokens, dtype=float)
    stage.prompt_tokens = length_distribution_from_samples(prompt)
    stage.output_tokens = length_distribution_from_samples(output)
    stage.prompt_cv = cv_from_samples(prompt)
    stage.output_cv = cv_from_samples(output)


def note_missing(stage: ParsedStage, checks: Mapping[str, object]) -> None:
    """Record every record path whose value is None as missing."""
    for path, value in checks.items():
        if value is None:
            stage.missing.append(path)


def standard_missing(stage: ParsedStage) -> None:
    """The figures every record should carry; whatever the tool did not give is listed."""
    if stage.request_rate_rps is None and stage.concurrency is None and not stage.rate_unbounded:
        stage.missing += ["offered.request_rate_rps", "offered.concurrency"]
    note_missing(
        stage,
        {
            "offered.requests": stage.requests,
            "offered.duration_s": stage.duration_s,
            "offered.prompt_tokens": stage.prompt_tokens,
            "offered.output_tokens": stage.output_tokens,
            "results.completed": stage.completed,
            "results.failed": stage.failed,
            "results.cancelled": stage.cancelled,
            "results.ttft_ms": stage.ttft_ms,
            "results.tpot_ms": stage.tpot_ms,
            "results.itl_ms": stage.itl_ms,
            "results.e2e_ms": stage.e2e_ms,
            "results.queue_ms": stage.queue_ms,
            "throughput.requests_per_s": stage.throughput.requests_per_s,
            "throughput.output_tokens_per_s": stage.throughput.output_tokens_per_s,
            "throughput.total_tokens_per_s": stage.throughput.total_tokens_per_s,
            "throughput.goodput_requests_per_s": stage.throughput.goodput_requests_per_s,
        },
    )
