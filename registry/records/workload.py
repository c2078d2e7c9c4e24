"""Workload profile: token-work distributions per traffic class, with their provenance."""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Annotated, Any, Literal, Self

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from registry.records.common import (
    Basis,
    Distribution,
    Fraction,
    Metadata,
    Name,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Record,
    Text,
    TraceWindow,
)


class Arrival(Record):
    """The arrival process of one class: rates and how bursty they are."""

    basis: Basis = Basis.measured
    mean_rps: PositiveFloat
    peak_rps: PositiveFloat = Field(description="Highest rate over any peak_window_s window.")
    peak_window_s: PositiveFloat = Field(
        default=60.0, description="Window over which peak_rps was taken."
    )
    interarrival_cv: PositiveFloat = Field(
        default=1.0,
        description="Coefficient of variation of inter-arrival times (1.0 is Poisson; >1 bursty).",
    )
    reason: Text | None = Field(default=None, description="Why assumed numbers were assumed.")

    @model_validator(mode="after")
    def _peak_at_least_mean(self) -> Self:
        if self.peak_rps < self.mean_rps:
            raise ValueError(f"peak_rps ({self.peak_rps:g}) is below mean_rps ({self.mean_rps:g})")
        if self.basis is Basis.assumed and not self.reason:
            raise ValueError("an assumed arrival process must say why in 'reason'")
        return self

    @property
    def peak_to_mean(self) -> float:
        return self.peak_rps / self.mean_rps


class ClassSLO(Record):
    """Per-class p99 objectives. Every field is a ceiling on the class's 99th percentile."""

    ttft_p99_ms: PositiveFloat = Field(description="Time to first token, p99.")
    tpot_p99_ms: PositiveFloat = Field(description="Time per output token after the first, p99.")
    e2e_p99_ms: PositiveFloat = Field(description="End-to-end request latency, p99.")
    queue_deadline_ms: PositiveFloat = Field(
        description="Longest a request may wait for admission before it is shed."
    )

    @model_validator(mode="after")
    def _coherent(self) -> Self:
        if self.e2e_p99_ms < self.ttft_p99_ms:
            raise ValueError(
                f"e2e_p99_ms ({self.e2e_p99_ms:g}) is below ttft_p99_ms ({self.ttft_p99_ms:g})"
            )
        return self


# Bins per axis of a joint length histogram: 32 x 32 cells at most, stored sparsely.
JOINT_MAX_BINS = 32
JointCell = tuple[NonNegativeInt, NonNegativeInt, NonNegativeInt]


