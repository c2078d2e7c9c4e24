package capgate.policies.drain_configured_test

import data.capgate.policies.drain_configured

_drain := {
	"termination_grace_period_s": 300,
	"pre_stop": {"sleep_s": 10, "wait_for_idle": true, "timeout_s": 280},
	"readiness_off_on_drain": true,
	"disruption_budget": {"max_unavailable": 1},
}

_input := {
	"plan": {"drain": _drain, "autoscaling": {"scale_down_stabilization_s": 600}},
	"evidence": [{"ref": "ev@v1", "fresh": true, "age_days": 6, "per_class": {"a": {"e2e_p99_ms": 88000}, "b": {"e2e_p99_ms": null}}}],
	"recomputation": {"longest_stream_s": 95.30799999999999},
}

test_success_compliant if {
	drain_configured.violations == set() with input as _input
}

test_success_no_autoscaler_no_scale_down_rule if {
	drain_configured.violations == set() with input as object.union(_input, {"plan": {"autoscaling": null}})
}

test_fail_grace_period_too_short if {
	drain_configured.violations == {{
		"policy": "drain_configured",
		"rule": "grace_period_too_short",
		"severity": "high",
		"message": "drain.termination_grace_period_s 30 s is shorter than drain.pre_stop.sleep_s 10 s plus the in-flight tail 95.308 s (105.308 s)",
		"details": {
			"termination_grace_period_s": 30, "pre_stop_sleep_s": 10, "evidence_e2e_p99_s": 88,
			"longest_stream_s": 95.308, "required_s": 105.308,
		},
	}} with input as object.union(_input, {"plan": {"drain": {"termination_grace_period_s": 30}}})
}

test_fail_grace_period_covers_evidence_tail if {
	# The evidence tail (120 s) is longer than the planner's longest stream.
	inp := object.union(_input, {
		"evidence": [{"ref": "ev@v1", "fresh": true, "age_days": 6, "per_class": {"a": {"e2e_p99_ms": 120000}}}],
		"plan": {"drain": {"termination_grace_period_s": 125}},
	})
	[v.details.required_s | some v in drain_configured.violations] == [130] with input as inp
}

test_fail_grace_period_missing_without_evidence if {
	inp := json.remove(object.union(_input, {"evidence": []}), ["plan/drain/termination_grace_period_s"])
	[[v.rule, v.details.termination_grace_period_s, v.details.evidence_e2e_p99_s] | some v in drain_configured.violations] == [["grace_period_too_short", null, 0]] with input as inp
}

test_fail_drain_hooks_missing if {
	inp := object.union(_input, {"plan": {
		"drain": {"pre_stop": null, "readiness_off_on_drain": false, "disruption_budget": null},
		"autoscaling": {"scale_down_stabilization_s": 60},
	}})
	drain_configured.violations == {
		{
			"policy": "drain_configured", "rule": "pre_stop_not_draining", "severity": "high",
			"message": "no pre-stop hook waits for in-flight requests to finish: set drain.pre_stop.wait_for_idle: true",
			"details": {"pre_stop": null},
		},
		{
			"policy": "drain_configured", "rule": "readiness_not_off_on_drain", "severity": "high",
			"message": "readiness does not turn off when a replica starts draining, so it keeps receiving requests: set drain.readiness_off_on_drain: true",
			"details": {"readiness_off_on_drain": false},
		},
		{
			"policy": "drain_configured", "rule": "scale_down_faster_than_drain", "severity": "high",
			"message": "autoscaling.scale_down_stabilization_s 60 s is shorter than drain.termination_grace_period_s 300 s",
			"details": {"scale_down_stabilization_s": 60, "termination_grace_period_s": 300},
		},
		{
			"policy": "drain_configured", "rule": "disruption_budget_missing", "severity": "high",
			"message": "no pod disruption budget limits voluntary evictions: set drain.disruption_budget.max_unavailable",
			"details": {"disruption_budget": null},
		},
	} with input as inp
}

test_fail_scale_down_default_window if {
	# No window declared: the Kubernetes default of 300 s is shorter than a 400 s drain.
	inp := json.remove(object.union(_input, {"plan": {"drain": {"termination_grace_period_s": 400}}}), ["plan/autoscaling/scale_down_stabilization_s"])
	[v.details | some v in drain_configured.violations] == [{"scale_down_stabilization_s": 300, "termination_grace_period_s": 400}] with input as inp
}

