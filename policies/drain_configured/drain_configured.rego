# METADATA
# title: Scale-down drains active work
# description: >-
#   The termination grace period covers the pre-stop sleep plus the tail of in-flight
#   work (the larger of the fresh evidence's p99 end-to-end latency and the planner's
#   longest allowed stream); a pre-stop hook waits for idle; readiness turns off on
#   drain; scale-down stabilisation is at least the grace period; a disruption budget
#   exists. A missing autoscaling scale-down window counts as the Kubernetes default
#   (hpa_default_scale_down_stabilization_s).
# custom:
#   id: drain_configured
#   severity: high
#   guards: "checklist: scale-down drains active work safely"
package capgate.policies.drain_configured

import data.capgate.lib.evidence
import data.capgate.lib.plan
import data.capgate.lib.result

_policy := "drain_configured"

_thresholds := data.capgate.thresholds

_drain := input.plan.drain

_grace := _drain.termination_grace_period_s

_declared if is_object(_drain)

_pre_stop_sleep_s := s if {
	s := _drain.pre_stop.sleep_s
	is_number(s)
} else := 0

_fresh := evidence.fresh(input.evidence, _thresholds.evidence_max_age_days)

_evidence_e2e_p99_ms := [ms |
	some e in _fresh
	some class in e.per_class
	ms := class.e2e_p99_ms
	is_number(ms)
]

_evidence_tail_s := max(_evidence_e2e_p99_ms) / 1000 if {
	count(_evidence_e2e_p99_ms) > 0
} else := 0

_tail_s := max([_evidence_tail_s, input.recomputation.longest_stream_s])

_required_grace_s := _pre_stop_sleep_s + _tail_s

_scale_down_s := s if {
	s := input.plan.autoscaling.scale_down_stabilization_s
	is_number(s)
} else := _thresholds.hpa_default_scale_down_stabilization_s

# METADATA
# title: Drain declared
# description: The plan has a drain section.
# custom:
#   severity: high
#   guards: "checklist: scale-down drains active work safely"
violations contains v if {
	not _declared
	v := result.violation(
		_policy, "drain_missing", "high",
		"the plan declares no drain configuration: add a drain section (termination_grace_period_s, pre_stop, readiness_off_on_drain, disruption_budget)",
		{"drain": null},
	)
}

# METADATA
# title: Grace period covers in-flight work
# description: >-
#   termination_grace_period_s >= pre_stop.sleep_s + max(fresh evidence e2e p99,
#   recomputation.longest_stream_s), in seconds.
# custom:
#   severity: high
#   guards: "checklist: scale-down drains active work safely"
violations contains v if {
	is_object(_drain)
	not _grace_covers_tail
	v := result.violation(
		_policy, "grace_period_too_short", "high",
		concat("", ["drain.termination_grace_period_s ", result.show(object.get(_drain, "termination_grace_period_s", null)), " s is shorter than drain.pre_stop.sleep_s ", result.show(_pre_stop_sleep_s), " s plus the in-flight tail ", result.show(_tail_s), " s (", result.show(_required_grace_s), " s)"]),
		{
			"termination_grace_period_s": object.get(_drain, "termination_grace_period_s", null),
			"pre_stop_sleep_s": _pre_stop_sleep_s,
			"evidence_e2e_p99_s": result.rounded(_evidence_tail_s),
			"longest_stream_s": result.rounded(input.recomputation.longest_stream_s),
			"required_s": result.rounded(_required_grace_s),
		},
	)
}

_grace_covers_tail if {
	is_number(_grace)
	_grace >= _required_grace_s
}

# METADATA
# title: Pre-stop hook drains
# description: A pre-stop hook waits until the replica is idle (pre_stop.wait_for_idle).
# custom:
#   severity: high
#   guards: "checklist: scale-down drains active work safely"
violations contains v if {
	is_object(_drain)
	not _pre_stop_waits_for_idle
	v := result.violation(
		_policy, "pre_stop_not_draining", "high",
		"no pre-stop hook waits for in-flight requests to finish: set drain.pre_stop.wait_for_idle: true",
		{"pre_stop": object.get(_drain, "pre_stop", null)},
	)
}

_pre_stop_waits_for_idle if _drain.pre_stop.wait_for_idle == true

# METADATA
# title: Readiness off on drain
# description: The replica reports not-ready as soon as it starts draining.
# custom:
#   severity: high
#   guards: "checklist: scale-down drains active work safely"
violations contains v if {
	is_object(_drain)
	object.get(_drain, "readiness_off_on_drain", null) != true
	v := result.violation(
		_policy, "readiness_not_off_on_drain", "high",
		"readiness does not turn off when a replica starts draining, so it keeps receiving requests: set drain.readiness_off_on_drain: true",
		{"readiness_off_on_drain": object.get(_drain, "readiness_off_on_drain", null)},
	)
}

