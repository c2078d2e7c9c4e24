package capgate.policies.load_test_coverage_test

import data.capgate.policies.load_test_coverage

_evidence := {
	"ref": "ev@v1", "fresh": true, "age_days": 6, "entry": "imported",
	"findings": {"cancellation_exercised": true, "priority_classes": 2},
}

_input := {
	"workload": {"classes": {"interactive": {"priority": 0}, "batch": {"priority": 1}}},
	"evidence": [_evidence],
}

test_success_compliant if {
	load_test_coverage.violations == set() with input as _input
}

test_success_single_priority_workload if {
	inp := {
		"workload": {"classes": {"interactive": {"priority": 0}, "chat": {"priority": 0}}},
		"evidence": [object.union(_evidence, {"findings": {"priority_classes": 1}})],
	}
	load_test_coverage.violations == set() with input as inp
}

test_success_coverage_split_over_tests if {
	a := object.union(_evidence, {"findings": {"priority_classes": 1}})
	b := object.union(_evidence, {"ref": "b@v1", "findings": {"cancellation_exercised": false}})
	load_test_coverage.violations == set() with input as object.union(_input, {"evidence": [a, b]})
}

test_fail_no_cancellation if {
	inp := object.union(_input, {"evidence": [object.union(_evidence, {"findings": {"cancellation_exercised": false}})]})
	load_test_coverage.violations == {{
		"policy": "load_test_coverage", "rule": "cancellation_not_exercised", "severity": "high",
		"message": "none of the 1 fresh load tests exercised cancellation",
		"details": {"evidence": ["ev@v1"]},
	}} with input as inp
}

test_fail_priorities_not_mixed if {
	inp := object.union(_input, {"evidence": [object.union(_evidence, {"findings": {"priority_classes": 1}})]})
	load_test_coverage.violations == {{
		"policy": "load_test_coverage", "rule": "priorities_not_mixed", "severity": "high",
		"message": "the workload has 2 priorities but no fresh load test offered 2 priority classes together",
		"details": {
			"workload_priorities": 2, "required_priority_classes": 2,
			"evidence": [{"evidence": "ev@v1", "priority_classes": 1}],
		},
	}} with input as inp
}

test_fail_only_stale_tests if {
	inp := object.union(_input, {"evidence": [object.union(_evidence, {"fresh": false})]})
	{v.rule | some v in load_test_coverage.violations} == {"cancellation_not_exercised", "priorities_not_mixed"} with input as inp
}

test_fail_declared_tests_do_not_cover if {
	inp := object.union(_input, {"evidence": [object.union(_evidence, {"entry": "declared"})]})
	{v.rule | some v in load_test_coverage.violations} == {"cancellation_not_exercised", "priorities_not_mixed"} with input as inp
}

test_success_declared_tests_cover_when_switched_off if {
	inp := object.union(_input, {"evidence": [object.union(_evidence, {"entry": "declared"})]})
	load_test_coverage.violations == set() with input as inp
		with data.capgate.thresholds.require_imported_evidence.load_test_coverage as false
}

# ---- the cancellation rate each class was tested at ---------------------------------

_cancelling_input(tested) := {
	"workload": {"classes": {
		"interactive": {"priority": 0, "cancellation_rate": 0.04},
		"batch": {"priority": 1, "cancellation_rate": 0},
	}},
	"evidence": [object.union(_evidence, {"per_class": {
		"interactive": {"cancellation_rate": tested},
		"batch": {"cancellation_rate": 0},
	}})],
}

test_success_cancellation_rate_within_band if {
	load_test_coverage.violations == set() with input as _cancelling_input(0.035)
}

test_success_cancellation_rate_at_both_ends_of_band if {
	load_test_coverage.violations == set() with input as _cancelling_input(0.02)
	load_test_coverage.violations == set() with input as _cancelling_input(0.08)
}

test_fail_cancellation_rate_below_band if {
	load_test_coverage.violations == {{
		"policy": "load_test_coverage", "rule": "cancellation_rate_not_tested", "severity": "high",
		"message": "class interactive: the workload cancels 0.04 of its requests but no fresh load test cancelled the class at load_test_min_cancellation_share 0.5 to load_test_max_cancellation_share 2 times that rate; tested: ev@v1 0.004; rerun with the tool's cancellation rate set to the workload's (AIPerf --request-cancellation-rate, in percent)",
		"details": {
			"class": "interactive", "workload_cancellation_rate": 0.04, "min_share": 0.5, "max_share": 2,
			"evidence": [{"evidence": "ev@v1", "cancellation_rate": 0.004}],
		},
	}} with input as _cancelling_input(0.004)
}

test_fail_cancellation_rate_above_band if {
	{v.rule | some v in load_test_coverage.violations} == {"cancellation_rate_not_tested"} with input as _cancelling_input(0.3)
}

test_fail_cancellation_rate_unknown if {
	inp := _cancelling_input(null)
	{v.message | some v in load_test_coverage.violations} == {"class interactive: the workload cancels 0.04 of its requests but no fresh load test cancelled the class at load_test_min_cancellation_share 0.5 to load_test_max_cancellation_share 2 times that rate; tested: ev@v1 unknown; rerun with the tool's cancellation rate set to the workload's (AIPerf --request-cancellation-rate, in percent)"} with input as inp
}

test_fail_class_never_tested if {
	inp := object.union(_cancelling_input(0.04), {"evidence": [object.union(_evidence, {"per_class": {"batch": {"cancellation_rate": 0}}})]})
	{v.message | some v in load_test_coverage.violations} == {"class interactive: the workload cancels 0.04 of its requests but no fresh load test cancelled the class at load_test_min_cancellation_share 0.5 to load_test_max_cancellation_share 2 times that rate; tested: no fresh test offered the class; rerun with the tool's cancellation rate set to the workload's (AIPerf --request-cancellation-rate, in percent)"} with input as inp
}

test_success_band_met_by_another_test if {
	inp := _cancelling_input(0.004)
	other := object.union(_evidence, {"ref": "b@v1", "per_class": {"interactive": {"cancellation_rate": 0.05}}})
	load_test_coverage.violations == set() with input as object.union(inp, {"evidence": array.concat(inp.evidence, [other])})
}

test_fail_stale_test_does_not_meet_band if {
	inp := _cancelling_input(0.004)
	other := object.union(_evidence, {"ref": "b@v1", "fresh": false, "per_class": {"interactive": {"cancellation_rate": 0.05}}})
	{v.rule | some v in load_test_coverage.violations} == {"cancellation_rate_not_tested"} with input as object.union(inp, {"evidence": array.concat(inp.evidence, [other])})
}

test_success_unknown_workload_rate_is_not_judged if {
	inp := json.patch(_cancelling_input(0.004), [{"op": "replace", "path": "/workload/classes/interactive/cancellation_rate", "value": null}])
	load_test_coverage.violations == set() with input as inp
}

test_success_band_is_policy_data if {
	load_test_coverage.violations == set() with input as _cancelling_input(0.004)
		with data.capgate.thresholds.load_test_min_cancellation_share as 0.1
}
