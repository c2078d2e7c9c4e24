# METADATA
# title: Tail SLOs met at peak
# description: >-
#   Every traffic class meets its p99 TTFT, time per output token, end-to-end and
#   queue-deadline SLOs, both in fresh load-test evidence taken at or above the plan's
#   peak load per ready replica and in the planner's recomputation of the peak
#   scenario; the plan's own claims agree with the recomputation within the tolerance
#   data.capgate.thresholds.claims_max_relative_error. Stale evidence is ignored here
#   (evidence_fresh reports it), and so is evidence declared by hand while
#   require_imported_evidence.tail_slo is on; no qualifying fresh evidence at all is a
#   violation. A test whose error rate exceeds evidence_max_error_rate shows nothing about
#   the SLO: it is a violation and does not count.
# custom:
#   id: tail_slo
#   severity: high
#   guards: "method: size to tail objectives (per-class p99 SLOs at peak)"
package capgate.policies.tail_slo

import data.capgate.lib.evidence
import data.capgate.lib.representative
import data.capgate.lib.result

_policy := "tail_slo"

_thresholds := data.capgate.thresholds

# Measured or predicted p99 key -> the workload class's SLO key it is held to.
_metrics := {
	"ttft_p99_ms": "ttft_p99_ms",
	"tpot_p99_ms": "tpot_p99_ms",
	"e2e_p99_ms": "e2e_p99_ms",
	"queue_p99_ms": "queue_deadline_ms",
}

# The load per ready replica a test must have carried: the plan's peak after it has lost
# its largest zone (the survivors carry the peak), never less than the peak on all replicas.
_peak_rps := max([
	input.recomputation.peak_rps_per_replica,
	object.get(input.recomputation, "peak_rps_per_replica_zone_lost", 0),
])

_fresh := evidence.usable(input.evidence, _thresholds, _policy)

# Fresh tests that put at least the peak load on each replica (a client that fell behind
# is judged at the rate it achieved, which the registry puts in offered_rps_per_replica).
_at_peak_rate := [e |
	some e in _fresh
	is_number(e.offered_rps_per_replica)
	e.offered_rps_per_replica >= _peak_rps
]

_too_many_errors(e) if e.error_rate > _thresholds.evidence_max_error_rate

_at_peak := [e |
	some e in _at_peak_rate
	not _too_many_errors(e)
	representative.represents(e.ref)
]

# Tests at peak without errors that measured another workload (lib/representative).
_unrepresentative := [e |
	some e in _at_peak_rate
	not _too_many_errors(e)
	not representative.represents(e.ref)
]

_slo_declared(class, slo_key) if is_number(class.slo[slo_key])

# What the recomputation's step times rest on, for messages about its predictions: a deny
# caused by the recomputation names whether calibration moved it.
_calibration := input.recomputation.calibration

_calibration_text := concat("", ["the step-time model is calibrated on ", result.show(count(_calibration.source_evidence)), " load test(s) (MBU ", result.show(_calibration.mbu), ", MFU ", result.show(_calibration.mfu), ")"]) if {
	_calibration.fitted == true
} else := concat("", ["the step-time model uses default efficiencies (MBU ", result.show(_calibration.mbu), ", MFU ", result.show(_calibration.mfu), "): no fresh load test on this accelerator calibrated it"]) if {
	is_object(_calibration)
} else := "the calibration is unknown"

_change := input.recomputation.calibration_changed

_calibration_change_text := concat("", ["; the calibration changed since the plan's decision ", _change.decision, " (MBU ", result.show(_change.previous.mbu), " -> ", result.show(_calibration.mbu), ", MFU ", result.show(_change.previous.mfu), " -> ", result.show(_calibration.mfu), "): the prediction moved, not the plan"]) if {
	is_object(_change)
} else := ""

_recomputation_basis := concat("", [_calibration_text, _calibration_change_text])

# The serving settings a recomputed miss turns on: batch cap and KV room per replica.
_serving_text := concat("", ["serving.max_num_seqs ", result.show(object.get(input.plan, ["serving", "max_num_seqs"], null)), ", KV cache for ", result.show(object.get(input.recomputation, ["memory", "kv_concurrency_at_p99_context"], null)), " requests at the p99 context with serving.gpu_memory_utilization ", result.show(object.get(input.plan, ["serving", "gpu_memory_utilization"], null))])

