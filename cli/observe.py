"""`capgate observe`: read production's vLLM series and compare them with the plan."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.options import JsonOpt, ServerOpt, duration_s, instant
from cli.profile_out import ProfileOutputOpt, ProfileSubmitOpt

if TYPE_CHECKING:
    from registry.observe.drift import Drift
    from registry.records.observation import Observation, ObservedHistogram

# Longer than any retention a user would keep raw vLLM series for; a bound, not a policy.
MAX_WINDOW = "400d"


def _say(message: str) -> None:
    print(f"observe: {message}", file=sys.stderr, flush=True)


def _quantiles(histogram: ObservedHistogram, scale: float = 1.0, unit: str = "") -> str:
    parts = []
    for key, q in histogram.quantiles.items():
        upper = "+Inf" if q.bucket_upper is None else f"{q.bucket_upper * scale:g}"
        parts.append(f"{key} {q.value * scale:.0f}{unit} in ({q.bucket_lower * scale:g}, {upper}]")
    return ", ".join(parts)


def _text(observation: Observation, found: Drift, workload_ref: str) -> str:
    lines = [
        f"observation of {observation.plan} ({observation.window_start.isoformat()} to "
        f"{observation.window_end.isoformat()}, series of vLLM "
        f"{observation.source.runtime_version}, rate step {observation.source.step_s:g} s)",
        "quantiles are interpolated inside the histogram bucket shown; the bucket is what "
        "Prometheus measured",
    ]
    for cls in observation.classes:
        cv = "n/a" if cls.interarrival_cv is None else f"{cls.interarrival_cv:.2f}"
        cancelled = "n/a" if cls.cancellation_share is None else f"{cls.cancellation_share:.1%}"
        lines += [
            f"  {cls.name}: {cls.requests} requests, {cls.mean_rps:.2f} req/s mean, "
            f"{cls.peak_rps:.2f} peak over {cls.peak_window_s:g} s, inter-arrival CV ~{cv}, "
            f"cancelled {cancelled}",
            f"    prompt tokens: {_quantiles(cls.prompt_tokens)}",
            f"    output tokens: {_quantiles(cls.output_tokens)}",
        ]
        if cls.ttft is not None:
            lines.append(f"    TTFT ms: {_quantiles(cls.ttft, 1000.0)}")
        for attained in cls.slo:
            verdict = {True: "met", False: "MISSED", None: "undecided by the buckets"}[attained.met]
            lines.append(
                f"    SLO {attained.objective} {attained.limit_ms:g} ms: "
                f"{attained.share_at_least:.2%} to {attained.share_at_most:.2%} within: {verdict}"
            )
    fleet = observation.fleet
    if fleet.kv_cache_usage_max is not None:
        lines.append(
            f"  fleet: KV cache {fleet.kv_cache_usage_mean or 0:.0%} mean, "
            f"{fleet.kv_cache_usage_max:.0%} max ({fleet.kv_cache_series}); "
            f"{fleet.preemptions} preemptions"
        )
    lines += [f"  note: {note}" for note in found.notes]
    if found.material:
        lines.append(f"DRIFT from workload {workload_ref}:")
        lines += [f"  {change.describe()}" for change in found.changes]
    else:
        lines.append(f"no drift from workload {workload_ref}")
    if found.slo_misses:
        lines.append("REVIEW: SLOs or the plan's claims missed in production:")
        lines += [f"  {change.describe()}" for change in found.slo_misses]
    return "\n".join(lines)


def observe(
    prometheus: Annotated[
        str,
        typer.Option(
            "--prometheus",
            envvar="CAPGATE_PROMETHEUS_URL",
            help="Prometheus (or Thanos, Mimir) query API base URL.",
        ),
    ],
    plan: Annotated[str, typer.Option("--plan", help="The plan whose deployment is observed.")],
    window: Annotated[
        str, typer.Option("--window", help="How far back from --end: 30m, 12h, 7d, ...")
    ] = "7d",
    end: Annotated[
        str | None, typer.Option("--end", help="The window's end (ISO 8601 with a zone); now.")
    ] = None,
    selector: Annotated[
        str,
        typer.Option(
            "--selector",
            help='PromQL label matchers of the deployment\'s series, e.g. namespace="chat",'
            'model_name="meta-llama/Llama-3.1-8B-Instruct". Empty: every vLLM series.',
        ),
    ] = "",
    class_label: Annotated[
        str | None,
        typer.Option(
            "--class-label",
            help="The label whose values are the workload's class names (needed when it has "
            "more than one class).",
        ),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="The observation's name; PLAN-observed.")
    ] = None,
    submit: Annotated[
        bool,
        typer.Option(
            "--submit",
            help="Store the observation: a material drift stales the evidence measured "
            "against the workload and the plan's next gate check denies until a new "
            "workload profile and plan are submitted.",
        ),
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds each query may take.", min=1, max=600)
    ] = 60.0,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Read the plan's vLLM series from Prometheus over a window and compare them with the
    workload version the plan pins. Exit 0 when they match, 1 when production drifted or
    missed an SLO (review), 2 on an error (Prometheus down, a timeout, no series)."""
    from cli.backend import open_backend
    from registry.observe.drift import drift, plan_claims
    from registry.observe.prometheus import Prometheus
    from registry.observe.read import Target
    from registry.observe.read import observe as read
    from registry.records.kinds import RecordKind
    from registry.records.plan import CapacityPlan
    from registry.records.provider import ProviderProfile
    from registry.records.workload import WorkloadProfile
    from registry.staleness.thresholds import load_thresholds

    span = timedelta(seconds=duration_s("window", window, maximum=MAX_WINDOW))
    finish = instant("end", end) if end is not None else datetime.now(UTC)
    backend = open_backend(server)
    plan_view = backend.get(RecordKind.plan, plan)
    plan_model = CapacityPlan.model_validate(plan_view.content)
    workload_view = backend.get(RecordKind.workload, plan_view.references["workload"])
    provider_view = backend.get(RecordKind.provider, plan_view.references["provider"])
    workload = WorkloadProfile.model_validate(workload_view.content)
    provider = ProviderProfile.model_validate(provider_view.content)
    target = Target(
        selector=selector,
        class_label=class_label,
        classes={c.name: c.slo.model_dump() for c in workload.classes},
        runtime_version=provider.runtime.version,
        peak_window_s=max(c.arrival.peak_window_s for c in workload.classes),
    )
    _say(f"querying {prometheus} over {window} for {plan_view.ref}")
    with Prometheus(prometheus, timeout_s=timeout) as client:
        observation = read(
            client,
            target,
            name=name or f"{plan_model.name}-observed",
            plan=plan_view.ref,
            workload=workload_view.ref,
            start=finish - span,
            end=finish,
            progress=_say,
        )
    found = drift(observation, workload, load_thresholds(), plan_claims(plan_model))
    submitted = None
    if submit:
        submitted = backend.submit(
            RecordKind.observation, observation.model_dump(mode="json"), source=prometheus
        )
    if json_out:
        from cli.output import emit_json

        out: dict[str, Any] = {
            "observation": observation.model_dump(mode="json"),
            "drift": [c.as_dict() for c in found.changes],
            "slo_misses": [c.as_dict() for c in found.slo_misses],
            "notes": found.notes,
            "submitted": submitted.record.ref if submitted is not None else None,
        }
        emit_json(out)
    else:
        typer.echo(_text(observation, found, workload_view.ref))
        if submitted is not None:
            state = "created" if submitted.created else "unchanged"
            typer.echo(f"submitted: {submitted.record.ref}  {submitted.record.digest}  ({state})")
    raise typer.Exit(1 if found.review else 0)