class JointLengths(Record):
    """How prompt and output lengths occur together: a sparse 2-D histogram of requests.

    ``cells`` lists ``[prompt bin, output bin, count]`` for the non-empty cells; bin ``i``
    of an axis holds ``edges[i] <= length < edges[i + 1]``. A trace fit stores it so the
    planner draws (prompt, output) pairs together instead of independently; the class's
    own ``prompt_tokens`` and ``output_tokens`` still give the lengths inside each bin.
    """

    prompt_edges: list[NonNegativeFloat] = Field(
        min_length=2,
        max_length=JOINT_MAX_BINS + 1,
        description="Prompt-token bin edges, increasing.",
    )
    output_edges: list[NonNegativeFloat] = Field(
        min_length=2,
        max_length=JOINT_MAX_BINS + 1,
        description="Output-token bin edges, increasing.",
    )
    cells: list[JointCell] = Field(
        min_length=1,
        max_length=JOINT_MAX_BINS * JOINT_MAX_BINS,
        description="[prompt bin, output bin, requests] for each non-empty cell.",
    )

    @field_validator("prompt_edges", "output_edges")
    @classmethod
    def _edges_increasing(cls, edges: list[float], info: ValidationInfo) -> list[float]:
        for a, b in pairwise(edges):
            if b <= a:
                raise ValueError(
                    f"{info.field_name} must be strictly increasing: {b:g} follows {a:g}"
                )
        return edges

    @field_validator("cells")
    @classmethod
    def _cells_in_grid(cls, cells: list[JointCell], info: ValidationInfo) -> list[JointCell]:
        seen: set[tuple[int, int]] = set()
        bins = {
            axis: len(info.data[f"{axis}_edges"]) - 1
            for axis in ("prompt", "output")
            if f"{axis}_edges" in info.data  # else its own error is reported there
        }
        for k, (i, j, _) in enumerate(cells):
            for axis, index in (("prompt", i), ("output", j)):
                if axis in bins and index >= bins[axis]:
                    raise ValueError(
                        f"cells[{k}]: {axis} bin {index} is past the last of the "
                        f"{bins[axis]} bins {axis}_edges makes"
                    )
            if (i, j) in seen:
                raise ValueError(f"cells[{k}]: cell ({i}, {j}) is listed twice")
            seen.add((i, j))
        if sum(c for _, _, c in cells) == 0:
            raise ValueError("cells: counts are all zero")
        return cells

    @property
    def total(self) -> int:
        return sum(c for _, _, c in self.cells)

    def rank_correlation(self) -> float:
        """Spearman's rank correlation of prompt and output lengths, from the histogram.

        Requests in one bin share its mid-rank (ties), so this is the correlation of the
        binned lengths; 0 when either axis holds all requests in one bin.
        """
        total = float(self.total)
        prompt_counts: dict[int, int] = {}
        output_counts: dict[int, int] = {}
        for i, j, c in self.cells:
            prompt_counts[i] = prompt_counts.get(i, 0) + c
            output_counts[j] = output_counts.get(j, 0) + c

        def mid_ranks(counts: dict[int, int]) -> dict[int, float]:
            ranks, below = {}, 0
            for b in sorted(counts):
                ranks[b] = below + (counts[b] + 1) / 2.0
                below += counts[b]
            return ranks

        rp, ro = mid_ranks(prompt_counts), mid_ranks(output_counts)
        mean = (total + 1) / 2.0
        cov = sum(c * (rp[i] - mean) * (ro[j] - mean) for i, j, c in self.cells)
        var_p = sum(c * (rp[i] - mean) ** 2 for i, c in prompt_counts.items())
        var_o = sum(c * (ro[j] - mean) ** 2 for j, c in output_counts.items())
        if var_p <= 0 or var_o <= 0:
            return 0.0
        return float(cov / math.sqrt(var_p * var_o))


# Shares a trace (or a person) may be unable to state. Null means "unknown", never zero, and
# must come with the reason in `unknown`; the planner plans such a class conservatively (no
# prefix-cache benefit, no cancellation relief).
UnknownShare = Literal["prefix_cache_share", "cancellation_rate"]
UNKNOWN_SHARES: tuple[UnknownShare, ...] = ("prefix_cache_share", "cancellation_rate")
Reason = Annotated[StrictStr, Field(min_length=1)]


