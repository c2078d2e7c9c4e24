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

# METADATA
# title: usable
# description: >-
#   The fresh evidence a policy may count: when thresholds.require_imported_evidence
#   names the policy, only evidence imported from a raw result file (entry "imported"),
#   never numbers declared by hand.
usable(evidence, thresholds, policy) := [e |
	some e in fresh(evidence, thresholds.evidence_max_age_days)
	_entry_accepted(e, thresholds, policy)
]

# METADATA
# title: declared_only
# description: Fresh evidence a policy leaves out because it was declared, not imported.
declared_only(evidence, thresholds, policy) := [e.ref |
	some e in fresh(evidence, thresholds.evidence_max_age_days)
	not _entry_accepted(e, thresholds, policy)
]

_entry_accepted(e, _, _) if e.entry == "imported"

_entry_accepted(_, thresholds, policy) if not thresholds.require_imported_evidence[policy]
