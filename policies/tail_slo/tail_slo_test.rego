package capgate.policies.tail_slo_test

import data.capgate.policies.tail_slo

_slo := {"ttft_p99_ms": 1500, "tpot_p99_ms": 60, "e2e_p99_ms": 75000, "queue_deadline_ms": 2000}

_measured := {
	"ttft_p99_ms": 1120, "tpot_p99_ms": 47, "e2e_p99_ms": 41200, "queue_p99_ms": 690,
	"prompt_tokens_p99": 6100,
}

_predicted := {
	"ttft_p99_ms": 880, "tpot_p99_ms": 36.8, "e2e_p99_ms": 34400, "queue_p99_ms": 480,
	"shed_rate": 0, "slo_met": true,
	"pessimistic_ms": {"ttft_p99_ms": 1127, "tpot_p99_ms": 47.1, "e2e_p99_ms": 44057, "queue_p99_ms": 614.8},
}

_uncertainty := {
	"family": "H100", "measured_efficiencies": true, "held_out_cases": 18,
	"error_low": -0.2192, "error_high": 0.1235, "widened": false,
}

_evidence := {
	"ref": "ev@v1", "fresh": true, "age_days": 6, "offered_rps_per_replica": 9.6,
	"entry": "imported", "completed": 5700, "failed": 0, "error_rate": 0,
	"arrival_cv": 1.581, "classes": ["interactive"], "per_class": {"interactive": _measured},
}

_input := {
	"workload": {"classes": {"interactive": {"slo": _slo, "interarrival_cv": 1.6, "prompt_tokens_p99": 6100}}},
	"plan": {"claims": {"per_class": {"interactive": {"ttft_p99_ms": 1200, "tpot_p99_ms": 40, "e2e_p99_ms": 36000}}}},
	"evidence": [_evidence],
	"recomputation": {
		"peak_rps_per_replica": 5.5,
		"scenarios": {"peak": {"ready_replicas": 9, "per_class": {"interactive": _predicted}}},
		"claims_check": {"interactive": {"ttft_p99_ms": {"claimed": 1200, "predicted": 1100, "relative_error": 0.09}}},
		"calibration": {"fitted": false, "source_evidence": [], "mbu": 0.6, "mfu": 0.45, "fit_error": null},
		"uncertainty": _uncertainty,
	},
}

_with(patch) := object.union(_input, patch)

test_success_compliant if {
	tail_slo.violations == set() with input as _input
}

test_success_evidence_exactly_at_peak if {
	tail_slo.violations == set() with input as _with({"evidence": [object.union(_evidence, {"offered_rps_per_replica": 5.5})]})
}

test_success_stale_evidence_over_slo_is_ignored if {
	stale := object.union(_evidence, {"ref": "old@v1", "fresh": false, "per_class": {"interactive": {"ttft_p99_ms": 9999}}})
	tail_slo.violations == set() with input as _with({"evidence": [_evidence, stale]})
}

test_fail_evidence_slo_missed if {
	ev := object.union(_evidence, {"per_class": {"interactive": {"ttft_p99_ms": 2350}}})
	tail_slo.violations == {{
		"policy": "tail_slo",
		"rule": "evidence_slo_missed",
		"severity": "high",
		"message": "evidence ev@v1: class interactive ttft_p99_ms is 2350 ms at 9.6 requests/s per replica, over the SLO of 1500 ms",
		"details": {
			"evidence": "ev@v1", "class": "interactive", "metric": "ttft_p99_ms", "measured_ms": 2350,
			"slo_ms": 1500, "offered_rps_per_replica": 9.6, "peak_rps_per_replica": 5.5,
		},
	}} with input as _with({"evidence": [ev]})
}

test_fail_queue_deadline_missed_in_evidence if {
	ev := object.union(_evidence, {"per_class": {"interactive": {"queue_p99_ms": 2600}}})
	{[v.rule, v.details.metric, v.details.slo_ms] | some v in tail_slo.violations} == {["evidence_slo_missed", "queue_p99_ms", 2000]} with input as _with({"evidence": [ev]})
}