class TrafficClass(Record):
    name: Name
    priority: NonNegativeInt = Field(
        description="Scheduling priority; lower is served first (vLLM's convention)."
    )
    arrival: Arrival
    prompt_tokens: Distribution
    output_tokens: Distribution
    concurrency: Distribution | None = Field(
        default=None, description="Requests in flight for this class."
    )
    max_output_tokens: PositiveInt | None = Field(
        default=None, description="The max_tokens the clients send; bounds the longest stream."
    )
    prefix_cache_share: Fraction | None = Field(
        default=0.0,
        description=(
            "Share of prompt tokens expected to hit the prefix cache; null when unknown "
            "(give the reason under unknown.prefix_cache_share)."
        ),
    )
    cancellation_rate: Fraction | None = Field(
        default=0.0,
        description=(
            "Share of requests the client cancels before completion; null when unknown "
            "(give the reason under unknown.cancellation_rate)."
        ),
    )
    unknown: dict[UnknownShare, Reason] = Field(
        default_factory=dict,
        validate_default=True,
        description=(
            "Why a share is null: field -> reason, e.g. {cancellation_rate: the trace records "
            "no cancellations}. Naming a field here is enough to make it null."
        ),
    )
    slo: ClassSLO
    joint_lengths: JointLengths | None = Field(
        default=None,
        description=(
            "Joint histogram of (prompt, output) tokens per request, kept by a trace fit so "
            "the planner draws the two together; absent, they are drawn independently."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _unknown_reads_as_null(cls, data: Any) -> Any:
        # `unknown: {cancellation_rate: ...}` alone must not fall back to the 0.0 default:
        # a reason without a number is a null. (Dumps with exclude_none rely on this too.)
        if isinstance(data, dict) and isinstance(data.get("unknown"), dict):
            missing = [k for k in data["unknown"] if k in UNKNOWN_SHARES and k not in data]
            if missing:
                data = {**data, **dict.fromkeys(missing)}
        return data

    @field_validator("unknown")
    @classmethod
    def _reason_for_each_null(
        cls, unknown: dict[UnknownShare, str], info: ValidationInfo
    ) -> dict[UnknownShare, str]:
        # Checked on `unknown` (validated after both shares, and also when omitted), so the
        # error points where the fix goes.
        for field in UNKNOWN_SHARES:
            if field not in info.data:
                continue  # the share itself failed validation and is reported there
            value, reason = info.data[field], unknown.get(field)
            if value is None and reason is None:
                raise ValueError(
                    f"{field} is null (unknown): say why under unknown.{field}, or state the number"
                )
            if value is not None and reason is not None:
                raise ValueError(
                    f"{field} is {value:g} and also listed under unknown: "
                    "give the number or the reason, not both"
                )
        return unknown

    @field_validator("joint_lengths")
    @classmethod
    def _joint_matches_marginals(
        cls, joint: JointLengths | None, info: ValidationInfo
    ) -> JointLengths | None:
        # Checked on `joint_lengths` (declared after both marginals), so the error names it.
        if joint is None:
            return joint
        for axis in ("prompt", "output"):
            dist = info.data.get(f"{axis}_tokens")
            if not isinstance(dist, Distribution):
                continue  # the marginal itself failed validation and is reported there
            edges: list[float] = getattr(joint, f"{axis}_edges")
            if dist.samples is not None and joint.total != dist.samples:
                raise ValueError(
                    f"counts sum to {joint.total} but {axis}_tokens.samples is "
                    f"{dist.samples}: the joint histogram must count the same requests"
                )
            if dist.min is not None and dist.min < edges[0]:
                raise ValueError(
                    f"{axis}_edges start at {edges[0]:g}, above {axis}_tokens.min ({dist.min:g})"
                )
            if dist.max is not None and dist.max >= edges[-1]:
                raise ValueError(
                    f"{axis}_edges end at {edges[-1]:g}, not above {axis}_tokens.max ({dist.max:g})"
                )
        return joint

    @model_serializer(mode="wrap")
    def _omit_empty_unknown(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A class whose shares are all known, and that has no joint histogram, dumps exactly
        # as before `unknown` and `joint_lengths` existed, so the canonical JSON (and the
        # digest) of such profiles is unchanged.
        data: dict[str, Any] = handler(self)
        if not self.unknown:
            data.pop("unknown", None)
        if self.joint_lengths is None:
            data.pop("joint_lengths", None)
        return data

    def unknown_reason(self, field: UnknownShare) -> str | None:
        """Why ``field`` is unknown (null), or None when the class states it."""
        return self.unknown.get(field)

    @model_validator(mode="after")
    def _tail_coherent(self) -> Self:
        for field in ("prompt_tokens", "output_tokens"):
            dist: Distribution = getattr(self, field)
            p50, p99 = dist.quantile(50), dist.quantile(99)
            if dist.quantiles is not None and (p50 is None or p99 is None):
                raise ValueError(f"{field} quantiles must state at least p50 and p99")
            limit = self.max_output_tokens
            if field == "output_tokens" and limit is not None and p99 is not None and p99 > limit:
                raise ValueError(f"output_tokens p99 ({p99:g}) exceeds max_output_tokens ({limit})")
        return self


class WorkloadProfile(Metadata):
    """What the service must carry: traffic classes and their measured token work."""

    measurement: TraceWindow | None = Field(
        default=None, description="The trace the measured numbers came from."
    )
    classes: list[TrafficClass] = Field(min_length=1)

    @model_validator(mode="after")
    def _classes_and_provenance(self) -> Self:
        names = [c.name for c in self.classes]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(
                f"traffic class names must be unique; repeated: {', '.join(duplicates)}"
            )
        measured = any(
            d is not None and d.basis is Basis.measured
            for c in self.classes
            for d in (c.prompt_tokens, c.output_tokens, c.concurrency)
        ) or any(c.arrival.basis is Basis.measured for c in self.classes)
        if measured and self.measurement is None:
            raise ValueError(
                "measured numbers need their provenance: add 'measurement' (trace_ref, "
                "trace_digest, window_start, window_end) or mark the numbers basis: assumed"
            )
        return self

    def traffic_class(self, name: str) -> TrafficClass | None:
        return next((c for c in self.classes if c.name == name), None)
