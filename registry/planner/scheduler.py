"""One replica's engine: vLLM V1's scheduler and the time its steps take.

Per step (``vllm/v1/core/sched/scheduler.py::schedule`` at v0.10.2): running requests first,
in admission order, each within the token budget (``max_num_batched_tokens``), a partial
prefill taking what is left (chunked prefill); when a running request cannot grow its KV,
the most recently admitted request (FCFS) or the lowest-priority, latest-arriving one
(priority policy) is preempted by recomputation: its blocks are freed and it returns to the
head of the queue with everything to recompute. Waiting requests are admitted only if no
request was preempted in the step, until ``max_num_seqs`` or the budget is reached;
admission stops (head-of-line) at the first request whose KV does not fit.

Between events a decode-only batch is fixed, so the replica advances many steps at once:
the step time grows linearly with the KV read, and the stretch ends at the next completion
or when the KV cache would run out; an arrival that can be admitted cuts it short at the end
of the step in flight.

KV accounting is in tokens with half a block of internal fragmentation per running request
(vLLM wastes at most one block per request, PagedAttention §4.3); prefix-cache hits skip
their compute and are counted once (shared blocks), i.e. not per request.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable

from registry.planner.events import DECODE, DONE, PREFILL, WAITING
from registry.planner.requests import Requests
from registry.planner.step_time import StepModel, lines_sum, steps_within

MAX_STRETCH = 1 << 16

IDLE = 0
SINGLE = 1
STRETCH = 2


# Priority-policy waiting entries: (priority, arrival, order, rid); FCFS uses a deque of rids.
PrioEntry = tuple[int, float, int, int]


class Replica:
    __slots__ = (
        "busy_time",
        "ctx",
        "fcfs",
        "finish_heap",
        "index",
        "k",
        "kv_area",
        "kv_peak",
        "kv_tokens",
        "lines",
        "mode",
        "n_dec",
        "n_waiting",
        "pending",
        "pheap",
        "preemptions",
        "prefilling",
        "running",
        "start",
        "steps",
        "usage",
        "version",
        "wait_area",
        "wait_by_class",
        "wait_n",
        "waiting",
    )

    def __init__(self, index: int, n_classes: int, fcfs: bool) -> None:
        self.index = index
        self.fcfs = fcfs
        self.waiting: deque[int] = deque()
        self.n_waiting = 0
        self.wait_by_class = [0] * n_classes
        self.running: list[int] = []
        self.prefilling: list[int] = []
        self.n_dec = 0
        self.ctx = 0  # KV tokens the decoding sequences read per step
        self.kv_tokens = 0  # KV tokens held by all running requests
        self.steps = 0
        self.mode = IDLE
        self.version = 0
        self.start = 0.0
        self.k = 0
        self.lines = (0.0, 0.0, 0.0, 0.0, 0.0)
        self.pending: list[tuple[int, int]] = []
        self.finish_heap: list[tuple[int, int]] = []
        self.preemptions = 0
        self.kv_peak = 0.0
        self.busy_time = 0.0
        self.wait_area = 0.0
        self.kv_area = 0.0
        self.usage = 0.0
        self.wait_n = 0
        self.pheap: list[PrioEntry] = []

    @property
    def outstanding(self) -> int:
        return len(self.running) + self.n_waiting


class Engine:
    """The scheduling rules and step costs shared by a run's replicas."""

    def __init__(
        self,
        reqs: Requests,
        step: StepModel,
        *,
        kv_blocks: int,
        block_size: int,
        max_num_seqs: int,
        max_num_batched_tokens: int,
        fcfs: bool,
        chunked_prefill: bool,
        on_complete: Callable[[int, float], None],
    ) -> None:
        self.reqs = reqs
        self.step = step
        self.cap = kv_blocks * block_size
        self.half_block = block_size / 2.0
        self.max_seqs = max_num_seqs
        self.budget = max_num_batched_tokens
        self.fcfs = fcfs
        self.chunked = chunked_prefill
        self.on_complete = on_complete

    # --- waiting queue -------------------------------------------------------------------
    def enqueue(self, r: Replica, rid: int, *, front: bool = False) -> None:
        reqs = self.reqs
        if r.fcfs:
            if front:
                r.waiting.appendleft(rid)
            else:
                r.waiting.append(rid)
        else:
            heapq.heappush(r.pheap, (reqs.prio[rid], reqs.arrival[rid], reqs.order[rid], rid))
        r.n_waiting += 1

    def _head(self, r: Replica) -> int:
        state = self.reqs.state
        if r.fcfs:
            q = r.waiting
            while q and state[q[0]] != WAITING:
                q.popleft()
            return q[0] if q else -1
        heap = r.pheap
        while heap and state[heap[0][3]] != WAITING:
            heapq.heappop(heap)
        return heap[0][3] if heap else -1

    def _pop_head(self, r: Replica) -> None:
        if r.fcfs:
            r.waiting.popleft()
        else:
            heapq.heappop(r.pheap)

    def can_admit_now(self, r: Replica, rid: int) -> bool:
        """Whether an arrival could be admitted at the next step boundary."""
        if len(r.running) >= self.max_seqs:
            return False
        reqs = self.reqs
        need = reqs.target[rid] - reqs.hit[rid]
        used = r.kv_tokens + (len(r.running) + 1) * self.half_block
        return used + min(need, self.budget) <= self.cap

    # --- preemption ----------------------------------------------------------------------
    def _victim(self, r: Replica) -> int:
        if self.fcfs:
            return r.running[-1]
        reqs = self.reqs
        return max(r.running, key=lambda i: (reqs.prio[i], reqs.arrival[i]))

    def _preempt(self, r: Replica, rid: int) -> None:
        reqs = self.reqs
        r.running.remove(rid)
        if reqs.state[rid] == DECODE:
            done = r.steps - reqs.dstep[rid]
            kv = reqs.kvbase[rid] + done
            r.n_dec -= 1
            r.ctx -= kv
            r.kv_tokens -= kv
            reqs.gen[rid] += done
        else:
            r.prefilling.remove(rid)
            r.kv_tokens -= reqs.computed[rid] - reqs.kvbase[rid]
        # Recomputation: prompt plus the tokens generated so far are prefilled again.
        reqs.target[rid] = reqs.prompt[rid] + reqs.gen[rid]
        reqs.computed[rid] = 0
        reqs.finish[rid] = -1
        reqs.state[rid] = WAITING
        r.preemptions += 1
        self.enqueue(r, rid, front=True)

    # --- one scheduling decision ---------------------------------------------------------
    def schedule(self, r: Replica, now: float) -> float:
        """Decide the next step (or stretch) at ``now``; return its end time, or -1 if idle."""
        reqs = self.reqs
        cap = self.cap
        half = self.half_block
        preempted = False
        budget = self.budget
        # Running decodes grow by one token each; make room by preemption if needed.
        while r.n_dec and r.kv_tokens + r.n_dec + len(r.running) * half > cap:
            self._preempt(r, self._victim(r))
            preempted = True
        budget -= r.n_dec
        pending: list[tuple[int, int]] = []
        prefill_tokens = 0
        prefill_ctx = 0.0
        computed = reqs.computed
        target = reqs.target
        for rid in list(r.prefilling):
            if budget <= 0:
                break
            if reqs.state[rid] != PREFILL:
                continue
            chunk = min(target[rid] - computed[rid], budget)
            while r.kv_tokens + chunk + len(r.running) * half > cap:
                victim = self._victim(r)
                self._preempt(r, victim)
                preempted = True
                if victim == rid:
                    break
            if reqs.state[rid] != PREFILL:
                break  # it preempted itself: stop scheduling running requests (vLLM)
            budget -= chunk
            r.kv_tokens += chunk
            prefill_tokens += chunk
            prefill_ctx += chunk * (computed[rid] + chunk / 2.0)
            pending.append((rid, chunk))
        if not preempted:
            while budget > 0 and len(r.running) < self.max_seqs:
                rid = self._head(r)
                if rid < 0:
                    break
                start = reqs.hit[rid]
                need = target[rid] - start
                if need <= 0:
                    start = target[rid] - 1  # a full hit still recomputes the last token
                    need = 1
                chunk = need if need < budget else budget
                if not self.chunked and chunk < need:
                    break
                if r.kv_tokens + chunk + (len(r.running) + 1) * half > cap:
                    break  # head-of-line: later requests are not tried
                self._pop_head(r)
                r.n_waiting -= 1
                if reqs.admitted[rid] != reqs.admitted[rid]:  # NaN: first admission
                    reqs.admitted[rid] = now
                    r.wait_by_class[reqs.cls[rid]] -= 1
                reqs.state[rid] = PREFILL
                reqs.replica[rid] = r.index
                computed[rid] = start
                reqs.kvbase[rid] = start  # while prefilling: tokens not computed (cache hits)
                r.running.append(rid)
                r.prefilling.append(rid)
                budget -= chunk
                r.kv_tokens += chunk
                prefill_tokens += chunk
                prefill_ctx += chunk * (start + chunk / 2.0)
                pending.append((rid, chunk))
        n_dec = r.n_dec
        usage = (r.kv_tokens + len(r.running) * half) / cap if cap else 1.0
        if usage > r.kv_peak:
            r.kv_peak = usage
        if pending:
            dur = self.step.step(prefill_tokens, prefill_ctx, n_dec, r.ctx)
            r.mode = SINGLE
            r.pending = pending
            r.k = 1
        elif n_dec:
            heap = r.finish_heap
            finish = reqs.finish
            while heap and finish[heap[0][1]] != heap[0][0]:
                heapq.heappop(heap)
            k = heap[0][0] - r.steps if heap else MAX_STRETCH
            room = int((cap - r.kv_tokens - len(r.running) * half) // n_dec)
            if room < k:
                k = room
            if k > MAX_STRETCH:
                k = MAX_STRETCH
            if k < 1:
                k = 1
            lines = self.step.decode_lines(n_dec, r.ctx)
            dur = lines_sum(*lines, k)
            r.mode = STRETCH
            r.lines = lines
            r.k = k
        else:
            r.mode = IDLE
            return -1.0
        r.start = now
        r.version += 1
        r.busy_time += dur
        r.wait_area += r.n_waiting * dur
        r.kv_area += usage * dur
        r.usage = usage
        r.wait_n = r.n_waiting
        return now + dur

    def cut_stretch(self, r: Replica, now: float) -> float:
        """End the current stretch after the step in flight at ``now``; return the new end."""
        c, a1, b1, a2, b2 = r.lines
        done = steps_within(c, a1, b1, a2, b2, now - r.start, r.k)
        k = done + 1
        if k >= r.k:
            return -1.0
        old = lines_sum(c, a1, b1, a2, b2, r.k)
        new = lines_sum(c, a1, b1, a2, b2, k)
        # The accounting of schedule() assumed the longer stretch; take the rest back.
        r.busy_time -= old - new
        r.wait_area -= r.wait_n * (old - new)
        r.kv_area -= r.usage * (old - new)
        r.k = k
        r.version += 1
        return r.start + new

    def finish_step(self, r: Replica, now: float) -> None:
        """Apply the effects of the step or stretch that ends at ``now``."""
        reqs = self.reqs
        if r.mode == SINGLE:
            n_dec = r.n_dec
            r.steps += 1
            r.ctx += n_dec
            r.kv_tokens += n_dec
            computed = reqs.computed
            for rid, chunk in r.pending:
                if reqs.state[rid] != PREFILL:
                    continue
                computed[rid] += chunk
                if computed[rid] >= reqs.target[rid]:
                    r.prefilling.remove(rid)
                    if reqs.first_token[rid] != reqs.first_token[rid]:
                        reqs.first_token[rid] = now
                    reqs.gen[rid] += 1
                    kv = reqs.target[rid] - reqs.kvbase[rid]
                    reqs.kvbase[rid] = kv
                    reqs.dstep[rid] = r.steps
                    left = reqs.out[rid] - reqs.gen[rid]
                    if left <= 0:
                        reqs.state[rid] = DONE
                        r.running.remove(rid)
                        r.kv_tokens -= kv
                        self.on_complete(rid, now)
                        continue
                    reqs.state[rid] = DECODE
                    r.n_dec += 1
                    r.ctx += kv
                    fin = r.steps + left
                    reqs.finish[rid] = fin
                    heapq.heappush(r.finish_heap, (fin, rid))
            r.pending = []
        elif r.mode == STRETCH:
            k = r.k
            r.steps += k
            r.ctx += r.n_dec * k
            r.kv_tokens += r.n_dec * k
        heap = r.finish_heap
        finish = reqs.finish
        steps = r.steps
        while heap and heap[0][0] <= steps:
            fin, rid = heapq.heappop(heap)
            if finish[rid] != fin or reqs.state[rid] != DECODE:
                continue
            kv = reqs.kvbase[rid] + (steps - reqs.dstep[rid])
            r.n_dec -= 1
            r.ctx -= kv
            r.kv_tokens -= kv
            reqs.gen[rid] = reqs.out[rid]
            reqs.state[rid] = DONE
            r.running.remove(rid)
            self.on_complete(rid, now)
