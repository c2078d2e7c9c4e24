package capgate.policies.partitioning_justified_test

import data.capgate.policies.partitioning_justified

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

test_fail_tp4_over_pcie if {
	partitioning_justified.violations == {
		{
			"policy": "partitioning_justified", "rule": "tp_on_slow_interconnect", "severity": "high",
			"message": "tensor parallelism 4 over pcie for a model that fits one accelerator: all-reduce over a slow interconnect costs latency",
			"details": {"tensor_parallel": 4, "fits_single_gpu": true, "interconnect": "pcie", "fast_interconnects": ["infinity_fabric", "nvlink"]},
		},
		{
			"policy": "partitioning_justified", "rule": "tp_gain_unproven", "severity": "high",
			"message": "tensor parallelism 4 for a model that fits one accelerator gains 0.04 in p99 TPOT over TP=1; at least 0.2 required",
			"details": {"tensor_parallel": 4, "fits_single_gpu": true, "tp_latency_gain": 0.04, "min_latency_gain": 0.2},
		},
	} with input as _tp(4, "pcie", 0.04)
}

test_fail_tp_gain_unknown if {
	[v.message | some v in partitioning_justified.violations] == ["tensor parallelism 2 for a model that fits one accelerator gains unknown in p99 TPOT over TP=1; at least 0.2 required"] with input as _tp(2, "nvlink", null)
}
