# METADATA
# title: Warming replicas are not capacity
# description: >-
#   Capacity counts only ready replicas: warming replicas are not counted as capacity,
#   readiness waits for the model to load, the startup probe outlasts the measured
#   warm-up, the autoscaling floor covers the peak plus the failure reserve without any
#   warming replica, and the plan carries headroom for the peak's growth during one
#   warm-up. The floor is recomputation.min_ready_replicas_at_peak plus the larger of
#   plan.reserve.reserve_replicas and the replicas of the plan's largest zone (what a
#   zone failure takes away), so a declared reserve smaller than a zone cannot lower
#   it. Without autoscaling the floor is plan.total_replicas.
# custom:
#   id: warm_replica_exclusion
#   severity: high
#   guards: "failure mode: cold replicas are counted as ready capacity"
package capgate.policies.warm_replica_exclusion

import data.capgate.lib.evidence
import data.capgate.lib.plan
import data.capgate.lib.result

_policy := "warm_replica_exclusion"

_warmup := input.plan.warmup

_declared if is_object(_warmup)

# Null when no replica count meets the SLOs: tail_slo reports that, and the floors
# below, which cannot be computed without it, stay silent rather than erroring.
_min_ready := m if {
	m := input.recomputation.min_ready_replicas_at_peak
	is_number(m)
}

_declared_reserve := r if {
	r := input.plan.reserve.reserve_replicas
	is_number(r)
} else := 0

_largest_zone := plan.largest_zone_replicas

_reserve_replicas := max([_declared_reserve, _largest_zone])

_required_floor := _min_ready + _reserve_replicas

_floor := f if {
	is_object(input.plan.autoscaling)
	f := object.get(input.plan.autoscaling, "min_replicas", null)
} else := input.plan.total_replicas

# METADATA
# title: Warm-up handling declared
# description: The plan has a warmup section.
# custom:
#   severity: high
#   guards: "failure mode: cold replicas are counted as ready capacity"
violations contains v if {
	not _declared
	v := result.violation(
		_policy, "warmup_missing", "high",
		"the plan declares no warm-up handling: add warmup (startup_probe_budget_s, readiness_requires_model_loaded, count_warming_as_capacity: false)",
		{"warmup": null},
	)
}

# METADATA
# title: Warming replicas not counted
# description: warmup.count_warming_as_capacity is false.
# custom:
#   severity: high
#   guards: "failure mode: cold replicas are counted as ready capacity"
violations contains v if {
	is_object(_warmup)
	object.get(_warmup, "count_warming_as_capacity", null) != false
	v := result.violation(
		_policy, "warming_counted_as_capacity", "high",
		concat("", ["warmup.count_warming_as_capacity is not false: the plan counts warming replicas as capacity, but a replica takes ", result.show(input.provider.warmup_s), " s to warm"]),
		{
			"count_warming_as_capacity": object.get(_warmup, "count_warming_as_capacity", null),
			"warmup_s": input.provider.warmup_s,
		},
	)
}

# METADATA
# title: Readiness gated on the model
# description: warmup.readiness_requires_model_loaded is true.
# custom:
#   severity: high
#   guards: "failure mode: cold replicas are counted as ready capacity"
violations contains v if {
	is_object(_warmup)
	object.get(_warmup, "readiness_requires_model_loaded", null) != true
	v := result.violation(
		_policy, "readiness_not_gated_on_model", "high",
		"readiness does not wait for the model to be loaded: set warmup.readiness_requires_model_loaded: true",
		{"readiness_requires_model_loaded": object.get(_warmup, "readiness_requires_model_loaded", null)},
	)
}

# METADATA
# title: Startup probe outlasts warm-up
# description: warmup.startup_probe_budget_s is at least the provider's measured warmup_s.
# custom:
#   severity: high
#   guards: "failure mode: cold replicas are counted as ready capacity"
violations contains v if {
	is_object(_warmup)
	not _startup_budget_covers_warmup
	v := result.violation(
		_policy, "startup_probe_too_short", "high",
		concat("", ["warmup.startup_probe_budget_s ", result.show(object.get(_warmup, "startup_probe_budget_s", null)), " s is shorter than the measured warm-up of ", result.show(input.provider.warmup_s), " s"]),
		{
			"startup_probe_budget_s": object.get(_warmup, "startup_probe_budget_s", null),
			"warmup_s": input.provider.warmup_s,
		},
	)
}