def from_observation(
    observation: Annotated[
        str, typer.Argument(help="The observation: name, name@vN or sha256:...")
    ],
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="The profile's name; the observed workload's, so it "
            "becomes that series' next version.",
        ),
    ] = None,
    output: ProfileOutputOpt = None,
    submit: ProfileSubmitOpt = False,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """A workload profile measured by an observation: its lengths (as Prometheus' buckets),
    rates, burstiness and cancellations, with everything production cannot say (SLOs,
    priorities, prefix-cache shares) kept from the workload version it was judged against.
    Writes YAML to --output or stdout; with --submit it is registered and the new version
    printed. Then submit a plan pinning it, and its load test."""
    from cli.backend import open_backend
    from registry.observe.profile import workload_from_observation
    from registry.records.kinds import RecordKind
    from registry.records.observation import Observation
    from registry.records.workload import WorkloadProfile

    backend = open_backend(server)
    view = backend.get(RecordKind.observation, observation)
    observed = Observation.model_validate(view.content)
    workload_view = backend.get(RecordKind.workload, view.references["workload"])
    profile = workload_from_observation(
        observed,
        WorkloadProfile.model_validate(workload_view.content),
        observation_ref=view.ref,
        observation_digest=view.digest,
        name=name,
    )
    from cli.profile_out import hand_over

    hand_over(
        profile.model_dump(mode="json", exclude_none=True),
        output=output,
        submit=submit,
        server=server,
        json_out=json_out,
        source=view.ref,
        wrote=f"wrote {output}: workload {profile.name} from {view.ref}",
    )