_measured_at_peak(class, metric) if {
	some e in _at_peak
	is_number(e.per_class[class][metric])
}

# Most load-test tools cannot see the server's queue. A request's queue wait is part of its
# time to first token, so the p99 queue wait is at most the p99 TTFT: a measured TTFT p99
# within the queue deadline shows the deadline met.
_measured_at_peak(class, "queue_p99_ms") if {
	some e in _at_peak
	ttft := e.per_class[class].ttft_p99_ms
	is_number(ttft)
	ttft <= input.workload.classes[class].slo.queue_deadline_ms
}

_predicted_over(class) if {
	some metric, slo_key in _metrics
	input.recomputation.scenarios.peak.per_class[class][metric] > input.workload.classes[class].slo[slo_key]
}

# METADATA
# title: SLOs declared
# description: Every traffic class declares all four p99 SLOs as numbers.
# custom:
#   severity: high
#   guards: "method: per-class p99 SLOs (TTFT, TPOT, end-to-end, queue deadline)"
violations contains v if {
	some name, class in input.workload.classes
	some slo_key in ["ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms", "queue_deadline_ms"]
	not _slo_declared(class, slo_key)
	v := result.violation(
		_policy, "slo_undeclared", "high",
		concat("", ["class ", name, " declares no ", slo_key, " SLO"]),
		{"class": name, "slo": slo_key},
	)
}

# METADATA
# title: Fresh evidence at peak exists
# description: >-
#   At least one fresh load test offered at least the plan's peak load per ready replica
#   after losing the largest zone (evidence.offered_rps_per_replica >=
#   recomputation.peak_rps_per_replica_zone_lost, and >= peak_rps_per_replica).
# custom:
#   severity: high
#   guards: "method: each decision needs versioned load-test evidence"
violations contains v if {
	count(_at_peak) == 0
	fresh := [{"evidence": e.ref, "offered_rps_per_replica": e.offered_rps_per_replica} | some e in _fresh]
	declared := evidence.declared_only(input.evidence, _thresholds, _policy)
	v := result.violation(
		_policy, "no_evidence_at_peak", "high",
		concat("", ["no fresh imported load-test evidence at or above the peak of ", result.show(_peak_rps), " requests/s per ready replica (with the largest zone lost) without failures that represents the workload (", result.show(count(fresh)), " fresh evidence; ", result.show(count(declared)), " declared by hand and ", result.show(count(_unrepresentative)), " not representative, not counted)"]),
		{
			"peak_rps_per_replica": _peak_rps,
			"fresh_evidence": fresh,
			"declared_evidence": declared,
			"unrepresentative_evidence": [e.ref | some e in _unrepresentative],
		},
	)
}

# METADATA
# title: Failed requests are not fast requests
# description: >-
#   A fresh load test at peak whose requests failed at more than evidence_max_error_rate
#   measured the latencies of the requests that survived: it shows nothing about the SLO
#   and is a violation of its own.
# custom:
#   severity: high
#   guards: "failure mode: a failed load test read as a fast one"
violations contains v if {
	some e in _at_peak_rate
	_too_many_errors(e)
	v := result.violation(
		_policy, "evidence_errors", "high",
		concat("", ["evidence ", e.ref, ": ", result.show(e.error_rate), " of requests failed (", result.show(e.failed), " failed), over the maximum error rate of ", result.show(_thresholds.evidence_max_error_rate), "; its latencies do not show the SLO is met"]),
		{
			"evidence": e.ref,
			"error_rate": e.error_rate,
			"failed": e.failed,
			"completed": e.completed,
			"max_error_rate": _thresholds.evidence_max_error_rate,
		},
	)
}

