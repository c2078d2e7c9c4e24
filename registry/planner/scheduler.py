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

A model with sliding-window layers counts KV in pool tokens instead (``sliding_kv``): a
request passing its window grows more slowly, which ends a decode stretch like a completion
does, so each stretch stays linear (``decode_stretch``). The decode KV read is priced on the
same pool tokens, so it counts the padding layers vLLM adds to the last sliding group
(Gemma 3 27B: the window read in 60 layers for its 52 local ones).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from registry.planner.decode_stretch import MAX_STRETCH, cpu_bound, line_sum, steps_within
from registry.planner.events import DECODE, DONE, PREFILL, WAITING
from registry.planner.kv_layout import KVGroups
from registry.planner.replica_state import IDLE, SINGLE, STRETCH, Replica
from registry.planner.requests import Requests
from registry.planner.sliding_kv import SlidingWindowKV
from registry.planner.step_time import StepModel


class Engine(SlidingWindowKV):
    """The scheduling rules and step costs shared by a run's replicas.

    ``schedule``, ``finish_step`` and ``cut_stretch`` run a few times per simulated request,
    so they read the request fields through list aliases bound here (the lists of
    ``Requests`` only grow in place), keep replica counters in locals and inline their small
    helpers: attribute lookups and calls are most of their cost.
    """

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
        kv_groups: KVGroups | None = None,
    ) -> None:
        self.reqs = reqs
        self.step = step
        self.cap = kv_blocks * block_size
        # The same capacity as a float: float-to-float comparisons take CPython's fast path,
        # and every KV quantity here is a multiple of one half, exact in a double.
        self._cap_f = float(self.cap)
        self.half_block = block_size / 2.0
        # Sliding windows (module docstring): the pool's groups, in pool tokens.
        groups = kv_groups if kv_groups is not None and kv_groups.window is not None else None
        layers = groups.layers if groups is not None else 1
        self.window = groups.window if groups is not None else None
        self.full_groups = groups.full_groups if groups is not None else 1
        self.sliding_groups = groups.sliding_groups if groups is not None else 0
        # Pool tokens to tokens of every layer (what the step model's KV read and attention
        # costs are per): a pool token is one token in group_size layers.
        self._unit = groups.group_size / layers if groups is not None else 1.0
        if groups is not None:
            self.half_block = block_size / 2.0 * groups.groups
        # n * half_block for every possible count of running requests: an int times a float
        # is one of CPython's slow paths, a list lookup is not (same values).
        self._half_blocks = [n * self.half_block for n in range(max_num_seqs + 2)]
        self.max_seqs = max_num_seqs
        self.budget = max_num_batched_tokens
        self.fcfs = fcfs
        self.chunked = chunked_prefill
        self.on_complete = on_complete
        self._kv_time = step.kv_time_per_token * self._unit if groups else step.kv_time_per_token
        # Under async scheduling a step takes at least the CPU's time (StepModel.cpu_floor).
        self._cpu_floor = step.cpu_floor
        self._cpu_floor_per_sequence = step.cpu_floor_per_sequence
        # step.decode_terms by decode batch size (a run sees a few hundred sizes at most).
        self._decode_terms: dict[int, tuple[float, float, float]] = {}
        self._arrival = reqs.arrival
        self._prio = reqs.prio
        self._cls = reqs.cls
        self._replica = reqs.replica
        self._state = reqs.state
        self._target = reqs.target
        self._computed = reqs.computed
        self._hit = reqs.hit
        self._kvbase = reqs.kvbase
        self._finish = reqs.finish
        self._gen = reqs.gen
        self._dstep = reqs.dstep
        self._out = reqs.out
        self._admitted = reqs.admitted
        self._first_token = reqs.first_token

    # --- waiting queue -------------------------------------------------------------------
    def enqueue(self, r: Replica, rid: int, *, front: bool = False) -> None:
        if r.fcfs:
            if front:
                r.waiting.appendleft(rid)
            else:
                r.waiting.append(rid)
        else:
            heapq.heappush(r.pheap, (self._prio[rid], self._arrival[rid], rid))
        r.n_waiting += 1

    def can_admit_now(self, r: Replica, rid: int) -> bool:
        """Whether an arrival could be admitted at the next step boundary."""
        n_run = len(r.running)
        if n_run >= self.max_seqs:
            return False
        need = self._target[rid] - self._hit[rid]
        budget = self.budget
        used = r.kv_tokens + self._half_blocks[n_run + 1]
        chunk = need if need < budget else budget
        if self.window is not None and chunk > 0:
            chunk = self._cost(self._hit[rid], self._hit[rid] + chunk)
        return used + chunk <= self._cap_f

    # --- preemption ----------------------------------------------------------------------
    def _victim(self, r: Replica) -> int:
        if self.fcfs:
            return next(reversed(r.running))
        prio = self._prio
        arrival = self._arrival
        return max(r.running, key=lambda i: (prio[i], arrival[i]))

    def _preempt(self, r: Replica, rid: int) -> None:
        reqs = self.reqs
        del r.running[rid]
        if reqs.state[rid] == DECODE:
            done = r.steps - reqs.dstep[rid]
            if self.window is None:
                kv = reqs.kvbase[rid] + done
                r.slope -= 1
                r.ctx -= reqs.target[rid] + done
            else:
                kv, slope = self._decode_held(rid, done)
                r.slope -= slope
                r.ctx -= kv
            r.n_dec -= 1
            r.kv_tokens -= kv
            reqs.gen[rid] += done
            # The finish heap holds exactly the decoding requests, so neither schedule()
            # nor finish_step() checks its entries; preemption is rare enough to pay O(n).
            r.finish_heap.remove((reqs.finish[rid], rid))
            heapq.heapify(r.finish_heap)
        else:
            r.prefilling.remove(rid)
            if self.window is None:
                r.kv_tokens -= reqs.computed[rid] - reqs.kvbase[rid]
            else:
                r.kv_tokens -= self._cost(reqs.kvbase[rid], reqs.computed[rid])
        # Recomputation: prompt plus the tokens generated so far are prefilled again.
        reqs.target[rid] = reqs.prompt[rid] + reqs.gen[rid]
        reqs.computed[rid] = 0
        reqs.finish[rid] = -1
        reqs.state[rid] = WAITING
        r.preemptions += 1
        self.enqueue(r, rid, front=True)

    def _schedule_prefilling(
        self, r: Replica, budget: int, pending: list[tuple[int, int]]
    ) -> tuple[int, int, float, bool]:
        """Continue the partial prefills (chunked prefill) within ``budget``, preempting as
        needed; return what is left of the budget, the prefill tokens and the context they
        attend to, and whether a request was preempted."""
        cap = self.cap
        half = self.half_block
        running = r.running
        state = self._state
        computed = self._computed
        target = self._target
        prefill_tokens = 0
        prefill_ctx = 0.0
        preempted = False
        for rid in list(r.prefilling):
            if budget <= 0:
                break
            if state[rid] != PREFILL:
                continue
            chunk = min(target[rid] - computed[rid], budget)
            cost = (
                chunk if self.window is None else self._cost(computed[rid], computed[rid] + chunk)
            )
            while r.kv_tokens + cost + len(running) * half > cap:
                victim = self._victim(r)
                self._preempt(r, victim)
                preempted = True
                if victim == rid:
                    break
            if state[rid] != PREFILL:
                break  # it preempted itself: stop scheduling running requests (vLLM)
            budget -= chunk
            r.kv_tokens += cost
            prefill_tokens += chunk
            if self.window is None:
                prefill_ctx += chunk * (computed[rid] + chunk / 2.0)
            else:
                prefill_ctx += self.step.prefill_pairs(computed[rid], chunk)
            pending.append((rid, chunk))
        return budget, prefill_tokens, prefill_ctx, preempted

    # --- one scheduling decision ---------------------------------------------------------
    def schedule(self, r: Replica, now: float) -> float:
        """Decide the next step (or stretch) at ``now``; return its end time, or -1 if idle."""
        cap = self._cap_f
        half = self.half_block
        halves = self._half_blocks
        running = r.running
        n_dec = r.n_dec
        kv_tokens = r.kv_tokens
        n_run = len(running)
        preempted = False
        window = self.window
        # Running decodes grow by one token each (r.slope, in pool tokens with sliding
        # windows); make room by preemption if needed.
        if n_dec and kv_tokens + r.slope + halves[n_run] > cap:
            while r.n_dec and r.kv_tokens + r.slope + len(running) * half > cap:
                self._preempt(r, self._victim(r))
            preempted = True
            n_dec = r.n_dec
            kv_tokens = r.kv_tokens
            n_run = len(running)
        pending: list[tuple[int, int]] = []
        prefill_tokens = 0
        prefill_ctx = 0.0
        if r.prefilling or r.n_waiting:
            budget = self.budget - n_dec
            if r.prefilling:
                budget, prefill_tokens, prefill_ctx, cut = self._schedule_prefilling(
                    r, budget, pending
                )
                preempted = preempted or cut
                n_dec = r.n_dec
                kv_tokens = r.kv_tokens
                n_run = len(running)
            # With nothing waiting the queue holds only stale entries; a later call drops them.
            if not preempted and r.n_waiting:
                state = self._state
                target = self._target
                hit = self._hit
                admitted = self._admitted
                computed = self._computed
                kvbase = self._kvbase
                prefilling = r.prefilling
                max_seqs = self.max_seqs
                fcfs = r.fcfs
                queue = r.waiting
                pheap = r.pheap
                while budget > 0 and n_run < max_seqs:
                    # The head of the queue, dropping entries no longer waiting (shed).
                    if fcfs:
                        while queue and state[queue[0]] != WAITING:
                            queue.popleft()
                        if not queue:
                            break
                        rid = queue[0]
                    else:
                        while pheap and state[pheap[0][2]] != WAITING:
                            heapq.heappop(pheap)
                        if not pheap:
                            break
                        rid = pheap[0][2]
                    start = hit[rid]
                    need = target[rid] - start
                    if need <= 0:
                        start = target[rid] - 1  # a full hit still recomputes the last token
                        need = 1
                    chunk = need if need < budget else budget
                    if not self.chunked and chunk < need:
                        break
                    cost = chunk if window is None else self._cost(start, start + chunk)
                    if kv_tokens + cost + halves[n_run + 1] > cap:
                        break  # head-of-line: later requests are not tried
                    if fcfs:
                        queue.popleft()
                    else:
                        heapq.heappop(pheap)
                    r.n_waiting -= 1
                    if admitted[rid] != admitted[rid]:  # NaN: first admission
                        admitted[rid] = now
                        r.wait_by_class[self._cls[rid]] -= 1
                    state[rid] = PREFILL
                    self._replica[rid] = r.index
                    computed[rid] = start
                    kvbase[rid] = start  # while prefilling: tokens not computed (cache hits)
                    running[rid] = None
                    prefilling.append(rid)
                    n_run += 1
                    budget -= chunk
                    kv_tokens += cost
                    prefill_tokens += chunk
                    if window is None:
                        prefill_ctx += chunk * (start + chunk / 2.0)
                    else:
                        prefill_ctx += self.step.prefill_pairs(start, chunk)
                    pending.append((rid, chunk))
                r.kv_tokens = kv_tokens
        usage = (kv_tokens + halves[n_run]) / cap if cap else 1.0
        if usage > r.kv_peak:
            r.kv_peak = usage
        if pending:
            ctx = r.ctx if window is None else r.ctx * self._unit
            dur = self.step.step(prefill_tokens, prefill_ctx, n_dec, ctx)
            r.mode = SINGLE
            r.pending = pending
            r.k = 1
        elif n_dec:
            heap = r.finish_heap
            k = heap[0][0] - r.steps if heap else MAX_STRETCH
            # Steps until the KV cache is full: a whole number as a float; int() is a slow
            # call, needed only when the cache, not a completion, ends the stretch.
            slope = r.slope
            if slope:
                room = (cap - kv_tokens - halves[n_run]) // slope
                if room < k:
                    k = int(room)
            if window is not None:
                k = min(k, self._window_steps(r))
            if k > MAX_STRETCH:
                k = MAX_STRETCH
            if k < 1:
                k = 1
            terms = self._decode_terms.get(n_dec)
            if terms is None:
                terms = self._decode_terms[n_dec] = self.step.decode_terms(n_dec)
            c, base, b = terms
            if window is not None:
                b = self._kv_time * slope
            m = base + self._kv_time * r.ctx
            floor = self._cpu_floor
            if floor:
                # Async scheduling: a step takes at least the CPU's time.
                c, b, k = cpu_bound(c, m, b, floor + self._cpu_floor_per_sequence * n_dec, k)
            # lines_sum(*step.decode_lines(n_dec, ctx), k) in its equal-slopes branch.
            dur = line_sum(c, m, b, float(k))
            r.mode = STRETCH
            r.line_c = c
            r.line_m = m
            r.line_b = b
            r.dur = dur
            r.k = k
        else:
            r.mode = IDLE
            return -1.0
        n_waiting = r.n_waiting
        r.start = now
        r.version += 1
        r.busy_time += dur
        if n_waiting:  # adding 0.0 would change nothing
            r.wait_area += n_waiting * dur
        r.kv_area += usage * dur
        r.usage = usage
        r.wait_n = n_waiting
        return now + dur

    def cut_stretch(self, r: Replica, now: float) -> float:
        """End the current stretch after the step in flight at ``now``; return the new end."""
        c = r.line_c
        m = r.line_m
        b = r.line_b
        limit = r.k
        old = r.dur
        elapsed = now - r.start
        lim = float(limit)
        done = steps_within(c, m, b, old, lim, elapsed)
        kf = done + 1.0
        if kf >= lim:
            return -1.0
        new = line_sum(c, m, b, kf)
        # The accounting of schedule() assumed the longer stretch; take the rest back.
        cut = old - new
        r.busy_time -= cut
        if r.wait_n:
            r.wait_area -= r.wait_n * cut
        r.kv_area -= r.usage * cut
        r.k = int(kf)
        r.dur = new
        r.version += 1
        return r.start + new

    def finish_step(self, r: Replica, now: float) -> None:
        """Apply the effects of the step or stretch that ends at ``now``."""
        if r.mode == STRETCH:
            k = r.k
            steps = r.steps + k
            r.steps = steps
            grown = r.slope * k
            r.ctx += grown
            r.kv_tokens += grown
            if self.window is not None:
                self._pass_windows(r, steps)
        elif r.mode == SINGLE:
            steps = r.steps + 1
            r.steps = steps
            grown = r.slope
            r.ctx += grown
            r.kv_tokens += grown
            window = self.window
            if window is not None:
                self._pass_windows(r, steps)
            state = self._state
            computed = self._computed
            target = self._target
            kvbase = self._kvbase
            first_token = self._first_token
            gen = self._gen
            out = self._out
            for rid, chunk in r.pending:
                if state[rid] != PREFILL:
                    continue
                done = computed[rid] + chunk
                computed[rid] = done
                if done < target[rid]:
                    continue
                r.prefilling.remove(rid)
                if first_token[rid] != first_token[rid]:
                    first_token[rid] = now
                g = gen[rid] + 1
                gen[rid] = g
                if window is None:
                    kv = target[rid] - kvbase[rid]
                else:
                    kv = self._cost(kvbase[rid], target[rid])
                kvbase[rid] = kv
                self._dstep[rid] = steps
                left = out[rid] - g
                if left <= 0:
                    state[rid] = DONE
                    del r.running[rid]
                    r.kv_tokens -= kv
                    self.on_complete(rid, now)
                    continue
                state[rid] = DECODE
                r.n_dec += 1
                if window is None:
                    r.slope += 1
                    # Attention reads the whole context, prefix-cache hits too (every
                    # sequence's block table, shared blocks included); only the memory
                    # (kv_tokens) holds a shared prefix once.
                    r.ctx += target[rid]
                else:
                    r.slope += self.full_groups
                    if target[rid] < window and self.sliding_groups:
                        r.slope += self.sliding_groups
                        at = steps + window - target[rid]
                        heapq.heappush(r.window_heap, (at, rid, steps))
                    # In pool tokens; a sliding-window model's prefix hits are not re-read.
                    r.ctx += kv
                fin = steps + left
                self._finish[rid] = fin
                heapq.heappush(r.finish_heap, (fin, rid))
            r.pending = []
        else:
            steps = r.steps
        heap = r.finish_heap
        if not heap or heap[0][0] > steps:
            return
        # Decodes that reached their last token (the heap holds only decoding requests);
        # usually one per call, so no local aliases.
        while True:
            rid = heapq.heappop(heap)[1]
            grown = steps - self._dstep[rid]
            if self.window is None:
                kv = self._kvbase[rid] + grown
                r.slope -= 1
                r.ctx -= self._target[rid] + grown
            else:
                kv, slope = self._decode_held(rid, grown)
                r.slope -= slope
                r.ctx -= kv
            r.n_dec -= 1
            r.kv_tokens -= kv
            self._gen[rid] = self._out[rid]
            self._state[rid] = DONE
            del r.running[rid]
            self.on_complete(rid, now)
            if not heap or heap[0][0] > steps:
                return
