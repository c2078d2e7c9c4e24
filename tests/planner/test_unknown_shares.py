"""The planner with unknown prefix-cache share and cancellation rate (null with a reason).

Unknown is planned conservatively: no prefix-cache hits, no cancellations. So an unknown
share must give exactly the predictions of a stated 0 (same seed, same requests), a stated
share must give different ones (or the test would prove nothing), and the recomputation
must say, per class, what it assumed and why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.planner import profiles
from registry.planner import recompute
from registry.planner.model_shape import resolve_model
from registry.planner.sampling import draw_class
from registry.planner.search import Evaluator
from registry.planner.step_time import Efficiency
from registry.planner.unknowns import (
    planned_cancellation_rate,
    planned_prefix_share,
    unknown_notes,
)
from registry.records.documents import read_record
from registry.records.kinds import RecordKind
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import WorkloadProfile

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chat-assistant"
CHAT = {
    "basis": "assumed",
    "reason": "test",
    "quantiles": {"p10": 100, "p50": 600, "p90": 2000, "p99": 6000},
}
OUT = {
    "basis": "assumed",
    "reason": "test",
    "quantiles": {"p10": 20, "p50": 180, "p90": 500, "p99": 1100},
}
NO_PREFIX = "no prefix hashes in the trace"
NO_CANCEL = "the trace records no cancellations"


def _workload(*, prefix: float | None, cancel: float | None, rate: float = 12.0) -> WorkloadProfile:
    base = profiles.workload(
        rate=rate, prompt=CHAT, output=OUT, cv=1.5, prefix_share=0.0, cancellation=0.0
    )
    doc: dict[str, Any] = base.model_dump(mode="json")
    cls = doc["classes"][0]
    cls["prefix_cache_share"], cls["cancellation_rate"] = prefix, cancel
    cls["unknown"] = {
        k: why
        for k, v, why in (
            ("prefix_cache_share", prefix, NO_PREFIX),
            ("cancellation_rate", cancel, NO_CANCEL),
        )
        if v is None
    }
    return WorkloadProfile.model_validate(doc)


def test_unknown_reads_as_zero_and_numbers_as_themselves() -> None:
    unknown = _workload(prefix=None, cancel=None).classes[0]
    assert planned_prefix_share(unknown) == 0.0 and planned_cancellation_rate(unknown) == 0.0
    stated = _workload(prefix=0.4, cancel=0.2).classes[0]
    assert planned_prefix_share(stated) == 0.4 and planned_cancellation_rate(stated) == 0.2


def test_unknown_cancellation_draws_no_cancellations() -> None:
    def cancelled(cancel: float | None) -> np.ndarray:
        cls = _workload(prefix=0.0, cancel=cancel).classes[0]
        stream = draw_class(cls, 4000, np.random.default_rng(5), max_model_len=16384)
        return ~np.isnan(stream.cancel_fraction)

    assert not cancelled(None).any()
    assert np.array_equal(cancelled(None), cancelled(0.0))
    # A stated rate does draw cancellations (0.2 of 4000: about 800).
    assert 700 < int(cancelled(0.2).sum()) < 900


def test_unknown_shares_predict_exactly_what_zero_predicts() -> None:
    prov = profiles.provider("llama-3.1-8b", "H100-SXM-80GB")
    plan = profiles.plan(max_model_len=16384)
    assert plan.serving.enable_prefix_caching

    def predict(prefix: float | None, cancel: float | None) -> Any:
        wl = _workload(prefix=prefix, cancel=cancel)
        ev = Evaluator(plan, wl, prov, resolve_model(prov), Efficiency(), seed=3, requests=800)
        return ev.run(1, 1).per_class["c"]

    unknown = predict(None, None)
    assert unknown == predict(0.0, 0.0)
    # With a stated prefix share, prefill work and the TTFT tail are lighter: the share is
    # read, so unknown-as-zero above is a real choice, not a no-op.
    hits = predict(0.6, 0.0)
    assert hits.ttft_p99_ms is not None and unknown.ttft_p99_ms is not None
    assert hits.ttft_p99_ms < unknown.ttft_p99_ms


def test_notes_say_what_was_assumed_per_class() -> None:
    wl = _workload(prefix=None, cancel=None)
    notes = unknown_notes(wl, prefix_caching=True)
    assert notes == [
        f"c: prefix-cache share unknown ({NO_PREFIX}); planned with no prefix-cache benefit: "
        "every prompt token is prefilled",
        f"c: cancellation rate unknown ({NO_CANCEL}); planned with no cancellation relief: "
        "every request runs to its last output token",
    ]
    off = unknown_notes(wl, prefix_caching=False)
    assert "prefix caching off, so it does not matter" in off[0]
    assert unknown_notes(_workload(prefix=0.1, cancel=0.0), prefix_caching=True) == []


def test_recomputation_reports_the_unknowns_in_its_notes() -> None:
    plan = read_record(RecordKind.plan, EXAMPLE / "plan.yaml")
    wl = read_record(RecordKind.workload, EXAMPLE / "workload.yaml")
    prov = read_record(RecordKind.provider, EXAMPLE / "provider.yaml")
    assert isinstance(plan, CapacityPlan) and isinstance(prov, ProviderProfile)
    assert isinstance(wl, WorkloadProfile)
    doc = wl.model_dump(mode="json")
    batch = next(c for c in doc["classes"] if c["name"] == "batch")
    batch.pop("cancellation_rate")
    batch["unknown"] = {"cancellation_rate": NO_CANCEL}
    result = recompute(plan, WorkloadProfile.model_validate(doc), prov, seed=0)
    assert (
        f"batch: cancellation rate unknown ({NO_CANCEL}); planned with no cancellation relief: "
        "every request runs to its last output token"
    ) in result.sizing.notes
    assert not any(n.startswith("interactive:") for n in result.sizing.notes)