# METADATA
# title: Evidence represents the workload
# description: >-
#   A fresh test at peak whose arrivals are smoother than the workload's bursts, or whose
#   prompts fall short of the workload's long prompts, does not support the plan (see
#   lib/representative for the thresholds). When no other test at peak does, each gap is a
#   violation naming the evidence, its figure and the threshold; otherwise a note.
# custom:
#   severity: high
#   guards: "failure mode: uniform prompts and smooth arrivals hide queueing and KV-cache behaviour"
violations contains v if {
	count(_at_peak) == 0
	some e in _unrepresentative
	some gap in representative.gaps
	gap.evidence == e.ref
	v := result.violation(_policy, "evidence_not_representative", "high", gap.message, object.remove(gap, ["message"]))
}

# METADATA
# title: Unrepresentative evidence beside representative evidence
# description: A gap of a test at peak is a note while another fresh test at peak has none.
# custom:
#   severity: info
notes contains n if {
	count(_at_peak) > 0
	some e in _unrepresentative
	some gap in representative.gaps
	gap.evidence == e.ref
	n := result.violation(_policy, "evidence_not_representative", "info", gap.message, object.remove(gap, ["message"]))
}

# Tests at peak that state no prefix-cache hit rate although the workload's share is low
# enough for a test to exceed it by more than evidence_max_prefix_hit_excess.
_prefix_unknown := [e |
	some e in _at_peak
	not is_number(object.get(e, "prefix_cache_hit_rate", null))
	share := object.get(e, "workload_prefix_cache_share", null)
	is_number(share)
	share + _thresholds.evidence_max_prefix_hit_excess < 1
]

# METADATA
# title: Prefix-cache hit rate unknown
# description: >-
#   A test at peak that states no prefix-cache hit rate may have served its prompts from
#   the cache far more often than production will (a shared system prompt, a small prompt
#   set replayed): not denied, since most tools cannot see the cache, but noted once per
#   plan with the tests, so the reader knows the TTFT was not checked against it. Importing
#   with --prometheus reads the server's prefix-cache counters over the test window.
# custom:
#   severity: info
notes contains n if {
	count(_prefix_unknown) > 0
	refs := [e.ref | some e in _prefix_unknown]
	n := result.violation(
		_policy, "prefix_cache_hit_rate_unknown", "info",
		concat("", ["the prefix-cache hit rate of ", concat(", ", refs), " is unknown (the workload's share for the offered classes is ", concat(", ", [result.show(e.workload_prefix_cache_share) | some e in _prefix_unknown]), "): the TTFT they measured may rest on more cache hits than production will have; import the tests with --prometheus to read the server's prefix-cache counters"]),
		{"evidence": refs, "workload_prefix_cache_share": [e.workload_prefix_cache_share | some e in _prefix_unknown], "max_excess": _thresholds.evidence_max_prefix_hit_excess},
	)
}

# METADATA
# title: Requests fit the model length
# description: >-
#   At most context_max_rejected_share of a class's requests are longer (prompt + output)
#   than the plan's serving.max_model_len: vLLM rejects longer requests, and a rejected
#   request misses every SLO.
# custom:
#   severity: high
#   guards: "method: size to tail objectives (requests the plan cannot serve are failures)"
violations contains v if {
	some name, fit in input.recomputation.context_fit
	fit.rejected_share > _thresholds.context_max_rejected_share
	v := result.violation(
		_policy, "requests_exceed_max_model_len", "high",
		concat("", ["class ", name, ": ", result.show(fit.rejected_share), " of requests need more than serving.max_model_len = ", result.show(fit.max_model_len), " tokens (p99 prompt + output ", result.show(fit.p99_context_tokens), "), over the ", result.show(_thresholds.context_max_rejected_share), " the SLO allows; vLLM rejects them: raise serving.max_model_len to at least ", result.show(ceil(fit.p99_context_tokens))]),
		{
			"class": name,
			"field": "serving.max_model_len",
			"max_model_len": fit.max_model_len,
			"p99_context_tokens": fit.p99_context_tokens,
			"rejected_share": fit.rejected_share,
			"max_rejected_share": _thresholds.context_max_rejected_share,
		},
	)
}

