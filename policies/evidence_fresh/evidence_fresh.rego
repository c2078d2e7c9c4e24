# METADATA
# title: Evidence fresh
# description: >-
#   Stale load-test evidence (measured against an older workload, provider, plan or
#   policy; fresh is computed by the registry) or evidence older than
#   evidence_max_age_days supports nothing. While some fresh evidence remains, stale and
#   old evidence is a note (listed as a warning): the other policies judge whether the
#   fresh evidence covers each requirement. When no evidence is fresh, each stale or old
#   record is a violation that says why. The registry computes ages; the policy does no
#   clock or date parsing.
# custom:
#   id: evidence_fresh
#   severity: high
#   guards: "method: each decision is reviewed again after a material change; stale evidence satisfies no policy"
package capgate.policies.evidence_fresh

import data.capgate.lib.evidence
import data.capgate.lib.result

_policy := "evidence_fresh"

_max_age := data.capgate.thresholds.evidence_max_age_days

_fresh := evidence.fresh(input.evidence, _max_age)

_stale_findings contains f if {
	some e in input.evidence
	e.fresh != true
	f := {
		"rule": "evidence_stale",
		"severity": "high",
		"message": concat("", ["evidence ", e.ref, " is stale: ", concat("; ", e.stale_reasons)]),
		"details": {"evidence": e.ref, "stale_reasons": e.stale_reasons},
	}
}

_stale_findings contains f if {
	some e in input.evidence
	e.age_days > _max_age
	f := {
		"rule": "evidence_too_old",
		"severity": "medium",
		"message": concat("", ["evidence ", e.ref, " is ", result.show(e.age_days), " days old; at most ", result.show(_max_age), " allowed"]),
		"details": {"evidence": e.ref, "age_days": e.age_days, "max_age_days": _max_age},
	}
}

# METADATA
# title: Some evidence is fresh
# description: >-
#   When no evidence is fresh, every stale or too-old record is a violation naming its
#   reasons (a material change since it was measured, or its age).
# custom:
#   severity: high
#   guards: "method: stale evidence satisfies no policy"
violations contains v if {
	count(_fresh) == 0
	some f in _stale_findings
	v := result.violation(_policy, f.rule, f.severity, f.message, f.details)
}

# METADATA
# title: Stale evidence beside fresh evidence
# description: Stale or too-old evidence beside fresh evidence supports nothing and blocks nothing.
# custom:
#   severity: info
notes contains n if {
	count(_fresh) > 0
	some f in _stale_findings
	n := result.violation(_policy, f.rule, "info", f.message, f.details)
}
