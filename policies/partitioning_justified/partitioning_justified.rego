# METADATA
# title: Partitioning justified
# description: >-
#   Tensor parallelism above 1 is used only when the model does not fit one
#   accelerator, or when it runs on a fast interconnect (tp_fast_interconnects) and the
#   recomputation predicts a p99 time-per-output-token gain of at least
#   tp_min_latency_gain over TP=1.
# custom:
#   id: partitioning_justified
#   severity: high
#   guards: "method: choose replication or partitioning from memory fit and interconnect evidence; failure mode: more GPUs are assumed to reduce latency"
package capgate.policies.partitioning_justified

import data.capgate.lib.result

_policy := "partitioning_justified"

_thresholds := data.capgate.thresholds

_tp := input.plan.tensor_parallel

_gain := input.recomputation.tp_latency_gain

_optional := _tp > 1 if input.recomputation.fits_single_gpu == true

_fast_interconnect if input.provider.interconnect in _thresholds.tp_fast_interconnects

_gain_sufficient if {
	is_number(_gain)
	_gain >= _thresholds.tp_min_latency_gain
}

# METADATA
# title: Fast interconnect
# description: >-
#   Tensor parallelism for a model that fits one accelerator runs on an interconnect
#   listed in tp_fast_interconnects.
# custom:
#   severity: high
#   guards: "failure mode: more GPUs are assumed to reduce latency"
violations contains v if {
	_optional
	not _fast_interconnect
	v := result.violation(
		_policy, "tp_on_slow_interconnect", "high",
		sprintf(
			"tensor parallelism %v over %s for a model that fits one accelerator: all-reduce over a slow interconnect costs latency",
			[result.show(_tp), input.provider.interconnect],
		),
		{
			"tensor_parallel": _tp,
			"fits_single_gpu": true,
			"interconnect": input.provider.interconnect,
			"fast_interconnects": _thresholds.tp_fast_interconnects,
		},
	)
}

# METADATA
# title: Latency gain shown
# description: >-
#   Tensor parallelism for a model that fits one accelerator has a recomputed p99 TPOT
#   gain of at least tp_min_latency_gain over TP=1.
# custom:
#   severity: high
#   guards: "failure mode: more GPUs are assumed to reduce latency"
violations contains v if {
	_optional
	not _gain_sufficient
	v := result.violation(
		_policy, "tp_gain_unproven", "high",
		sprintf(
			"tensor parallelism %v for a model that fits one accelerator gains %v in p99 TPOT over TP=1; at least %v required",
			[result.show(_tp), result.show(_gain), result.show(_thresholds.tp_min_latency_gain)],
		),
		{"tensor_parallel": _tp, "fits_single_gpu": true, "tp_latency_gain": _gain, "min_latency_gain": _thresholds.tp_min_latency_gain},
	)
}