# METADATA
# title: Class measured at peak
# description: >-
#   Every class's four p99 latencies were measured by some fresh load test at peak; a
#   class the tests did not measure is not shown to meet its SLO. An unmeasured queue wait
#   counts as shown when the measured TTFT p99 (which contains it) is within the deadline.
# custom:
#   severity: high
#   guards: "method: size to tail objectives"
violations contains v if {
	count(_at_peak) > 0
	some name, _ in input.workload.classes
	some metric, _ in _metrics
	not _measured_at_peak(name, metric)
	v := result.violation(
		_policy, "class_not_measured_at_peak", "high",
		concat("", ["no fresh load test at peak measured ", metric, " of class ", name]),
		{"class": name, "metric": metric, "evidence": [e.ref | some e in _at_peak]},
	)
}

# METADATA
# title: SLO met in evidence at peak
# description: Fresh evidence at or above peak load shows every class within its p99 SLOs.
# custom:
#   severity: high
#   guards: "method: size to tail objectives"
violations contains v if {
	some e in _at_peak
	some name, class in input.workload.classes
	some metric, slo_key in _metrics
	measured := e.per_class[name][metric]
	slo := class.slo[slo_key]
	is_number(measured)
	is_number(slo)
	measured > slo
	v := result.violation(
		_policy, "evidence_slo_missed", "high",
		concat("", ["evidence ", e.ref, ": class ", name, " ", metric, " is ", result.show(measured), " ms at ", result.show(e.offered_rps_per_replica), " requests/s per replica, over the SLO of ", result.show(slo), " ms"]),
		{
			"evidence": e.ref,
			"class": name,
			"metric": metric,
			"measured_ms": measured,
			"slo_ms": slo,
			"offered_rps_per_replica": e.offered_rps_per_replica,
			"peak_rps_per_replica": _peak_rps,
		},
	)
}

# METADATA
# title: Recomputation covers every class
# description: The planner's peak scenario predicts every traffic class.
# custom:
#   severity: high
#   guards: "method: the planner recomputes the plan independently of its claims"
violations contains v if {
	some name, _ in input.workload.classes
	not input.recomputation.scenarios.peak.per_class[name]
	v := result.violation(
		_policy, "recomputation_missing_class", "high",
		concat("", ["the recomputed peak scenario has no prediction for class ", name]),
		{"class": name},
	)
}

_uncertainty := input.recomputation.uncertainty

# While no fresh load test calibrates the model, a prediction is judged at the pessimistic
# end of the interval the planner's held-out error for the accelerator family gives it.
_judged(class, metric) := value if {
	_calibration.fitted == true
	value := input.recomputation.scenarios.peak.per_class[class][metric]
} else := value if {
	value := input.recomputation.scenarios.peak.per_class[class].pessimistic_ms[metric]
}

_interval_text := concat("", ["the ", _uncertainty.family, " family's held-out error (", result.show(_uncertainty.held_out_cases), " published figures)"]) if {
	_uncertainty.widened == false
} else := concat("", ["the planner's widest interval (", _uncertainty.family, ": no measured kernel efficiencies or too few held-out figures)"])

_judged_text(class, metric, value) := concat("", [" is ", result.show(value), " ms"]) if {
	_calibration.fitted == true
} else := concat("", [" is ", result.show(value), " ms at the pessimistic end of its interval (predicted ", result.show(input.recomputation.scenarios.peak.per_class[class][metric]), " ms; ", _interval_text, ", judged so while no fresh load test calibrates the model)"])

# METADATA
# title: SLO met in the recomputation
# description: >-
#   The planner's recomputed peak scenario keeps every class within its p99 SLOs. While
#   no fresh load test calibrates the model, each p99 is judged at the pessimistic end of
#   its interval (recomputation.uncertainty: the planner's held-out error for the
#   accelerator family, or its widest interval where the family has no measured kernels).
# custom:
#   severity: high
#   guards: "method: size to tail objectives"
violations contains v if {
	some name, class in input.workload.classes
	some metric, slo_key in _metrics
	judged := _judged(name, metric)
	slo := class.slo[slo_key]
	is_number(slo)
	judged > slo
	v := result.violation(
		_policy, "recomputation_slo_missed", "high",
		concat("", ["recomputed peak: class ", name, " ", metric, _judged_text(name, metric, judged), ", over the SLO of ", result.show(slo), " ms at ", result.show(input.recomputation.scenarios.peak.ready_replicas), " ready replicas (", _serving_text, "); ", _recomputation_basis]),
		{
			"class": name,
			"metric": metric,
			"predicted_ms": input.recomputation.scenarios.peak.per_class[name][metric],
			"judged_ms": judged,
			"pessimistic": _calibration.fitted != true,
			"slo_ms": slo,
			"ready_replicas": input.recomputation.scenarios.peak.ready_replicas,
		},
	)
}

