"""Closed-loop clients, goodput, and calibration that replays each test as it ran."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from registry.planner.calibration import CONSTANT_CV, _case, calibrate
from registry.planner.model_shape import resolve_model
from registry.planner.search import Evaluator
from registry.planner.simulator import RetrySpec, simulate
from registry.planner.step_time import Efficiency
from registry.records.evidence import LoadTestEvidence
from tests.planner.test_recompute import _load
from tests.planner.test_simulator import _engine, _loads


def _closed(clients: int, n: int = 2000) -> tuple[float, float, float]:
    """(sustained req/s, mean end-to-end s, goodput req/s) of ``clients`` closed-loop clients."""
    loads = _loads(1.0, n=n, cv=1.0)
    res = simulate(_engine(), loads, replicas=1, retry=RetrySpec(), clients=clients)
    st = res.per_class["c0"]
    # Cancelled requests leave early and are not in e2e; Little's law counts them too, so
    # weigh the mean by what each request really spent in the system.
    return res.sustained_rps, float(np.mean(st.e2e)), res.goodput_rps


def test_closed_loop_obeys_littles_law_and_saturates() -> None:
    """N clients with no think time keep N requests in the system: N = X x W."""
    rates = {}
    for clients in (4, 16, 64):
        x, w, _ = _closed(clients)
        rates[clients] = x
        # Cancelled requests (5 %) spend less than W, so X x W slightly exceeds N.
        assert x * w == pytest.approx(clients, rel=0.12), clients
    assert rates[4] < rates[16] < rates[64]
    # More clients than the batch holds add queueing, not throughput.
    x256, _, _ = _closed(256, n=3000)
    assert x256 < rates[64] * 1.35


def test_closed_loop_ignores_the_classes_rates() -> None:
    a = simulate(_engine(), _loads(1.0, n=800), replicas=1, retry=RetrySpec(), clients=8)
    b = simulate(_engine(), _loads(50.0, n=800), replicas=1, retry=RetrySpec(), clients=8)
    assert a.per_class["c0"].ttft == b.per_class["c0"].ttft


def test_goodput_counts_only_requests_within_every_slo() -> None:
    base = _loads(12.0, n=2000)
    loose = simulate(_engine(), base, replicas=1, retry=RetrySpec())
    tight_loads = [replace(c, ttft_slo_s=0.05, tpot_slo_s=0.02) for c in base]
    tight = simulate(_engine(), tight_loads, replicas=1, retry=RetrySpec())
    st = tight.per_class["c0"]
    assert loose.goodput_rps <= loose.sustained_rps * 1.001
    assert 0 < tight.goodput_rps < 0.9 * loose.goodput_rps
    # The same requests were simulated; only the count of good ones differs.
    assert st.ttft == loose.per_class["c0"].ttft
    within = sum(t <= 0.05 for t in st.ttft) / len(st.ttft)
    assert tight.goodput_rps <= within * loose.goodput_rps * 1.05


TRUE_FRONTEND_MS = 20.0


def _closed_loop_evidence(clients: int, truth: Efficiency) -> LoadTestEvidence:
    """The example's test rerun at a fixed concurrency, its latencies those the planner
    predicts at ``truth`` behind a 20 ms API server (so the fit has a known answer)."""
    plan, wl, prov, ev = _load()
    doc = ev.model_dump(mode="json")
    offered = doc["offered"]
    offered.update(request_rate_rps=None, burstiness=None, concurrency=clients)
    closed = LoadTestEvidence.model_validate(doc)
    case = _case(closed, prov, plan, wl, resolve_model(prov), truth, seed=0)
    assert not isinstance(case, str)
    case.evaluator.frontend_s = TRUE_FRONTEND_MS / 1e3  # the replay itself is engine-only
    preds = case.evaluator.run(case.tp, case.replicas, clients=clients).per_class
    for name, result in doc["results"]["per_class"].items():
        p = preds[name]
        result["ttft_ms"] = {"quantiles": {"p50": p.ttft_p50_ms, "p90": p.ttft_p90_ms}}
        result["tpot_ms"] = {"quantiles": {"p50": p.tpot_p50_ms, "p90": p.tpot_p90_ms}}
        for key in ("itl_ms", "e2e_ms", "queue_ms"):
            result.pop(key, None)
    return LoadTestEvidence.model_validate(doc)


def test_calibration_fits_closed_loop_evidence() -> None:
    """A fixed-concurrency test was ignored ("no offered request rate"); now it is replayed
    as a closed loop and the fit recovers the fractions that produced it."""
    plan, wl, prov, _ = _load()
    truth = Efficiency(mbu=0.6, mfu=0.5)
    ev = _closed_loop_evidence(24, truth)
    eff, cal = calibrate(
        [ev], plan=plan, workload=wl, provider=prov, shape=resolve_model(prov), base=Efficiency()
    )
    assert cal.fitted, cal.ignored_evidence
    assert cal.source_evidence == [ev.name]
    assert (eff.mbu, eff.mfu) == pytest.approx((cal.mbu, cal.mfu))
    assert cal.mbu == pytest.approx(0.6, abs=0.08)
    assert cal.mfu == pytest.approx(0.5, abs=0.08)
    assert cal.frontend_ms == pytest.approx(TRUE_FRONTEND_MS, abs=8)
    assert cal.fit_error is not None and cal.fit_error < 0.1


def test_replay_keeps_the_tests_own_arrivals() -> None:
    """A constant-rate test is replayed evenly spaced, a gamma test at its own shape, and
    only a test that states nothing at the workload's burstiness."""
    plan, wl, prov, ev = _load()
    shape = resolve_model(prov)

    def replayed_cv(**offered: object) -> float:
        doc = ev.model_dump(mode="json")
        doc["offered"].update(offered)
        case = _case(LoadTestEvidence.model_validate(doc), prov, plan, wl, shape, Efficiency(), 0)
        assert not isinstance(case, str)
        evaluator: Evaluator = case.evaluator
        return evaluator.workload.classes[0].arrival.interarrival_cv

    assert replayed_cv(burstiness=None, constant_arrivals=True) == CONSTANT_CV
    assert replayed_cv(burstiness=0.25) == pytest.approx(2.0)
    assert replayed_cv(burstiness=None) == wl.classes[0].arrival.interarrival_cv


