package capgate.policies.memory_fit_test

import data.capgate.policies.memory_fit

_memory := {
	"fits": true,
	"reason": "fits: weights 15.0 GiB + activations 0.9 GiB + runtime 0.3 GiB leave 55.8 GiB",
	"total_gib": 80, "gpu_memory_utilization": 0.9, "usable_gib": 72, "weights_gib": 14.957,
	"activation_peak_gib": 0.932, "runtime_overhead_gib": 0.3, "kv_cache_gib": 55.811,
	"kv_tokens": 457200, "kv_concurrency_at_p99_context": 50, "concurrency_needed_at_peak": 12.62,
}

_input := {"plan": {"tensor_parallel": 1}, "recomputation": {"memory": _memory}}

_with(patch) := object.union(_input, {"recomputation": {"memory": patch}})

test_success_fits_with_room_for_the_peak if {
	memory_fit.violations == set() with input as _input
}

test_fail_does_not_fit if {
	# A 70B FP8 model on one 80 GB GPU: weights alone take most of the usable memory.
	reason := "does not fit: 72.0 GiB usable per GPU (80 GiB x 0.9) but weights/TP need 67.7 GiB, activations 4.8 GiB and runtime 0.3 GiB, leaving -0.8 GiB for the KV cache"
	inp := _with({"fits": false, "reason": reason, "weights_gib": 67.7, "kv_cache_gib": 0, "kv_tokens": 0, "kv_concurrency_at_p99_context": 0})
	[[v.rule, v.details.weights_gib] | some v in memory_fit.violations] == [["does_not_fit", 67.7]] with input as inp
	some v in memory_fit.violations with input as inp
	contains(v.message, "raise serving.gpu_memory_utilization")
}

test_fail_kv_cache_below_peak_concurrency if {
	inp := _with({"gpu_memory_utilization": 0.5, "kv_cache_gib": 20.2, "kv_tokens": 165000, "kv_concurrency_at_p99_context": 18, "concurrency_needed_at_peak": 31.4})
	memory_fit.violations == {{
		"policy": "memory_fit", "rule": "kv_cache_below_peak_concurrency", "severity": "high",
		"message": "the KV cache (20.2 GiB, 165000 tokens per replica) holds 18 requests at the p99 context, fewer than the 31.4 a replica has in flight at peak; raise serving.gpu_memory_utilization or parallelism.tensor_parallel, or add replicas (replicas_per_zone)",
		"details": {
			"total_gib": 80, "gpu_memory_utilization": 0.5, "usable_gib": 72, "weights_gib": 14.957,
			"activation_peak_gib": 0.932, "runtime_overhead_gib": 0.3, "kv_cache_gib": 20.2, "tensor_parallel": 1,
			"kv_tokens": 165000, "kv_concurrency_at_p99_context": 18, "concurrency_needed_at_peak": 31.4,
		},
	}} with input as inp
}
