# METADATA
# title: Evidence fresh
# description: >-
#   No load-test evidence the decision rests on is stale (measured against an older
#   workload, provider, plan or policy; fresh is computed by the registry) or older
#   than evidence_max_age_days. The registry computes ages; the policy does no clock
#   or date parsing.
# custom:
#   id: evidence_fresh
#   severity: high
#   guards: "method: each decision is reviewed again after a material change; stale evidence satisfies no policy"
package capgate.policies.evidence_fresh

import data.capgate.lib.result

_policy := "evidence_fresh"

_max_age := data.capgate.thresholds.evidence_max_age_days

# METADATA
# title: Evidence not stale
# description: Every evidence has fresh == true; the message names its stale reasons.
# custom:
#   severity: high
#   guards: "method: stale evidence satisfies no policy"
violations contains v if {
	some e in input.evidence
	e.fresh != true
	v := result.violation(
		_policy, "evidence_stale", "high",
		# concat, not sprintf("%s"): regopy 1.5.2 quotes a concat() result formatted with %s.
		concat("", [sprintf("evidence %s is stale: ", [e.ref]), concat("; ", e.stale_reasons)]),
		{"evidence": e.ref, "stale_reasons": e.stale_reasons},
	)
}

# METADATA
# title: Evidence not too old
# description: Every evidence's age_days is at most evidence_max_age_days.
# custom:
#   severity: medium
#   guards: "method: age can expire evidence too"
violations contains v if {
	some e in input.evidence
	e.age_days > _max_age
	v := result.violation(
		_policy, "evidence_too_old", "medium",
		sprintf("evidence %s is %v days old; at most %v allowed", [e.ref, result.show(e.age_days), result.show(_max_age)]),
		{"evidence": e.ref, "age_days": e.age_days, "max_age_days": _max_age},
	)
}
