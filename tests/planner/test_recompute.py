"""The full recomputation of the worked example, its JSON contract and its renderers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registry.errors import InvalidInput
from registry.planner import PLANNER_VERSION, recompute, render_chart, render_text
from registry.planner.result import PlanRecomputation
from registry.records.documents import read_record
from registry.records.evidence import LoadTestEvidence
from registry.records.kinds import RecordKind
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import WorkloadProfile

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chat-assistant"


def _load() -> tuple[CapacityPlan, WorkloadProfile, ProviderProfile, LoadTestEvidence]:
    plan = read_record(RecordKind.plan, EXAMPLE / "plan.yaml")
    wl = read_record(RecordKind.workload, EXAMPLE / "workload.yaml")
    prov = read_record(RecordKind.provider, EXAMPLE / "provider.yaml")
    ev = read_record(RecordKind.evidence, EXAMPLE / "evidence.yaml")
    assert isinstance(plan, CapacityPlan) and isinstance(wl, WorkloadProfile)
    assert isinstance(prov, ProviderProfile) and isinstance(ev, LoadTestEvidence)
    return plan, wl, prov, ev


@pytest.fixture(scope="module")
def result() -> PlanRecomputation:
    plan, wl, prov, _ = _load()
    return recompute(plan, wl, prov, seed=0)


def test_worked_example_meets_its_slos_with_a_zone_lost(result: PlanRecomputation) -> None:
    assert result.planner_version == PLANNER_VERSION
    assert set(result.scenarios) == {"peak", "one_worker_lost", "largest_zone_lost"}
    assert result.scenarios["largest_zone_lost"].ready_replicas == 6
    assert result.scenarios["one_worker_lost"].ready_replicas == 8
    assert result.slo_met
    assert result.memory.fits and result.memory.kv_blocks > 0
    s = result.sizing
    assert s.min_ready_replicas_at_peak is not None
    assert s.min_ready_replicas_at_peak <= 6
    assert s.plan_meets_reserve
    assert s.tensor_parallel == 1 and len(s.tp_options) >= 2
    assert result.autoscaling.scale_down_stabilization_s >= 300
    assert result.autoscaling.metric != "cpu"
    assert result.cost.per_hour_usd == pytest.approx(9 * 3.90)


def test_json_is_plain_and_stable(result: PlanRecomputation) -> None:
    data = json.loads(result.model_dump_json())
    peak = data["scenarios"]["peak"]
    for cls in ("interactive", "batch"):
        pc = peak["per_class"][cls]
        for key in ("ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms", "queue_p99_ms", "shed_rate"):
            assert isinstance(pc[key], float)
        assert isinstance(pc["slo_met"], bool) and isinstance(pc["violations"], list)
    for key in (
        "weights_gib",
        "kv_cache_gib",
        "kv_blocks",
        "kv_tokens",
        "max_concurrency_at_p99_context",
        "fits",
        "reason",
    ):
        assert key in data["memory"]
    for key in (
        "min_ready_replicas_at_peak",
        "recommended_replicas_per_zone",
        "reserve_replicas",
        "warmup_headroom_replicas",
        "tensor_parallel",
        "tp_options",
    ):
        assert key in data["sizing"]
    assert data["calibration"]["fit_error"] is None
    assert "interactive" in data["claims_check"]["per_class"]
    assert PlanRecomputation.model_validate(data) == result


def test_same_seed_same_result_and_text(result: PlanRecomputation) -> None:
    plan, wl, prov, _ = _load()
    again = recompute(plan, wl, prov, seed=0)
    assert again.model_dump() == result.model_dump()
    text = render_text(result)
    assert "largest_zone_lost" in text and "interactive" in text and "autoscaling" in text


def test_chart_is_written(result: PlanRecomputation, tmp_path: Path) -> None:
    out = tmp_path / "chart.png"
    render_chart(result, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_chart_ticks_are_plain_numbers() -> None:
    """The latency axes are logarithmic; their labels read 60, 200, 10000 (ms), never
    matplotlib's 6x10^1, and minor ticks are labelled at 2 and 5 of a decade only."""
    from registry.planner.render import minor_tick_label, tick_label

    assert [tick_label(v) for v in (0.5, 10.0, 60.0, 200.0, 10000.0)] == [
        "0.5", "10", "60", "200", "10000",
    ]  # fmt: skip
    assert [minor_tick_label(v) for v in (20.0, 30.0, 50.0, 70.0, 2000.0)] == [
        "20", "", "50", "", "2000",
    ]  # fmt: skip


def test_text_summary_names_zones_plainly(result: PlanRecomputation) -> None:
    """The sizing line names zones as "zone: count", never a dict's repr."""
    line = next(x for x in render_text(result).splitlines() if x.startswith("sizing: "))
    assert "{'" not in line and "us-east1-b: 3, us-east1-c: 3" in line


