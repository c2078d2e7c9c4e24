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