# METADATA
# title: Recomputation does not flag a miss
# description: >-
#   When every predicted p99 is within its SLO but the planner still marks the class as
#   missing it (for instance because it sheds requests at peak), the plan fails too.
# custom:
#   severity: high
#   guards: "method: size to tail objectives"
violations contains v if {
	some name, predicted in input.recomputation.scenarios.peak.per_class
	input.workload.classes[name]
	predicted.slo_met == false
	not _predicted_over(name)
	v := result.violation(
		_policy, "recomputation_flags_miss", "high",
		concat("", ["recomputed peak: the planner marks class ", name, " as missing its SLO (shed rate ", result.show(predicted.shed_rate), ")"]),
		{"class": name, "shed_rate": predicted.shed_rate},
	)
}

# METADATA
# title: Some replica count meets the SLOs
# description: >-
#   The planner's sizing search found a number of ready replicas that meets every
#   class's p99 SLOs at peak; null means none did within its search bounds.
# custom:
#   severity: high
#   guards: "method: size to tail objectives"
violations contains v if {
	input.recomputation.min_ready_replicas_at_peak == null
	v := result.violation(
		_policy, "no_sizing_meets_slo", "high",
		"the recomputation found no number of ready replicas that meets every class's p99 SLOs at peak",
		{"min_ready_replicas_at_peak": null},
	)
}

# METADATA
# title: Claims are not optimistic
# description: >-
#   A latency the plan claims is lower than the planner's prediction by more than
#   claims_max_relative_error (of the prediction): the plan promises more than it can
#   keep. A claim higher than the prediction is conservative: a note, not a violation.
# custom:
#   severity: high
#   guards: "method: the planner reports the error between claims, predictions and evidence"
violations contains v if {
	some name, checks in input.recomputation.claims_check
	some metric, check in checks
	check.claimed < check.predicted
	check.relative_error > _thresholds.claims_max_relative_error
	v := result.violation(
		_policy, "claims_disagree", "high",
		concat("", ["class ", name, ": the plan claims ", metric, " ", result.show(check.claimed), " ms, the recomputation predicts ", result.show(check.predicted), " ms (relative error ", result.show(check.relative_error), " > ", result.show(_thresholds.claims_max_relative_error), "): the plan promises more than the recomputation; raise claims.per_class.", name, ".", metric, " or change the plan (", _recomputation_basis, ")"]),
		{
			"class": name,
			"metric": metric,
			"claimed": check.claimed,
			"predicted": check.predicted,
			"relative_error": check.relative_error,
			"max_relative_error": _thresholds.claims_max_relative_error,
		},
	)
}

# Stating claims is a choice of the policy data (claims_required, default false); a
# bundle whose data predates the key keeps the default.
_claims_required if object.get(_thresholds, "claims_required", false) == true

# The p99 claims a plan should state and does not, in class then metric order (class names
# sorted as strings: the same order on both engines), each with the recomputed value.
_missing_claims := [c |
	some name in sort([k | some k, _ in input.workload.classes])
	some metric in ["ttft_p99_ms", "tpot_p99_ms", "e2e_p99_ms"]
	not _claimed(name, metric)
	c := {
		"class": name,
		"metric": metric,
		"field": concat("", ["claims.per_class.", name, ".", metric]),
		"predicted": object.get(input.recomputation.scenarios.peak.per_class, [name, metric], null),
	}
]

