"""A readable summary of a recomputation, and a chart of latency against load."""

from __future__ import annotations

from pathlib import Path

from registry.planner.result import PlanRecomputation


def _f(v: float | None, unit: str = "") -> str:
    return "-" if v is None else f"{v:,.0f}{unit}"


def _zones(per_zone: dict[str, int]) -> str:
    """us-east1-b: 3, us-east1-c: 3 (never a Python dict's repr)."""
    return ", ".join(f"{zone}: {count}" for zone, count in per_zone.items()) or "none"


def render_text(result: PlanRecomputation) -> str:
    r = result
    m = r.memory
    s = r.sizing
    failed = ", ".join(n for n, sc in r.scenarios.items() if not sc.slo_met)
    verdict = (
        "verdict: SLOs met at peak, with one worker lost and with the largest zone lost"
        if r.slo_met
        else f"verdict: SLOs NOT met in: {failed}"
    )
    lines = [
        f"{r.planner_version} - plan {r.plan} (workload {r.workload}, provider {r.provider}), "
        f"seed {r.seed}",
        verdict,
        "",
        f"model {r.model.name}: {r.model.total_params_b:g}B params "
        f"({r.model.active_params_b:g}B active), {r.model.layers} layers, "
        f"{r.model.kv_heads} KV heads x {r.model.head_dim}",
        f"memory per GPU (TP={m.tensor_parallel}): {m.usable_gib:.1f} of {m.total_gib:g} GiB "
        "usable; "
        f"weights {m.weights_gib:.1f}, activations {m.activation_peak_gib:.1f}, runtime "
        f"{m.runtime_overhead_gib:.1f}, KV {m.kv_cache_gib:.1f} GiB = {m.kv_blocks} blocks "
        f"x {m.block_size} = {m.kv_tokens:,} tokens",
        f"  {m.reason}",
        f"step time: decode {r.step_time.decode_batch1_ms:.1f} ms at batch 1, "
        f"{r.step_time.decode_batch_full_ms:.1f} ms at batch {r.step_time.decode_batch_full}; "
        f"2k-token prefill {r.step_time.prefill_2k_ms:.0f} ms",
        "",
        f"sizing: {s.min_ready_replicas_at_peak} ready replica(s) meet every p99 SLO at peak; "
        f"recommended {_zones(s.recommended_replicas_per_zone)} (reserve {s.reserve_replicas}); "
        "the plan "
        f"has {s.plan_total_replicas} ({'meets' if s.plan_meets_reserve else 'does NOT meet'} "
        "the one-worker and one-zone reserve)",
        f"tensor parallelism: {s.tp_reason}",
    ]
    lines += [f"  note: {n}" for n in s.notes]
    lines.append("")
    header = (
        f"  {'scenario/class':<28}{'TTFT p99':>10}{'TPOT p99':>10}{'e2e p99':>10}"
        f"{'queue p99':>11}{'shed':>8}  SLO"
    )
    for sc in r.scenarios.values():
        lines.append(
            f"scenario {sc.name}: {sc.ready_replicas} ready, {sc.offered_rps:g} req/s offered, "
            f"{sc.sustained_rps:.1f} sustained, {sc.goodput_rps:.1f} completed within the SLOs, "
            f"{sc.preemptions} preemptions, KV peak {sc.kv_usage_peak:.0%}, "
            f"retry amplification {sc.retry_amplification:.2f}"
        )
        lines.append(header)
        for name, p in sc.per_class.items():
            lines.append(
                f"  {name:<28}{_f(p.ttft_p99_ms, ' ms'):>10}{_f(p.tpot_p99_ms, ' ms'):>10}"
                f"{_f(p.e2e_p99_ms, ' ms'):>10}{_f(p.queue_p99_ms, ' ms'):>11}"
                f"{p.shed_rate:>8.2%}  {'ok' if p.slo_met else 'MISSED'}"
            )
            lines += [f"      {v}" for v in p.violations]
            if sc.name == "peak" and p.interval_ms:
                lines.append(f"      interval: {_intervals(p.interval_ms)}")
    a = r.autoscaling
    lines += [
        "",
        f"autoscaling: {a.metric} target {a.target:g} (or {a.alternative_metric} "
        f"{a.alternative_target:g}), min {a.min_replicas}, max {a.max_replicas}, scale-down "
        f"stabilisation {a.scale_down_stabilization_s:g} s",
        f"cost: {r.cost.gpus} GPUs, ${_f(r.cost.per_hour_usd)}/h, "
        f"${r.cost.per_million_output_tokens_usd or 0:.3f} per million output tokens",
    ]
    c = r.calibration
    front = "" if c.frontend_ms is None else f", API server {c.frontend_ms:g} ms per request"
    if c.fitted:
        lines.append(
            f"calibration: MBU {c.mbu:.2f}, MFU {c.mfu:.2f}{front} fitted to "
            f"{', '.join(c.source_evidence)} (RMS log error {c.fit_error}; "
            f"{'the whole fit' if c.shrinkage == 1.0 else f'{c.shrinkage:g} of the fit'} "
            f"used, held out {c.held_out_error}, the defaults' {c.default_error})"
        )
    else:
        why = "fit rejected, see findings" if c.rejected else "no usable evidence"
        lines.append(f"calibration: defaults MBU {c.mbu:.2f}, MFU {c.mfu:.2f}{front} ({why})")
    for name, why in c.ignored_evidence.items():
        lines.append(f"  evidence {name} not used: {why}")
    if r.findings:
        lines.append("")
        lines.append("findings:")
        lines += [f"  - {f}" for f in r.findings]
    return "\n".join(lines) + "\n"