test_fail_drain_missing if {
	drain_configured.violations == {{
		"policy": "drain_configured", "rule": "drain_missing", "severity": "high",
		"message": "the plan declares no drain configuration: add a drain section (termination_grace_period_s, pre_stop, readiness_off_on_drain, disruption_budget)",
		"details": {"drain": null},
	}} with input as object.union(_input, {"plan": {"drain": null}})
}

test_fail_disruption_budget_lets_every_replica_go if {
	inp := object.union(_input, {
		"plan": {"total_replicas": 9, "drain": {"disruption_budget": {"max_unavailable": 9}}},
		"recomputation": {"min_ready_replicas_at_peak": 4},
	})
	drain_configured.violations == {{
		"policy": "drain_configured", "rule": "disruption_budget_too_loose", "severity": "high",
		"message": "drain.disruption_budget.max_unavailable 9 lets 9 of 9 replicas go at once, leaving fewer than the 4 ready replicas needed at peak",
		"details": {"max_unavailable": 9, "total_replicas": 9, "min_ready_replicas_at_peak": 4},
	}} with input as inp
}

test_success_disruption_budget_keeps_the_peak if {
	inp := object.union(_input, {
		"plan": {"total_replicas": 9, "drain": {"disruption_budget": {"max_unavailable": 5}}},
		"recomputation": {"min_ready_replicas_at_peak": 4},
	})
	drain_configured.violations == set() with input as inp
}

test_fail_pre_stop_gives_up_before_the_tail if {
	inp := object.union(_input, {"plan": {"drain": {"pre_stop": {"timeout_s": 60}}}})
	drain_configured.violations == {{
		"policy": "drain_configured", "rule": "pre_stop_gives_up_early", "severity": "high",
		"message": "drain.pre_stop.timeout_s 60 s is shorter than the in-flight tail 95.308 s: the hook gives up while the longest streams still run",
		"details": {"pre_stop_timeout_s": 60, "tail_s": 95.30799999999999},
	}} with input as inp
}

_zones := {"us-east1-b": 3, "us-east1-c": 3, "us-east1-d": 3}

test_fail_disruption_budget_spends_the_zone_reserve if {
	# 9 - 5 = 4 ready with every zone up; with the largest zone (3) lost, 1.
	inp := object.union(_input, {
		"plan": {"total_replicas": 9, "replicas_per_zone": _zones, "drain": {"disruption_budget": {"max_unavailable": 5}}},
		"recomputation": {"min_ready_replicas_at_peak": 4},
	})
	drain_configured.violations == {{
		"policy": "drain_configured", "rule": "disruption_budget_spends_reserve", "severity": "high",
		"message": "drain.disruption_budget.max_unavailable 5 with the largest zone (3 replicas) lost leaves 1 of 9 replicas ready, fewer than the 4 needed at peak: set it to at most 2",
		"details": {
			"max_unavailable": 5, "total_replicas": 9, "largest_zone_replicas": 3,
			"ready_after_zone_loss_and_drain": 1, "min_ready_replicas_at_peak": 4,
			"max_unavailable_allowed": 2,
		},
	}} with input as inp
}

test_success_disruption_budget_within_the_zone_reserve if {
	inp := object.union(_input, {
		"plan": {"total_replicas": 9, "replicas_per_zone": _zones, "drain": {"disruption_budget": {"max_unavailable": 2}}},
		"recomputation": {"min_ready_replicas_at_peak": 4},
	})
	drain_configured.violations == set() with input as inp
}

test_fail_no_budget_fits_the_zone_reserve if {
	# 6 survive the zone and 6 are needed: even one eviction goes below the peak.
	inp := object.union(_input, {
		"plan": {"total_replicas": 9, "replicas_per_zone": _zones},
		"recomputation": {"min_ready_replicas_at_peak": 6},
	})
	some v in drain_configured.violations with input as inp
	v.rule == "disruption_budget_spends_reserve"
	v.details.max_unavailable_allowed == 0
	endswith(v.message, "no budget above 0 keeps the peak served through a zone loss; add replicas (replicas_per_zone) so that a node drain can proceed")
}
