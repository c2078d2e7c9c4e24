package capgate.policies.evidence_fresh_test

import data.capgate.policies.evidence_fresh

_fresh := {"ref": "ev@v1", "fresh": true, "stale_reasons": [], "age_days": 6}

test_success_compliant if {
	evidence_fresh.violations == set() with input as {"evidence": [_fresh]}
}

test_success_no_evidence if {
	evidence_fresh.violations == set() with input as {"evidence": []}
}

test_success_exactly_max_age if {
	evidence_fresh.violations == set() with input as {"evidence": [object.union(_fresh, {"age_days": 90})]}
}

_stale := {"ref": "old@v1", "fresh": false, "stale_reasons": ["workload chat@v2 supersedes chat@v1", "runtime 0.10.2 supersedes 0.9.0"], "age_days": 41}

test_fail_only_stale_evidence if {
	evidence_fresh.violations == {{
		"policy": "evidence_fresh", "rule": "evidence_stale", "severity": "high",
		"message": "evidence old@v1 is stale: workload chat@v2 supersedes chat@v1; runtime 0.10.2 supersedes 0.9.0",
		"details": {"evidence": "old@v1", "stale_reasons": ["workload chat@v2 supersedes chat@v1", "runtime 0.10.2 supersedes 0.9.0"]},
	}} with input as {"evidence": [_stale]}
}

test_success_stale_beside_fresh_is_a_note if {
	evidence_fresh.violations == set() with input as {"evidence": [_fresh, _stale]}
	evidence_fresh.notes == {{
		"policy": "evidence_fresh", "rule": "evidence_stale", "severity": "info",
		"message": "evidence old@v1 is stale: workload chat@v2 supersedes chat@v1; runtime 0.10.2 supersedes 0.9.0",
		"details": {"evidence": "old@v1", "stale_reasons": ["workload chat@v2 supersedes chat@v1", "runtime 0.10.2 supersedes 0.9.0"]},
	}} with input as {"evidence": [_fresh, _stale]}
}

test_fail_too_old if {
	evidence_fresh.violations == {{
		"policy": "evidence_fresh", "rule": "evidence_too_old", "severity": "medium",
		"message": "evidence ev@v1 is 120.5 days old; at most 90 allowed",
		"details": {"evidence": "ev@v1", "age_days": 120.5, "max_age_days": 90},
	}} with input as {"evidence": [object.union(_fresh, {"age_days": 120.5})]}
}

test_fail_max_age_is_data if {
	{v.rule | some v in evidence_fresh.violations} == {"evidence_too_old"} with input as {"evidence": [_fresh]}
		with data.capgate.thresholds.evidence_max_age_days as 5
}
