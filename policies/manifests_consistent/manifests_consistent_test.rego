package capgate.policies.manifests_consistent_test

import data.capgate.policies.manifests_consistent

_grace := {"field": "drain.termination_grace_period_s", "plan": 300, "manifests": 30, "file": "k8s/deployment.yaml", "document": 0, "line": 41}

_metric := {"field": "autoscaling.metric", "plan": "vllm:num_requests_waiting", "manifests": "cpu", "file": "k8s/hpa.yaml", "document": 0, "line": 16}

_zone := {"field": "replicas_per_zone.us-east1-e", "plan": null, "manifests": 2, "file": "k8s/deployment.yaml", "document": 1, "line": 38}

_input(checked, found) := {"manifests": {"checked": checked, "discrepancies": found}}

test_success_not_checked if {
	manifests_consistent.violations == set() with input as _input(false, [])
}

test_success_no_manifests_section if {
	manifests_consistent.violations == set() with input as {"plan": {}}
}

test_success_manifests_agree if {
	manifests_consistent.violations == set() with input as _input(true, [])
}

test_fail_grace_period_contradicted if {
	manifests_consistent.violations == {{
		"policy": "manifests_consistent", "rule": "manifest_contradicts_plan", "severity": "high",
		"message": "drain.termination_grace_period_s is 300 in the plan but 30 in k8s/deployment.yaml:41",
		"details": {"field": "drain.termination_grace_period_s", "plan": 300, "manifests": 30, "file": "k8s/deployment.yaml", "line": 41},
	}} with input as _input(true, [_grace])
}

test_fail_one_violation_per_discrepancy if {
	[v.message | some v in manifests_consistent.violations] == [
		"autoscaling.metric is vllm:num_requests_waiting in the plan but cpu in k8s/hpa.yaml:16",
		"drain.termination_grace_period_s is 300 in the plan but 30 in k8s/deployment.yaml:41",
		"replicas_per_zone.us-east1-e is not set in the plan but 2 in k8s/deployment.yaml:38",
	] with input as _input(true, [_grace, _metric, _zone])
}

_zones_note := "replicas_per_zone (us-east1-b: 3, us-east1-c: 3, us-east1-d: 3) is not compared: the manifests run 9 replicas (k8s/deployment.yaml:9) but leave which zone runs how many to the scheduler; only their total is compared"

test_success_uncompared_zones_are_a_note if {
	inp := {"manifests": {"checked": true, "discrepancies": [], "notes": [_zones_note]}}
	manifests_consistent.violations == set() with input as inp
	manifests_consistent.notes == {{
		"policy": "manifests_consistent", "rule": "manifests_not_compared", "severity": "info",
		"message": _zones_note, "details": {},
	}} with input as inp
}

test_success_no_notes_when_not_checked if {
	manifests_consistent.notes == set() with input as {"manifests": {"checked": false, "discrepancies": [], "notes": [_zones_note]}}
}

test_success_input_without_notes_has_none if {
	# An input stored before the notes were carried.
	manifests_consistent.notes == set() with input as _input(true, [])
}