test_fail_no_evidence_at_peak if {
	ev := object.union(_evidence, {"offered_rps_per_replica": 4})
	tail_slo.violations == {{
		"policy": "tail_slo",
		"rule": "no_evidence_at_peak",
		"severity": "high",
		"message": "no fresh imported load-test evidence at or above the peak of 5.5 requests/s per ready replica (with the largest zone lost) without failures that represents the workload (1 fresh evidence; 0 declared by hand and 0 not representative, not counted)",
		"details": {
			"peak_rps_per_replica": 5.5, "fresh_evidence": [{"evidence": "ev@v1", "offered_rps_per_replica": 4}],
			"declared_evidence": [], "unrepresentative_evidence": [],
		},
	}} with input as _with({"evidence": [ev]})
}

test_fail_evidence_below_the_zone_lost_rate if {
	# 12 replicas over 3 zones: losing one leaves 8, each carrying 66 / 8 = 8.25 requests/s.
	# A test at 7 requests/s per replica is above the 5.5 on all replicas, below that.
	ev := object.union(_evidence, {"offered_rps_per_replica": 7})
	inp := _with({"evidence": [ev], "recomputation": {"peak_rps_per_replica_zone_lost": 8.25}})
	[[v.rule, v.details.peak_rps_per_replica] | some v in tail_slo.violations] == [["no_evidence_at_peak", 8.25]] with input as inp
	tail_slo.violations == set() with input as _with({"recomputation": {"peak_rps_per_replica_zone_lost": 8.25}})
}

test_fail_declared_evidence_does_not_count if {
	declared := object.union(_evidence, {"ref": "hand@v1", "entry": "declared"})
	violations := tail_slo.violations with input as _with({"evidence": [declared]})
	[[v.rule, v.details.declared_evidence] | some v in violations] == [["no_evidence_at_peak", ["hand@v1"]]]
}

test_success_declared_evidence_counts_when_switched_off if {
	declared := object.union(_evidence, {"entry": "declared"})
	tail_slo.violations == set() with input as _with({"evidence": [declared]})
		with data.capgate.thresholds.require_imported_evidence.tail_slo as false
}

test_fail_failed_requests_are_not_fast if {
	# A test where 7 % of requests failed: its surviving requests' latencies look fine.
	failing := object.union(_evidence, {"completed": 930, "failed": 70, "error_rate": 0.07})
	tail_slo.violations == {
		{
			"policy": "tail_slo", "rule": "evidence_errors", "severity": "high",
			"message": "evidence ev@v1: 0.07 of requests failed (70 failed), over the maximum error rate of 0.01; its latencies do not show the SLO is met",
			"details": {"evidence": "ev@v1", "error_rate": 0.07, "failed": 70, "completed": 930, "max_error_rate": 0.01},
		},
		{
			"policy": "tail_slo", "rule": "no_evidence_at_peak", "severity": "high",
			"message": "no fresh imported load-test evidence at or above the peak of 5.5 requests/s per ready replica (with the largest zone lost) without failures that represents the workload (1 fresh evidence; 0 declared by hand and 0 not representative, not counted)",
			"details": {
				"peak_rps_per_replica": 5.5, "fresh_evidence": [{"evidence": "ev@v1", "offered_rps_per_replica": 9.6}],
				"declared_evidence": [], "unrepresentative_evidence": [],
			},
		},
	} with input as _with({"evidence": [failing]})
}

test_success_errors_within_the_maximum if {
	tail_slo.violations == set() with input as _with({"evidence": [object.union(_evidence, {"failed": 5, "error_rate": 0.001})]})
}

test_success_queue_unmeasured_but_bounded_by_ttft if {
	# TTFT p99 1120 ms contains the queue wait: within the 2000 ms deadline, the deadline is met.
	ev := json.remove(_evidence, ["per_class/interactive/queue_p99_ms"])
	tail_slo.violations == set() with input as _with({"evidence": [ev]})
}