def _intervals(intervals: dict[str, list[float]]) -> str:
    """The p99 intervals of one class, as the table's columns name them."""
    labels = {"ttft_p99_ms": "TTFT", "tpot_p99_ms": "TPOT", "e2e_p99_ms": "e2e"}
    return ", ".join(
        f"{label} {_f(intervals[key][0])}-{_f(intervals[key][1], ' ms')}"
        for key, label in labels.items()
        if key in intervals
    )


def tick_label(value: float, _position: object = None) -> str:
    """A log axis's tick as a plain number: 60, 200, 10000 (not 6x10^1)."""
    return f"{value:g}" if value < 1e6 else f"{value:,.0f}"


def minor_tick_label(value: float, _position: object = None) -> str:
    """Minor ticks labelled at 2 and 5 of each decade only, so labels never collide."""
    return tick_label(value) if f"{value:.0e}"[0] in "25" else ""


def render_chart(result: PlanRecomputation, path: str | Path) -> None:
    """Draw p99 TTFT and TPOT against offered load, with SLO lines and the operating point."""
    # A bare Figure draws with the Agg canvas savefig attaches: pyplot (its backend
    # machinery and global figure registry) is not imported, a tenth of a second of
    # `capgate plan size --chart`, and the PNG is the same byte for byte.
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    plain, plain_minor = FuncFormatter(tick_label), FuncFormatter(minor_tick_label)
    curve = result.load_curve
    fig = Figure(figsize=(11, 4.2))
    axes = fig.subplots(1, 2)
    peak = result.scenarios.get("peak")
    for ax, key, title in (
        (axes[0], "per_class_ttft_p99_ms", "TTFT p99 (ms)"),
        (axes[1], "per_class_tpot_p99_ms", "TPOT p99 (ms)"),
    ):
        classes = sorted({c for p in curve for c in getattr(p, key)})
        for i, cname in enumerate(classes):
            xs = [p.offered_rps for p in curve if getattr(p, key).get(cname) is not None]
            ys = [getattr(p, key)[cname] for p in curve if getattr(p, key).get(cname) is not None]
            line = ax.plot(xs, ys, marker="o", label=cname, color=f"C{i}")[0]
            slo = _slo(result, cname, key)
            if slo is not None:
                ax.axhline(
                    slo, color=line.get_color(), linestyle="--", linewidth=1, label=f"{cname} SLO"
                )
            if peak is not None and cname in peak.per_class:
                value = getattr(peak.per_class[cname], key[len("per_class_") :])
                if value is not None:
                    ax.plot(
                        [peak.offered_rps],
                        [value],
                        marker="*",
                        markersize=14,
                        color=line.get_color(),
                    )
        if peak is not None:
            ax.axvline(peak.offered_rps, color="grey", linewidth=0.8)
        ax.set_yscale("log")
        # Plain numbers on the log axis (60, 200, 1000 ms), not matplotlib's 6x10^1.
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain_minor)
        ax.set_ylabel("ms, log scale")
        ax.set_xlabel(f"offered load (req/s), {curve[0].ready_replicas if curve else '?'} replicas")
        ax.set_title(title)
        ax.legend(fontsize=7)
    fig.suptitle(f"{result.plan}: latency against load (star = peak operating point)")
    fig.tight_layout()
    fig.savefig(str(path), dpi=110)


def _slo(result: PlanRecomputation, cname: str, key: str) -> float | None:
    return result.slos.get(cname, {}).get(key[len("per_class_") :])
