"""Continuous-batching simulation of replicas behind a load balancer, event to event.

The loop is a short heap loop (vidur's shape): original arrivals are pre-drawn and sorted,
retries and queue deadlines go on the heap with step ends. Everything a run needs lives in
the run (no class-level counters), so runs are re-entrant and the same inputs give the
same numbers.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from registry.planner.events import ARRIVAL, DEADLINE, SHED, STEP_END, WAITING
from registry.planner.kv_layout import KVGroups
from registry.planner.replica_state import STRETCH, Replica
from registry.planner.requests import Requests
from registry.planner.sampling import ClassStream
from registry.planner.scheduler import Engine
from registry.planner.step_time import StepModel

# Unbounded client retries are capped so a run terminates; the report says so.
UNBOUNDED_ATTEMPTS = 10


@dataclass(frozen=True)
class ClassLoad:
    name: str
    priority: int
    rate_rps: float
    stream: ClassStream
    deadline_s: float = math.inf
    max_queue_depth: int | None = None
    prefix_share: float = 0.0
    # The class's SLO ceilings, for goodput: a request counts as good when it completed
    # within all three (TPOT only when it produced more than one token).
    ttft_slo_s: float = math.inf
    tpot_slo_s: float = math.inf
    e2e_slo_s: float = math.inf


@dataclass(frozen=True)
class RetrySpec:
    max_attempts: int = 1
    unbounded: bool = False
    backoff_initial_s: float = 0.0
    backoff_max_s: float = 0.0
    jitter: bool = False
    budget_ratio: float | None = None


@dataclass(frozen=True)
class EngineSpec:
    step: StepModel
    kv_blocks: int
    block_size: int
    max_num_seqs: int
    max_num_batched_tokens: int
    fcfs: bool = True
    chunked_prefill: bool = True
    prefix_caching: bool = True
    # vLLM's KV cache groups when some layers slide (memory.kv_groups): ``kv_blocks`` is then
    # the pool's block ids and the scheduler counts KV in pool tokens; None: one group.
    kv_groups: KVGroups | None = None


@dataclass
class ClassStats:
    name: str
    requests: int = 0
    completed: int = 0
    cancelled: int = 0
    shed: int = 0
    # Longer than max_model_len: vLLM refuses them at once (HTTP 400), so they fail.
    rejected: int = 0
    retries: int = 0
    output_tokens: int = 0
    # Completed within every SLO of the class (goodput's numerator).
    good: int = 0
    ttft: list[float] = field(default_factory=list)
    tpot: list[float] = field(default_factory=list)
    e2e: list[float] = field(default_factory=list)
    queue: list[float] = field(default_factory=list)

    @property
    def shed_rate(self) -> float:
        return self.shed / self.requests if self.requests else 0.0


@dataclass
class SimResult:
    per_class: dict[str, ClassStats]
    replicas: int
    window_s: float
    offered_rps: float
    completed_rps: float
    # Requests finished inside the measured window, per second: what a load test that stops
    # at the end of its arrivals sees. Under overload it is the throughput the replicas
    # sustain; completed_rps (every request of the window, drained) stays at the offer.
    sustained_rps: float
    # Requests of the measured window that completed within their class's SLOs, per second.
    goodput_rps: float
    output_tokens_per_s: float
    preemptions: int
    kv_usage_peak: float
    kv_usage_mean: float
    waiting_mean_per_replica: float
    busy_share: float
    attempts: int
    originals: int
    simulated_requests: int


def _originals(
    classes: Sequence[ClassLoad],
    index: Sequence[NDArray[np.intp]],
    order: NDArray[np.intp],
    owner: NDArray[np.int_],
    engine_spec: EngineSpec,
) -> tuple[list[int], list[int], list[bool], list[int], list[bool] | None]:
    """Each original request's prompt, output, cancellation, prefix hit and rejection, in the
    merged arrival order (``index``: each class's requests kept, ``order``: the merge).

    Array arithmetic, element for element what a loop over the requests would compute: a
    cancelled request (a fraction, not NaN) produces ``max(1, int(fraction x output))``
    tokens; its prefix hit is ``int(share x prompt)`` cut to whole blocks. None: no request
    is longer than the model length.
    """

    def merged(field: str) -> NDArray[Any]:
        parts = [getattr(c.stream, field)[ix] for c, ix in zip(classes, index, strict=True)]
        return np.concatenate(parts)[order]

    prompt = merged("prompt")
    output = merged("output")
    fraction = merged("cancel_fraction")
    cancelled = ~np.isnan(fraction)
    output = output.copy()
    cut = (fraction[cancelled] * output[cancelled]).astype(np.int64)
    output[cancelled] = np.maximum(1, cut)
    caching = engine_spec.prefix_caching
    share = np.array([c.prefix_share if caching else 0.0 for c in classes], dtype=float)
    bs = engine_spec.block_size
    hit = (share[owner] * prompt).astype(np.int64) // bs * bs
    rejected = merged("rejected")
    return (
        prompt.tolist(),
        output.tolist(),
        cancelled.tolist(),
        hit.tolist(),
        rejected.tolist() if bool(np.any(rejected)) else None,
    )


def percentile(values: Sequence[float] | NDArray[np.float64], q: float) -> float | None:
    return percentiles(values, (q,))[0]


def percentiles(
    values: Sequence[float] | NDArray[np.float64], qs: Sequence[float]
) -> list[float | None]:
    """``np.percentile(values, q)`` (linear) for each of ``qs``, from one sort.

    The same operations as numpy's, in the same order (virtual index ``(n - 1) * q / 100``,
    numpy's ``_lerp``), so the same floats; and numpy's own ``percentile`` would import
    ``numpy.ma`` at its first call, a fixed cost for every process. Non-finite values
    (where NaN ordering matters) go to numpy itself.
    """
    n = len(values)
    if n == 0:
        return [None for _ in qs]
    ordered = np.sort(np.asarray(values, dtype=float))
    if not (math.isfinite(ordered[0]) and math.isfinite(ordered[-1])):
        return [float(np.percentile(ordered, q)) for q in qs]
    out: list[float | None] = []
    last = n - 1
    for q in qs:
        v = last * (q / 100)
        if v >= last:
            out.append(float(ordered[-1]))
            continue
        i = int(v)
        a = float(ordered[i])
        b = float(ordered[i + 1])
        gamma = v - i
        diff = b - a
        out.append(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma)
    return out


def simulate(
    engine_spec: EngineSpec,
    classes: Sequence[ClassLoad],
    *,
    replicas: int,
    retry: RetrySpec,
    balancer: str = "least_outstanding",
    warmup_share: float = 0.1,
    seed: int = 0,
    clients: int = 0,
    frontend_s: float = 0.0,
) -> SimResult:
    """Simulate ``replicas`` ready replicas serving ``classes`` until every request is done.

    ``clients`` > 0 runs a closed loop, as fixed-concurrency load tests do: that many clients
    each send their next request as soon as the previous one has finished (completed,
    rejected or given up); the classes' rates then set only the mix. ``frontend_s`` is the
    API server's own time per request (HTTP, tokenisation, detokenisation, streaming),
    which a client sees in its TTFT and end-to-end latency but the engine never does.
    """
    reqs = Requests()
    rng = random.Random(seed)
    n_cls = len(classes)
    bs = engine_spec.block_size

    # Original arrivals, merged over classes and cut at the shortest class horizon.
    horizon = min(float(c.stream.unit_times[-1]) / c.rate_rps for c in classes)
    times: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    index: list[np.ndarray] = []
    for ci, c in enumerate(classes):
        t = c.stream.unit_times / c.rate_rps
        keep = t <= horizon
        times.append(t[keep])
        owners.append(np.full(int(keep.sum()), ci))
        index.append(np.nonzero(keep)[0])
    all_t = np.concatenate(times)
    order = np.argsort(all_t, kind="stable")
    arr_t = all_t[order].tolist()
    owner = np.concatenate(owners)[order]
    arr_c = owner.tolist()
    n_arr = len(arr_t)
    (arr_p, arr_out, arr_cancel, arr_hit, arr_rej) = _originals(
        classes, index, order, owner, engine_spec
    )
    closed = clients > 0
    if closed:
        # The measured window opens at the issue of the first request past the warm-up share
        # and closes at the issue of the last one: in between, every client is busy.
        warm_n = int(n_arr * warmup_share)
        warm_cut = math.inf if warm_n > 0 else 0.0
        horizon = math.inf
    else:
        warm_cut = horizon * warmup_share

    stats = [ClassStats(name=c.name) for c in classes]
    deadline = [c.deadline_s for c in classes]
    qbound = [c.max_queue_depth for c in classes]
    prio = [c.priority for c in classes]
    slo_ttft = [c.ttft_slo_s for c in classes]
    slo_tpot = [c.tpot_slo_s for c in classes]
    slo_e2e = [c.e2e_slo_s for c in classes]

    arrival = reqs.arrival
    origin = reqs.origin
    rcls = reqs.cls
    state = reqs.state
    first_token = reqs.first_token
    admitted = reqs.admitted
    out = reqs.out
    cancelled = reqs.cancelled
    add = reqs.add

    finished_in_window = 0

    def on_complete(rid: int, now: float) -> None:
        nonlocal finished_in_window
        in_window = warm_cut <= now <= horizon
        if in_window:
            finished_in_window += 1
        o = origin[rid]
        if closed:
            push(heap, (now, ARRIVAL, -1, -1, 0))
        t0 = arrival[o]
        if t0 < warm_cut:
            return
        c = rcls[rid]
        st = stats[c]
        st.completed += 1
        ft = first_token[rid]
        ttft = ft - t0 + frontend_s
        st.ttft.append(ttft)
        st.queue.append(admitted[rid] - t0)
        n = out[rid]
        st.output_tokens += n
        tpot = (now - ft) / (n - 1) if n > 1 else 0.0
        if n > 1:
            st.tpot.append(tpot)
        if cancelled[rid]:
            st.cancelled += 1
        else:
            e2e = now - t0 + frontend_s
            st.e2e.append(e2e)
            # Goodput as a load test counts it: finished inside the window, within the SLOs.
            if in_window and ttft <= slo_ttft[c] and tpot <= slo_tpot[c] and e2e <= slo_e2e[c]:
                st.good += 1

    engine = Engine(
        reqs,
        engine_spec.step,
        kv_blocks=engine_spec.kv_blocks,
        block_size=bs,
        max_num_seqs=engine_spec.max_num_seqs,
        max_num_batched_tokens=engine_spec.max_num_batched_tokens,
        fcfs=engine_spec.fcfs,
        chunked_prefill=engine_spec.chunked_prefill,
        on_complete=on_complete,
        kv_groups=engine_spec.kv_groups,
    )
    reps = [Replica(i, n_cls, engine_spec.fcfs) for i in range(replicas)]
    heap: list[tuple[float, int, int, int, int]] = []
    push = heapq.heappush
    pop = heapq.heappop
    seq = 0
    retries_used = 0
    originals_seen = 0
    rr_next = 0
    schedule = engine.schedule
    can_admit = engine.can_admit_now
    finish_step = engine.finish_step

    def give_up_or_retry(rid: int, now: float) -> None:
        nonlocal seq, retries_used
        o = origin[rid]
        c = rcls[rid]
        a = reqs.attempt[rid]
        in_window = arrival[o] >= warm_cut
        budget_ok = retry.budget_ratio is None or retries_used < retry.budget_ratio * max(
            1, originals_seen
        )
        if a < retry.max_attempts and budget_ok:
            backoff = min(retry.backoff_max_s, retry.backoff_initial_s * 2.0 ** (a - 1))
            if retry.jitter:
                backoff *= rng.random()
            new = add(
                now + backoff,
                o,
                c,
                reqs.prio[rid],
                reqs.prompt[rid],
                out[rid],
                reqs.hit[rid],
                a + 1,
                cancelled[rid],
            )
            retries_used += 1
            if in_window:
                stats[c].retries += 1
            seq += 1
            push(heap, (now + backoff, ARRIVAL, seq, new, 0))
        else:
            if in_window:
                stats[c].shed += 1
            if closed:
                push(heap, (now, ARRIVAL, -1, -1, 0))

    def route(rid: int, now: float) -> None:
        nonlocal seq, rr_next
        if balancer == "round_robin":
            r = reps[rr_next]
            rr_next = (rr_next + 1) % replicas
        elif balancer == "random":
            r = reps[rng.randrange(replicas)]
        else:
            # The first replica with the fewest requests running or waiting.
            loads = [len(x.running) + x.n_waiting for x in reps]
            r = reps[loads.index(min(loads))]
        c = rcls[rid]
        bound = qbound[c]
        if bound is not None and r.wait_by_class[c] >= bound:
            state[rid] = SHED
            give_up_or_retry(rid, now)
            return
        reqs.replica[rid] = r.index
        r.wait_by_class[c] += 1
        engine.enqueue(r, rid)
        dl = deadline[c]
        if dl != math.inf:
            seq += 1
            push(heap, (now + dl, DEADLINE, seq, rid, 0))
        if r.mode == 0:
            end = schedule(r, now)
            if end >= 0:
                seq += 1
                push(heap, (end, STEP_END, seq, r.index, r.version))
        elif r.mode == STRETCH and can_admit(r, rid):
            end = engine.cut_stretch(r, now)
            if end >= 0:
                seq += 1
                push(heap, (end, STEP_END, seq, r.index, r.version))

    issued = 0
    finished_at_horizon = 0

    def issue(now: float) -> None:
        """The next original request of the merged stream arrives at ``now``."""
        nonlocal issued, originals_seen, warm_cut, horizon, finished_at_horizon
        k = issued
        issued += 1
        if closed:
            if k == warm_n:
                warm_cut = now
            if k == n_arr - 1:
                horizon = now
                finished_at_horizon = finished_in_window
        c = arr_c[k]
        # Positional: arrival, origin (-1: its own), class, priority, prompt, output, prefix
        # hit, attempt, cancelled.
        rid = add(now, -1, c, prio[c], arr_p[k], arr_out[k], arr_hit[k], 1, arr_cancel[k])
        originals_seen += 1
        if now >= warm_cut:
            stats[c].requests += 1
        if arr_rej is not None and arr_rej[k]:
            # Refused before it reaches the engine; the client gets its error at once.
            state[rid] = SHED
            if now >= warm_cut:
                stats[c].rejected += 1
            if closed:
                push(heap, (now, ARRIVAL, -1, -1, 0))
            return
        route(rid, now)

    if closed:
        for _ in range(min(clients, n_arr)):
            push(heap, (0.0, ARRIVAL, -1, -1, 0))
    ai = n_arr if closed else 0
    now = 0.0
    inf = math.inf
    while True:
        next_arr = arr_t[ai] if ai < n_arr else inf
        if heap and (heap[0][0] < next_arr or (heap[0][0] == next_arr and heap[0][1] == 0)):
            now, kind, _, a, b = pop(heap)
            if kind == STEP_END:
                r = reps[a]
                if b != r.version:
                    continue
                finish_step(r, now)
                end = schedule(r, now)
                if end >= 0:
                    seq += 1
                    push(heap, (end, STEP_END, seq, a, r.version))
            elif kind == ARRIVAL:
                if a >= 0:
                    route(a, now)
                elif issued < n_arr:
                    issue(now)
            else:  # DEADLINE: still waiting for its first admission -> shed
                if state[a] == WAITING and admitted[a] != admitted[a]:
                    state[a] = SHED
                    r = reps[reqs.replica[a]]
                    r.n_waiting -= 1
                    r.wait_by_class[rcls[a]] -= 1
                    give_up_or_retry(a, now)
            continue
        if next_arr == inf:
            break
        now = next_arr
        ai += 1
        issue(now)

    if closed:
        if horizon == inf:  # fewer requests than the warm-up needs: measure them all
            horizon = now
            finished_at_horizon = finished_in_window
        if warm_cut == inf:
            warm_cut = 0.0
        finished_in_window = finished_at_horizon
    window = horizon - warm_cut
    busy = sum(r.busy_time for r in reps)
    total_time = max(now, horizon, 1e-9)  # the run drains past the last arrival
    completed = sum(s.completed for s in stats)
    out_tok = sum(s.output_tokens for s in stats)
    return SimResult(
        per_class={s.name: s for s in stats},
        replicas=replicas,
        window_s=window,
        offered_rps=sum(c.rate_rps for c in classes),
        completed_rps=completed / window if window > 0 else 0.0,
        sustained_rps=finished_in_window / window if window > 0 else 0.0,
        goodput_rps=sum(s.good for s in stats) / window if window > 0 else 0.0,
        output_tokens_per_s=out_tok / window if window > 0 else 0.0,
        preemptions=sum(r.preemptions for r in reps),
        kv_usage_peak=max(r.kv_peak for r in reps),
        kv_usage_mean=sum(r.kv_area for r in reps) / max(busy, 1e-9),
        waiting_mean_per_replica=sum(r.wait_area for r in reps) / (total_time * replicas),
        busy_share=busy / (total_time * replicas),
        attempts=len(arrival),
        originals=originals_seen,
        simulated_requests=len(arrival),
    )