# METADATA
# title: Claims stated, where the policy data requires them
# description: >-
#   With claims_required true in the policy data, the plan claims each class's p99 TTFT,
#   TPOT and end-to-end latency (plan.claims.per_class): each claim missing is a violation.
#   By default (claims_required false) a missing claim is a note, not a deny: the gate
#   does not rest on the plan's claims. It holds every class to its SLOs in fresh
#   evidence at peak and in its own recomputation, which it makes whatever the plan
#   claims; a claim adds a promise the plan is held to (claims_disagree denies one the
#   recomputation does not support), so a plan that states none has promised nothing
#   it could break, and is not less safe. An organisation whose review compares
#   production with what each plan promised requires claims with the threshold.
# custom:
#   severity: high
#   guards: "method: claim, representative test, production signal, decision gate"
violations contains v if {
	_claims_required
	some missing in _missing_claims
	v := result.violation(
		_policy, "claims_missing", "high",
		concat("", ["class ", missing.class, ": the plan claims no ", missing.metric, "; state ", missing.field, " (the recomputation predicts ", result.show(missing.predicted), " ms at peak)"]),
		missing,
	)
}

# METADATA
# title: Claims not stated
# description: >-
#   While claims_required is false (the default), the claims a plan leaves out are one
#   note per plan naming each field with the recomputed value, never a deny.
# custom:
#   severity: info
notes contains n if {
	not _claims_required
	count(_missing_claims) > 0
	named := [concat("", [m.class, ".", m.metric, " (predicted ", result.show(m.predicted), " ms)"]) | some m in _missing_claims]
	n := result.violation(
		_policy, "claims_missing", "info",
		concat("", ["the plan claims no ", concat(", ", named), ": the gate holds it to the SLOs in the evidence and in the recomputation instead; state claims.per_class to be held to them too (claims_required in the policy data makes a missing claim a violation)"]),
		{"claims": _missing_claims, "claims_required": false},
	)
}

_claimed(name, metric) if is_number(input.plan.claims.per_class[name][metric])

# The claims above the prediction by more than the tolerance, in class then metric order
# (names sorted as strings: the same order on both engines).
_conservative_claims := [c |
	checks_by_class := input.recomputation.claims_check
	some name in sort([k | some k, _ in checks_by_class])
	some metric in sort([k | some k, _ in checks_by_class[name]])
	check := checks_by_class[name][metric]
	check.claimed > check.predicted
	check.relative_error > _thresholds.claims_max_relative_error
	c := {"class": name, "metric": metric, "claimed": check.claimed, "predicted": check.predicted}
]

# METADATA
# title: Conservative claims
# description: >-
#   The claims above the prediction by more than the tolerance are noted, never denied:
#   one note per plan that names every such claim with its prediction.
# custom:
#   severity: info
notes contains n if {
	count(_conservative_claims) > 0
	named := [concat("", [c.class, ".", c.metric, " ", result.show(c.claimed), " ms (predicted ", result.show(c.predicted), " ms)"]) | some c in _conservative_claims]
	n := result.violation(
		_policy, "claims_pessimistic", "info",
		concat("", ["the plan's claims exceed the recomputation by more than claims_max_relative_error ", result.show(_thresholds.claims_max_relative_error), " of the prediction: ", concat(", ", named), "; the claims are conservative"]),
		{"claims": _conservative_claims, "max_relative_error": _thresholds.claims_max_relative_error},
	)
}

# METADATA
# title: Capacity claim below the recomputation
# description: >-
#   The plan claims fewer ready replicas suffice at peak (claims.ready_replicas_needed_at_peak)
#   than the recomputation needs (min_ready_replicas_at_peak): noted, not denied, because no
#   rule rests on that claim (the reserve, the disruption budget and the autoscaling floor
#   are judged against the recomputation's need); the note keeps the gate and the report
#   saying the same thing about it.
# custom:
#   severity: info
notes contains n if {
	claimed := object.get(input.plan, ["claims", "ready_replicas_needed_at_peak"], null)
	needed := input.recomputation.min_ready_replicas_at_peak
	is_number(claimed)
	is_number(needed)
	claimed < needed
	n := result.violation(
		_policy, "claims_capacity_optimistic", "info",
		concat("", ["the plan claims ", result.show(claimed), " ready replicas suffice at peak; the recomputation needs ", result.show(needed), ": the claim is optimistic (the plan's replicas are judged on the recomputation's need; set claims.ready_replicas_needed_at_peak to ", result.show(needed), ")"]),
		{"field": "claims.ready_replicas_needed_at_peak", "claimed": claimed, "needed": needed},
	)
}
