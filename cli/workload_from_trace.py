"""`capgate workload from-trace`: a workload profile measured from a request trace.

The trace gives the rates and token lengths per class; the SLOs cannot be measured from
it, so they come from --slo-file or the SLO options. The fitter (registry.traces) names
its parameters; an error here names the flag that sets each.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.option_values import invalid_option, zoned_time
from cli.options import JsonOpt, ServerOpt, duration_s
from cli.profile_out import ProfileOutputOpt, ProfileSubmitOpt

if TYPE_CHECKING:
    from registry.errors import InvalidInput
    from registry.records.workload import ClassSLO

SLO_FIELDS = ("ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms", "queue_deadline_ms")

# The fitter's parameters a person gives as these flags: an error names the flag to use.
_FIT_FLAGS = {
    "trace_start": "--trace-start",
    "class_by": "--class-by",
    "window_s": "--window",
    "assumed_service_time_s": "--assumed-service-time-s",
    "hash_block_tokens": "--hash-block-tokens",
    "prefix_cache_tokens": "--prefix-cache-tokens",
}


def _as_flags(exc: InvalidInput) -> InvalidInput:
    from registry.errors import FieldProblem
    from registry.errors import InvalidInput as Invalid

    problems = [FieldProblem(_FIT_FLAGS.get(p.loc, p.loc), p.message) for p in exc.problems]
    message = exc.message
    for field, flag in _FIT_FLAGS.items():
        message = message.replace(f"pass {field}", f"pass {flag}")
    return Invalid(message, problems=problems, source=exc.source)


def _slo_from_mapping(data: Any, *, source: str) -> ClassSLO | dict[str, ClassSLO]:
    from pydantic import ValidationError

    from registry.errors import InvalidInput
    from registry.records.documents import problems_from
    from registry.records.workload import ClassSLO

    if not isinstance(data, dict) or not data:
        raise invalid_option(
            "expected a mapping of SLO fields, or of class names to them", source=source
        )
    single = set(data) <= set(SLO_FIELDS)
    try:
        if single:
            return ClassSLO.model_validate(data)
        return {str(name): ClassSLO.model_validate(slo) for name, slo in data.items()}
    except ValidationError as exc:
        raise InvalidInput("invalid SLO", problems=problems_from(exc), source=source) from None


def _slo(slo_file: Path | None, flags: dict[str, float | None]) -> ClassSLO | dict[str, ClassSLO]:
    given = {name: value for name, value in flags.items() if value is not None}
    if slo_file is not None:
        if given:
            raise invalid_option(
                "give either --slo-file or the SLO options, not both", loc="--slo-file"
            )
        from registry.records.documents import load_document

        return _slo_from_mapping(load_document(slo_file), source=str(slo_file))
    missing = [f"--{name.replace('_', '-')}" for name in SLO_FIELDS if name not in given]
    if missing:
        raise invalid_option(
            f"SLOs cannot be measured from a trace: pass --slo-file, or {', '.join(missing)}",
            loc="slo",
        )
    return _slo_from_mapping(given, source="SLO options")


def _priorities(values: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        name, sep, number = value.partition("=")
        if not sep or not name.strip() or not number.strip().isdigit():
            raise invalid_option(f"{value!r} is not CLASS=N (N >= 0)", loc="--priority")
        out[name.strip()] = int(number)
    return out


def extend_workload(group: typer.Typer) -> None:
    """Add `from-trace` to the workload group."""

    @group.command("from-trace")
    def from_trace(
        file: Annotated[
            Path, typer.Argument(help="Request trace: Azure, Mooncake, or generic CSV/JSONL.")
        ],
        name: Annotated[str, typer.Option("--name", help="Name of the workload profile.")],
        class_by: Annotated[
            str | None,
            typer.Option("--class-by", help="Column whose values become traffic classes."),
        ] = None,
        window: Annotated[
            str, typer.Option("--window", help="Peak-rate window: 60s, 5m, 1h ...")
        ] = "60s",
        slo_file: Annotated[
            Path | None,
            typer.Option(
                "--slo-file",
                help="YAML/JSON: one SLO (ttft_p99_ms, tpot_p99_ms, e2e_p99_ms, "
                "queue_deadline_ms) for every class, or class -> SLO.",
            ),
        ] = None,
        ttft_p99_ms: Annotated[
            float | None, typer.Option("--ttft-p99-ms", help="TTFT p99 objective.")
        ] = None,
        tpot_p99_ms: Annotated[
            float | None, typer.Option("--tpot-p99-ms", help="Time per output token p99.")
        ] = None,
        e2e_p99_ms: Annotated[
            float | None, typer.Option("--e2e-p99-ms", help="End-to-end latency p99.")
        ] = None,
        queue_deadline_ms: Annotated[
            float | None, typer.Option("--queue-deadline-ms", help="Admission queue deadline.")
        ] = None,
        priority: Annotated[
            list[str] | None,
            typer.Option("--priority", help="CLASS=N, repeatable (default 0: served first)."),
        ] = None,
        assumed_service_time_s: Annotated[
            float | None,
            typer.Option(
                "--assumed-service-time-s",
                help="Estimate concurrency with this constant service time (stored as assumed).",
            ),
        ] = None,
        trace_start: Annotated[
            str | None,
            typer.Option("--trace-start", help="Start time for relative timestamps (Mooncake)."),
        ] = None,
        trace_ref: Annotated[
            str | None,
            typer.Option("--trace-ref", help="Where the trace lives (default: the file path)."),
        ] = None,
        hash_block_tokens: Annotated[
            int,
            typer.Option(
                "--hash-block-tokens",
                min=1,
                help="Tokens per prefix block behind a trace's hash_ids (Mooncake: 512).",
            ),
        ] = 512,
        prefix_cache_tokens: Annotated[
            int | None,
            typer.Option(
                "--prefix-cache-tokens",
                min=1,
                help="Also compute the prefix reuse share for an LRU cache of this many "
                "tokens (default: an unbounded cache, an upper bound).",
            ),
        ] = None,
        output: ProfileOutputOpt = None,
        submit: ProfileSubmitOpt = False,
        server: ServerOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        """Measure a workload profile from a request trace (SLOs are given, not measured).

        Writes the profile YAML to --output or stdout; with --submit it is registered and
        the new version is printed instead.
        """
        from registry.errors import InvalidInput

        slo = _slo(
            slo_file,
            {
                "ttft_p99_ms": ttft_p99_ms,
                "tpot_p99_ms": tpot_p99_ms,
                "e2e_p99_ms": e2e_p99_ms,
                "queue_deadline_ms": queue_deadline_ms,
            },
        )
        window_s = duration_s("window", window)
        start = zoned_time(trace_start, option="--trace-start")
        if not file.is_file():
            raise InvalidInput(
                "file not found" if not file.exists() else "not a file", source=str(file)
            )
        from registry.traces import fit_trace

        try:
            fit = fit_trace(
                file,
                name=name,
                slo=slo,
                class_by=class_by,
                window_s=window_s,
                priorities=_priorities(priority or []),
                trace_start=start,
                assumed_service_time_s=assumed_service_time_s,
                trace_ref=trace_ref,
                hash_block_tokens=hash_block_tokens,
                prefix_cache_tokens=prefix_cache_tokens,
            )
        except InvalidInput as exc:
            raise _as_flags(exc) from None
        from cli.profile_out import hand_over

        classes = ", ".join(c.name for c in fit.profile.classes)
        hand_over(
            fit.profile.model_dump(mode="json", exclude_none=True),
            output=output,
            submit=submit,
            server=server,
            json_out=json_out,
            source=str(file),
            wrote=f"wrote {output}: {fit.rows} requests ({fit.form} trace), classes {classes}",
        )
