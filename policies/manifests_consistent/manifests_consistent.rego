# METADATA
# title: Manifests consistent
# description: >-
#   When the gate check is given the Kubernetes manifests that ship the plan, every plan
#   field they state (replicas per zone, parallelism, serving flags, autoscaling, drain,
#   warm-up) has the plan's value. The registry compares them with the plan version
#   decided on; this policy reports each disagreement at the manifest's file and line.
# custom:
#   id: manifests_consistent
#   severity: high
#   guards: "failure mode: the manifests that ship are not the plan that was approved"
package capgate.policies.manifests_consistent

import data.capgate.lib.result

_policy := "manifests_consistent"

_checked if input.manifests.checked == true

_shown(x) := "not set" if {
	x == null
} else := result.show(x)

# METADATA
# title: Manifest contradicts plan
# description: >-
#   A field the manifests state disagrees with the plan (numbers compare as numbers);
#   nothing is reported when no manifests were given.
# custom:
#   severity: high
#   guards: "failure mode: the manifests that ship are not the plan that was approved"
violations contains v if {
	_checked
	some found in input.manifests.discrepancies
	v := result.violation(
		_policy, "manifest_contradicts_plan", "high",
		concat("", [found.field, " is ", _shown(found.plan), " in the plan but ", _shown(found.manifests), " in ", found.file, ":", result.show(found.line)]),
		{"field": found.field, "plan": found.plan, "manifests": found.manifests, "file": found.file, "line": found.line},
	)
}

# METADATA
# title: Manifest fields not compared
# description: >-
#   What the manifests leave uncompared although they run the plan (its zones, when they
#   state only the total replica count and leave the spread to the scheduler), as the
#   registry found it: a note for the reader, not a deny, since nothing is contradicted.
# custom:
#   severity: info
notes contains n if {
	_checked
	some note in input.manifests.notes
	n := result.violation(_policy, "manifests_not_compared", "info", note, {})
}