_startup_budget_covers_warmup if {
	is_number(_warmup.startup_probe_budget_s)
	_warmup.startup_probe_budget_s >= input.provider.warmup_s
}

# METADATA
# title: Floor covers peak plus reserve
# description: >-
#   autoscaling.min_replicas (or total_replicas without autoscaling) is at least
#   min_ready_replicas_at_peak + max(reserve.reserve_replicas, largest zone's replicas):
#   when load returns to peak, the replicas still warming cannot carry it.
# custom:
#   severity: high
#   guards: "failure mode: cold replicas are counted as ready capacity"
violations contains v if {
	not _floor_covers_peak
	v := result.violation(
		_policy, "min_replicas_below_ready_floor", "high",
		concat("", ["the replica floor ", result.show(_floor), " (autoscaling.min_replicas, or the total of replicas_per_zone without autoscaling) is below the ", result.show(_min_ready), " ready replicas needed at peak plus a reserve of ", result.show(_reserve_replicas), " (", result.show(_required_floor), ")"]),
		{
			"min_replicas": _floor,
			"min_ready_replicas_at_peak": _min_ready,
			"declared_reserve_replicas": _declared_reserve,
			"largest_zone_replicas": _largest_zone,
			"required_min_replicas": _required_floor,
		},
	)
}

_floor_covers_peak if {
	is_number(_floor)
	_floor >= _required_floor
}

# METADATA
# title: Headroom for warm-up
# description: >-
#   plan.total_replicas is at least min_ready_replicas_at_peak +
#   warmup_headroom_replicas, to absorb the peak's growth during one warm-up.
# custom:
#   severity: high
#   guards: "method: use admission and backpressure while replicas warm"
violations contains v if {
	required := _min_ready + input.recomputation.warmup_headroom_replicas
	input.plan.total_replicas < required
	v := result.violation(
		_policy, "warmup_headroom_missing", "high",
		concat("", ["the plan runs ", result.show(input.plan.total_replicas), " replicas (replicas_per_zone); ", result.show(_min_ready), " ready at peak plus ", result.show(input.recomputation.warmup_headroom_replicas), " headroom for one warm-up needs ", result.show(required)]),
		{
			"total_replicas": input.plan.total_replicas,
			"min_ready_replicas_at_peak": _min_ready,
			"warmup_headroom_replicas": input.recomputation.warmup_headroom_replicas,
			"required_replicas": required,
		},
	)
}

_fresh := evidence.fresh(input.evidence, data.capgate.thresholds.evidence_max_age_days)

_warmup_allowed := input.provider.warmup_s * (1 + data.capgate.thresholds.warmup_measured_max_excess)

# METADATA
# title: Measured warm-up within the stated one
# description: >-
#   A fresh load test that measured a replica's cold start (evidence.warmup_s) took no
#   longer than the provider's stated warmup_s plus warmup_measured_max_excess of it:
#   every warm-up figure above (startup probe, headroom) rests on the stated one.
# custom:
#   severity: high
#   guards: "failure mode: cold replicas are counted as ready capacity"
violations contains v if {
	some e in _fresh
	is_number(e.warmup_s)
	e.warmup_s > _warmup_allowed
	v := result.violation(
		_policy, "measured_warmup_exceeds_stated", "high",
		concat("", ["evidence ", e.ref, " measured a warm-up of ", result.show(e.warmup_s), " s, longer than the provider's stated ", result.show(input.provider.warmup_s), " s (plus warmup_measured_max_excess ", result.show(data.capgate.thresholds.warmup_measured_max_excess), "): correct the provider's warmup.cold_start_to_ready_s"]),
		{
			"evidence": e.ref,
			"measured_warmup_s": e.warmup_s,
			"stated_warmup_s": input.provider.warmup_s,
			"max_excess": data.capgate.thresholds.warmup_measured_max_excess,
		},
	)
}