test_fail_queue_unmeasured_and_ttft_over_deadline if {
	ev := json.remove(object.union(_evidence, {"per_class": {"interactive": {"ttft_p99_ms": 1400}}}), ["per_class/interactive/queue_p99_ms"])
	inp := _with({"evidence": [ev], "workload": {"classes": {"interactive": {"slo": object.union(_slo, {"queue_deadline_ms": 1000})}}}})
	[[v.rule, v.details.metric] | some v in tail_slo.violations] == [["class_not_measured_at_peak", "queue_p99_ms"]] with input as inp
}

test_fail_no_evidence_at_all if {
	{v.rule | some v in tail_slo.violations} == {"no_evidence_at_peak"} with input as object.union(_input, {"evidence": []})
}

test_fail_class_not_measured_at_peak if {
	ev := json.remove(_evidence, ["per_class/interactive/e2e_p99_ms"])
	tail_slo.violations == {{
		"policy": "tail_slo",
		"rule": "class_not_measured_at_peak",
		"severity": "high",
		"message": "no fresh load test at peak measured e2e_p99_ms of class interactive",
		"details": {"class": "interactive", "metric": "e2e_p99_ms", "evidence": ["ev@v1"]},
	}} with input as _with({"evidence": [ev]})
}

test_fail_slo_undeclared if {
	inp := json.remove(_input, ["workload/classes/interactive/slo/tpot_p99_ms"])
	tail_slo.violations == {{
		"policy": "tail_slo",
		"rule": "slo_undeclared",
		"severity": "high",
		"message": "class interactive declares no tpot_p99_ms SLO",
		"details": {"class": "interactive", "slo": "tpot_p99_ms"},
	}} with input as inp
}

test_fail_recomputation_slo_missed if {
	patch := {"recomputation": {
		"scenarios": {"peak": {"per_class": {"interactive": {"tpot_p99_ms": 61.25, "slo_met": false}}}},
		"calibration": {"fitted": true, "source_evidence": ["ev@v1"], "mbu": 0.6, "mfu": 0.45, "fit_error": 0.05},
	}}
	tail_slo.violations == {{
		"policy": "tail_slo",
		"rule": "recomputation_slo_missed",
		"severity": "high",
		"message": "recomputed peak: class interactive tpot_p99_ms is 61.25 ms, over the SLO of 60 ms at 9 ready replicas (serving.max_num_seqs unknown, KV cache for unknown requests at the p99 context with serving.gpu_memory_utilization unknown); the step-time model is calibrated on 1 load test(s) (MBU 0.6, MFU 0.45)",
		"details": {"class": "interactive", "metric": "tpot_p99_ms", "predicted_ms": 61.25, "judged_ms": 61.25, "pessimistic": false, "slo_ms": 60, "ready_replicas": 9},
	}} with input as _with(patch)
}

# Uncalibrated, the prediction (52 ms) is within the SLO but the pessimistic end of its
# interval is not: denied, and the message says why the end and not the point was judged.
test_fail_recomputation_slo_missed_at_the_pessimistic_end if {
	patch := {"recomputation": {"scenarios": {"peak": {"per_class": {"interactive": {
		"tpot_p99_ms": 52,
		"pessimistic_ms": {"ttft_p99_ms": 1127, "tpot_p99_ms": 66.6, "e2e_p99_ms": 44057, "queue_p99_ms": 614.8},
	}}}}}}
	tail_slo.violations == {{
		"policy": "tail_slo",
		"rule": "recomputation_slo_missed",
		"severity": "high",
		"message": "recomputed peak: class interactive tpot_p99_ms is 66.6 ms at the pessimistic end of its interval (predicted 52 ms; the H100 family's held-out error (18 published figures), judged so while no fresh load test calibrates the model), over the SLO of 60 ms at 9 ready replicas (serving.max_num_seqs unknown, KV cache for unknown requests at the p99 context with serving.gpu_memory_utilization unknown); the step-time model uses default efficiencies (MBU 0.6, MFU 0.45): no fresh load test on this accelerator calibrated it",
		"details": {"class": "interactive", "metric": "tpot_p99_ms", "predicted_ms": 52, "judged_ms": 66.6, "pessimistic": true, "slo_ms": 60, "ready_replicas": 9},
	}} with input as _with(patch)
}

