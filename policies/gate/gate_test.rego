package capgate.gate_test

import data.capgate.gate

_well_formed := {"plan": {}, "workload": {}, "provider": {}, "evidence": [], "recomputation": {}}

_v(policy) := {"policy": policy, "rule": "r", "severity": "high", "message": "m", "details": {}}

test_success_allow_without_violations if {
	gate.decision == {"allow": true, "violations": set(), "notes": set()} with input as _well_formed
		with data.capgate.policies.tail_slo.violations as set()
		with data.capgate.policies.tail_slo.notes as set()
		with data.capgate.policies.evidence_fresh.notes as set()
		with data.capgate.policies.reserve_explicit.violations as set()
		with data.capgate.policies.drain_configured.violations as set()
		with data.capgate.policies.warm_replica_exclusion.violations as set()
		with data.capgate.policies.distributions_measured.violations as set()
		with data.capgate.policies.load_test_coverage.violations as set()
		with data.capgate.policies.admission_configured.violations as set()
		with data.capgate.policies.retries_bounded.violations as set()
		with data.capgate.policies.evidence_fresh.violations as set()
		with data.capgate.policies.partitioning_justified.violations as set()
		with data.capgate.policies.manifests_consistent.violations as set()
}

test_fail_union_of_every_policy if {
	gate.decision == {"allow": false, "violations": {_v("tail_slo"), _v("retries_bounded"), _v("partitioning_justified")}, "notes": {_v("note")}} with input as _well_formed
		with data.capgate.policies.tail_slo.violations as {_v("tail_slo")}
		with data.capgate.policies.tail_slo.notes as {_v("note")}
		with data.capgate.policies.evidence_fresh.notes as set()
		with data.capgate.policies.reserve_explicit.violations as set()
		with data.capgate.policies.drain_configured.violations as set()
		with data.capgate.policies.warm_replica_exclusion.violations as set()
		with data.capgate.policies.distributions_measured.violations as set()
		with data.capgate.policies.load_test_coverage.violations as set()
		with data.capgate.policies.admission_configured.violations as set()
		with data.capgate.policies.retries_bounded.violations as {_v("retries_bounded")}
		with data.capgate.policies.evidence_fresh.violations as set()
		with data.capgate.policies.partitioning_justified.violations as {_v("partitioning_justified")}
		with data.capgate.policies.manifests_consistent.violations as set()
}

test_success_notes_include_the_manifests_notes if {
	_m := {"policy": "manifests_consistent", "rule": "manifests_not_compared", "severity": "info", "message": "m", "details": {}}
	gate.notes == {_v("note"), _m} with input as _well_formed
		with data.capgate.policies.tail_slo.notes as {_v("note")}
		with data.capgate.policies.evidence_fresh.notes as set()
		with data.capgate.policies.production_drift.notes as set()
		with data.capgate.policies.manifests_consistent.notes as {_m}
}

test_fail_malformed_input_leaves_decision_undefined if {
	not gate.decision with input as {"plan": {}}
}
