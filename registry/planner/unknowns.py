"""How the planner reads shares a workload states as unknown (null with a reason).

Unknown is planned conservatively, never as a guess: an unknown prefix-cache share gives no
prefix-cache hits (every prompt token is prefilled), an unknown cancellation rate gives no
cancellations (every request runs to its last token). Both are the heavier reading, so a
plan sized on them is not flattered by a number nobody measured. The recomputation says so
in its notes, class by class.
"""

from __future__ import annotations

from registry.records.workload import TrafficClass, WorkloadProfile


def planned_prefix_share(cls: TrafficClass) -> float:
    """The prefix-cache share the simulation uses: 0 (no benefit) when unknown."""
    return cls.prefix_cache_share if cls.prefix_cache_share is not None else 0.0


def planned_cancellation_rate(cls: TrafficClass) -> float:
    """The cancellation rate the simulation uses: 0 (no relief) when unknown."""
    return cls.cancellation_rate if cls.cancellation_rate is not None else 0.0


def unknown_notes(workload: WorkloadProfile, *, prefix_caching: bool) -> list[str]:
    """One note per class and unknown share, saying how the planner treated it.

    With prefix caching off the share cannot matter, and the note says that instead of
    claiming a conservative choice was made.
    """
    notes: list[str] = []
    for cls in workload.classes:
        reason = cls.unknown_reason("prefix_cache_share")
        if cls.prefix_cache_share is None:
            if prefix_caching:
                notes.append(
                    f"{cls.name}: prefix-cache share unknown ({reason}); planned with no "
                    "prefix-cache benefit: every prompt token is prefilled"
                )
            else:
                notes.append(
                    f"{cls.name}: prefix-cache share unknown ({reason}); the plan has prefix "
                    "caching off, so it does not matter"
                )
        if cls.cancellation_rate is None:
            notes.append(
                f"{cls.name}: cancellation rate unknown "
                f"({cls.unknown_reason('cancellation_rate')}); planned with no cancellation "
                "relief: every request runs to its last output token"
            )
    return notes
