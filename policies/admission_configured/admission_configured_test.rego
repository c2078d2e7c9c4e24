package capgate.policies.admission_configured_test

import data.capgate.policies.admission_configured

_input := {
	"workload": {"classes": {"interactive": {"slo": {"queue_deadline_ms": 2000}}}},
	"plan": {"admission": {"classes": {"interactive": {"queue_deadline_ms": 2000, "max_queue_depth": 64, "shed_when_full": true}}}},
}

test_success_compliant if {
	admission_configured.violations == set() with input as _input
}

test_success_zero_depth_queue_is_bounded if {
	admission_configured.violations == set() with input as object.union(_input, {"plan": {"admission": {"classes": {"interactive": {"max_queue_depth": 0}}}}})
}

test_fail_class_admission_missing if {
	inp := object.union(_input, {"workload": {"classes": {"batch": {"slo": {"queue_deadline_ms": 30000}}}}})
	admission_configured.violations == {{
		"policy": "admission_configured", "rule": "class_admission_missing", "severity": "high",
		"message": "class batch has no admission settings (queue deadline, queue bound, shedding): add admission.classes.batch",
		"details": {"class": "batch"},
	}} with input as inp
}

test_fail_queue_deadline_missing if {
	admission_configured.violations == {{
		"policy": "admission_configured", "rule": "queue_deadline_missing", "severity": "high",
		"message": "class interactive has no queue deadline: set admission.classes.interactive.queue_deadline_ms (its SLO allows 2000 ms in queue)",
		"details": {"class": "interactive", "queue_deadline_ms": null, "slo_queue_deadline_ms": 2000},
	}} with input as json.remove(_input, ["plan/admission/classes/interactive/queue_deadline_ms"])
}

test_fail_queue_deadline_exceeds_slo if {
	admission_configured.violations == {{
		"policy": "admission_configured", "rule": "queue_deadline_exceeds_slo", "severity": "high",
		"message": "class interactive: admission.classes.interactive.queue_deadline_ms 5000 ms is longer than the SLO's 2000 ms",
		"details": {"class": "interactive", "queue_deadline_ms": 5000, "slo_queue_deadline_ms": 2000},
	}} with input as object.union(_input, {"plan": {"admission": {"classes": {"interactive": {"queue_deadline_ms": 5000}}}}})
}

test_fail_unbounded_without_shedding if {
	inp := object.union(_input, {"plan": {"admission": {"classes": {"interactive": {"max_queue_depth": -1, "shed_when_full": false}}}}})
	admission_configured.violations == {
		{
			"policy": "admission_configured", "rule": "queue_unbounded", "severity": "high",
			"message": "class interactive: the queue has no bound; set admission.classes.interactive.max_queue_depth",
			"details": {"class": "interactive", "max_queue_depth": -1},
		},
		{
			"policy": "admission_configured", "rule": "shedding_disabled", "severity": "high",
			"message": "class interactive: requests are not shed when the queue is full; set admission.classes.interactive.shed_when_full: true",
			"details": {"class": "interactive", "shed_when_full": false},
		},
	} with input as inp
}

test_fail_autoscaling_on_cpu if {
	inp := object.union(_input, {"plan": {"autoscaling": {"metric": "cpu"}}})
	admission_configured.violations == {{
		"policy": "admission_configured", "rule": "autoscaling_blind_metric", "severity": "high",
		"message": "autoscaling.metric cpu does not see queueing or KV-cache pressure; scale on vllm:num_requests_waiting or vllm:kv_cache_usage_perc",
		"details": {"metric": "cpu"},
	}} with input as inp
}

test_success_autoscaling_on_the_queue if {
	inp := object.union(_input, {"plan": {"autoscaling": {"metric": "vllm:num_requests_waiting"}}})
	admission_configured.violations == set() with input as inp
}