# A family without measured kernels gets the planner's widest interval, and says so.
test_fail_recomputation_slo_missed_with_the_widest_interval if {
	patch := {"recomputation": {
		"scenarios": {"peak": {"per_class": {"interactive": {"pessimistic_ms": {"ttft_p99_ms": 1760}}}}},
		"uncertainty": {"family": "L4", "measured_efficiencies": false, "held_out_cases": 0, "error_low": -0.5, "error_high": 1, "widened": true},
	}}
	some v in tail_slo.violations with input as _with(patch)
	v.rule == "recomputation_slo_missed"
	contains(v.message, "ttft_p99_ms is 1760 ms at the pessimistic end of its interval (predicted 880 ms; the planner's widest interval (L4: no measured kernel efficiencies or too few held-out figures)")
}

# Calibrated, the point prediction is judged: the pessimistic end does not deny.
test_success_calibrated_judges_the_point if {
	patch := {"recomputation": {
		"scenarios": {"peak": {"per_class": {"interactive": {"tpot_p99_ms": 52, "pessimistic_ms": {"tpot_p99_ms": 66.6}}}}},
		"calibration": {"fitted": true, "source_evidence": ["ev@v1"], "mbu": 0.6, "mfu": 0.45, "fit_error": 0.05},
	}}
	tail_slo.violations == set() with input as _with(patch)
}

test_fail_recomputation_flags_miss if {
	patch := {"recomputation": {"scenarios": {"peak": {"per_class": {"interactive": {"shed_rate": 0.02, "slo_met": false}}}}}}
	tail_slo.violations == {{
		"policy": "tail_slo",
		"rule": "recomputation_flags_miss",
		"severity": "high",
		"message": "recomputed peak: the planner marks class interactive as missing its SLO (shed rate 0.02)",
		"details": {"class": "interactive", "shed_rate": 0.02},
	}} with input as _with(patch)
}

test_fail_recomputation_missing_class if {
	inp := json.remove(_input, ["recomputation/scenarios/peak/per_class/interactive"])
	tail_slo.violations == {{
		"policy": "tail_slo",
		"rule": "recomputation_missing_class",
		"severity": "high",
		"message": "the recomputed peak scenario has no prediction for class interactive",
		"details": {"class": "interactive"},
	}} with input as inp
}

test_fail_claims_disagree if {
	patch := {"recomputation": {"claims_check": {"interactive": {"ttft_p99_ms": {"claimed": 600, "predicted": 1100, "relative_error": 0.45454545454545453}}}}}
	tail_slo.violations == {{
		"policy": "tail_slo",
		"rule": "claims_disagree",
		"severity": "high",
		"message": "class interactive: the plan claims ttft_p99_ms 600 ms, the recomputation predicts 1100 ms (relative error 0.455 > 0.2): the plan promises more than the recomputation; raise claims.per_class.interactive.ttft_p99_ms or change the plan (the step-time model uses default efficiencies (MBU 0.6, MFU 0.45): no fresh load test on this accelerator calibrated it)",
		"details": {
			"class": "interactive", "metric": "ttft_p99_ms", "claimed": 600, "predicted": 1100,
			"relative_error": 0.45454545454545453, "max_relative_error": 0.2,
		},
	}} with input as _with(patch)
}

test_success_claims_at_tolerance if {
	patch := {"recomputation": {"claims_check": {"interactive": {"ttft_p99_ms": {"claimed": 1320, "predicted": 1100, "relative_error": 0.2}}}}}
	tail_slo.violations == set() with input as _with(patch)
}

test_fail_claims_tolerance_is_data if {
	patch := {"recomputation": {"claims_check": {"interactive": {"ttft_p99_ms": {"claimed": 1000, "predicted": 1100, "relative_error": 0.0909}}}}}
	tail_slo.violations == set() with input as _with(patch)
	{v.rule | some v in tail_slo.violations} == {"claims_disagree"} with input as _with(patch)
		with data.capgate.thresholds.claims_max_relative_error as 0.05
}

