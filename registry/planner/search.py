"""Sizing: run the simulation for a plan's configuration and find the fewest ready replicas.

One ``Evaluator`` holds a recomputation's fixed inputs and the requests drawn once from the
workload (common random numbers: every replica count, TP degree and load level sees the same
requests, so comparisons are not blurred by sampling noise). Results are memoised per
(TP, replicas, load factor) within the evaluator only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from registry.planner.catalog import ModelShape
from registry.planner.memory import MemoryFit, memory_fit
from registry.planner.result import ClassPrediction
from registry.planner.sampling import ClassStream, draw_class, p99_of
from registry.planner.simulator import (
    UNBOUNDED_ATTEMPTS,
    ClassLoad,
    EngineSpec,
    RetrySpec,
    SimResult,
    percentile,
    simulate,
)
from registry.planner.step_time import Efficiency, StepModel
from registry.planner.unknowns import planned_prefix_share
from registry.records.plan import CapacityPlan, SchedulingPolicy
from registry.records.provider import ProviderProfile
from registry.records.workload import TrafficClass, WorkloadProfile

# The queue-deadline objective is a p99 too: at most 1% of a class's requests may be shed.
MAX_SHED_RATE = 0.01


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


@dataclass
class Evaluation:
    sim: SimResult
    per_class: dict[str, ClassPrediction]
    slo_met: bool
    violations: list[str]


def _ms(v: float | None) -> float | None:
    return None if v is None else round(v * 1e3, 3)


def predict_classes(
    sim: SimResult, workload: WorkloadProfile, deadlines_s: Mapping[str, float]
) -> tuple[dict[str, ClassPrediction], bool, list[str]]:
    out: dict[str, ClassPrediction] = {}
    all_violations: list[str] = []
    for cls in workload.classes:
        st = sim.per_class[cls.name]
        slo = cls.slo
        pred = {
            f"{m}_p{q}_ms": _ms(percentile(getattr(st, m), q))
            for m in ("ttft", "tpot", "e2e")
            for q in (50, 90, 99)
        }
        queue99 = _ms(percentile(st.queue, 99))
        v: list[str] = []
        if st.completed == 0:
            v.append(f"{cls.name}: no request completed in the simulated window")
        for key, limit in (
            ("ttft_p99_ms", slo.ttft_p99_ms),
            ("tpot_p99_ms", slo.tpot_p99_ms),
            ("e2e_p99_ms", slo.e2e_p99_ms),
        ):
            value = pred[key]
            if value is not None and value > limit:
                v.append(f"{cls.name}: {key} {value:.0f} ms exceeds the SLO {limit:g} ms")
        if st.shed_rate > MAX_SHED_RATE:
            v.append(
                f"{cls.name}: {st.shed_rate:.1%} of requests shed after the "
                f"{deadlines_s[cls.name] * 1e3:g} ms queue deadline (at most 1% may be)"
            )
        if queue99 is not None and queue99 > slo.queue_deadline_ms:
            v.append(
                f"{cls.name}: queue_p99_ms {queue99:.0f} exceeds the queue deadline "
                f"{slo.queue_deadline_ms:g} ms"
            )
        out[cls.name] = ClassPrediction(
            requests=st.requests,
            completed=st.completed,
            cancelled=st.cancelled,
            shed=st.shed,
            retries=st.retries,
            shed_rate=round(st.shed_rate, 5),
            queue_p99_ms=queue99,
            slo_met=not v,
            violations=v,
            **pred,
        )
        all_violations.extend(v)
    return out, not all_violations, all_violations


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
    ) -> None:
        self.plan = plan
        self.workload = workload
        self.provider = provider
        self.shape = shape
        self.efficiency = efficiency
        self.seed = seed
        serving = plan.serving
        self.max_model_len = serving.max_model_len
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
        self.p99_ctx = {c.name: p99_context(c, serving.max_model_len) for c in workload.classes}
        self._memory: dict[int, MemoryFit] = {}
        self._cache: dict[tuple[int, int, float, int], Evaluation] = {}

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
            )
        return self._memory[tp]

    def step_model(self, tp: int) -> StepModel:
        return StepModel(
            self.shape, self.provider.accelerator, tensor_parallel=tp, efficiency=self.efficiency
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
        )

    def run(self, tp: int, replicas: int, load_factor: float = 1.0, limit: int = 0) -> Evaluation:
        key = (tp, replicas, round(load_factor, 6), limit)
        if key in self._cache:
            return self._cache[key]
        loads = []
        for cls in self.workload.classes:
            stream = self.streams[cls.name]
            if limit:
                n = max(
                    50,
                    int(
                        limit
                        * len(stream.prompt)
                        / sum(len(s.prompt) for s in self.streams.values())
                    ),
                )
                stream = ClassStream(
                    name=stream.name,
                    unit_times=stream.unit_times[:n],
                    prompt=stream.prompt[:n],
                    output=stream.output[:n],
                    cancel_fraction=stream.cancel_fraction[:n],
                )
            adm = self.plan.admission.classes.get(cls.name)
            loads.append(
                ClassLoad(
                    name=cls.name,
                    priority=cls.priority,
                    rate_rps=cls.arrival.peak_rps * load_factor,
                    stream=stream,
                    deadline_s=self.deadlines[cls.name],
                    max_queue_depth=adm.max_queue_depth if adm else None,
                    prefix_share=planned_prefix_share(cls),
                )
            )
        sim = simulate(
            self.engine(tp),
            loads,
            replicas=replicas,
            retry=self.retry,
            balancer=self.plan.load_balancer,
            seed=self.seed,
        )
        per_class, met, violations = predict_classes(sim, self.workload, self.deadlines)
        ev = Evaluation(sim=sim, per_class=per_class, slo_met=met, violations=violations)
        self._cache[key] = ev
        return ev

    def capacity_estimate(self, tp: int) -> float:
        """Requests per second one replica sustains, from the step model (no queueing).

        Used only as the search's starting point: decode at the batch the KV cache and
        max_num_seqs allow, plus each request's prefill at full compute.
        """
        mem = self.memory(tp)
        step = self.step_model(tp)
        s = self.plan.serving
        tot = self.peak_rps
        mean_prompt = sum(
            float(np.mean(self.streams[c.name].prompt)) * c.arrival.peak_rps / tot
            for c in self.workload.classes
        )
        mean_out = sum(
            float(np.mean(self.streams[c.name].output)) * c.arrival.peak_rps / tot
            for c in self.workload.classes
        )
        ctx = mean_prompt + mean_out / 2
        batch = max(1, min(s.max_num_seqs, int(mem.kv_tokens / max(ctx, 1.0))))
        decode = step.step(0, 0.0, batch, batch * ctx)
        prefill = step.step(int(mean_prompt), mean_prompt * mean_prompt / 2, 0, 0.0)
        per_request = mean_out * decode / batch + prefill
        return 1.0 / per_request

    def min_replicas(self, tp: int, *, cap: int = 512) -> int | None:
        """The fewest ready replicas meeting every class's p99 SLOs at peak.

        Starts from the throughput estimate and scans replica by replica (down while the
        SLOs hold, up until they do), so the answer is the smallest count at which they hold
        and the next lower count fails, whatever the SLOs are.
        """
        if not self.memory(tp).fits:
            return None
        start = max(1, math.ceil(self.peak_rps / self.capacity_estimate(tp)))
        r = min(start, cap)
        if self.run(tp, r).slo_met:
            while r > 1 and self.run(tp, r - 1).slo_met:
                r -= 1
            return r
        step = 1
        while r < cap:
            nxt = min(cap, r + step)
            if self.run(tp, nxt).slo_met:
                # Galloped past: scan back down to the first passing count.
                while nxt - 1 > r and self.run(tp, nxt - 1).slo_met:
                    nxt -= 1
                return nxt
            r = nxt
            if r - start >= 8:
                step *= 2
        return None
