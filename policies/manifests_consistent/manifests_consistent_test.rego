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

_model := {"field": "model.name", "provider": "meta-llama/Llama-3.1-8B-Instruct", "manifests": "Qwen/Qwen3-8B", "read": "", "file": "k8s/deployment.yaml", "document": 0, "line": 58}

_gpu := {"field": "accelerator.name", "provider": "H100-SXM-80GB", "manifests": "L4", "read": "cloud.google.com/gke-accelerator: nvidia-l4", "file": "k8s/deployment.yaml", "document": 0, "line": 39}

_served(found) := {
	"provider": {"ref": "llama31-8b-h100-vllm@v1"},
	"manifests": {"checked": true, "discrepancies": [], "provider_discrepancies": found},
}

test_fail_model_contradicts_provider if {
	manifests_consistent.violations == {{
		"policy": "manifests_consistent", "rule": "manifest_contradicts_provider", "severity": "high",
		"message": "model.name is meta-llama/Llama-3.1-8B-Instruct in provider llama31-8b-h100-vllm@v1 but Qwen/Qwen3-8B in k8s/deployment.yaml:58",
		"details": {"field": "model.name", "provider": "meta-llama/Llama-3.1-8B-Instruct", "manifests": "Qwen/Qwen3-8B", "read": "", "file": "k8s/deployment.yaml", "line": 58},
	}} with input as _served([_model])
}

test_fail_what_was_read_follows_the_line if {
	[v.message | some v in manifests_consistent.violations] == [
		"accelerator.name is H100-SXM-80GB in provider llama31-8b-h100-vllm@v1 but L4 in k8s/deployment.yaml:39 (cloud.google.com/gke-accelerator: nvidia-l4)",
		"model.name is meta-llama/Llama-3.1-8B-Instruct in provider llama31-8b-h100-vllm@v1 but Qwen/Qwen3-8B in k8s/deployment.yaml:58",
	] with input as _served([_gpu, _model])
}

test_fail_provider_without_a_ref_is_named_the_provider if {
	[v.message | some v in manifests_consistent.violations] == ["model.name is meta-llama/Llama-3.1-8B-Instruct in the provider but Qwen/Qwen3-8B in k8s/deployment.yaml:58"] with input as {"manifests": {"checked": true, "discrepancies": [], "provider_discrepancies": [_model]}}
}

test_success_provider_not_checked if {
	manifests_consistent.violations == set() with input as {"provider": {"ref": "p@v1"}, "manifests": {"checked": false, "discrepancies": [], "provider_discrepancies": [_model]}}
}

test_success_input_without_provider_discrepancies_has_none if {
	# An input stored before the provider was compared.
	manifests_consistent.violations == set() with input as _input(true, [])
}

test_fail_plan_and_provider_contradictions_together if {
	inp := object.union(_served([_model]), {"manifests": {"checked": true, "discrepancies": [_grace], "provider_discrepancies": [_model]}})
	{v.rule | some v in manifests_consistent.violations} == {"manifest_contradicts_plan", "manifest_contradicts_provider"} with input as inp
}
