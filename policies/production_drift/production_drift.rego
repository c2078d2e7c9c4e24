# METADATA
# title: Production drift
# description: >-
#   The latest observation of production traffic (vLLM's Prometheus series, read by
#   `capgate observe`) still matches the workload version the plan pins, by the same
#   material-change rules as staleness. A material drift denies the plan until a new
#   workload profile, and a plan pinning it, are submitted; an SLO the observed buckets
#   show was missed is a note calling for review.
# custom:
#   id: production_drift
#   severity: high
#   guards: "review trigger: a material workload change seen in production"
package capgate.policies.production_drift

import data.capgate.lib.result

_policy := "production_drift"

_observed if input.production.observed == true

# METADATA
# title: Workload drifted in production
# description: >-
#   A watched field of the workload (a length quantile, the peak rate, burstiness, a
#   cancellation share, a class) moved beyond its staleness threshold in production.
# custom:
#   severity: high
#   guards: "review trigger: a material workload change seen in production"
violations contains v if {
	_observed
	some change in input.production.drift
	v := result.violation(
		_policy, "workload_drifted", "high",
		concat("", ["production drifted from workload ", input.workload.ref, " (observation ", input.production.observation, "): ", change.field, " was ", result.show(change.planned), ", observed ", result.show(change.observed), ": ", change.rule, "; submit a workload profile that matches production (capgate workload from-observation ", input.production.observation, ") and a plan pinning it"]),
		{"field": change.field, "planned": change.planned, "observed": change.observed, "threshold": change.threshold, "observation": input.production.observation},
	)
}

# METADATA
# title: SLO missed in production
# description: >-
#   The observed histogram shows fewer than the objective's 99 % of a class's requests
#   within its SLO ceiling: a note for review, not a deny (the plan may be right and the
#   fleet not running it).
# custom:
#   severity: info
#   guards: "review trigger: SLO attainment below the plan's claims"
notes contains n if {
	_observed
	some miss in input.production.slo_misses
	n := result.violation(
		_policy, "slo_missed_in_production", "info",
		concat("", ["observation ", input.production.observation, ": ", miss.field, " missed: ", result.show(miss.observed), " of requests within it, the objective ", result.show(miss.planned)]),
		{"field": miss.field, "planned": miss.planned, "observed": miss.observed, "observation": input.production.observation},
	)
}
