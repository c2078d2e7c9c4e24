"""Write the gate's scenario corpus: realistic inputs derived from compliant.json.

Each case changes the compliant chat-assistant input the way a real plan goes wrong and
should violate exactly the policies listed for it in expected.json (most: exactly one).
The JSON files are committed; rerun after changing a case:

    .venv/bin/python tests/gate/inputs/make_corpus.py
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
Doc = dict[str, Any]


def _evidence(doc: Doc) -> Doc:
    evidence: Doc = doc["evidence"][0]
    return evidence


def tail_slo__evidence_missed_at_peak(doc: Doc) -> list[str]:
    """The planner is optimistic: at peak, the load test shows interactive TTFT and queue late."""
    per_class = _evidence(doc)["per_class"]["interactive"]
    per_class["ttft_p99_ms"] = 2350
    per_class["queue_p99_ms"] = 2600
    return ["tail_slo/evidence_slo_missed"]


def tail_slo__no_evidence_at_peak(doc: Doc) -> list[str]:
    """The only fresh load test ran at 4 requests/s per replica; the plan's peak is 5.67."""
    _evidence(doc)["offered_rps_per_replica"] = 4.0
    return ["tail_slo/no_evidence_at_peak"]


def tail_slo__evidence_below_zone_lost_rate(doc: Doc) -> list[str]:
    """The test ran at 7 requests/s per replica: above the 5.67 of all 9 replicas, below the
    8.5 each of the 6 survivors carries once the largest zone is lost."""
    _evidence(doc)["offered_rps_per_replica"] = 7.0
    return ["tail_slo/no_evidence_at_peak"]


def tail_slo__failed_requests(doc: Doc) -> list[str]:
    """7 % of the load test's requests failed: the survivors' latencies look fine."""
    evidence = _evidence(doc)
    evidence["completed"], evidence["failed"], evidence["error_rate"] = 5172, 389, 0.069951
    evidence["per_class"]["interactive"]["error_rate"] = 0.082
    return ["tail_slo/evidence_errors", "tail_slo/no_evidence_at_peak"]


def tail_slo__declared_evidence_only(doc: Doc) -> list[str]:
    """The only load test was typed in by hand: no raw file was read, so it proves nothing."""
    _evidence(doc)["entry"] = "declared"
    return [
        "tail_slo/no_evidence_at_peak",
        "load_test_coverage/cancellation_not_exercised",
        "load_test_coverage/cancellation_rate_not_tested",
        "load_test_coverage/priorities_not_mixed",
    ]


def tail_slo__client_fell_behind(doc: Doc) -> list[str]:
    """The load generator fell behind: it achieved 4.1 requests/s per replica, under the peak."""
    evidence = _evidence(doc)
    evidence["client_behind"] = True
    evidence["offered_rps_per_replica"] = 4.1
    return ["tail_slo/no_evidence_at_peak"]


def tail_slo__claims_disagree(doc: Doc) -> list[str]:
    """The plan claims a 600 ms interactive TTFT the recomputation puts at 1100 ms."""
    doc["plan"]["claims"]["per_class"]["interactive"]["ttft_p99_ms"] = 600
    doc["recomputation"]["claims_check"]["interactive"]["ttft_p99_ms"] = {
        "claimed": 600,
        "predicted": 1100,
        "relative_error": 0.45454545454545453,
    }
    return ["tail_slo/claims_disagree"]


def tail_slo__claims_disagree_after_recalibration(doc: Doc) -> list[str]:
    """The plan did not change; a newer load test recalibrated the planner, whose interactive
    TTFT prediction rose from 300 to 1100 ms: the claim of 600 ms is now optimistic."""
    doc["plan"]["claims"]["per_class"]["interactive"]["ttft_p99_ms"] = 600
    doc["recomputation"]["claims_check"]["interactive"]["ttft_p99_ms"] = {
        "claimed": 600,
        "predicted": 1100,
        "relative_error": 0.45454545454545453,
    }
    recomputation = doc["recomputation"]
    recomputation["calibration_changed"] = {
        "decision": "5a0c3f8e-1d2b-4c7a-9e61-0f2b8d4a7c11",
        "previous": dict(recomputation["calibration"], mbu=0.75, mfu=0.6),
    }
    return ["tail_slo/claims_disagree"]


def tail_slo__recomputation_missed(doc: Doc) -> list[str]:
    """Batch's predicted p99 end-to-end at peak is over its 240 s SLO."""
    batch = doc["recomputation"]["scenarios"]["peak"]["per_class"]["batch"]
    batch["e2e_p99_ms"] = 251000.0
    batch["slo_met"] = False
    return ["tail_slo/recomputation_slo_missed"]


def reserve_explicit__zone_reserve_missing(doc: Doc) -> list[str]:
    """The plan declares a worker reserve but no zone reserve."""
    doc["plan"]["reserve"]["zone_failures"] = 0
    return ["reserve_explicit/zone_reserve_missing"]