test_success_conservative_claims_are_a_note if {
	# The plan claims a TTFT twice the prediction: it promises less than it can keep.
	patch := {"recomputation": {"claims_check": {"interactive": {"ttft_p99_ms": {"claimed": 2200, "predicted": 1100, "relative_error": 1}}}}}
	tail_slo.violations == set() with input as _with(patch)
	tail_slo.notes == {{
		"policy": "tail_slo", "rule": "claims_pessimistic", "severity": "info",
		"message": "the plan's claims exceed the recomputation by more than claims_max_relative_error 0.2 of the prediction: interactive.ttft_p99_ms 2200 ms (predicted 1100 ms); the claims are conservative",
		"details": {
			"claims": [{"class": "interactive", "metric": "ttft_p99_ms", "claimed": 2200, "predicted": 1100}],
			"max_relative_error": 0.2,
		},
	}} with input as _with(patch)
}

test_success_conservative_claims_are_one_note_per_plan if {
	# Five conservative claims over two classes, one within the tolerance and one
	# optimistic: one note lists the five, by class then metric, as strings sort.
	checks := {
		"interactive": {
			"ttft_p99_ms": {"claimed": 2200, "predicted": 1100, "relative_error": 1},
			"tpot_p99_ms": {"claimed": 60, "predicted": 36.8, "relative_error": 0.6304},
			"e2e_p99_ms": {"claimed": 36000, "predicted": 34400, "relative_error": 0.0465},
		},
		"batch-2": {
			"ttft_p99_ms": {"claimed": 5000, "predicted": 2500, "relative_error": 1},
			"tpot_p99_ms": {"claimed": 90.5, "predicted": 45, "relative_error": 1.0111},
			"e2e_p99_ms": {"claimed": 120000, "predicted": 60000, "relative_error": 1},
		},
		"batch": {"e2e_p99_ms": {"claimed": 100, "predicted": 1000, "relative_error": 0.9}},
	}
	inp := _with({"recomputation": {"claims_check": checks}})
	notes := [n | some n in tail_slo.notes; n.rule == "claims_pessimistic"] with input as inp
	count(notes) == 1
	notes[0].message == "the plan's claims exceed the recomputation by more than claims_max_relative_error 0.2 of the prediction: batch-2.e2e_p99_ms 120000 ms (predicted 60000 ms), batch-2.tpot_p99_ms 90.5 ms (predicted 45 ms), batch-2.ttft_p99_ms 5000 ms (predicted 2500 ms), interactive.tpot_p99_ms 60 ms (predicted 36.8 ms), interactive.ttft_p99_ms 2200 ms (predicted 1100 ms); the claims are conservative"
	[[c.class, c.metric] | some c in notes[0].details.claims] == [
		["batch-2", "e2e_p99_ms"], ["batch-2", "tpot_p99_ms"], ["batch-2", "ttft_p99_ms"],
		["interactive", "tpot_p99_ms"], ["interactive", "ttft_p99_ms"],
	]

	# The optimistic batch claim is the one violation.
	[v.details.class | some v in tail_slo.violations] == ["batch"] with input as inp
}

test_success_no_note_within_tolerance if {
	tail_slo.notes == set() with input as _input
}

test_fail_no_sizing_meets_slo if {
	tail_slo.violations == {{
		"policy": "tail_slo",
		"rule": "no_sizing_meets_slo",
		"severity": "high",
		"message": "the recomputation found no number of ready replicas that meets every class's p99 SLOs at peak",
		"details": {"min_ready_replicas_at_peak": null},
	}} with input as _with({"recomputation": {"min_ready_replicas_at_peak": null}})
}

