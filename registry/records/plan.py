"""Capacity plan: what a team intends to deploy, and what it claims that achieves."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from registry.records.autoscaling_metric import AutoscalingMetric
from registry.records.common import (
    Bool,
    Fraction,
    Metadata,
    Name,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Record,
    Text,
)

# vLLM accepts these block sizes (CUDA supports up to 32; MLA models force 64/128).
BLOCK_SIZES = (1, 8, 16, 32, 64, 128)


class Parallelism(Record):
    tensor_parallel: PositiveInt = 1
    gpus_per_replica: PositiveInt = 1

    @model_validator(mode="after")
    def _tp_divides(self) -> Self:
        if self.gpus_per_replica % self.tensor_parallel:
            raise ValueError(
                f"tensor_parallel ({self.tensor_parallel}) must divide gpus_per_replica "
                f"({self.gpus_per_replica})"
            )
        return self

    @property
    def pipeline_parallel(self) -> int:
        return self.gpus_per_replica // self.tensor_parallel


class SchedulingPolicy(StrEnum):
    fcfs = "fcfs"
    priority = "priority"


class ServingConfig(Record):
    """The runtime settings that change batching and memory (vLLM names)."""

    max_num_seqs: PositiveInt
    max_num_batched_tokens: PositiveInt
    gpu_memory_utilization: Fraction
    block_size: PositiveInt = 16
    max_model_len: PositiveInt
    enable_chunked_prefill: Bool = True
    enable_prefix_caching: Bool = True
    scheduling_policy: SchedulingPolicy = SchedulingPolicy.fcfs

    @model_validator(mode="after")
    def _valid(self) -> Self:
        if self.block_size not in BLOCK_SIZES:
            raise ValueError(f"block_size must be one of {', '.join(map(str, BLOCK_SIZES))}")
        if self.gpu_memory_utilization == 0:
            raise ValueError("gpu_memory_utilization must be above 0")
        if not self.enable_chunked_prefill and self.max_num_batched_tokens < self.max_model_len:
            raise ValueError(
                "without chunked prefill, max_num_batched_tokens must be at least max_model_len"
            )
        return self


class ClassAdmission(Record):
    queue_deadline_ms: PositiveFloat = Field(
        description="Requests waiting longer than this are shed."
    )
    max_queue_depth: PositiveInt | None = Field(
        default=None, description="Bound on waiting requests per replica; unbounded when absent."
    )
    shed_when_full: Bool = Field(default=True, description="Reject (429) when the queue is full.")


class RetryPolicy(Record):
    """Client retries of shed or failed requests; unbounded retries multiply overload."""

    max_attempts: PositiveInt | None = Field(
        default=None, description="Total attempts including the first; unbounded when absent."
    )
    backoff_initial_ms: NonNegativeFloat = 0.0
    backoff_max_ms: NonNegativeFloat = 0.0
    jitter: Bool = False
    retry_budget_ratio: Fraction | None = Field(
        default=None, description="Retries allowed as a share of first attempts (e.g. 0.1)."
    )


class Admission(Record):
    classes: dict[Name, ClassAdmission] = Field(
        default_factory=dict, description="Per traffic class; keys are the workload's class names."
    )
    retry: RetryPolicy = Field(default_factory=RetryPolicy)


class Autoscaling(Record):
    metric: AutoscalingMetric
    target: PositiveFloat
    min_replicas: PositiveInt
    max_replicas: PositiveInt
    scale_up_stabilization_s: NonNegativeFloat = 0.0
    scale_down_stabilization_s: NonNegativeFloat = 300.0

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        if self.max_replicas < self.min_replicas:
            raise ValueError(
                f"max_replicas ({self.max_replicas}) is below min_replicas ({self.min_replicas})"
            )
        return self


class PreStop(Record):
    sleep_s: NonNegativeFloat = Field(description="Wait for endpoint removal to propagate.")
    wait_for_idle: Bool = Field(
        description="Poll running + waiting requests until zero before the runtime gets TERM."
    )
    timeout_s: NonNegativeFloat = 0.0


class DisruptionBudget(Record):
    max_unavailable: NonNegativeInt


class Drain(Record):
    termination_grace_period_s: PositiveFloat
    pre_stop: PreStop | None = None
    readiness_off_on_drain: Bool = False
    disruption_budget: DisruptionBudget | None = None
    rollout_max_unavailable: NonNegativeInt | None = None


class WarmupHandling(Record):
    startup_probe_budget_s: PositiveFloat = Field(
        description="failureThreshold x periodSeconds of the startupProbe."
    )
    readiness_requires_model_loaded: Bool
    count_warming_as_capacity: Bool = False


class Reserve(Record):
    """The failure the plan is sized to survive, declared rather than implied."""

    worker_failures: NonNegativeInt = Field(description="Workers that may fail at once.")
    zone_failures: NonNegativeInt = Field(description="Zones that may fail at once.")
    reserve_replicas: NonNegativeInt = Field(
        description="Ready replicas above what peak load needs."
    )


class ClassClaim(Record):
    ttft_p99_ms: PositiveFloat | None = None
    tpot_p99_ms: PositiveFloat | None = None
    e2e_p99_ms: PositiveFloat | None = None


class Claims(Record):
    """What the plan's authors say it achieves; the planner checks, never trusts."""

    peak_rps: PositiveFloat | None = None
    ready_replicas_needed_at_peak: PositiveInt | None = None
    per_class: dict[Name, ClassClaim] = Field(default_factory=dict)
    partitioning_rationale: Text | None = None


# The most ready replicas one plan may place, in all (and so in any zone). Sizing work
# grows with the fleet (4,095 replicas recompute in about 11 s and 200 MB on 2 cores;
# 30,000 took 37 s and 840 MB, 3 x 10^7 exhausted 20 GB): a plan beyond this is split
# into several plans, one per serving pool. The planner's search stops here too.
MAX_PLAN_REPLICAS = 4096


class CapacityPlan(Metadata):
    workload: Text = Field(
        description="Reference to the workload profile: name, name@vN or digest."
    )
    provider: Text = Field(description="Reference to the provider profile.")
    replicas_per_zone: dict[Name, Annotated[NonNegativeInt, Field(le=MAX_PLAN_REPLICAS)]] = Field(
        min_length=1, max_length=64
    )
    parallelism: Parallelism = Field(default_factory=Parallelism)
    serving: ServingConfig
    admission: Admission = Field(default_factory=Admission)
    autoscaling: Autoscaling | None = None
    drain: Drain | None = None
    warmup: WarmupHandling | None = None
    reserve: Reserve | None = None
    claims: Claims = Field(default_factory=Claims)
    load_balancer: Literal["least_outstanding", "round_robin", "random"] = "least_outstanding"

    @model_validator(mode="after")
    def _replicas(self) -> Self:
        total = sum(self.replicas_per_zone.values())
        if total == 0:
            raise ValueError("replicas_per_zone places no replica")
        if total > MAX_PLAN_REPLICAS:
            raise ValueError(
                f"replicas_per_zone places {total} replicas, more than the {MAX_PLAN_REPLICAS} "
                "one plan may hold: split the fleet into one plan per serving pool"
            )
        return self

    @property
    def total_replicas(self) -> int:
        return sum(self.replicas_per_zone.values())
