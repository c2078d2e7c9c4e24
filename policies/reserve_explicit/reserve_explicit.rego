# METADATA
# title: Failure reserve explicit and verified
# description: >-
#   The plan declares a reserve for at least one lost worker and one lost zone
#   (plan.reserve.worker_failures and zone_failures, minimums in data), and the
#   planner's recomputation shows every SLO met with one worker lost and with the
#   largest zone lost.
# custom:
#   id: reserve_explicit
#   severity: high
#   guards: "checklist: one-worker and one-zone failure reserve is explicit"
package capgate.policies.reserve_explicit

import data.capgate.lib.result

_policy := "reserve_explicit"

_thresholds := data.capgate.thresholds

_scenarios := {
	"one_worker_lost": "the loss of one worker",
	"largest_zone_lost": "the loss of the largest zone",
}

_reserve := input.plan.reserve

_declared if is_object(_reserve)

_at_least(x, minimum) if {
	is_number(x)
	x >= minimum
}

# METADATA
# title: Reserve declared
# description: The plan has a reserve section.
# custom:
#   severity: high
#   guards: "checklist: one-worker and one-zone failure reserve is explicit"
violations contains v if {
	not _declared
	v := result.violation(
		_policy, "reserve_missing", "high",
		"the plan declares no failure reserve: add reserve (worker_failures, zone_failures)",
		{"reserve": null},
	)
}

# METADATA
# title: Worker reserve declared
# description: plan.reserve.worker_failures is at least reserve_min_worker_failures.
# custom:
#   severity: high
#   guards: "checklist: one-worker failure reserve is explicit"
violations contains v if {
	is_object(_reserve)
	declared := object.get(_reserve, "worker_failures", null)
	not _at_least(declared, _thresholds.reserve_min_worker_failures)
	v := result.violation(
		_policy, "worker_reserve_missing", "high",
		concat("", ["reserve.worker_failures is ", result.show(declared), "; at least ", result.show(_thresholds.reserve_min_worker_failures), " required"]),
		{"worker_failures": declared, "min_worker_failures": _thresholds.reserve_min_worker_failures},
	)
}

# METADATA
# title: Zone reserve declared
# description: plan.reserve.zone_failures is at least reserve_min_zone_failures.
# custom:
#   severity: high
#   guards: "checklist: one-zone failure reserve is explicit"
violations contains v if {
	is_object(_reserve)
	declared := object.get(_reserve, "zone_failures", null)
	not _at_least(declared, _thresholds.reserve_min_zone_failures)
	v := result.violation(
		_policy, "zone_reserve_missing", "high",
		concat("", ["reserve.zone_failures is ", result.show(declared), "; at least ", result.show(_thresholds.reserve_min_zone_failures), " required"]),
		{"zone_failures": declared, "min_zone_failures": _thresholds.reserve_min_zone_failures},
	)
}

# METADATA
# title: Failure scenario recomputed
# description: The recomputation contains the one_worker_lost and largest_zone_lost scenarios.
# custom:
#   severity: high
#   guards: "method: the reserve is recomputed, not assumed"
violations contains v if {
	some scenario, what in _scenarios
	not input.recomputation.scenarios[scenario]
	v := result.violation(
		_policy, "scenario_missing", "high",
		concat("", ["the recomputation has no ", scenario, " scenario (", what, ")"]),
		{"scenario": scenario},
	)
}

# METADATA
# title: SLOs met after a failure
# description: The recomputed one_worker_lost and largest_zone_lost scenarios meet every SLO.
# custom:
#   severity: high
#   guards: "method: size to tail objectives and defined worker failures"
violations contains v if {
	some scenario, what in _scenarios
	predicted := input.recomputation.scenarios[scenario]
	predicted.slo_met != true
	failing := sort([name | some name; predicted.per_class[name].slo_met != true])
	v := result.violation(
		_policy, "scenario_slo_missed", "high",
		concat("", [
			concat("", ["after ", what, " (", result.show(predicted.ready_replicas), " ready replicas) the recomputation misses the SLOs of "]),
			concat(", ", failing),
		]),
		{"scenario": scenario, "ready_replicas": predicted.ready_replicas, "failing_classes": failing},
	)
}
