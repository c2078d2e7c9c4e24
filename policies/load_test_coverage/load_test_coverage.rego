# METADATA
# title: Load tests cover cancellation and mixed priorities
# description: >-
#   Fresh load-test evidence includes a test that exercised cancellation, and for each
#   class the workload says its clients cancel, a test that cancelled that class at a rate
#   within the band load_test_min_cancellation_share..load_test_max_cancellation_share of
#   the workload's rate (too few cancellations leave the abort path and the KV it frees
#   untested; too many free capacity production will not have); and, when the workload has
#   at least two distinct priorities, a test that offered at least
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

# Compared with the products unrounded and none of them shown: OPA multiplies decimals
# exactly and the Wasm engine in binary, so a rounded product can land on either side of a
# half (65.115 x 0.5); the default shares (0.5, 2) are powers of two, exact in both.
_cancellation_rate_tested(name, rate) if {
	some e in _fresh
	tested := object.get(e.per_class, [name, "cancellation_rate"], null)
	is_number(tested)
	tested >= rate * _thresholds.load_test_min_cancellation_share
	tested <= rate * _thresholds.load_test_max_cancellation_share
}

# METADATA
# title: Cancellation rate tested per class
# description: >-
#   For every class whose workload cancellation rate is stated and above 0, some fresh
#   load test cancelled that class at a rate between load_test_min_cancellation_share
#   and load_test_max_cancellation_share times the workload's rate.
# custom:
#   severity: high
#   guards: "checklist: load tests include cancellation"
violations contains v if {
	some name, class in input.workload.classes
	rate := object.get(class, "cancellation_rate", null)
	is_number(rate)
	rate > 0
	not _cancellation_rate_tested(name, rate)
	tested := [{"evidence": e.ref, "cancellation_rate": object.get(e.per_class[name], "cancellation_rate", null)} |
		some e in _fresh
		e.per_class[name]
	]
	v := result.violation(
		_policy, "cancellation_rate_not_tested", "high",
		concat("", ["class ", name, ": the workload cancels ", result.show(rate), " of its requests but no fresh load test cancelled the class at load_test_min_cancellation_share ", result.show(_thresholds.load_test_min_cancellation_share), " to load_test_max_cancellation_share ", result.show(_thresholds.load_test_max_cancellation_share), " times that rate; tested: ", _tested_text(tested), "; rerun with the tool's cancellation rate set to the workload's (AIPerf --request-cancellation-rate, in percent)"]),
		{
			"class": name,
			"workload_cancellation_rate": rate,
			"min_share": _thresholds.load_test_min_cancellation_share,
			"max_share": _thresholds.load_test_max_cancellation_share,
			"evidence": tested,
		},
	)
}

_tested_text(tested) := "no fresh test offered the class" if count(tested) == 0

_tested_text(tested) := concat(", ", [concat(" ", [t.evidence, result.show(t.cancellation_rate)]) | some t in tested]) if count(tested) > 0
