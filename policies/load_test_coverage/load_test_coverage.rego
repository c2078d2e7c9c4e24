# METADATA
# title: Load tests cover cancellation and mixed priorities
# description: >-
#   Fresh load-test evidence includes a test that exercised cancellation and, when the
#   workload has at least two distinct priorities, a test that offered at least
#   load_test_min_priority_classes priority classes at once. Only imported evidence counts
#   while require_imported_evidence.load_test_coverage is on.
# custom:
#   id: load_test_coverage
#   severity: high
#   guards: "checklist: load tests include cancellation and mixed priority classes"
package capgate.policies.load_test_coverage

import data.capgate.lib.evidence
import data.capgate.lib.result

_policy := "load_test_coverage"

_thresholds := data.capgate.thresholds

# Evidence declared by hand does not count while require_imported_evidence names this policy.
_fresh := evidence.usable(input.evidence, _thresholds, _policy)

_priorities := {class.priority | some class in input.workload.classes}

_required_priority_classes := min([count(_priorities), _thresholds.load_test_min_priority_classes])

_cancellation_tested if {
	some e in _fresh
	e.findings.cancellation_exercised == true
}

_priorities_mixed if {
	some e in _fresh
	e.findings.priority_classes >= _required_priority_classes
}

# METADATA
# title: Cancellation exercised
# description: Some fresh load test exercised client cancellation.
# custom:
#   severity: high
#   guards: "checklist: load tests include cancellation"
violations contains v if {
	not _cancellation_tested
	v := result.violation(
		_policy, "cancellation_not_exercised", "high",
		concat("", ["none of the ", result.show(count(_fresh)), " fresh load tests exercised cancellation"]),
		{"evidence": [e.ref | some e in _fresh]},
	)
}

# METADATA
# title: Priority classes mixed
# description: >-
#   When the workload has two or more distinct priorities, some fresh load test offered
#   at least min(distinct priorities, load_test_min_priority_classes) of them together.
# custom:
#   severity: high
#   guards: "checklist: load tests include mixed priority classes"
violations contains v if {
	count(_priorities) >= 2
	not _priorities_mixed
	v := result.violation(
		_policy, "priorities_not_mixed", "high",
		concat("", ["the workload has ", result.show(count(_priorities)), " priorities but no fresh load test offered ", result.show(_required_priority_classes), " priority classes together"]),
		{
			"workload_priorities": count(_priorities),
			"required_priority_classes": _required_priority_classes,
			"evidence": [{"evidence": e.ref, "priority_classes": e.findings.priority_classes} | some e in _fresh],
		},
	)
}