def test_too_few_replicas_fail_the_zone_scenario() -> None:
    plan, wl, prov, _ = _load()
    thin = plan.model_copy(
        update={"replicas_per_zone": {"us-east1-b": 1, "us-east1-c": 1, "us-east1-d": 1}}
    )
    res = recompute(thin, wl, prov, seed=0)
    assert not res.scenarios["largest_zone_lost"].slo_met
    assert not res.slo_met
    assert not res.sizing.plan_meets_reserve
    assert any("largest_zone_lost" in f for f in res.findings)


def test_calibration_uses_matching_evidence_and_reports_its_fit() -> None:
    plan, wl, prov, ev = _load()
    other = prov.model_copy(
        update={"accelerator": prov.accelerator.model_copy(update={"name": "A100-SXM-80GB"})}
    )
    res = recompute(
        plan, wl, prov, evidence=[ev, (ev.model_copy(update={"name": "a100-run"}), other)], seed=0
    )
    cal = res.calibration
    assert cal.fitted and cal.source_evidence == [ev.name]
    assert "a100-run" in cal.ignored_evidence
    assert cal.fit_error is not None and cal.fit_error >= 0
    assert {r.metric for r in cal.residuals} >= {"ttft_p50_ms", "tpot_p50_ms"}


def _scaled(ev: LoadTestEvidence, factor: float) -> LoadTestEvidence:
    """The same test with every latency percentile multiplied by ``factor``."""
    doc = ev.model_dump(mode="json")
    for result in doc["results"]["per_class"].values():
        for metric in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "queue_ms"):
            if result.get(metric):
                result[metric]["quantiles"] = {
                    k: v * factor for k, v in result[metric]["quantiles"].items()
                }
                if result[metric].get("mean") is not None:
                    result[metric]["mean"] *= factor
    return LoadTestEvidence.model_validate(doc)


def test_a_fit_no_gpu_could_reach_is_rejected_with_a_finding() -> None:
    """Latencies a quarter of the example's: only fractions past what an H100 reaches
    would explain them, so the fit is rejected and the defaults stay."""
    plan, wl, prov, ev = _load()
    res = recompute(plan, wl, prov, evidence=[_scaled(ev, 0.25)], seed=0)
    cal = res.calibration
    assert not cal.fitted and cal.source_evidence == []
    assert cal.rejected is not None and "physical range" in cal.rejected
    assert any(f.startswith("calibration rejected:") for f in res.findings)
    defaults = recompute(plan, wl, prov, seed=0).calibration
    assert (cal.mbu, cal.mfu) == (defaults.mbu, defaults.mfu)


def test_every_predicted_latency_carries_its_interval(result: PlanRecomputation) -> None:
    u = result.uncertainty
    assert u is not None and not u.calibrated and u.family == "H100"
    assert f"intervals on predicted latencies: {u.basis}" in result.findings
    checked = 0
    for scenario in result.scenarios.values():
        for prediction in scenario.per_class.values():
            for metric in ("ttft_p99_ms", "tpot_p50_ms", "e2e_p90_ms", "queue_p99_ms"):
                value = getattr(prediction, metric)
                if value is None:
                    continue
                low, high = prediction.interval_ms[metric]
                assert low <= value <= high
                assert high == pytest.approx(max(value, value / (1 + u.error_low)), abs=1e-3)
                checked += 1
    assert checked >= 12
    assert "interval: TTFT " in render_text(result)


def _on_runtime(prov: ProviderProfile, version: str) -> ProviderProfile:
    return prov.model_copy(update={"runtime": prov.runtime.model_copy(update={"version": version})})


def test_success_a_vllm_that_schedules_ahead_hides_the_cpu_time_per_step(
    result: PlanRecomputation,
) -> None:
    # The worked example (vLLM 0.10.2, synchronous) against the same plan on vLLM 0.14.0,
    # whose default is async scheduling, at up to 128 sequences a step: the GPU's step is the
    # longer at every batch, so the CPU's time per step is hidden and tokens come faster.
    plan, wl, prov, _ = _load()
    narrow = plan.model_copy(
        update={"serving": plan.serving.model_copy(update={"max_num_seqs": 128})}
    )
    sync = recompute(narrow, wl, prov, seed=0)
    ahead = recompute(narrow, wl, _on_runtime(prov, "0.14.0"), seed=0)
    assert not any("async scheduling" in f for f in sync.findings)
    (note,) = [f for f in ahead.findings if "async scheduling" in f]
    assert note.startswith("async scheduling on: vLLM 0.14.0")
    for cls in ("interactive", "batch"):
        fast = ahead.scenarios["peak"].per_class[cls].tpot_p99_ms
        slow = sync.scenarios["peak"].per_class[cls].tpot_p99_ms
        assert fast is not None and slow is not None and fast < slow