test_fail_null_prediction_is_a_miss if {
	patch := {"recomputation": {"scenarios": {"peak": {"per_class": {"interactive": {"ttft_p99_ms": null, "tpot_p99_ms": null, "e2e_p99_ms": null, "queue_p99_ms": null, "shed_rate": 1, "slo_met": false}}}}}}
	{v.rule | some v in tail_slo.violations} == {"recomputation_flags_miss"} with input as _with(patch)
}

test_fail_constant_rate_test_for_bursty_workload if {
	# Evenly spaced arrivals (CV 0) against a workload whose bursts have CV 1.6.
	ev := object.union(_evidence, {"arrival_cv": 0})
	{[v.rule, v.details.evidence, v.details.check, v.details.workload_value, v.details.min_share] |
		some v in tail_slo.violations
		v.rule == "evidence_not_representative"
	} == {["evidence_not_representative", "ev@v1", "arrival", 1.6, 0.5]} with input as _with({"evidence": [ev]})
	"no_evidence_at_peak" in {v.rule | some v in tail_slo.violations} with input as _with({"evidence": [ev]})
}

test_fail_unknown_arrival_process if {
	ev := json.remove(_evidence, ["arrival_cv"])
	{v.details.check | some v in tail_slo.violations; v.rule == "evidence_not_representative"} == {"arrival"} with input as _with({"evidence": [ev]})
}

test_fail_short_prompts_only if {
	# The test's prompts reach p99 1200 tokens; the workload's p99 is 6100 (half: 3050).
	ev := object.union(_evidence, {"per_class": {"interactive": {"prompt_tokens_p99": 1200}}})
	[v.message | some v in tail_slo.violations; v.rule == "evidence_not_representative"] == ["evidence ev@v1: class interactive was offered prompts with a p99 of 1200 tokens, below evidence_min_prompt_p99_share 0.5 of the workload's p99 of 6100 tokens (unknown when the file states no prompt lengths): the workload's long prompts were never exercised"] with input as _with({"evidence": [ev]})
}

test_success_unrepresentative_beside_representative_is_a_note if {
	short := object.union(_evidence, {"ref": "micro@v1", "arrival_cv": 0, "per_class": {"interactive": {"prompt_tokens_p99": 512}}})
	inp := _with({"evidence": [_evidence, short]})
	tail_slo.violations == set() with input as inp
	{[n.rule, n.details.check] | some n in tail_slo.notes} == {["evidence_not_representative", "arrival"], ["evidence_not_representative", "prompt_length"]} with input as inp
}

test_fail_requests_longer_than_max_model_len if {
	fit := {"interactive": {"max_model_len": 4096, "p99_context_tokens": 7200, "rejected_share": 0.062}}
	inp := _with({"recomputation": {"context_fit": fit}})
	[v.message | some v in tail_slo.violations] == ["class interactive: 0.062 of requests need more than serving.max_model_len = 4096 tokens (p99 prompt + output 7200), over the 0.01 the SLO allows; vLLM rejects them: raise serving.max_model_len to at least 7200"] with input as inp
}

test_success_rare_long_requests_within_share if {
	fit := {"interactive": {"max_model_len": 16384, "p99_context_tokens": 7200, "rejected_share": 0.00005}}
	tail_slo.violations == set() with input as _with({"recomputation": {"context_fit": fit}})
}

test_fail_plan_without_claims_where_claims_are_required if {
	inp := json.remove(_input, ["plan/claims/per_class/interactive"])
	{[v.rule, v.details.metric, v.details.predicted] | some v in tail_slo.violations} == {
		["claims_missing", "ttft_p99_ms", 880],
		["claims_missing", "tpot_p99_ms", 36.8],
		["claims_missing", "e2e_p99_ms", 34400],
	} with input as inp
		with data.capgate.thresholds.claims_required as true
	[n | some n in tail_slo.notes; n.rule == "claims_missing"] == [] with input as inp
		with data.capgate.thresholds.claims_required as true
}

