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
	# A stored input from before scenarios were assembled: the all-ready figure alone.
	inp := object.union(
		_with({"gpu_memory_utilization": 0.5, "kv_cache_gib": 20.2, "kv_tokens": 165000, "kv_concurrency_at_p99_context": 18, "concurrency_needed_at_peak": 31.4}),
		{"plan": {"total_replicas": 9}},
	)
	memory_fit.violations == {{
		"policy": "memory_fit", "rule": "kv_cache_below_peak_concurrency", "severity": "high",
		"message": "the KV cache (20.2 GiB, 165000 tokens per replica) holds 18 requests at the p99 context, fewer than the 31.4 each of 9 replicas has in service at peak with every replica ready; raise serving.gpu_memory_utilization or parallelism.tensor_parallel, or add replicas (replicas_per_zone)",
		"details": {
			"total_gib": 80, "gpu_memory_utilization": 0.5, "usable_gib": 72, "weights_gib": 14.957,
			"activation_peak_gib": 0.932, "runtime_overhead_gib": 0.3, "kv_cache_gib": 20.2, "tensor_parallel": 1,
			"kv_tokens": 165000, "kv_concurrency_at_p99_context": 18, "in_service_per_replica": 31.4,
			"scenario": "peak", "ready_replicas": 9, "in_service_kv_tokens": null,
		},
	}} with input as inp
}

_scenario(ready, in_service, p99_per_replica, p99_tokens, preemptions, rate) := {
	"ready_replicas": ready, "in_service_per_replica": in_service,
	"in_service_kv_tokens": ceil(in_service * 2300),
	"p99_concurrency_per_replica": p99_per_replica, "p99_concurrency_kv_tokens": p99_tokens,
	"preemptions": preemptions, "preemption_rate": rate,
}

# The chat-assistant example: 9 replicas, 8 after a worker, 6 after the largest zone.
_healthy := {
	"peak": _scenario(9, 16.94, 41.11, 101000, 0, 0),
	"one_worker_lost": _scenario(8, 20.07, 46.25, 113000, 0, 0),
	"largest_zone_lost": _scenario(6, 31.98, 61.67, 150000, 0, 0),
}

_with_scenarios(patch) := _with({"scenarios": object.union(_healthy, patch)})

test_success_every_scenario_within_the_kv_cache if {
	memory_fit.violations == set() with input as _with_scenarios({})
}

test_fail_kv_below_mean_in_service_after_zone_loss if {
	# Fine with every replica ready, short once a zone is lost: 210 in service x 2300
	# tokens is 483000 > 457200.
	inp := _with_scenarios({"largest_zone_lost": _scenario(6, 210, 61.67, 150000, 0, 0)})
	[[v.rule, v.details.scenario, v.details.in_service_kv_tokens] | some v in memory_fit.violations] == [["kv_cache_below_peak_concurrency", "largest_zone_lost", 483000]] with input as inp
	some v in memory_fit.violations with input as inp
	startswith(v.message, "the KV cache (55.811 GiB) holds 457200 tokens per replica, fewer than the 483000 the 210 requests each of 6 replicas has in service at peak with the largest zone lost hold (p99 of their summed contexts)")
}

test_success_many_short_requests_fit if {
	# 60 requests in service is more than the 50 the cache holds at the p99 context, but
	# their summed contexts (138000 tokens) fit: the token figure decides when it is there.
	inp := _with_scenarios({"largest_zone_lost": _scenario(6, 60, 61.67, 150000, 0, 0)})
	memory_fit.violations == set() with input as inp
}

test_fail_request_count_decides_without_the_token_figure if {
	s := object.union(_scenario(6, 52.4, 61.67, 150000, 0, 0), {"in_service_kv_tokens": null})
	inp := _with_scenarios({"largest_zone_lost": s})
	[v.details.in_service_per_replica | some v in memory_fit.violations] == [52.4] with input as inp
}

test_fail_names_the_mildest_failing_scenario if {
	inp := _with_scenarios({
		"one_worker_lost": _scenario(8, 200, 46.25, 113000, 0, 0),
		"largest_zone_lost": _scenario(6, 260, 61.67, 150000, 0, 0),
	})
	[v.details.scenario | some v in memory_fit.violations] == ["one_worker_lost"] with input as inp
}

test_fail_kv_below_measured_p99_concurrency if {
	inp := _with_scenarios({"largest_zone_lost": _scenario(6, 31.98, 61.67, 480000, 0, 0)})
	[[v.rule, v.details.p99_concurrency_kv_tokens] | some v in memory_fit.violations] == [["kv_cache_below_p99_concurrency", 480000]] with input as inp
	some v in memory_fit.violations with input as inp
	v.message == "the workload's p99 concurrency is 61.67 requests per replica over the 6 replicas ready at peak with the largest zone lost; their contexts need 480000 KV tokens (p99 of the sum) but a replica's KV cache holds 457200; raise serving.gpu_memory_utilization or parallelism.tensor_parallel, or add replicas (replicas_per_zone)"
}

test_success_no_measured_concurrency_no_p99_rule if {
	inp := _with_scenarios({"largest_zone_lost": _scenario(6, 31.98, null, null, 0, 0)})
	memory_fit.violations == set() with input as inp
}

test_fail_simulation_preempts if {
	inp := _with_scenarios({"one_worker_lost": _scenario(8, 20.07, 46.25, 113000, 240, 0.0304)})
	[[v.rule, v.details.preemptions, v.details.max_preemption_rate] | some v in memory_fit.violations] == [["preemptions_above_threshold", 240, 0.01]] with input as inp
	some v in memory_fit.violations with input as inp
	contains(v.message, "preempts 240 requests, a share of 0.03 of those it ran, above thresholds.kv_max_preemption_rate 0.01")
}

test_success_preemptions_at_the_threshold if {
	inp := _with_scenarios({"largest_zone_lost": _scenario(6, 31.98, 61.67, 150000, 60, 0.01)})
	memory_fit.violations == set() with input as inp
}
