# METADATA
# title: Memory fit
# description: >-
#   One replica holds the model the way vLLM sizes memory at start-up: the weights, the
#   activation peak of the profiling pass, the runtime's own memory and a KV cache inside
#   serving.gpu_memory_utilization of each GPU; and the KV cache holds the requests a
#   replica has in flight at peak, each at its class's p99 context (not merely one
#   request of max_model_len).
# custom:
#   id: memory_fit
#   severity: high
#   guards: "method: memory fit and KV cache before throughput (the first decision)"
package capgate.policies.memory_fit

import data.capgate.lib.result

_policy := "memory_fit"

_memory := input.recomputation.memory

_breakdown := {
	"total_gib": _memory.total_gib,
	"gpu_memory_utilization": _memory.gpu_memory_utilization,
	"usable_gib": _memory.usable_gib,
	"weights_gib": _memory.weights_gib,
	"activation_peak_gib": _memory.activation_peak_gib,
	"runtime_overhead_gib": _memory.runtime_overhead_gib,
	"kv_cache_gib": _memory.kv_cache_gib,
	"tensor_parallel": input.plan.tensor_parallel,
}

# METADATA
# title: Model fits a replica
# description: >-
#   Weights, activations and runtime memory leave a KV cache of at least one
#   max_model_len request within gpu_memory_utilization (vLLM refuses to start otherwise).
# custom:
#   severity: high
#   guards: "method: memory fit and KV cache before throughput"
violations contains v if {
	_memory.fits == false
	v := result.violation(
		_policy, "does_not_fit", "high",
		concat("", ["the model does not fit a replica at tensor parallelism ", result.show(input.plan.tensor_parallel), ": ", _memory.reason, "; raise serving.gpu_memory_utilization, lower serving.max_model_len or serving.max_num_batched_tokens, or raise parallelism.tensor_parallel"]),
		_breakdown,
	)
}

# METADATA
# title: KV cache holds the peak's requests
# description: >-
#   recomputation.memory.kv_concurrency_at_p99_context (requests the KV cache holds at the
#   p99 context) is at least concurrency_needed_at_peak (requests in flight per replica at
#   peak): otherwise vLLM preempts and recomputes requests exactly when load is highest.
# custom:
#   severity: high
#   guards: "method: KV cache sized for concurrency at the p99 context"
violations contains v if {
	_memory.fits == true
	_memory.kv_concurrency_at_p99_context < _memory.concurrency_needed_at_peak
	v := result.violation(
		_policy, "kv_cache_below_peak_concurrency", "high",
		concat("", ["the KV cache (", result.show(_memory.kv_cache_gib), " GiB, ", result.show(_memory.kv_tokens), " tokens per replica) holds ", result.show(_memory.kv_concurrency_at_p99_context), " requests at the p99 context, fewer than the ", result.show(_memory.concurrency_needed_at_peak), " a replica has in flight at peak; raise serving.gpu_memory_utilization or parallelism.tensor_parallel, or add replicas (replicas_per_zone)"]),
		object.union(_breakdown, {
			"kv_tokens": _memory.kv_tokens,
			"kv_concurrency_at_p99_context": _memory.kv_concurrency_at_p99_context,
			"concurrency_needed_at_peak": _memory.concurrency_needed_at_peak,
		}),
	)
}
