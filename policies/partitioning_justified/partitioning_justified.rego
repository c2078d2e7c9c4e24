# METADATA
# title: Partitioning justified
# description: >-
#   Tensor parallelism above 1 is used only when TP=1 does not fit one accelerator with
#   useful KV (room for the requests a replica has in service at peak), or when it needs
#   fewer GPUs at peak than TP=1, or when it runs on a fast interconnect
#   (tp_fast_interconnects) and the recomputation predicts a p99 latency gain (TTFT and
#   TPOT) of at least tp_min_latency_gain over TP=1 on the same GPUs at the same load.
# custom:
#   id: partitioning_justified
#   severity: high
#   guards: "method: choose replication or partitioning from memory fit and interconnect evidence; failure mode: more GPUs are assumed to reduce latency"
package capgate.policies.partitioning_justified

import data.capgate.lib.result

_policy := "partitioning_justified"

_thresholds := data.capgate.thresholds

_rec := input.recomputation

_tp := input.plan.tensor_parallel

# The recomputation's figures; a document from before a field existed reads it as null.
_gain := object.get(_rec, "tp_latency_gain", null)

_tpot_gain := object.get(_rec, "tp_tpot_gain", null)

_ttft_gain := object.get(_rec, "tp_ttft_gain", null)

_equal_gpus := object.get(_rec, "tp_equal_gpus", null)

_tp_gpus := object.get(_rec, "tp_gpus_at_peak", null)

_single_gpus := object.get(_rec, "single_gpu_gpus_at_peak", null)

_saving := object.get(_rec, "tp_gpu_saving", null)

_useful_kv := object.get(_rec, "fits_single_gpu_with_useful_kv", null)

_kv := object.get(_rec, "single_gpu_kv_concurrency", null)

_needed := object.get(_rec, "single_gpu_concurrency_needed", null)

# TP=1 fits with useful KV: as the recomputation states it; when it does not say, as
# fits_single_gpu says (partitioning must then be justified by a gain or a GPU saving).
_useful_kv_stated if is_boolean(_useful_kv)

_fits_with_useful_kv if _useful_kv == true

_fits_with_useful_kv if {
	not _useful_kv_stated
	_rec.fits_single_gpu == true
}

# The recomputation's sizing already pays the all-reduce over this interconnect.
_saves_gpus if {
	is_number(_saving)
	_saving > 0
}

# Partitioning nothing requires: TP=1 fits with useful KV and needs no more GPUs at peak.
_optional if {
	_tp > 1
	_fits_with_useful_kv
	not _saves_gpus
}

_fast_interconnect if input.provider.interconnect in _thresholds.tp_fast_interconnects

_gain_sufficient if {
	is_number(_gain)
	_gain >= _thresholds.tp_min_latency_gain
}

_fit_text := concat("", ["TP=1 fits one accelerator with KV for ", result.show(_kv), " requests at the p99 context (", result.show(_needed), " in service per replica at peak) and needs ", result.show(_single_gpus), " GPUs at peak against ", result.show(_tp_gpus), " at TP=", result.show(_tp)])

# METADATA
# title: Fast interconnect
# description: >-
#   Tensor parallelism that TP=1 makes unnecessary (it fits with useful KV and needs no
#   more GPUs at peak) runs on an interconnect listed in tp_fast_interconnects.
# custom:
#   severity: high
#   guards: "failure mode: more GPUs are assumed to reduce latency"
violations contains v if {
	_optional
	not _fast_interconnect
	v := result.violation(
		_policy, "tp_on_slow_interconnect", "high",
		concat("", ["tensor parallelism ", result.show(_tp), " over ", input.provider.interconnect, " while ", _fit_text, ": all-reduce over a slow interconnect costs latency; set parallelism.tensor_parallel to 1"]),
		{
			"tensor_parallel": _tp,
			"interconnect": input.provider.interconnect,
			"fast_interconnects": _thresholds.tp_fast_interconnects,
			"fits_single_gpu_with_useful_kv": _useful_kv,
			"single_gpu_kv_concurrency": _kv,
			"single_gpu_concurrency_needed": _needed,
			"single_gpu_gpus_at_peak": _single_gpus,
			"tp_gpus_at_peak": _tp_gpus,
			"tp_gpu_saving": _saving,
		},
	)
}

# METADATA
# title: Latency gain shown
# description: >-
#   Tensor parallelism that TP=1 makes unnecessary cuts both p99 TTFT and p99 TPOT by at
#   least tp_min_latency_gain against TP=1 on the same GPUs at the same offered load.
# custom:
#   severity: high
#   guards: "failure mode: more GPUs are assumed to reduce latency"
violations contains v if {
	_optional
	not _gain_sufficient
	v := result.violation(
		_policy, "tp_gain_unproven", "high",
		concat("", ["tensor parallelism ", result.show(_tp), " gains ", result.show(_gain), " in p99 latency over TP=1 on the same ", result.show(_equal_gpus), " GPUs at peak (TPOT ", result.show(_tpot_gain), ", TTFT ", result.show(_ttft_gain), ", the smaller counts; at least ", result.show(_thresholds.tp_min_latency_gain), " required) while ", _fit_text, "; set parallelism.tensor_parallel to 1"]),
		{
			"tensor_parallel": _tp,
			"tp_latency_gain": _gain,
			"tp_tpot_gain": _tpot_gain,
			"tp_ttft_gain": _ttft_gain,
			"tp_equal_gpus": _equal_gpus,
			"min_latency_gain": _thresholds.tp_min_latency_gain,
			"fits_single_gpu_with_useful_kv": _useful_kv,
			"single_gpu_kv_concurrency": _kv,
			"single_gpu_concurrency_needed": _needed,
			"single_gpu_gpus_at_peak": _single_gpus,
			"tp_gpus_at_peak": _tp_gpus,
			"tp_gpu_saving": _saving,
		},
	)
}