def reserve_explicit__zone_loss_misses_slo(doc: Doc) -> list[str]:
    """With the largest zone lost, interactive TTFT goes over SLO in the recomputation."""
    scenario = doc["recomputation"]["scenarios"]["largest_zone_lost"]
    scenario["slo_met"] = False
    interactive = scenario["per_class"]["interactive"]
    interactive["ttft_p99_ms"] = 1840.0
    interactive["slo_met"] = False
    return ["reserve_explicit/scenario_slo_missed"]


def drain_configured__short_grace_period(doc: Doc) -> list[str]:
    """A 30 s grace period against 88 s p99 streams (95 s longest allowed stream)."""
    drain = doc["plan"]["drain"]
    drain["termination_grace_period_s"] = 30
    drain["pre_stop"] = {"sleep_s": 5, "wait_for_idle": True, "timeout_s": 20}
    return ["drain_configured/grace_period_too_short", "drain_configured/pre_stop_gives_up_early"]


def drain_configured__no_drain_hooks(doc: Doc) -> list[str]:
    """Default-ish Kubernetes: no pre-stop drain, readiness stays on, no PDB, 60 s scale-down."""
    drain = doc["plan"]["drain"]
    drain["pre_stop"] = None
    drain["readiness_off_on_drain"] = False
    drain["disruption_budget"] = None
    doc["plan"]["autoscaling"]["scale_down_stabilization_s"] = 60
    return [
        "drain_configured/disruption_budget_missing",
        "drain_configured/pre_stop_not_draining",
        "drain_configured/readiness_not_off_on_drain",
        "drain_configured/scale_down_faster_than_drain",
    ]


def drain_configured__budget_lets_all_go(doc: Doc) -> list[str]:
    """The disruption budget lets all 9 replicas be evicted at once during a node drain."""
    doc["plan"]["drain"]["disruption_budget"]["max_unavailable"] = 9
    return ["drain_configured/disruption_budget_too_loose"]


def drain_configured__budget_spends_zone_reserve(doc: Doc) -> list[str]:
    """max_unavailable 3 keeps 6 of 9 ready with every zone up (4 needed at peak), but a
    node drain while the largest zone (3) is lost leaves 3: the budget spends the reserve."""
    doc["plan"]["drain"]["disruption_budget"]["max_unavailable"] = 3
    return ["drain_configured/disruption_budget_spends_reserve"]


def drain_configured__pre_stop_gives_up_early(doc: Doc) -> list[str]:
    """The pre-stop hook stops waiting after 60 s; the in-flight tail is 95 s."""
    doc["plan"]["drain"]["pre_stop"]["timeout_s"] = 60
    return ["drain_configured/pre_stop_gives_up_early"]


def admission_configured__autoscaling_on_cpu(doc: Doc) -> list[str]:
    """The autoscaler follows CPU utilisation, blind to the GPU server's queue."""
    doc["plan"]["autoscaling"]["metric"] = "cpu"
    return ["admission_configured/autoscaling_blind_metric"]


def warm_replica_exclusion__warming_counted(doc: Doc) -> list[str]:
    """Replicas take 6 minutes to warm; the plan counts them as capacity and floors at 6."""
    doc["provider"]["warmup_s"] = 360.0
    doc["plan"]["warmup"]["count_warming_as_capacity"] = True
    doc["plan"]["autoscaling"]["min_replicas"] = 6
    return [
        "warm_replica_exclusion/min_replicas_below_ready_floor",
        "warm_replica_exclusion/warming_counted_as_capacity",
    ]


def warm_replica_exclusion__startup_probe_short(doc: Doc) -> list[str]:
    """The startup probe gives up after 120 s; the model takes 240 s to load."""
    doc["plan"]["warmup"]["startup_probe_budget_s"] = 120
    return ["warm_replica_exclusion/startup_probe_too_short"]


def distributions_measured__uniform_prompts(doc: Doc) -> list[str]:
    """The load test sent 512-token prompts and fixed 256-token outputs (cv ~ 0)."""
    _evidence(doc)["findings"]["prompt_tokens_cv"] = 0.0
    _evidence(doc)["findings"]["output_tokens_cv"] = 0.01
    return ["distributions_measured/uniform_load_test"]


def distributions_measured__assumed_batch(doc: Doc) -> list[str]:
    """Batch's concurrency and arrivals are assumed numbers, without a trace."""
    batch = doc["workload"]["classes"]["batch"]
    batch["measured"]["concurrency"] = False
    batch["measured"]["arrival"] = False
    return ["distributions_measured/distribution_not_measured"]


def load_test_coverage__no_cancellation(doc: Doc) -> list[str]:
    """The load test never cancelled a request (the workload cancels 4% of interactive)."""
    evidence = _evidence(doc)
    evidence["findings"]["cancellation_exercised"] = False
    for result in evidence["per_class"].values():
        result["cancellation_rate"] = 0.0
    return [
        "load_test_coverage/cancellation_not_exercised",
        "load_test_coverage/cancellation_rate_not_tested",
    ]