# METADATA
# title: Scale-down slower than a drain
# description: >-
#   The autoscaler's scale-down stabilisation window is at least the termination grace
#   period, so it does not remove replicas faster than they drain.
# custom:
#   severity: high
#   guards: "checklist: scale-down drains active work safely"
violations contains v if {
	is_object(_drain)
	is_object(input.plan.autoscaling)
	is_number(_grace)
	_scale_down_s < _grace
	v := result.violation(
		_policy, "scale_down_faster_than_drain", "high",
		concat("", ["autoscaling.scale_down_stabilization_s ", result.show(_scale_down_s), " s is shorter than drain.termination_grace_period_s ", result.show(_grace), " s"]),
		{"scale_down_stabilization_s": _scale_down_s, "termination_grace_period_s": _grace},
	)
}

# METADATA
# title: Disruption budget exists
# description: A disruption budget limits voluntary evictions (node drains).
# custom:
#   severity: high
#   guards: "checklist: scale-down drains active work safely"
violations contains v if {
	is_object(_drain)
	not _has_disruption_budget
	v := result.violation(
		_policy, "disruption_budget_missing", "high",
		"no pod disruption budget limits voluntary evictions: set drain.disruption_budget.max_unavailable",
		{"disruption_budget": object.get(_drain, "disruption_budget", null)},
	)
}

_has_disruption_budget if {
	is_object(_drain.disruption_budget)
	count(_drain.disruption_budget) > 0
}

# METADATA
# title: Disruption budget keeps the peak served
# description: >-
#   The disruption budget's max_unavailable leaves at least the ready replicas the
#   recomputation needs at peak (total_replicas - max_unavailable >=
#   min_ready_replicas_at_peak): a node drain may not take the service below its peak.
# custom:
#   severity: high
#   guards: "checklist: scale-down drains active work safely"
violations contains v if {
	allowed := _drain.disruption_budget.max_unavailable
	needed := input.recomputation.min_ready_replicas_at_peak
	is_number(allowed)
	is_number(needed)
	input.plan.total_replicas - allowed < needed
	v := result.violation(
		_policy, "disruption_budget_too_loose", "high",
		concat("", ["drain.disruption_budget.max_unavailable ", result.show(allowed), " lets ", result.show(allowed), " of ", result.show(input.plan.total_replicas), " replicas go at once, leaving fewer than the ", result.show(needed), " ready replicas needed at peak"]),
		{"max_unavailable": allowed, "total_replicas": input.plan.total_replicas, "min_ready_replicas_at_peak": needed},
	)
}

_largest_zone := plan.largest_zone_replicas

# METADATA
# title: Disruption budget leaves the peak served after a zone loss
# description: >-
#   A node drain during the loss of the largest zone, the reserve the plan declares, still
#   leaves the ready replicas the recomputation needs at peak: total_replicas - the largest
#   zone's replicas - max_unavailable >= min_ready_replicas_at_peak. A budget that passes
#   only with every zone up spends the zone reserve on voluntary evictions.
# custom:
#   severity: high
#   guards: "checklist: scale-down drains active work safely"
violations contains v if {
	allowed := _drain.disruption_budget.max_unavailable
	needed := input.recomputation.min_ready_replicas_at_peak
	is_number(allowed)
	is_number(needed)

	# One zone has no zone reserve to spend: reserve_explicit judges that plan.
	count(input.plan.replicas_per_zone) > 1
	total := input.plan.total_replicas
	total - allowed >= needed
	left := (total - _largest_zone) - allowed
	left < needed
	may := (total - _largest_zone) - needed
	v := result.violation(
		_policy, "disruption_budget_spends_reserve", "high",
		concat("", ["drain.disruption_budget.max_unavailable ", result.show(allowed), " with the largest zone (", result.show(_largest_zone), " replicas) lost leaves ", result.show(left), " of ", result.show(total), " replicas ready, fewer than the ", result.show(needed), " needed at peak: ", _may_allow(may)]),
		{
			"max_unavailable": allowed, "total_replicas": total, "largest_zone_replicas": _largest_zone,
			"ready_after_zone_loss_and_drain": left, "min_ready_replicas_at_peak": needed,
			"max_unavailable_allowed": max([may, 0]),
		},
	)
}

_may_allow(may) := concat("", ["set it to at most ", result.show(may)]) if may >= 1

else := "no budget above 0 keeps the peak served through a zone loss; add replicas (replicas_per_zone) so that a node drain can proceed"

# METADATA
# title: Pre-stop waits out the tail
# description: >-
#   A pre-stop hook that waits for idle gives up after pre_stop.timeout_s: that must cover
#   the in-flight tail (the larger of fresh evidence's e2e p99 and the longest allowed
#   stream), or it cuts the longest streams.
# custom:
#   severity: high
#   guards: "checklist: scale-down drains active work safely"
violations contains v if {
	_pre_stop_waits_for_idle
	timeout := _drain.pre_stop.timeout_s
	is_number(timeout)
	timeout < _tail_s
	v := result.violation(
		_policy, "pre_stop_gives_up_early", "high",
		concat("", ["drain.pre_stop.timeout_s ", result.show(timeout), " s is shorter than the in-flight tail ", result.show(_tail_s), " s: the hook gives up while the longest streams still run"]),
		{"pre_stop_timeout_s": timeout, "tail_s": _tail_s},
	)
}
