"""The plan's claims against the recomputation: what the report and the gate compare."""

from __future__ import annotations

from registry.planner.result import (
    ClaimCheck,
    ClaimsCheck,
    Scenario,
)
from registry.records.plan import CapacityPlan

# The report's judgement of claims; the gate decides with the policy data's
# claims_max_relative_error, which a test keeps equal to this.
CLAIM_TOLERANCE = 0.2


def claim_check(claimed: float | None, predicted: float | None) -> ClaimCheck:
    if claimed is None or predicted is None or predicted == 0:
        return ClaimCheck(
            claimed=claimed,
            predicted=predicted,
            relative_error=None,
            optimistic=False,
            within_tolerance=claimed is None,
        )
    rel = (claimed - predicted) / predicted
    return ClaimCheck(
        claimed=claimed,
        predicted=round(predicted, 3),
        relative_error=round(rel, 4),
        optimistic=claimed < predicted,
        within_tolerance=abs(rel) <= CLAIM_TOLERANCE,
    )


def check_claims(
    plan: CapacityPlan, peak_scenario: Scenario, r_min: int | None, peak: float
) -> ClaimsCheck:
    """The plan's claims (per-class p99 latencies, replicas needed, the peak) against the
    recomputed peak scenario; a claim off by more than CLAIM_TOLERANCE is a finding."""
    peak_sc = peak_scenario
    per_class_claims: dict[str, dict[str, ClaimCheck]] = {}
    claim_findings: list[str] = []
    for cname, claim in plan.claims.per_class.items():
        pred = peak_sc.per_class.get(cname)
        checks: dict[str, ClaimCheck] = {}
        for key in ("ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms"):
            claimed = getattr(claim, key)
            if claimed is None:
                continue
            check = claim_check(claimed, getattr(pred, key) if pred else None)
            checks[key] = check
            if check.relative_error is not None and not check.within_tolerance:
                claim_findings.append(
                    f"{cname}.{key}: claimed {claimed:g} ms, recomputed {check.predicted:g} ms "
                    f"({check.relative_error:+.0%})"
                )
        per_class_claims[cname] = checks
    need = plan.claims.ready_replicas_needed_at_peak
    need_check = None
    if need is not None:
        need_check = claim_check(float(need), None if r_min is None else float(r_min))
        if r_min is not None and need < r_min:
            claim_findings.append(
                f"claims {need} ready replicas suffice at peak; the recomputation needs {r_min}"
            )
    peak_check = None
    if plan.claims.peak_rps is not None:
        peak_check = claim_check(plan.claims.peak_rps, peak)
        if plan.claims.peak_rps < peak * (1 - 1e-9):
            claim_findings.append(
                f"claims a peak of {plan.claims.peak_rps:g} req/s; the "
                f"workload's class peaks sum to {peak:g}"
            )
    claims = ClaimsCheck(
        tolerance=CLAIM_TOLERANCE,
        per_class=per_class_claims,
        ready_replicas_needed_at_peak=need_check,
        peak_rps=peak_check,
        findings=claim_findings,
    )
    return claims
