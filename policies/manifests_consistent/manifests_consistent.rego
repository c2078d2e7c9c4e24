# METADATA
# title: Manifests consistent
# description: >-
#   When the gate check is given the Kubernetes manifests that ship the plan, every plan
#   field they state (replicas per zone, parallelism, serving flags, autoscaling, drain,
#   warm-up) has the plan's value, and what they serve (the model, the vLLM version,
#   the accelerator, the dtypes) is what the plan's provider version describes. The
#   registry compares them with the plan and provider versions decided on; this policy
#   reports each disagreement at the manifest's file and line.
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

_provider := concat("", ["provider ", ref]) if {
	ref := input.provider.ref
	is_string(ref)
} else := "the provider"

_as_read(found) := concat("", [" (", found.read, ")"]) if {
	is_string(found.read)
	found.read != ""
} else := ""

# METADATA
# title: Manifest contradicts provider
# description: >-
#   The manifests serve another model (Hugging Face ids compare case-insensitively), run
#   another vLLM minor version (from the image tag), schedule on another accelerator
#   family or vendor (GPU resources, node selectors and required affinities), or pass a
#   dtype or quantisation flag other than the provider version the plan pins states:
#   the plan was sized for hardware and software that is not what ships.
# custom:
#   severity: high
#   guards: "failure mode: the manifests that ship are not the plan that was approved"
violations contains v if {
	_checked
	some found in input.manifests.provider_discrepancies
	v := result.violation(
		_policy, "manifest_contradicts_provider", "high",
		concat("", [found.field, " is ", _shown(found.provider), " in ", _provider, " but ", _shown(found.manifests), " in ", found.file, ":", result.show(found.line), _as_read(found)]),
		{"field": found.field, "provider": found.provider, "manifests": found.manifests, "read": found.read, "file": found.file, "line": found.line},
	)
}

# METADATA
# title: Manifest fields not compared
# description: >-
#   What the manifests leave uncompared although they run the plan (its zones, when they
#   state only the total replica count and leave the spread to the scheduler; a model
#   given as a local path, an image that names no vLLM version, a GPU no node label
#   names), as the registry found it: a note for the reader, not a deny, since nothing
#   is contradicted.
# custom:
#   severity: info
notes contains n if {
	_checked
	some note in input.manifests.notes
	n := result.violation(_policy, "manifests_not_compared", "info", note, {})
}
