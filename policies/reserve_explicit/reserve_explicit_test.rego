package capgate.policies.reserve_explicit_test

import data.capgate.policies.reserve_explicit

_met := {"ready_replicas": 8, "slo_met": true, "per_class": {"interactive": {"slo_met": true}, "batch": {"slo_met": true}}}

_input := {
	"plan": {"reserve": {"worker_failures": 1, "zone_failures": 1, "reserve_replicas": 3}},
	"recomputation": {"scenarios": {"one_worker_lost": _met, "largest_zone_lost": object.union(_met, {"ready_replicas": 6})}},
}

test_success_compliant if {
	reserve_explicit.violations == set() with input as _input
}

test_fail_zone_reserve_missing if {
	reserve_explicit.violations == {{
		"policy": "reserve_explicit",
		"rule": "zone_reserve_missing",
		"severity": "high",
		"message": "reserve.zone_failures is 0; at least 1 required",
		"details": {"zone_failures": 0, "min_zone_failures": 1},
	}} with input as object.union(_input, {"plan": {"reserve": {"zone_failures": 0}}})
}

test_fail_worker_reserve_absent_key if {
	reserve_explicit.violations == {{
		"policy": "reserve_explicit",
		"rule": "worker_reserve_missing",
		"severity": "high",
		"message": "reserve.worker_failures is unknown; at least 1 required",
		"details": {"worker_failures": null, "min_worker_failures": 1},
	}} with input as json.remove(_input, ["plan/reserve/worker_failures"])
}

test_fail_reserve_missing if {
	reserve_explicit.violations == {{
		"policy": "reserve_explicit",
		"rule": "reserve_missing",
		"severity": "high",
		"message": "the plan declares no failure reserve: add reserve (worker_failures, zone_failures)",
		"details": {"reserve": null},
	}} with input as object.union(_input, {"plan": {"reserve": null}})
}

test_fail_scenario_missing if {
	reserve_explicit.violations == {{
		"policy": "reserve_explicit",
		"rule": "scenario_missing",
		"severity": "high",
		"message": "the recomputation has no largest_zone_lost scenario (the loss of the largest zone)",
		"details": {"scenario": "largest_zone_lost"},
	}} with input as json.remove(_input, ["recomputation/scenarios/largest_zone_lost"])
}

test_fail_scenario_slo_missed if {
	patch := {"recomputation": {"scenarios": {"largest_zone_lost": {"slo_met": false, "per_class": {"interactive": {"slo_met": false}}}}}}
	reserve_explicit.violations == {{
		"policy": "reserve_explicit",
		"rule": "scenario_slo_missed",
		"severity": "high",
		"message": "after the loss of the largest zone (6 ready replicas) the recomputation misses the SLOs of interactive",
		"details": {"scenario": "largest_zone_lost", "ready_replicas": 6, "failing_classes": ["interactive"]},
	}} with input as object.union(_input, patch)
}