def load_test_coverage__cancellation_rate_too_low(doc: Doc) -> list[str]:
    """The test cancelled 0.5 % of interactive requests; the clients cancel 4 % (band 2-8 %)."""
    _evidence(doc)["per_class"]["interactive"]["cancellation_rate"] = 0.005
    return ["load_test_coverage/cancellation_rate_not_tested"]


def load_test_coverage__cancellation_rate_too_high(doc: Doc) -> list[str]:
    """The test cancelled 30 % of batch requests, freeing capacity; the clients cancel 1 %."""
    _evidence(doc)["per_class"]["batch"]["cancellation_rate"] = 0.3
    return ["load_test_coverage/cancellation_rate_not_tested"]


def load_test_coverage__single_priority(doc: Doc) -> list[str]:
    """The load test offered one priority class although the workload has two."""
    _evidence(doc)["findings"]["priority_classes"] = 1
    return ["load_test_coverage/priorities_not_mixed"]


def admission_configured__queue_deadlines_missing(doc: Doc) -> list[str]:
    """No queue deadline on either class: requests wait until they time out client-side."""
    for admission in doc["plan"]["admission"]["classes"].values():
        del admission["queue_deadline_ms"]
    return ["admission_configured/queue_deadline_missing"]


def admission_configured__unbounded_no_shedding(doc: Doc) -> list[str]:
    """Batch queues without bound and never sheds; interactive's deadline outlives its SLO."""
    batch = doc["plan"]["admission"]["classes"]["batch"]
    batch["max_queue_depth"] = None
    batch["shed_when_full"] = False
    doc["plan"]["admission"]["classes"]["interactive"]["queue_deadline_ms"] = 5000
    return [
        "admission_configured/queue_deadline_exceeds_slo",
        "admission_configured/queue_unbounded",
        "admission_configured/shedding_disabled",
    ]


def retries_bounded__unbounded(doc: Doc) -> list[str]:
    """Clients retry immediately, without a cap, jitter or budget."""
    doc["plan"]["admission"]["retry"] = {
        "max_attempts": None,
        "backoff_initial_ms": 0,
        "backoff_max_ms": 0,
        "jitter": False,
        "retry_budget_ratio": None,
    }
    return [
        "retries_bounded/attempts_unbounded",
        "retries_bounded/backoff_missing",
        "retries_bounded/jitter_missing",
        "retries_bounded/retry_budget_unbounded",
    ]


def _stale_copy(doc: Doc) -> Doc:
    """The example's test as it was, measured against the previous workload version."""
    stale = copy.deepcopy(_evidence(doc))
    stale.update(
        {
            "ref": "chat-assistant-h100-mixed-2026-08@v1",
            "digest": "sha256:" + "5" * 64,
            "fresh": False,
            "stale_reasons": [
                "workload chat-assistant@v1 supersedes chat-assistant@v0: "
                "interactive prompt tokens p99 moved +38%"
            ],
            "age_days": 97.0,
            "measured_against": {
                "workload": "chat-assistant@v0",
                "provider": "llama31-8b-h100-vllm@v1",
                "plan": None,
            },
        }
    )
    return stale


def compliant__stale_beside_fresh(doc: Doc) -> list[str]:
    """Beside the fresh test, an older one measured against the previous workload version:
    it supports nothing and blocks nothing (a note)."""
    doc["evidence"].append(_stale_copy(doc))
    return ["note:evidence_fresh/evidence_stale", "note:evidence_fresh/evidence_too_old"]


def evidence_fresh__only_stale_evidence(doc: Doc) -> list[str]:
    """The only test was measured against the previous workload version, long ago."""
    doc["evidence"] = [_stale_copy(doc)]
    return [
        "evidence_fresh/evidence_stale",
        "evidence_fresh/evidence_too_old",
        "load_test_coverage/cancellation_not_exercised",
        "load_test_coverage/cancellation_rate_not_tested",
        "load_test_coverage/priorities_not_mixed",
        "tail_slo/no_evidence_at_peak",
    ]


def partitioning_justified__tp4_over_pcie(doc: Doc) -> list[str]:
    """TP=4 over PCIe for an 8B model that fits one GPU, for a predicted 4% TPOT gain."""
    provider = doc["provider"]
    provider["ref"] = "llama31-8b-l40s-vllm@v1"
    provider["accelerator"] = "L40S-48GB"
    provider["accelerator_memory_gib"] = 48.0
    provider["interconnect"] = "pcie"
    provider["interconnect_bandwidth_gb_s"] = 64.0
    plan = doc["plan"]
    plan["tensor_parallel"] = 4
    plan["gpus_per_replica"] = 4
    plan["claims"]["partitioning_rationale"] = (
        "TP=4 spreads each request over four GPUs to cut latency."
    )
    evidence = _evidence(doc)
    evidence["measured_against"]["provider"] = provider["ref"]
    evidence["tp_degree"] = 4
    evidence["interconnect"] = "pcie"
    doc["recomputation"].update(
        tp_latency_gain=0.04,
        tp_tpot_gain=0.04,
        tp_ttft_gain=0.12,
        tp_equal_gpus=16,
        tp_gpus_at_peak=16,
        single_gpu_gpus_at_peak=4,
        tp_gpu_saving=-12,
        fits_single_gpu_with_useful_kv=True,
        single_gpu_concurrency_needed=16.5,
    )
    return [
        "partitioning_justified/tp_gain_unproven",
        "partitioning_justified/tp_on_slow_interconnect",
    ]