test_success_plan_without_claims_is_one_note_by_default if {
	# Two classes; interactive claims only its TTFT, batch claims nothing.
	batch := {"slo": _slo, "interarrival_cv": 1.6, "prompt_tokens_p99": 6100}
	predicted := object.union(_predicted, {"ttft_p99_ms": 2500, "tpot_p99_ms": 45, "e2e_p99_ms": 60000})
	inp := object.union(_input, {
		"workload": {"classes": {"batch": batch}},
		"plan": {"claims": {"per_class": {"interactive": {"ttft_p99_ms": 1200}}}},
		"recomputation": {"scenarios": {"peak": {"per_class": {"batch": predicted}}}},
	})
	missing := json.remove(inp, ["plan/claims/per_class/interactive/tpot_p99_ms", "plan/claims/per_class/interactive/e2e_p99_ms"])
	[v | some v in tail_slo.violations; v.rule == "claims_missing"] == [] with input as missing
	[n | some n in tail_slo.notes; n.rule == "claims_missing"] == [{
		"policy": "tail_slo", "rule": "claims_missing", "severity": "info",
		"message": "the plan claims no batch.ttft_p99_ms (predicted 2500 ms), batch.tpot_p99_ms (predicted 45 ms), batch.e2e_p99_ms (predicted 60000 ms), interactive.tpot_p99_ms (predicted 36.8 ms), interactive.e2e_p99_ms (predicted 34400 ms): the gate holds it to the SLOs in the evidence and in the recomputation instead; state claims.per_class to be held to them too (claims_required in the policy data makes a missing claim a violation)",
		"details": {
			"claims": [
				{"class": "batch", "metric": "ttft_p99_ms", "field": "claims.per_class.batch.ttft_p99_ms", "predicted": 2500},
				{"class": "batch", "metric": "tpot_p99_ms", "field": "claims.per_class.batch.tpot_p99_ms", "predicted": 45},
				{"class": "batch", "metric": "e2e_p99_ms", "field": "claims.per_class.batch.e2e_p99_ms", "predicted": 60000},
				{"class": "interactive", "metric": "tpot_p99_ms", "field": "claims.per_class.interactive.tpot_p99_ms", "predicted": 36.8},
				{"class": "interactive", "metric": "e2e_p99_ms", "field": "claims.per_class.interactive.e2e_p99_ms", "predicted": 34400},
			],
			"claims_required": false,
		},
	}] with input as missing
}

test_success_claims_required_absent_from_data_is_the_default if {
	# A data document written before the key existed: a missing claim is a note.
	inp := json.remove(_input, ["plan/claims/per_class/interactive"])
	thresholds := json.remove(data.capgate.thresholds, ["claims_required"])
	tail_slo.violations == set() with input as inp with data.capgate.thresholds as thresholds
	{n.rule | some n in tail_slo.notes} == {"claims_missing"} with input as inp with data.capgate.thresholds as thresholds
}

test_success_all_claims_stated_no_missing_note if {
	[n | some n in tail_slo.notes; n.rule == "claims_missing"] == [] with input as _input
}

test_fail_claims_disagree_after_calibration_changed if {
	# The plan did not change; a new load test recalibrated the step-time model.
	patch := {"recomputation": {
		"claims_check": {"interactive": {"ttft_p99_ms": {"claimed": 600, "predicted": 1100, "relative_error": 0.4545}}},
		"calibration": {"fitted": true, "source_evidence": ["ev@v2"], "mbu": 0.48, "mfu": 0.41, "fit_error": 0.08},
		"calibration_changed": {
			"decision": "d-1",
			"previous": {"fitted": false, "source_evidence": [], "mbu": 0.6, "mfu": 0.45, "fit_error": null},
		},
	}}
	[v.message | some v in tail_slo.violations] == ["class interactive: the plan claims ttft_p99_ms 600 ms, the recomputation predicts 1100 ms (relative error 0.455 > 0.2): the plan promises more than the recomputation; raise claims.per_class.interactive.ttft_p99_ms or change the plan (the step-time model is calibrated on 1 load test(s) (MBU 0.48, MFU 0.41); the calibration changed since the plan's decision d-1 (MBU 0.6 -> 0.48, MFU 0.45 -> 0.41): the prediction moved, not the plan)"] with input as _with(patch)
}

