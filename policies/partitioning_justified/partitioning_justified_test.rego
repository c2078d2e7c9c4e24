package capgate.policies.partitioning_justified_test

import data.capgate.policies.partitioning_justified

# A document from before the equal-GPU fields: only fits_single_gpu and the gain.
_input := {
	"plan": {"tensor_parallel": 1},
	"provider": {"interconnect": "nvlink"},
	"recomputation": {"fits_single_gpu": true, "tp_latency_gain": null},
}

_tp(tp, interconnect, gain) := object.union(_input, {
	"plan": {"tensor_parallel": tp},
	"provider": {"interconnect": interconnect},
	"recomputation": {"tp_latency_gain": gain},
})

# The planner's figures for Llama-3.1-8B on H100 at TP=2: TP=1 fits with plenty of KV, and on
# the same 6 GPUs at peak TP=2 cuts p99 TTFT by 28 % but p99 TPOT by only 8 %.
_equal_gpus := {
	"fits_single_gpu": true,
	"fits_single_gpu_with_useful_kv": true,
	"single_gpu_kv_concurrency": 50,
	"single_gpu_concurrency_needed": 36.99,
	"tp_equal_gpus": 6,
	"tp_latency_gain": 0.0817,
	"tp_tpot_gain": 0.0817,
	"tp_ttft_gain": 0.2766,
	"tp_gpus_at_peak": 6,
	"single_gpu_gpus_at_peak": 5,
	"tp_gpu_saving": -1,
}

_measured(interconnect, changes) := {
	"plan": {"tensor_parallel": 2},
	"provider": {"interconnect": interconnect},
	"recomputation": object.union(_equal_gpus, changes),
}

test_success_replication if {
	partitioning_justified.violations == set() with input as _input
}

test_success_tp_with_gain_on_nvlink if {
	partitioning_justified.violations == set() with input as _tp(2, "nvlink", 0.31)
}

test_success_tp_at_min_gain_on_infinity_fabric if {
	partitioning_justified.violations == set() with input as _tp(2, "infinity_fabric", 0.2)
}

test_success_tp_when_model_does_not_fit if {
	inp := object.union(_tp(4, "pcie", null), {"recomputation": {"fits_single_gpu": false}})
	partitioning_justified.violations == set() with input as inp
}

# Llama-3.1-70B in FP8 on H100: the weights fit one GPU, but its KV cache holds 3 requests
# at the p99 context where a replica has 24 in service at peak.
test_success_tp_when_single_gpu_lacks_useful_kv if {
	inp := _measured("pcie", {
		"fits_single_gpu_with_useful_kv": false,
		"single_gpu_kv_concurrency": 3, "single_gpu_concurrency_needed": 23.63,
		"tp_latency_gain": -0.05, "tp_gpu_saving": 0,
	})
	partitioning_justified.violations == set() with input as inp
}

test_success_tp_that_saves_gpus_at_peak if {
	inp := _measured("pcie", {"tp_gpus_at_peak": 30, "single_gpu_gpus_at_peak": 69, "tp_gpu_saving": 39})
	partitioning_justified.violations == set() with input as inp
}

test_success_tp_with_gain_at_equal_gpus if {
	inp := _measured("nvlink", {"tp_latency_gain": 0.25, "tp_tpot_gain": 0.25, "tp_ttft_gain": 0.4})
	partitioning_justified.violations == set() with input as inp
}