def several__sections_missing(doc: Doc) -> list[str]:
    """A bare plan: no reserve, drain, warm-up handling or autoscaling sections at all."""
    plan = doc["plan"]
    plan["reserve"] = None
    plan["drain"] = None
    plan["warmup"] = None
    plan["autoscaling"] = None
    return [
        "drain_configured/drain_missing",
        "reserve_explicit/reserve_missing",
        "warm_replica_exclusion/warmup_missing",
    ]


def compliant__tp2_nvlink_with_gain(doc: Doc) -> list[str]:
    """TP=2 over NVLink with a predicted 31% TPOT gain: partitioning justified, allowed."""
    plan = doc["plan"]
    plan["tensor_parallel"] = 2
    plan["gpus_per_replica"] = 2
    _evidence(doc)["tp_degree"] = 2
    doc["recomputation"].update(
        tp_latency_gain=0.31,
        tp_tpot_gain=0.31,
        tp_ttft_gain=0.36,
        tp_equal_gpus=8,
        tp_gpus_at_peak=8,
        single_gpu_gpus_at_peak=4,
        tp_gpu_saving=-4,
        fits_single_gpu_with_useful_kv=True,
    )
    return []


def compliant__tp2_70b_fp8_without_useful_kv_at_tp1(doc: Doc) -> list[str]:
    """Llama 70B FP8 on H100 at TP=2, the standard layout: at TP=1 the weights fit one GPU
    but its KV cache holds 3 requests at the p99 context where a replica has 24 in flight.
    Each fleet sized to just meet the SLO shows no latency gain, and none is needed."""
    doc["provider"]["model"] = "llama-3.1-70b-instruct-fp8"
    plan = doc["plan"]
    plan["tensor_parallel"] = 2
    plan["gpus_per_replica"] = 2
    _evidence(doc)["tp_degree"] = 2
    doc["recomputation"].update(
        fits_single_gpu=True,
        fits_single_gpu_with_useful_kv=False,
        single_gpu_kv_concurrency=3,
        single_gpu_concurrency_needed=23.6,
        tp_latency_gain=0.0,
        tp_tpot_gain=0.0,
        tp_ttft_gain=0.0,
    )
    return []


def compliant__no_autoscaling(doc: Doc) -> list[str]:
    """A fixed-size plan of 9 replicas without an autoscaler: the floor is the plan's size."""
    doc["plan"]["autoscaling"] = None
    return []


def compliant__conservative_claims(doc: Doc) -> list[str]:
    """The plan claims an interactive TTFT twice the prediction: conservative, a note only."""
    doc["plan"]["claims"]["per_class"]["interactive"]["ttft_p99_ms"] = 2200
    doc["recomputation"]["claims_check"]["interactive"]["ttft_p99_ms"] = {
        "claimed": 2200,
        "predicted": 1100,
        "relative_error": 1.0,
    }
    return ["note:tail_slo/claims_pessimistic"]


def compliant__extra_microbenchmark(doc: Doc) -> list[str]:
    """A fixed-length microbenchmark beside the realistic test: more evidence never hurts."""
    micro = copy.deepcopy(_evidence(doc))
    micro["ref"] = "chat-assistant-fixed-length-micro@v1"
    micro["digest"] = "sha256:" + "5" * 64
    micro["offered_rps_per_replica"] = 9.6
    micro["arrival_cv"] = 0.0  # evenly spaced: it shows no burst, and supports nothing
    micro["per_class"]["interactive"]["prompt_tokens_p99"] = 512
    micro["findings"].update(
        prompt_tokens_cv=0.0, output_tokens_cv=0.0, cancellation_exercised=False
    )
    micro["findings"]["priority_classes"] = 1
    micro["classes"] = ["interactive"]
    micro["per_class"] = {"interactive": micro["per_class"]["interactive"]}
    doc["evidence"].append(micro)
    return [
        "note:tail_slo/evidence_not_representative",
    ]


def tail_slo__constant_rate_for_bursty_workload(doc: Doc) -> list[str]:
    """The only test sent evenly spaced requests; the workload's classes burst (CV 1.6, 2.4)."""
    _evidence(doc)["arrival_cv"] = 0.0
    return ["tail_slo/evidence_not_representative", "tail_slo/no_evidence_at_peak"]


def tail_slo__short_prompts_only(doc: Doc) -> list[str]:
    """The test's interactive prompts reach a p99 of 1200 tokens; the workload's reach 6100."""
    _evidence(doc)["per_class"]["interactive"]["prompt_tokens_p99"] = 1200.0
    return ["tail_slo/evidence_not_representative", "tail_slo/no_evidence_at_peak"]