# ---- the prefix cache a test ran with ------------------------------------------------

test_fail_prefix_cache_far_above_production if {
	# Production's prompts hit the cache for 5 % of their tokens; the test's for 62 %.
	ev := object.union(_evidence, {"prefix_cache_hit_rate": 0.62, "workload_prefix_cache_share": 0.05})
	[v.message | some v in tail_slo.violations; v.rule == "evidence_not_representative"] == ["evidence ev@v1: the prefix cache served 0.62 of the test's prompt tokens, more than the workload's prefix-cache share of 0.05 for the offered classes + evidence_max_prefix_hit_excess 0.15: the test skipped prefill production will do, so its TTFT and capacity flatter the plan; rerun it with production's prompt diversity"] with input as _with({"evidence": [ev]})
	"no_evidence_at_peak" in {v.rule | some v in tail_slo.violations} with input as _with({"evidence": [ev]})
}

test_success_prefix_cache_at_the_allowed_excess if {
	ev := object.union(_evidence, {"prefix_cache_hit_rate": 0.2, "workload_prefix_cache_share": 0.05})
	inp := _with({"evidence": [ev]})
	tail_slo.violations == set() with input as inp
	tail_slo.notes == set() with input as inp
}

test_success_prefix_cache_excess_is_policy_data if {
	ev := object.union(_evidence, {"prefix_cache_hit_rate": 0.62, "workload_prefix_cache_share": 0.05})
	tail_slo.violations == set() with input as _with({"evidence": [ev]})
		with data.capgate.thresholds.evidence_max_prefix_hit_excess as 0.6
}

test_success_prefix_cache_rate_unknown_is_one_note if {
	a := object.union(_evidence, {"workload_prefix_cache_share": 0.05})
	b := object.union(_evidence, {"ref": "ev@v2", "workload_prefix_cache_share": 0.3})
	inp := _with({"evidence": [a, b]})
	tail_slo.violations == set() with input as inp
	tail_slo.notes == {{
		"policy": "tail_slo", "rule": "prefix_cache_hit_rate_unknown", "severity": "info",
		"message": "the prefix-cache hit rate of ev@v1, ev@v2 is unknown (the workload's share for the offered classes is 0.05, 0.3): the TTFT they measured may rest on more cache hits than production will have; import the tests with --prometheus to read the server's prefix-cache counters",
		"details": {"evidence": ["ev@v1", "ev@v2"], "workload_prefix_cache_share": [0.05, 0.3], "max_excess": 0.15},
	}} with input as inp
}

test_success_no_note_when_no_test_could_exceed_the_share if {
	# Production already hits the cache for 90 % of its prompt tokens: no test can exceed
	# that by 0.15, so an unknown rate hides nothing.
	ev := object.union(_evidence, {"workload_prefix_cache_share": 0.9})
	tail_slo.notes == set() with input as _with({"evidence": [ev]})
}

test_success_no_note_when_the_workload_share_is_unknown if {
	ev := object.union(_evidence, {"workload_prefix_cache_share": null})
	tail_slo.notes == set() with input as _with({"evidence": [ev]})
}

test_success_optimistic_capacity_claim_is_a_note if {
	inp := _with({
		"plan": {"claims": {"ready_replicas_needed_at_peak": 4}},
		"recomputation": {"min_ready_replicas_at_peak": 5},
	})
	tail_slo.violations == set() with input as inp
	{n.details | some n in tail_slo.notes; n.rule == "claims_capacity_optimistic"} == {{"field": "claims.ready_replicas_needed_at_peak", "claimed": 4, "needed": 5}} with input as inp
}

test_success_capacity_claim_at_or_above_the_need_is_silent if {
	every claimed in [5, 7] {
		count({n |
			some n in tail_slo.notes
			n.rule == "claims_capacity_optimistic"
		}) == 0 with input as _with({
			"plan": {"claims": {"ready_replicas_needed_at_peak": claimed}},
			"recomputation": {"min_ready_replicas_at_peak": 5},
		})
	}
}