def test_edge_where_the_cpu_can_outlast_the_gpu_the_finding_says_from_which_batch(
    result: PlanRecomputation,
) -> None:
    # At the example's 256 sequences a step, the 8B's decode with no context is CPU bound
    # from 143 sequences on: such steps take the CPU's time (never less than the GPU's
    # alone), and the finding names the batch; the example's tokens still come faster than
    # on its synchronous vLLM 0.10.2.
    plan, wl, prov, _ = _load()
    ahead = recompute(plan, wl, _on_runtime(prov, "0.14.0"), seed=0)
    (note,) = [f for f in ahead.findings if "async scheduling" in f]
    assert "from 143 sequences" in note and "the CPU's time sets the step" in note
    for cls in ("interactive", "batch"):
        fast = ahead.scenarios["peak"].per_class[cls].tpot_p50_ms
        slow = result.scenarios["peak"].per_class[cls].tpot_p50_ms
        assert fast is not None and slow is not None and fast < slow


def _on_b200_fp8(prov: ProviderProfile, args: dict[str, object]) -> ProviderProfile:
    """The worked example's 8B as NVIDIA's ModelOpt fp8 checkpoint (static activation
    scales) with an fp8 KV cache on a B200, with the runtime args given."""
    data = prov.model_dump(mode="json")
    data["model"].update(weights_dtype="fp8", kv_dtype="fp8", quantization="modelopt")
    data["accelerator"].update(
        name="B200-HGX-180GB",
        memory_gib=180,
        memory_bandwidth_gb_s=7700,
        dense_tflops={"bf16": 2250, "fp8": 4500},
        interconnect={"kind": "nvlink", "bandwidth_gb_s": 1800},
    )
    data["runtime"]["args"] = args
    return ProviderProfile.model_validate(data)


def test_success_the_findings_name_the_compilation_fusions_priced_and_not() -> None:
    # InferenceMAX's B200 compilation-config at the example's TP1: the attention fusion takes
    # the O-projection's fp8 quantisation out of every layer (priced from the B200 card); the
    # all-reduce fusion has nothing to fuse at TP1 and says so; TPOT falls.
    plan, wl, prov, _ = _load()
    config = {
        "pass_config": {"enable_fi_allreduce_fusion": True, "enable_attn_fusion": True},
        "custom_ops": ["+quant_fp8", "+rms_norm"],
    }
    plain = recompute(plan, wl, _on_b200_fp8(prov, {}), seed=0)
    fused = recompute(plan, wl, _on_b200_fp8(prov, {"compilation-config": config}), seed=0)
    assert not any("compilation fusion" in f for f in plain.findings)
    notes = [f for f in fused.findings if f.startswith("compilation fusion")]
    assert any("turns on enable_fi_allreduce_fusion, enable_attn_fusion" in f for f in notes)
    assert any(f.startswith("compilation fusion priced: attention") for f in notes)
    assert any("not priced" in f and "TP1" in f for f in notes)
    fast = fused.scenarios["peak"].per_class["interactive"].tpot_p50_ms
    slow = plain.scenarios["peak"].per_class["interactive"].tpot_p50_ms
    assert fast is not None and slow is not None and fast < slow


def test_fail_a_compilation_config_that_is_not_json_is_refused_naming_the_field() -> None:
    plan, wl, prov, _ = _load()
    bad = _on_b200_fp8(prov, {"compilation-config": "{pass_config: on"})
    with pytest.raises(InvalidInput) as caught:
        recompute(plan, wl, bad, seed=0)
    (problem,) = caught.value.problems
    assert problem.loc == "runtime.args.compilation-config"
    assert problem.message.startswith("is not JSON")


def test_success_static_scales_are_priced_and_said_with_or_without_fusions() -> None:
    # The same B200 provider with the ModelOpt checkpoint (static scales) against a
    # checkpoint stating no quantisation method (scales computed per call, as the card's
    # GEMMs were timed): the first saves the card's scale computation in every layer and
    # says so; the second says nothing and is slower.
    plan, wl, prov, _ = _load()
    static = recompute(plan, wl, _on_b200_fp8(prov, {}), seed=0)
    data = _on_b200_fp8(prov, {}).model_dump(mode="json")
    data["model"]["quantization"] = None
    dynamic = recompute(plan, wl, ProviderProfile.model_validate(data), seed=0)
    said = [f for f in static.findings if f.startswith("static fp8 activation scales")]
    assert len(said) == 1 and "us of scale computation per step leave it" in said[0]
    assert not any(f.startswith("static fp8 activation scales") for f in dynamic.findings)
    fast = static.scenarios["peak"].per_class["interactive"].tpot_p50_ms
    slow = dynamic.scenarios["peak"].per_class["interactive"].tpot_p50_ms
    assert fast is not None and slow is not None and fast < slow
