# METADATA
# title: Capacity-plan gate
# description: >-
#   Composes every policy: the decision allows a plan only when no policy reports a
#   violation. An input without the top-level documents leaves the decision undefined,
#   which both engines report as an error, never as an allow.
# custom:
#   severity: high
package capgate.gate

import data.capgate.policies.admission_configured
import data.capgate.policies.distributions_measured
import data.capgate.policies.drain_configured
import data.capgate.policies.evidence_fresh
import data.capgate.policies.load_test_coverage
import data.capgate.policies.manifests_consistent
import data.capgate.policies.memory_fit
import data.capgate.policies.partitioning_justified
import data.capgate.policies.production_drift
import data.capgate.policies.reserve_explicit
import data.capgate.policies.retries_bounded
import data.capgate.policies.tail_slo
import data.capgate.policies.warm_replica_exclusion

# METADATA
# title: violations
# description: The union of every policy's violations.
violations := (((((((((((tail_slo.violations | reserve_explicit.violations) | drain_configured.violations) | warm_replica_exclusion.violations) | distributions_measured.violations) | load_test_coverage.violations) | admission_configured.violations) | retries_bounded.violations) | evidence_fresh.violations) | partitioning_justified.violations) | memory_fit.violations) | manifests_consistent.violations) | production_drift.violations

# METADATA
# title: notes
# description: >-
#   The union of every policy's notes: findings worth a reader's attention that do not
#   block (a pessimistic claim, say). Policies without notes contribute nothing.
notes := ((tail_slo.notes | evidence_fresh.notes) | production_drift.notes) | manifests_consistent.notes

# METADATA
# title: decision
# description: Allow when there is no violation; defined only for a well-formed input.
decision := {"allow": count(violations) == 0, "violations": violations, "notes": notes} if {
	_well_formed
}

_well_formed if {
	is_object(input.plan)
	is_object(input.workload)
	is_object(input.provider)
	is_array(input.evidence)
	is_object(input.recomputation)
}