def tail_slo__prefix_cache_flatters(doc: Doc) -> list[str]:
    """The server's prefix cache served 71 % of the test's prompt tokens (a replayed prompt
    set); production's mix hits it for 21 %: the test skipped most of its prefill."""
    _evidence(doc)["prefix_cache_hit_rate"] = 0.71
    return ["tail_slo/evidence_not_representative", "tail_slo/no_evidence_at_peak"]


def compliant__prefix_cache_rate_unknown(doc: Doc) -> list[str]:
    """The test states no prefix-cache hit rate (a client file alone): allowed, one note."""
    _evidence(doc)["prefix_cache_hit_rate"] = None
    return ["note:tail_slo/prefix_cache_hit_rate_unknown"]


def compliant__prefix_cache_share_high(doc: Doc) -> list[str]:
    """Production hits the prefix cache for 90 %: no test can exceed that by the allowed
    excess, so an unknown hit rate hides nothing and is not noted."""
    evidence = _evidence(doc)
    evidence["prefix_cache_hit_rate"] = None
    evidence["workload_prefix_cache_share"] = 0.9
    return []


def tail_slo__max_model_len_below_p99_context(doc: Doc) -> list[str]:
    """max_model_len 4096: 6 % of interactive and 24 % of batch requests are longer."""
    doc["plan"]["serving"]["max_model_len"] = 4096
    fit = doc["recomputation"]["context_fit"]
    fit["interactive"].update(max_model_len=4096, rejected_share=0.0594)
    fit["batch"].update(max_model_len=4096, rejected_share=0.2431)
    return ["tail_slo/requests_exceed_max_model_len"]


def tail_slo__no_claims(doc: Doc) -> list[str]:
    """The plan claims no latencies: with claims_required false (the shipped data) that is
    one note naming the six missing claims, not a deny; the gate judges the SLOs itself."""
    doc["plan"]["claims"]["per_class"] = {}
    doc["recomputation"]["claims_check"] = {}
    return ["note:tail_slo/claims_missing"]


def _smaller_kv_cache(doc: Doc, utilization: float, kv_tokens: int, at_p99_context: int) -> Doc:
    """The example's replica (80 GiB, 16.2 GiB of weights, activations and runtime) at a
    lower gpu_memory_utilization: Llama-3.1-8B's KV takes 128 KiB a token (8192 a GiB)."""
    doc["plan"]["serving"]["gpu_memory_utilization"] = utilization
    memory: Doc = doc["recomputation"]["memory"]
    memory.update(
        gpu_memory_utilization=utilization,
        usable_gib=round(80 * utilization, 1),
        kv_cache_gib=round(kv_tokens / 8192, 3),
        kv_tokens=kv_tokens,
        kv_concurrency_at_p99_context=at_p99_context,
    )
    return memory


def memory_fit__kv_below_peak_concurrency(doc: Doc) -> list[str]:
    """gpu_memory_utilization 0.3 leaves 7.8 GiB of KV, 63984 tokens: the 16.9 requests in
    service at peak fit (46147 tokens), not the 32 of a zone loss (79404) nor the
    workload's p99 concurrency (100072 with every replica ready)."""
    _smaller_kv_cache(doc, 0.3, 63984, 7)
    return [
        "memory_fit/kv_cache_below_peak_concurrency",
        "memory_fit/kv_cache_below_p99_concurrency",
    ]


def memory_fit__kv_short_after_zone_loss(doc: Doc) -> list[str]:
    """The KV cache (70000 tokens) holds the requests in service with all 9 replicas ready
    (46147 tokens) but not the 79404 each of the 6 survivors holds once a zone is lost; the
    workload's concurrency was measured off-peak, so its p99 does not show it. The old
    median-based, all-healthy check allowed it."""
    memory = _smaller_kv_cache(doc, 0.31, 70000, 7)
    for name, tokens in (("peak", 30000), ("one_worker_lost", 34000), ("largest_zone_lost", 45000)):
        memory["scenarios"][name]["p99_concurrency_kv_tokens"] = tokens
    return ["memory_fit/kv_cache_below_peak_concurrency"]


def memory_fit__kv_below_p99_concurrency(doc: Doc) -> list[str]:
    """The requests in service fit every scenario, but the workload measures a p99 of 900
    interactive requests in flight (not 260): over 6 survivors their contexts need 290 k KV
    tokens of the replica's 183 k."""
    memory = _smaller_kv_cache(doc, 0.48, 183584, 20)
    memory["scenarios"]["largest_zone_lost"].update(
        p99_concurrency_per_replica=168.33, p99_concurrency_kv_tokens=290412
    )
    return ["memory_fit/kv_cache_below_p99_concurrency"]