test_fail_tp4_over_pcie if {
	partitioning_justified.violations == {
		{
			"policy": "partitioning_justified", "rule": "tp_on_slow_interconnect", "severity": "high",
			"message": "tensor parallelism 4 over pcie while TP=1 fits one accelerator with KV for unknown requests at the p99 context (unknown in service per replica at peak) and needs unknown GPUs at peak against unknown at TP=4: all-reduce over a slow interconnect costs latency; set parallelism.tensor_parallel to 1",
			"details": {
				"tensor_parallel": 4, "interconnect": "pcie", "fast_interconnects": ["infinity_fabric", "nvlink"],
				"fits_single_gpu_with_useful_kv": null, "single_gpu_kv_concurrency": null,
				"single_gpu_concurrency_needed": null, "single_gpu_gpus_at_peak": null,
				"tp_gpus_at_peak": null, "tp_gpu_saving": null,
			},
		},
		{
			"policy": "partitioning_justified", "rule": "tp_gain_unproven", "severity": "high",
			"message": "tensor parallelism 4 gains 0.04 in p99 latency over TP=1 on the same unknown GPUs at peak (TPOT unknown, TTFT unknown, the smaller counts; at least 0.2 required) while TP=1 fits one accelerator with KV for unknown requests at the p99 context (unknown in service per replica at peak) and needs unknown GPUs at peak against unknown at TP=4; set parallelism.tensor_parallel to 1",
			"details": {
				"tensor_parallel": 4, "tp_latency_gain": 0.04, "tp_tpot_gain": null, "tp_ttft_gain": null,
				"tp_equal_gpus": null, "min_latency_gain": 0.2,
				"fits_single_gpu_with_useful_kv": null, "single_gpu_kv_concurrency": null,
				"single_gpu_concurrency_needed": null, "single_gpu_gpus_at_peak": null,
				"tp_gpus_at_peak": null, "tp_gpu_saving": null,
			},
		},
	} with input as _tp(4, "pcie", 0.04)
}

test_fail_tp2_without_gain_at_equal_gpus if {
	partitioning_justified.violations == {{
		"policy": "partitioning_justified", "rule": "tp_gain_unproven", "severity": "high",
		"message": "tensor parallelism 2 gains 0.082 in p99 latency over TP=1 on the same 6 GPUs at peak (TPOT 0.082, TTFT 0.277, the smaller counts; at least 0.2 required) while TP=1 fits one accelerator with KV for 50 requests at the p99 context (36.99 in service per replica at peak) and needs 5 GPUs at peak against 6 at TP=2; set parallelism.tensor_parallel to 1",
		"details": {
			"tensor_parallel": 2, "tp_latency_gain": 0.0817, "tp_tpot_gain": 0.0817, "tp_ttft_gain": 0.2766,
			"tp_equal_gpus": 6, "min_latency_gain": 0.2,
			"fits_single_gpu_with_useful_kv": true, "single_gpu_kv_concurrency": 50,
			"single_gpu_concurrency_needed": 36.99, "single_gpu_gpus_at_peak": 5,
			"tp_gpus_at_peak": 6, "tp_gpu_saving": -1,
		},
	}} with input as _measured("nvlink", {})
}

test_fail_tp2_over_pcie_with_gain if {
	inp := _measured("pcie", {"tp_latency_gain": 0.3, "tp_tpot_gain": 0.3, "tp_ttft_gain": 0.5})
	[v.rule | some v in partitioning_justified.violations] == ["tp_on_slow_interconnect"] with input as inp
}

# A stated fits_single_gpu_with_useful_kv wins over fits_single_gpu; equal GPU counts save
# nothing.
test_fail_useful_kv_stated_and_no_saving if {
	inp := _measured("nvlink", {"fits_single_gpu": false, "tp_gpu_saving": 0})
	[v.rule | some v in partitioning_justified.violations] == ["tp_gain_unproven"] with input as inp
}

test_fail_tp_gain_unknown if {
	[v.message | some v in partitioning_justified.violations] == ["tensor parallelism 2 gains unknown in p99 latency over TP=1 on the same unknown GPUs at peak (TPOT unknown, TTFT unknown, the smaller counts; at least 0.2 required) while TP=1 fits one accelerator with KV for unknown requests at the p99 context (unknown in service per replica at peak) and needs unknown GPUs at peak against unknown at TP=2; set parallelism.tensor_parallel to 1"] with input as _tp(2, "nvlink", null)
}