def test_constant_arrivals_dump_only_when_set() -> None:
    """Evidence of other tests keeps its canonical JSON (and digest)."""
    _, _, _, ev = _load()
    assert "constant_arrivals" not in ev.model_dump(mode="json")["offered"]
    doc = ev.model_dump(mode="json")
    doc["offered"]["constant_arrivals"] = True
    assert LoadTestEvidence.model_validate(doc).model_dump(mode="json")["offered"][
        "constant_arrivals"
    ]


def test_requests_past_the_model_length_fail_without_reaching_the_engine() -> None:
    """vLLM refuses a request longer than max_model_len at once: it counts as rejected,
    takes no engine time, and a closed-loop client moves on to its next request."""
    base = _loads(6.0, n=1500)
    stream = base[0].stream
    rejected = stream.prompt > 3000
    longer = [replace(base[0], stream=replace(stream, rejected=rejected))]
    for clients in (0, 8):
        plain = simulate(_engine(), base, replicas=1, retry=RetrySpec(), clients=clients)
        cut = simulate(_engine(), longer, replicas=1, retry=RetrySpec(), clients=clients)
        st, st0 = cut.per_class["c0"], plain.per_class["c0"]
        assert st.rejected > 0 and st0.rejected == 0
        assert st.completed + st.rejected + st.shed == st.requests
        # Long prompts were the slow ones: without them the rest start sooner.
        assert float(np.percentile(st.ttft, 99)) < float(np.percentile(st0.ttft, 99))