def memory_fit__simulation_preempts(doc: Doc) -> list[str]:
    """The planner's simulation of the one-worker-lost scenario preempts 3 % of requests."""
    doc["recomputation"]["memory"]["scenarios"]["one_worker_lost"].update(
        preemptions=240, preemption_rate=0.0304
    )
    return ["memory_fit/preemptions_above_threshold"]


def memory_fit__does_not_fit(doc: Doc) -> list[str]:
    """A 70B FP8 checkpoint on one 80 GB H100 at TP=1: the weights leave no KV cache."""
    doc["recomputation"]["fits"] = False
    doc["recomputation"]["memory"].update(
        fits=False,
        reason="does not fit: 72.0 GiB usable per GPU (80 GiB x 0.9) but weights/TP need "
        "67.7 GiB, activations 4.8 GiB and runtime 0.3 GiB, leaving -0.8 GiB for the KV cache",
        weights_gib=67.7,
        activation_peak_gib=4.8,
        kv_cache_gib=0.0,
        kv_tokens=0,
        kv_concurrency_at_p99_context=0,
    )
    return ["memory_fit/does_not_fit"]


def distributions_measured__forty_samples(doc: Doc) -> list[str]:
    """The batch class's "measured" lengths come from 40 logged requests."""
    batch = doc["workload"]["classes"]["batch"]
    batch["prompt_tokens_samples"] = batch["output_tokens_samples"] = 40
    return ["distributions_measured/distribution_too_few_samples"]


def distributions_measured__collapsed_output(doc: Doc) -> list[str]:
    """The interactive output lengths were "measured" as one value: p50 = p99 = 255."""
    interactive = doc["workload"]["classes"]["interactive"]
    interactive["output_tokens_p50"] = interactive["output_tokens_p99"] = 255.0
    return ["distributions_measured/distribution_collapsed"]


def compliant__measured_warmup_within_stated(doc: Doc) -> list[str]:
    """The load test saw a cold start of 252 s; the provider states 240 s (within 10 %)."""
    _evidence(doc)["warmup_s"] = 252.0
    return []


def compliant__errors_within_the_maximum(doc: Doc) -> list[str]:
    """5 of 5561 requests failed (0.09 %): under the 1 % a test may lose and still count."""
    evidence = _evidence(doc)
    evidence["completed"], evidence["failed"], evidence["error_rate"] = 5556, 5, 0.000899
    evidence["per_class"]["interactive"]["error_rate"] = 0.001064
    return []


def warm_replica_exclusion__measured_warmup_longer(doc: Doc) -> list[str]:
    """The load test saw a cold start of 420 s; the provider states 240 s."""
    _evidence(doc)["warmup_s"] = 420.0
    return ["warm_replica_exclusion/measured_warmup_exceeds_stated"]


def manifests_consistent__drifted(doc: Doc) -> list[str]:
    """The manifests that ship run 4 replicas in us-east1-b, give pods 30 s to drain, scale
    on running requests and turn prefix caching off; the plan decided on places 3 there,
    drains for 300 s, scales on waiting requests and caches prefixes."""
    doc["manifests"] = {
        "checked": True,
        "discrepancies": [
            {
                "field": "autoscaling.metric",
                "plan": "vllm:num_requests_waiting",
                "manifests": "vllm:num_requests_running",
                "file": "k8s/hpa.yaml",
                "document": 0,
                "line": 16,
            },
            {
                "field": "drain.termination_grace_period_s",
                "plan": 300,
                "manifests": 30,
                "file": "k8s/deployment.yaml",
                "document": 0,
                "line": 30,
            },
            {
                "field": "serving.enable_prefix_caching",
                "plan": True,
                "manifests": False,
                "file": "k8s/deployment.yaml",
                "document": 0,
                "line": 67,
            },
            {
                "field": "replicas_per_zone.us-east1-b",
                "plan": 3,
                "manifests": 4,
                "file": "k8s/deployment.yaml",
                "document": 0,
                "line": 13,
            },
        ],
    }
    return ["manifests_consistent/manifest_contradicts_plan"]


def compliant__manifests_agree(doc: Doc) -> list[str]:
    """Manifests were given with the check and state nothing the plan does not."""
    doc["manifests"] = {"checked": True, "discrepancies": []}
    return []


def production_drift__prompts_grew(doc: Doc) -> list[str]:
    """Production's interactive prompts grew 30 % since the workload profile was measured
    (the observation's buckets at 5,000 and 10,000 tokens show it around p90 and p99)."""
    doc["production"] = {
        "observed": True,
        "observation": "chat-assistant-prod-live@v2",
        "window_end": "2026-11-29T00:00:00+00:00",
        "drift": [
            {
                "field": "classes.interactive.prompt_tokens.p99",
                "planned": 6100.0,
                "observed": 7678.9,
                "threshold": 0.1,
                "rule": "grew 26% around p99 (vllm:request_prompt_tokens: 95.2% of requests "
                "<= 5000 where the profile has 3887; 99.3% of requests <= 10000 where the "
                "profile has 7944)",
            }
        ],
        "slo_misses": [],
    }
    return ["production_drift/workload_drifted"]


