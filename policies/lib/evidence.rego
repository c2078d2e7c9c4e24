# METADATA
# title: Evidence helpers
# description: Which load-test evidence may satisfy a policy.
package capgate.lib.evidence

# METADATA
# title: fresh
# description: >-
#   The evidence that is fresh (not stale for any reason the registry found) and not
#   older than max_age_days. Stale or expired evidence satisfies no policy.
fresh(evidence, max_age_days) := [e |
	some e in evidence
	e.fresh == true
	e.age_days <= max_age_days
]
