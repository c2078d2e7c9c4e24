"""The time of measurement of an imported stage: the file's own zoned time, ``--measured-at``,
or a zone-less wall clock read as UTC, and the refusal when they contradict each other.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from registry.importers.json_values import refuse
from registry.importers.parsed_stage import ImportContext, MeasuredAtSource, ParsedStage

# How far --measured-at may sit from a time the file states, beyond the run's own duration:
# a user may give the run's start where the file states its end, or round to the minute.
MEASURED_AT_SLACK = timedelta(minutes=5)


def measured_at_tolerance(duration_s: float | None) -> timedelta:
    """The run's own duration plus ``MEASURED_AT_SLACK``: two times of one run further apart
    than this are not the same run."""
    return timedelta(seconds=duration_s or 0.0) + MEASURED_AT_SLACK


def _format_gap(gap: timedelta) -> str:
    seconds = abs(gap.total_seconds())
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


def _check_stated_time(
    stage: ParsedStage, stated: datetime, given: datetime, ctx: ImportContext
) -> None:
    """Refuse a --measured-at that contradicts the zoned time the file states."""
    tolerance = measured_at_tolerance(stage.duration_s)
    gap = given - stated
    if abs(gap) <= tolerance:
        return
    basis = f" ({stage.measured_at_basis})" if stage.measured_at_basis else ""
    mark = "ended" if stage.measured_at_is_end else "started"
    run = f"{stage.duration_s:g} s run" if stage.duration_s else "run of unstated duration"
    raise refuse(
        "--measured-at",
        f"the file states the run {mark} at {stated.isoformat()}{basis} but --measured-at "
        f"{given.isoformat()} was given (API: form field measured_at), {_format_gap(gap)} "
        f"{'later' if gap > timedelta(0) else 'earlier'}: more than the {run} plus "
        f"{MEASURED_AT_SLACK.total_seconds() / 60:g} min. The file's own time is the time of "
        "measurement; drop the flag or correct it",
        source=ctx.file_name,
    )


# Every note on how a time without a zone was settled holds this: a re-import that keeps the
# first import's time keeps the first import's note with it (the import service).
NO_ZONE_NOTE = "has no time zone; "


def is_time_note(note: str) -> bool:
    return NO_ZONE_NOTE in note


def resolve_measured_at(stage: ParsedStage, ctx: ImportContext) -> datetime:
    """The time of measurement: the file's own zoned time wins (a --measured-at further from
    it than the run's duration plus ``MEASURED_AT_SLACK`` is refused naming both); a time
    without a zone yields to --measured-at; no time at all needs it."""
    if stage.measured_at is not None and not stage.measured_at_naive:
        if ctx.measured_at is not None:
            _check_stated_time(stage, stage.measured_at, ctx.measured_at, ctx)
        stage.measured_at_source = MeasuredAtSource.FILE
        return stage.measured_at
    if stage.measured_at is not None:
        # The file's clock has no zone: an explicit argument is better evidence than a guess.
        if ctx.measured_at is not None:
            stage.notes.append(
                f"the file's time {stage.measured_at.isoformat()} {NO_ZONE_NOTE}the "
                "measured_at argument (the run's start) was used instead"
            )
            stage.measured_at_is_end = False
            stage.measured_at_source = MeasuredAtSource.ARGUMENT
            return ctx.measured_at
        stage.notes.append(
            f"the file's time {stage.measured_at.isoformat()} {NO_ZONE_NOTE}read as UTC"
        )
        stage.measured_at_source = MeasuredAtSource.FILE_NO_ZONE
        return stage.measured_at.replace(tzinfo=UTC)
    if ctx.measured_at is not None:
        stage.measured_at_source = MeasuredAtSource.ARGUMENT
        return ctx.measured_at
    raise refuse(
        "--measured-at",
        "the file states no time of measurement; pass --measured-at with an ISO 8601 time "
        "and zone, e.g. --measured-at 2026-11-24T14:05:00Z (API: form field measured_at)",
        source=ctx.file_name,
    )