def compliant__production_matches(doc: Doc) -> list[str]:
    """An observation of production shows the traffic the workload profile describes."""
    doc["production"] = {
        "observed": True,
        "observation": "chat-assistant-prod-live@v1",
        "window_end": "2026-11-29T00:00:00+00:00",
        "drift": [],
        "slo_misses": [],
    }
    return []


def compliant__claims_copied_from_slos(doc: Doc) -> list[str]:
    """The plan claims its SLOs as its p99s, far above every prediction: six conservative
    claims over two classes, one note that lists them all."""
    peak = doc["recomputation"]["scenarios"]["peak"]["per_class"]
    slos = {name: c["slo"] for name, c in doc["workload"]["classes"].items()}
    checks: Doc = {}
    for name, slo in slos.items():
        claims = {metric: slo[metric] for metric in ("ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms")}
        doc["plan"]["claims"]["per_class"][name] = claims
        checks[name] = {
            metric: {
                "claimed": claimed,
                "predicted": peak[name][metric],
                "relative_error": round(abs(claimed - peak[name][metric]) / peak[name][metric], 6),
            }
            for metric, claimed in claims.items()
        }
    doc["recomputation"]["claims_check"] = checks
    return ["note:tail_slo/claims_pessimistic"]


def compliant__manifests_leave_zones_to_scheduler(doc: Doc) -> list[str]:
    """The manifests run the plan's 9 replicas in one Deployment spread over the zones by
    the scheduler: the total agrees, and that the zones were not compared is a note."""
    doc["manifests"] = {
        "checked": True,
        "discrepancies": [],
        "notes": [
            "replicas_per_zone (us-east1-b: 3, us-east1-c: 3, us-east1-d: 3) is not compared: "
            "the manifests run 9 replicas (k8s/deployment.yaml:13) but leave which zone runs "
            "how many to the scheduler; only their total is compared"
        ],
    }
    return ["note:manifests_consistent/manifests_not_compared"]


def manifests_consistent__serves_another_model(doc: Doc) -> list[str]:
    """The manifests serve Qwen/Qwen3-8B with vLLM 0.11.0 on L4 nodes; the provider the
    plan pins describes Llama-3.1-8B-Instruct on vLLM 0.10.2 on H100-SXM-80GB. Every plan
    field agrees."""
    doc["manifests"] = {
        "checked": True,
        "discrepancies": [],
        "notes": [],
        "provider_discrepancies": [
            {
                "field": "model.name",
                "provider": "meta-llama/Llama-3.1-8B-Instruct",
                "manifests": "Qwen/Qwen3-8B",
                "read": "",
                "file": "k8s/deployment.yaml",
                "document": 0,
                "line": 58,
            },
            {
                "field": "runtime.version",
                "provider": "0.10.2",
                "manifests": "0.11.0",
                "read": "vllm/vllm-openai:v0.11.0",
                "file": "k8s/deployment.yaml",
                "document": 0,
                "line": 55,
            },
            {
                "field": "accelerator.name",
                "provider": "H100-SXM-80GB",
                "manifests": "L4",
                "read": "cloud.google.com/gke-accelerator: nvidia-l4",
                "file": "k8s/deployment.yaml",
                "document": 0,
                "line": 39,
            },
        ],
    }
    return ["manifests_consistent/manifest_contradicts_provider"]


def compliant__manifests_run_another_patch(doc: Doc) -> list[str]:
    """The manifests run vLLM 0.10.1 where the provider states 0.10.2 and give the model
    as a local path: the same minor version is a note, the path another."""
    doc["manifests"] = {
        "checked": True,
        "discrepancies": [],
        "notes": [
            "model.name is not compared with the provider's meta-llama/Llama-3.1-8B-Instruct: "
            "the manifests serve /models/llama-3.1-8b (k8s/deployment.yaml:58), a local path, "
            "not a Hugging Face id",
            "runtime.version: the manifests run vLLM 0.10.1 (vllm/vllm-openai:v0.10.1, "
            "k8s/deployment.yaml:55), the provider states 0.10.2: the same minor version, "
            "another patch",
        ],
        "provider_discrepancies": [],
    }
    return ["note:manifests_consistent/manifests_not_compared"]


def compliant__capacity_claim_optimistic(doc: Doc) -> list[str]:
    """The plan claims 3 ready replicas suffice at peak; the recomputation needs 4: a note
    (nothing rests on the claim), so the gate says what the report shows."""
    doc["plan"]["claims"]["ready_replicas_needed_at_peak"] = 3
    return ["note:tail_slo/claims_capacity_optimistic"]


def tail_slo__uncalibrated_pessimistic_end_missed(doc: Doc) -> list[str]:
    """No fresh load test calibrates the model: interactive's predicted p99 TPOT (52 ms) is
    within its 60 ms SLO, but the pessimistic end of its interval (66.6 ms, the H100 family's
    held-out error) is not."""
    recomputation = doc["recomputation"]
    recomputation["calibration"]["fitted"] = False
    recomputation["calibration"]["source_evidence"] = []
    recomputation["scenarios"]["peak"]["per_class"]["interactive"]["tpot_p99_ms"] = 52.0
    return ["tail_slo/recomputation_slo_missed"]


