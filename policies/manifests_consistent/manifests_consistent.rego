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
