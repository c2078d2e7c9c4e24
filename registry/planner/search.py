"""Sizing: run the simulation for a plan's configuration and find the fewest ready replicas.

One ``Evaluator`` holds a recomputation's fixed inputs and the requests drawn once from the
workload (common random numbers: every replica count, TP degree and load level sees the same
requests, so comparisons are not blurred by sampling noise). Results are memoised per
(TP, replicas, load factor) within the evaluator only.

Fleet scale. A fleet of R replicas behind the balancer is simulated as a group of
k = min(R, ``FLEET_GROUP``) of them fed their share k/R of the fleet's stream, not as R
replicas, so one evaluation costs the same for 9 replicas or 1,000:

- What sets a replica's tail (p99 TTFT, TPOT, e2e, queueing) is its own arrival stream and
  batch, plus how much the balancer can even out bursts across its neighbours. The first
  is the same in the group and in the fleet; the second saturates quickly with the pool
  size (join-the-shortest-queue over 8 batching replicas, each holding tens of requests,
  already pools hundreds of slots), so k = 8 keeps the balancer's effect.
- The group's stream is the fleet's own stream (the same gamma renewal process, drawn at
  unit rate) thinned at random with probability k/R, kept in the fleet's time scale. For
  the ``random`` balancer that is exactly what k replicas of the fleet receive. For
  ``round_robin`` a replica of the group receives every k-th of a random k/R share instead
  of every R-th arrival: its inter-arrival variance is higher by about 1/k (conservative).
  For ``least_outstanding`` it is an approximation; tests/planner/test_fleet_scale.py holds
  it to the full-fleet simulation (p99 TTFT and TPOT within 10 %, min_replicas within 1).
  Naively keeping the fleet's burstiness for the group (the same CV at rate λk/R) would
  overstate a large fleet's tail: the fleet spreads a burst over R replicas, not k.
- Simulated requests scale per simulated replica (``REQUESTS_PER_REPLICA``, at least
  ``MIN_REQUESTS`` in all, at most what the evaluator drew), not per fleet: each replica
  of the group sees as long a stretch of time whatever R is, so the tail is estimated as
  well at 1,000 replicas as at 9 (a fleet-wide count would leave each of 1,000 replicas
  a few requests, all in warm-up).
- Common random numbers survive: for R >= k the thinning uniforms are shared, so a larger
  fleet's group keeps a subset of a smaller fleet's arrivals and every candidate count
  sees the same token lengths; at R <= k nothing is thinned and runs are the plain
  simulation of R replicas (identical to a full-fleet run).
- Fleet totals (offered and completed rates, output tokens per second, preemptions) are
  scaled back by R/k; per-replica figures (KV usage, waiting, busy share) are the group's.
  A scenario that loses replicas changes R only.

The replica-count search gallops from the throughput estimate (steps from 1 replica, or
1/16 of the estimate, doubling) and then narrows the bracket by interpolating the worst
SLO ratio, bisecting when that stalls: O(log R) evaluations, and still a count that passes
with the next lower one failing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import replace

import numpy as np

from registry.planner.budget import BUDGET_ENV, PlannerBudgetExceeded, budget_s
from registry.planner.class_prediction import (
    MAX_SHED_RATE,
    Evaluation,
    predict_classes,
    served_mean,
)
from registry.planner.efficiency import frontend_time
from registry.planner.fleet_arrivals import FleetArrivals
from registry.planner.kv_layout import hybrid_manager, kv_groups
from registry.planner.memory import MemoryFit, memory_fit
from registry.planner.model_shape import ModelShape
from registry.planner.parallel import ordered_map
from registry.planner.progress import Progress, current
from registry.planner.sampling import ClassStream, draw_class, p99_of
from registry.planner.simulator import (
    UNBOUNDED_ATTEMPTS,
    ClassLoad,
    EngineSpec,
    RetrySpec,
    simulate,
)
from registry.planner.step_time import Efficiency, StepModel
from registry.planner.unknowns import planned_prefix_share
from registry.records.plan import MAX_PLAN_REPLICAS, CapacityPlan, SchedulingPolicy
from registry.records.provider import ProviderProfile
from registry.records.workload import TrafficClass, WorkloadProfile

# Fleet-scale reduction (see the module docstring): at most this many replicas are
# simulated, each with about this many requests, and never fewer than MIN_REQUESTS in all.
FLEET_GROUP = 8
REQUESTS_PER_REPLICA = 1000
MIN_REQUESTS = 4000


# The largest fleet the replica-count search considers.
MAX_REPLICAS = MAX_PLAN_REPLICAS  # the search never simulates a fleet no plan may hold


def p99_context(cls: TrafficClass, max_model_len: int) -> int:
    return min(max_model_len, math.ceil(p99_of(cls.prompt_tokens) + p99_of(cls.output_tokens)))


def retry_spec(plan: CapacityPlan) -> RetrySpec:
    r = plan.admission.retry
    unbounded = r.max_attempts is None
    return RetrySpec(
        max_attempts=UNBOUNDED_ATTEMPTS if unbounded else (r.max_attempts or 1),
        unbounded=unbounded,
        backoff_initial_s=r.backoff_initial_ms / 1e3,
        backoff_max_s=r.backoff_max_ms / 1e3,
        jitter=r.jitter,
        budget_ratio=r.retry_budget_ratio,
    )


class Evaluator:
    """Runs the simulation for one recomputation's inputs; memoised per configuration."""

    def __init__(
        self,
        plan: CapacityPlan,
        workload: WorkloadProfile,
        provider: ProviderProfile,
        shape: ModelShape,
        efficiency: Efficiency,
        *,
        seed: int,
        requests: int,
        group: int = FLEET_GROUP,
        per_replica: int = REQUESTS_PER_REPLICA,
        min_requests: int = MIN_REQUESTS,
        progress: Progress | None = None,
        frontend_ms: float | None = None,
    ) -> None:
        """``requests``: the most one simulation uses (drawn once, shared by every run).

        ``group``: replicas simulated at most (0: always the whole fleet, the reference the
        reduction is tested against); ``per_replica``/``min_requests``: requests simulated
        per simulated replica and in all (capped by ``requests``).
        """
        self.plan = plan
        self.workload = workload
        self.provider = provider
        self.shape = shape
        self.efficiency = efficiency
        self.seed = seed
        self.requests = requests
        serving = plan.serving
        self.max_model_len = serving.max_model_len
        # The API server's time per request: calibrated, or the runtime's default.
        if frontend_ms is None:
            frontend_ms = frontend_time(provider.runtime.name).ms
        self.frontend_s = frontend_ms / 1e3
        rng = np.random.default_rng(seed)
        total_peak = sum(c.arrival.peak_rps for c in workload.classes)
        self.streams: dict[str, ClassStream] = {}
        for cls in workload.classes:
            n = int(requests * cls.arrival.peak_rps / total_peak) + 50
            self.streams[cls.name] = draw_class(cls, n, rng, max_model_len=serving.max_model_len)
        self.deadlines: dict[str, float] = {}
        for cls in workload.classes:
            adm = plan.admission.classes.get(cls.name)
            self.deadlines[cls.name] = (
                adm.queue_deadline_ms if adm else cls.slo.queue_deadline_ms
            ) / 1e3
        self.retry = retry_spec(plan)
        self.group = group
        self.per_replica = per_replica
        self.min_requests = min_requests
        self.progress = progress if progress is not None else current()
        self.budget_s = budget_s()
        self._deadline = time.monotonic() + self.budget_s
        self._fleet = {
            cls.name: FleetArrivals(self.streams[cls.name], cls.arrival.interarrival_cv, seed, i)
            for i, cls in enumerate(workload.classes)
        }
        self.p99_ctx = {c.name: p99_context(c, serving.max_model_len) for c in workload.classes}
        self._memory: dict[int, MemoryFit] = {}
        self._cache: dict[tuple[int, int, float, int, int], Evaluation] = {}

    def set_efficiency(self, efficiency: Efficiency) -> None:
        """Swap the step-time fractions, keeping the drawn requests (calibration reuses them)."""
        self.efficiency = efficiency
        self._cache.clear()

    @property
    def peak_rps(self) -> float:
        return sum(c.arrival.peak_rps for c in self.workload.classes)

    def memory(self, tp: int) -> MemoryFit:
        if tp not in self._memory:
            s = self.plan.serving
            self._memory[tp] = memory_fit(
                self.shape,
                memory_gib=self.provider.accelerator.memory_gib,
                tensor_parallel=tp,
                gpu_memory_utilization=s.gpu_memory_utilization,
                block_size=s.block_size,
                max_num_batched_tokens=s.max_num_batched_tokens,
                max_num_seqs=s.max_num_seqs,
                max_model_len=s.max_model_len,
                p99_context_by_class=self.p99_ctx,
                accelerator=self.provider.accelerator.name,
                runtime_version=self.provider.runtime.version,
            )
        return self._memory[tp]

    def step_model(self, tp: int) -> StepModel:
        return StepModel(
            self.shape,
            self.provider.accelerator,
            tensor_parallel=tp,
            efficiency=self.efficiency,
            max_num_seqs=self.plan.serving.max_num_seqs,
        )

    def engine(self, tp: int) -> EngineSpec:
        s = self.plan.serving
        return EngineSpec(
            step=self.step_model(tp),
            kv_blocks=self.memory(tp).kv_blocks,
            block_size=s.block_size,
            max_num_seqs=s.max_num_seqs,
            max_num_batched_tokens=s.max_num_batched_tokens,
            fcfs=s.scheduling_policy is SchedulingPolicy.fcfs,
            chunked_prefill=s.enable_chunked_prefill,
            prefix_caching=s.enable_prefix_caching,
            kv_groups=kv_groups(self.shape, hybrid_manager(self.provider.runtime.version)),
        )

    def simulated(self, replicas: int) -> int:
        """Replicas actually simulated for a fleet of ``replicas``."""
        return replicas if self.group <= 0 else min(replicas, self.group)

    def run(
        self,
        tp: int,
        replicas: int,
        load_factor: float = 1.0,
        limit: int = 0,
        *,
        clients: int = 0,
    ) -> Evaluation:
        """Simulate ``replicas`` ready replicas of TP ``tp`` at ``load_factor`` x the peak.

        ``limit`` caps the simulated requests (the load curve's cheaper points). ``clients``
        > 0 replays a closed loop of that many clients instead of the peak rate (the rates
        then set only the class mix; ``load_factor`` is unused).
        """
        key = (tp, replicas, round(load_factor, 6), limit, clients)
        if key in self._cache:
            return self._cache[key]
        if time.monotonic() > self._deadline:
            plural = "s" if replicas != 1 else ""
            raise PlannerBudgetExceeded(
                f"the recomputation ran past the planner's budget of {self.budget_s:g} s "
                f"({BUDGET_ENV}) at TP={tp}, {replicas} replica{plural}: simplify the plan "
                "or its workload (fewer replicas, classes or scenarios)"
            )
        k = self.simulated(replicas)
        share = k / replicas
        drawn = sum(len(s.prompt) for s in self.streams.values())
        total = max(self.min_requests, self.per_replica * k)
        if limit:
            total = min(total, limit)
        loads = []
        for cls in self.workload.classes:
            stream = self.streams[cls.name]
            n = len(stream.prompt)
            if total < self.requests:
                n = max(50, int(total * n / drawn))
            adm = self.plan.admission.classes.get(cls.name)
            loads.append(
                ClassLoad(
                    name=cls.name,
                    priority=cls.priority,
                    rate_rps=cls.arrival.peak_rps * load_factor * share,
                    stream=self._fleet[cls.name].group(share, n),
                    deadline_s=self.deadlines[cls.name],
                    max_queue_depth=adm.max_queue_depth if adm else None,
                    prefix_share=planned_prefix_share(cls),
                    ttft_slo_s=cls.slo.ttft_p99_ms / 1e3,
                    tpot_slo_s=cls.slo.tpot_p99_ms / 1e3,
                    e2e_slo_s=cls.slo.e2e_p99_ms / 1e3,
                )
            )
        sim = simulate(
            self.engine(tp),
            loads,
            replicas=k,
            retry=self.retry,
            balancer=self.plan.load_balancer,
            seed=self.seed,
            frontend_s=self.frontend_s,
            # The simulated group gets its share of the clients, as it gets its share of a rate.
            clients=max(1, round(clients * share)) if clients > 0 else 0,
        )
        if k < replicas:
            scale = replicas / k
            sim = replace(
                sim,
                replicas=replicas,
                offered_rps=sim.offered_rps * scale,
                completed_rps=sim.completed_rps * scale,
                sustained_rps=sim.sustained_rps * scale,
                goodput_rps=sim.goodput_rps * scale,
                output_tokens_per_s=sim.output_tokens_per_s * scale,
                preemptions=round(sim.preemptions * scale),
            )
        per_class, met, violations = predict_classes(sim, self.workload, self.deadlines)
        ev = Evaluation(
            sim=sim,
            per_class=per_class,
            slo_met=met,
            violations=violations,
            simulated_replicas=k,
        )
        self._cache[key] = ev
        return ev

    def prefetch(self, runs: Sequence[tuple[int, int, float, int]]) -> None:
        """Memoise ``run(tp, replicas, load_factor, limit)`` for each of ``runs`` not run yet,
        as one batch on the machine's cores (registry/planner/parallel.py).

        A run that exceeds the budget is left out here; ``run`` raises when it is asked for.
        """
        keys = {
            (tp, r, round(load, 6), limit, 0): (tp, r, load, limit) for tp, r, load, limit in runs
        }
        todo = [args for key, args in keys.items() if key not in self._cache]
        for args, ev in zip(todo, ordered_map(self._run_or_none, todo), strict=True):
            if ev is not None:
                tp, r, load, limit = args
                self._cache[(tp, r, round(load, 6), limit, 0)] = ev

    def _run_or_none(self, args: tuple[int, int, float, int]) -> Evaluation | None:
        try:
            return self.run(*args)
        except PlannerBudgetExceeded:
            return None

    def prefetch_searches(self, tps: Sequence[int]) -> None:
        """Run ``min_replicas`` for each of ``tps`` side by side, memoising every run it
        makes: the degrees' searches do not depend on one another."""
        if len(tps) < 2:
            return
        for runs in ordered_map(self._search_runs, list(tps)):
            for key, ev in runs.items():
                self._cache.setdefault(key, ev)

    def _search_runs(self, tp: int) -> dict[tuple[int, int, float, int, int], Evaluation]:
        # What was run is kept past the budget; the caller's own search raises.
        with suppress(PlannerBudgetExceeded):
            self.min_replicas(tp)
        return {key: ev for key, ev in self._cache.items() if key[0] == tp}

    def capacity_estimate(self, tp: int) -> float:
        """Requests per second one replica sustains, from the step model (no queueing).

        Used only as the search's starting point: decode at the batch the KV cache and
        max_num_seqs allow, plus each request's prefill at full compute.
        """
        mem = self.memory(tp)
        step = self.step_model(tp)
        s = self.plan.serving
        tot = self.peak_rps
        # Rejected requests (longer than max_model_len) never reach the engine.
        mean_prompt = sum(
            served_mean(self.streams[c.name], self.streams[c.name].prompt)
            * c.arrival.peak_rps
            / tot
            for c in self.workload.classes
        )
        mean_out = sum(
            served_mean(self.streams[c.name], self.streams[c.name].output)
            * c.arrival.peak_rps
            / tot
            for c in self.workload.classes
        )
        ctx = mean_prompt + mean_out / 2
        batch = max(1, min(s.max_num_seqs, int(mem.kv_tokens / max(ctx, 1.0))))
        decode = step.step(0, 0.0, batch, batch * step.kv_context(ctx))
        prefill = step.step(int(mean_prompt), step.prefill_pairs(0.0, mean_prompt), 0, 0.0)
        per_request = mean_out * decode / batch + prefill
        return 1.0 / per_request

    def min_replicas(
        self, tp: int, *, cap: int = MAX_REPLICAS, start: int | None = None
    ) -> int | None:
        """The fewest ready replicas meeting every class's p99 SLOs at peak.

        Starts from ``start`` (default: the throughput estimate) and gallops, down while the
        SLOs hold and up until they do, with steps from 1 replica (1/16 of the start for a
        large fleet) doubling; then narrows the bracket by interpolating the worst SLO
        ratio (``slo_margin``, log against log replicas) with bisection as the fallback
        whenever a step does not halve it. The answer is a count at which the SLOs hold
        and fail one replica lower, whatever the SLOs are, in O(log R) evaluations (about
        ten at 1,000 replicas).
        """
        if not self.memory(tp).fits:
            return None
        if start is None:
            start = math.ceil(self.peak_rps / self.capacity_estimate(tp))
        start = min(cap, max(1, start))
        first = max(1, start // 16)
        margins: dict[int, float] = {0: math.inf}

        def ok(r: int) -> bool:
            self.progress.report("sizing", tp=tp, replicas=r)
            ev = self.run(tp, r)
            margins[r] = slo_margin(ev, self.workload)
            return ev.slo_met

        # Invariant once bracketed: ``lo`` fails (0 stands for "no replica") and ``hi`` holds.
        if ok(start):
            hi, step = start, first
            while True:
                lo = max(0, hi - step)
                if lo == 0 or not ok(lo):
                    break
                hi, step = lo, step * 2
        else:
            lo, step = start, first
            while True:
                if lo >= cap:
                    return None
                hi = min(cap, lo + step)
                if ok(hi):
                    break
                lo, step = hi, step * 2
        bisect = False
        while hi - lo > 1:
            width = hi - lo
            mid = (lo + hi) // 2
            if not bisect:
                mid = _interpolate(lo, margins[lo], hi, margins[hi]) or mid
            if ok(mid):
                hi = mid
            else:
                lo = mid
            # Interpolation that fails to halve the bracket gives way to one bisection.
            bisect = not bisect and hi - lo > width // 2
        return hi


def slo_margin(ev: Evaluation, workload: WorkloadProfile) -> float:
    """The worst ratio of a predicted p99 (or shed rate, or queue p99) to its objective.

    Above 1 exactly when ``predict_classes`` finds a violation; infinite when a class
    completed nothing. The search interpolates it; it decides nothing itself.
    """
    worst = 0.0
    for cls in workload.classes:
        p = ev.per_class[cls.name]
        if p.completed == 0:
            return math.inf
        slo = cls.slo
        for value, limit in (
            (p.ttft_p99_ms, slo.ttft_p99_ms),
            (p.tpot_p99_ms, slo.tpot_p99_ms),
            (p.e2e_p99_ms, slo.e2e_p99_ms),
            (p.queue_p99_ms, slo.queue_deadline_ms),
        ):
            if value is not None and limit > 0:
                worst = max(worst, value / limit)
        worst = max(worst, p.shed_rate / MAX_SHED_RATE)
    return worst


def _interpolate(lo: int, m_lo: float, hi: int, m_hi: float) -> int | None:
    """The count strictly inside (lo, hi) where the SLO ratio reaches 1, or None.

    Per-replica load goes as 1/replicas and tail latency grows smoothly with it, so log
    margin is interpolated against log replicas; the ceiling is taken (the first count
    predicted to hold), kept one inside each end so the bracket always shrinks.
    """
    if lo < 1 or not (m_lo > 1.0 >= m_hi > 0.0) or math.isinf(m_lo):
        return None
    a, b = math.log(m_lo), math.log(m_hi)
    if a == b:
        return None
    x = math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * a / (a - b))
    return min(hi - 1, max(lo + 1, math.ceil(x - 1e-9)))