PESSIMISTIC = ("ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms", "queue_p99_ms")


def _pessimistic_ends(doc: Doc) -> None:
    """Each predicted p99's pessimistic end, from the case's own figures and the family's
    lowest held-out error, as registry/planner/uncertainty.py computes it."""
    recomputation = doc.get("recomputation")
    if not isinstance(recomputation, dict) or "uncertainty" not in recomputation:
        return
    low = recomputation["uncertainty"]["error_low"]
    for scenario in recomputation["scenarios"].values():
        for predicted in scenario["per_class"].values():
            predicted["pessimistic_ms"] = {
                metric: round(max(predicted[metric], predicted[metric] / (1 + low)), 3)
                for metric in PESSIMISTIC
                if isinstance(predicted.get(metric), (int, float))
            }


CASES: list[Callable[[Doc], list[str]]] = [
    production_drift__prompts_grew,
    compliant__production_matches,
    tail_slo__evidence_missed_at_peak,
    tail_slo__no_evidence_at_peak,
    tail_slo__evidence_below_zone_lost_rate,
    tail_slo__failed_requests,
    tail_slo__declared_evidence_only,
    tail_slo__client_fell_behind,
    tail_slo__claims_disagree,
    tail_slo__claims_disagree_after_recalibration,
    tail_slo__recomputation_missed,
    reserve_explicit__zone_reserve_missing,
    reserve_explicit__zone_loss_misses_slo,
    drain_configured__short_grace_period,
    drain_configured__no_drain_hooks,
    drain_configured__budget_lets_all_go,
    drain_configured__budget_spends_zone_reserve,
    drain_configured__pre_stop_gives_up_early,
    admission_configured__autoscaling_on_cpu,
    warm_replica_exclusion__warming_counted,
    warm_replica_exclusion__startup_probe_short,
    distributions_measured__uniform_prompts,
    distributions_measured__assumed_batch,
    load_test_coverage__no_cancellation,
    load_test_coverage__single_priority,
    load_test_coverage__cancellation_rate_too_low,
    load_test_coverage__cancellation_rate_too_high,
    admission_configured__queue_deadlines_missing,
    admission_configured__unbounded_no_shedding,
    retries_bounded__unbounded,
    evidence_fresh__only_stale_evidence,
    compliant__stale_beside_fresh,
    partitioning_justified__tp4_over_pcie,
    several__sections_missing,
    compliant__tp2_nvlink_with_gain,
    compliant__tp2_70b_fp8_without_useful_kv_at_tp1,
    compliant__no_autoscaling,
    compliant__extra_microbenchmark,
    compliant__conservative_claims,
    tail_slo__constant_rate_for_bursty_workload,
    tail_slo__short_prompts_only,
    tail_slo__prefix_cache_flatters,
    compliant__prefix_cache_rate_unknown,
    compliant__prefix_cache_share_high,
    tail_slo__max_model_len_below_p99_context,
    tail_slo__no_claims,
    memory_fit__kv_below_peak_concurrency,
    memory_fit__kv_short_after_zone_loss,
    memory_fit__kv_below_p99_concurrency,
    memory_fit__simulation_preempts,
    memory_fit__does_not_fit,
    distributions_measured__forty_samples,
    distributions_measured__collapsed_output,
    warm_replica_exclusion__measured_warmup_longer,
    compliant__measured_warmup_within_stated,
    compliant__errors_within_the_maximum,
    manifests_consistent__drifted,
    compliant__manifests_agree,
    compliant__claims_copied_from_slos,
    compliant__manifests_leave_zones_to_scheduler,
    manifests_consistent__serves_another_model,
    compliant__manifests_run_another_patch,
    compliant__capacity_claim_optimistic,
    tail_slo__uncalibrated_pessimistic_end_missed,
]


def _write_json(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    compliant = json.loads((HERE / "compliant.json").read_text(encoding="utf-8"))
    expected: dict[str, dict[str, Any]] = {
        "compliant.json": {
            "description": "The chat-assistant example.",
            "policies": [],
            "rules": [],
            "notes": [],
        }
    }
    for case in CASES:
        doc = copy.deepcopy(compliant)
        found = case(doc)
        _pessimistic_ends(doc)
        rules = sorted(r for r in found if not r.startswith("note:"))
        notes = sorted(r.removeprefix("note:") for r in found if r.startswith("note:"))
        name = f"{case.__name__}.json"
        _write_json(HERE / name, doc)
        expected[name] = {
            "description": (case.__doc__ or "").strip(),
            "policies": sorted({rule.split("/")[0] for rule in rules}),
            "rules": rules,
            "notes": notes,
        }
    _write_json(HERE / "expected.json", expected)


if __name__ == "__main__":
    main()
