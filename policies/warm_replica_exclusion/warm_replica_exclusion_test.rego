package capgate.policies.warm_replica_exclusion_test

import data.capgate.policies.warm_replica_exclusion

_input := {
	"plan": {
		"replicas_per_zone": {"b": 3, "c": 3, "d": 3},
		"total_replicas": 9,
		"autoscaling": {"min_replicas": 9},
		"warmup": {"startup_probe_budget_s": 600, "readiness_requires_model_loaded": true, "count_warming_as_capacity": false},
		"reserve": {"reserve_replicas": 3},
	},
	"provider": {"warmup_s": 240},
	"recomputation": {"min_ready_replicas_at_peak": 6, "warmup_headroom_replicas": 1},
}

test_success_compliant if {
	warm_replica_exclusion.violations == set() with input as _input
}

test_success_fixed_size_plan if {
	warm_replica_exclusion.violations == set() with input as object.union(_input, {"plan": {"autoscaling": null}})
}

test_fail_warming_counted_as_capacity if {
	inp := object.union(_input, {"plan": {"warmup": {"count_warming_as_capacity": true}}, "provider": {"warmup_s": 360}})
	warm_replica_exclusion.violations == {{
		"policy": "warm_replica_exclusion", "rule": "warming_counted_as_capacity", "severity": "high",
		"message": "warmup.count_warming_as_capacity is not false: the plan counts warming replicas as capacity, but a replica takes 360 s to warm",
		"details": {"count_warming_as_capacity": true, "warmup_s": 360},
	}} with input as inp
}

test_fail_readiness_not_gated if {
	inp := json.remove(_input, ["plan/warmup/readiness_requires_model_loaded"])
	warm_replica_exclusion.violations == {{
		"policy": "warm_replica_exclusion", "rule": "readiness_not_gated_on_model", "severity": "high",
		"message": "readiness does not wait for the model to be loaded: set warmup.readiness_requires_model_loaded: true",
		"details": {"readiness_requires_model_loaded": null},
	}} with input as inp
}

test_fail_startup_probe_too_short if {
	warm_replica_exclusion.violations == {{
		"policy": "warm_replica_exclusion", "rule": "startup_probe_too_short", "severity": "high",
		"message": "warmup.startup_probe_budget_s 120 s is shorter than the measured warm-up of 240 s",
		"details": {"startup_probe_budget_s": 120, "warmup_s": 240},
	}} with input as object.union(_input, {"plan": {"warmup": {"startup_probe_budget_s": 120}}})
}

test_fail_min_replicas_below_floor if {
	warm_replica_exclusion.violations == {{
		"policy": "warm_replica_exclusion", "rule": "min_replicas_below_ready_floor", "severity": "high",
		"message": "the replica floor 6 (autoscaling.min_replicas, or the total of replicas_per_zone without autoscaling) is below the 6 ready replicas needed at peak plus a reserve of 3 (9)",
		"details": {
			"min_replicas": 6, "min_ready_replicas_at_peak": 6, "declared_reserve_replicas": 3,
			"largest_zone_replicas": 3, "required_min_replicas": 9,
		},
	}} with input as object.union(_input, {"plan": {"autoscaling": {"min_replicas": 6}}})
}

test_fail_floor_uses_largest_zone_over_declared_reserve if {
	# A reserve of 1 declared, but losing zone b takes 5 replicas away.
	inp := object.union(_input, {"plan": {
		"replicas_per_zone": {"b": 5, "c": 2, "d": 2}, "reserve": {"reserve_replicas": 1},
		"autoscaling": {"min_replicas": 9},
	}})
	[v.details.required_min_replicas | some v in warm_replica_exclusion.violations] == [11] with input as inp
}

test_fail_floor_without_reserve_or_zones if {
	inp := json.patch(_input, [
		{"op": "remove", "path": "/plan/reserve"},
		{"op": "replace", "path": "/plan/replicas_per_zone", "value": {}},
		{"op": "replace", "path": "/plan/autoscaling/min_replicas", "value": 5},
	])
	[v.details.required_min_replicas | some v in warm_replica_exclusion.violations] == [6] with input as inp
}

test_fail_warmup_headroom_missing if {
	inp := object.union(_input, {"plan": {"total_replicas": 9}, "recomputation": {"warmup_headroom_replicas": 4}})
	warm_replica_exclusion.violations == {{
		"policy": "warm_replica_exclusion", "rule": "warmup_headroom_missing", "severity": "high",
		"message": "the plan runs 9 replicas (replicas_per_zone); 6 ready at peak plus 4 headroom for one warm-up needs 10",
		"details": {"total_replicas": 9, "min_ready_replicas_at_peak": 6, "warmup_headroom_replicas": 4, "required_replicas": 10},
	}} with input as inp
}

test_fail_warmup_missing if {
	warm_replica_exclusion.violations == {{
		"policy": "warm_replica_exclusion", "rule": "warmup_missing", "severity": "high",
		"message": "the plan declares no warm-up handling: add warmup (startup_probe_budget_s, readiness_requires_model_loaded, count_warming_as_capacity: false)",
		"details": {"warmup": null},
	}} with input as object.union(_input, {"plan": {"warmup": null}})
}

# Without a sizing the floors cannot be computed: tail_slo reports it, this stays silent.
test_success_no_sizing_leaves_floors_to_tail_slo if {
	warm_replica_exclusion.violations == set() with input as object.union(_input, {"recomputation": {"min_ready_replicas_at_peak": null}})
}

test_fail_measured_warmup_longer_than_stated if {
	ev := {"ref": "ev@v1", "fresh": true, "age_days": 3, "warmup_s": 410}
	inp := object.union(_input, {"evidence": [ev]})
	[[v.rule, v.details.measured_warmup_s, v.details.stated_warmup_s] | some v in warm_replica_exclusion.violations] == [["measured_warmup_exceeds_stated", 410, 240]] with input as inp
}

test_success_measured_warmup_within_stated if {
	ev := {"ref": "ev@v1", "fresh": true, "age_days": 3, "warmup_s": 250}
	warm_replica_exclusion.violations == set() with input as object.union(_input, {"evidence": [ev]})
}
