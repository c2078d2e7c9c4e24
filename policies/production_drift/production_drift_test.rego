package capgate.policies.production_drift_test

import data.capgate.policies.production_drift

_p99 := {"field": "classes.interactive.prompt_tokens.p99", "planned": 6100, "observed": 7930, "threshold": 0.1, "rule": "grew 30% around p99"}

_slo := {"field": "classes.interactive.slo.ttft_p99_ms", "planned": "99% within 1500 ms", "observed": "at most 97.10%", "threshold": 0.99, "rule": "SLO attainment below the plan's objective"}

_input(observed, drift, misses) := {
	"workload": {"ref": "chat-assistant@v1"},
	"production": {"observed": observed, "observation": "assistant-live@v3", "drift": drift, "slo_misses": misses},
}

test_success_not_observed if {
	production_drift.violations == set() with input as _input(false, [_p99], [])
}

test_success_no_production_section if {
	production_drift.violations == set() with input as {"plan": {}}
	production_drift.notes == set() with input as {"plan": {}}
}

test_success_observed_without_drift if {
	production_drift.violations == set() with input as _input(true, [], [])
}

test_fail_drift_denies_naming_field_values_and_the_way_out if {
	[v] := [v | some v in production_drift.violations] with input as _input(true, [_p99], [])
	v.rule == "workload_drifted"
	v.severity == "high"
	v.message == "production drifted from workload chat-assistant@v1 (observation assistant-live@v3): classes.interactive.prompt_tokens.p99 was 6100, observed 7930: grew 30% around p99; submit a workload profile that matches production (capgate workload from-observation assistant-live@v3) and a plan pinning it"
	v.details.threshold == 0.1
}

test_success_slo_miss_is_a_note_not_a_deny if {
	production_drift.violations == set() with input as _input(true, [], [_slo])
	[n] := [n | some n in production_drift.notes] with input as _input(true, [], [_slo])
	n.rule == "slo_missed_in_production"
	n.severity == "info"
}
