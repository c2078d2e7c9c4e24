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

_scenario_order := ["peak", "one_worker_lost", "largest_zone_lost"]

_scenario_label := {
	"peak": "at peak with every replica ready",
	"one_worker_lost": "at peak with one worker lost",
	"largest_zone_lost": "at peak with the largest zone lost",
}

_kv_scenarios := object.get(_memory, "scenarios", {})

# Scenarios whose requests in service per surviving replica need more KV tokens (at the
# p99 of their summed contexts) than a replica holds. Inputs without the token figure
# (assembled before it existed) compare requests at the p99 context instead, and a
# recomputation stored before scenarios were assembled states only the all-ready figure.
_short_of_mean contains name if {
	some name, s in _kv_scenarios
	is_number(object.get(s, "in_service_kv_tokens", null))
	_memory.kv_tokens < s.in_service_kv_tokens
}

_short_of_mean contains name if {
	some name, s in _kv_scenarios
	not is_number(object.get(s, "in_service_kv_tokens", null))
	s.in_service_per_replica != null
	_memory.kv_concurrency_at_p99_context < s.in_service_per_replica
}

_short_of_mean contains "peak" if {
	count(_kv_scenarios) == 0
	_memory.kv_concurrency_at_p99_context < _memory.concurrency_needed_at_peak
}

_needed_mean(name) := _kv_scenarios[name].in_service_per_replica

_needed_mean("peak") := _memory.concurrency_needed_at_peak if count(_kv_scenarios) == 0

_needed_tokens(name) := _kv_scenarios[name].in_service_kv_tokens if {
	is_number(object.get(_kv_scenarios[name], "in_service_kv_tokens", null))
}

_ready(name) := _kv_scenarios[name].ready_replicas

_ready(name) := input.plan.total_replicas if {
	count(_kv_scenarios) == 0
	name == "peak"
}

# The mildest scenario that fails: when every replica being ready is already short, that is
# what to fix; the failure scenarios then fail too.
_first(names) := [n | some n in _scenario_order; n in names][0]

_short_text(name) := concat("", ["the KV cache (", result.show(_memory.kv_cache_gib), " GiB) holds ", result.show(_memory.kv_tokens), " tokens per replica, fewer than the ", result.show(_needed_tokens(name)), " the ", result.show(_needed_mean(name)), " requests each of ", result.show(_ready(name)), " replicas has in service ", _scenario_label[name], " hold (p99 of their summed contexts)"]) if {
	is_number(_needed_tokens(name))
}

else := concat("", ["the KV cache (", result.show(_memory.kv_cache_gib), " GiB, ", result.show(_memory.kv_tokens), " tokens per replica) holds ", result.show(_memory.kv_concurrency_at_p99_context), " requests at the p99 context, fewer than the ", result.show(_needed_mean(name)), " each of ", result.show(_ready(name)), " replicas has in service ", _scenario_label[name]])

# METADATA
# title: KV cache holds the requests in service, in every failure scenario
# description: >-
#   recomputation.memory.kv_tokens (a replica's KV cache) is at least each scenario's
#   in_service_kv_tokens: the tokens the requests in service per surviving replica at peak
#   (Little's law on the mean time in service) hold at the p99 of their summed contexts,
#   with every replica ready, one worker lost and the largest zone lost. Otherwise vLLM
#   preempts and recomputes requests exactly when load is highest and capacity lowest.
# custom:
#   severity: high
#   guards: "method: KV cache sized for concurrency at the p99 context, after a failure"
violations contains v if {
	_memory.fits == true
	count(_short_of_mean) > 0
	name := _first(_short_of_mean)
	v := result.violation(
		_policy, "kv_cache_below_peak_concurrency", "high",
		concat("", [_short_text(name), "; raise serving.gpu_memory_utilization or parallelism.tensor_parallel, or add replicas (replicas_per_zone)"]),
		object.union(_breakdown, {
			"scenario": name,
			"ready_replicas": _ready(name),
			"kv_tokens": _memory.kv_tokens,
			"kv_concurrency_at_p99_context": _memory.kv_concurrency_at_p99_context,
			"in_service_per_replica": _needed_mean(name),
			"in_service_kv_tokens": object.get(_kv_scenarios, [name, "in_service_kv_tokens"], null),
		}),
	)
}

_short_of_p99 contains name if {
	some name, s in _kv_scenarios
	s.p99_concurrency_kv_tokens != null
	_memory.kv_tokens < s.p99_concurrency_kv_tokens
}

# METADATA
# title: KV cache holds the workload's measured p99 concurrency, in every failure scenario
# description: >-
#   Where the workload measures its concurrency, the p99 requests in flight (summed over
#   classes) spread over the replicas that survive each scenario hold
#   p99_concurrency_kv_tokens at the p99 of their summed contexts; the replica's KV cache
#   (recomputation.memory.kv_tokens) holds at least that.
# custom:
#   severity: high
#   guards: "method: KV cache sized for the measured concurrency, after a failure"
violations contains v if {
	_memory.fits == true
	count(_short_of_p99) > 0
	name := _first(_short_of_p99)
	s := _kv_scenarios[name]
	v := result.violation(
		_policy, "kv_cache_below_p99_concurrency", "high",
		concat("", ["the workload's p99 concurrency is ", result.show(s.p99_concurrency_per_replica), " requests per replica over the ", result.show(s.ready_replicas), " replicas ready ", _scenario_label[name], "; their contexts need ", result.show(s.p99_concurrency_kv_tokens), " KV tokens (p99 of the sum) but a replica's KV cache holds ", result.show(_memory.kv_tokens), "; raise serving.gpu_memory_utilization or parallelism.tensor_parallel, or add replicas (replicas_per_zone)"]),
		object.union(_breakdown, {
			"scenario": name,
			"ready_replicas": s.ready_replicas,
			"kv_tokens": _memory.kv_tokens,
			"p99_concurrency_per_replica": s.p99_concurrency_per_replica,
			"p99_concurrency_kv_tokens": s.p99_concurrency_kv_tokens,
		}),
	)
}

_max_preemption_rate := data.capgate.thresholds.kv_max_preemption_rate

_preempting contains name if {
	some name, s in _kv_scenarios
	s.preemption_rate > _max_preemption_rate
}

# METADATA
# title: The simulation does not preempt, in any failure scenario
# description: >-
#   The planner's simulation of each scenario preempts at most
#   thresholds.kv_max_preemption_rate of its requests (a preempted request loses its KV
#   and is recomputed: its latency doubles while the replica does the work twice).
# custom:
#   severity: high
#   guards: "method: KV cache sized for concurrency at the p99 context, after a failure"
violations contains v if {
	_memory.fits == true
	count(_preempting) > 0
	name := _first(_preempting)
	s := _kv_scenarios[name]
	v := result.violation(
		_policy, "preemptions_above_threshold", "high",
		concat("", ["the planner's simulation ", _scenario_label[name], " (", result.show(s.ready_replicas), " replicas) preempts ", result.show(s.preemptions), " requests, a share of ", result.show(s.preemption_rate), " of those it ran, above thresholds.kv_max_preemption_rate ", result.show(_max_preemption_rate), ": the KV cache runs out; raise serving.gpu_memory_utilization or parallelism.tensor_parallel, or add replicas (replicas_per_zone)"]),
		object.union(_breakdown, {
			"scenario": name,
			"ready_replicas": s.ready_replicas,
			"preemptions": s.preemptions,
			"preemption_rate": s.preemption_rate,
			"max_preemption_rate": _max_preemption_rate,
		}),
	)
}
