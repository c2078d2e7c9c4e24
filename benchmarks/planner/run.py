"""Run every planner benchmark and the validation table: ``python -m benchmarks.planner.run``."""

from __future__ import annotations

from benchmarks.planner import bench_sim, validation

if __name__ == "__main__":
    bench_sim.bench_single_replica()
    bench_sim.bench_recompute()
    outcomes = validation.run_all()
    print(validation.table(outcomes))
