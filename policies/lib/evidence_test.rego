package capgate.lib.evidence_test

import data.capgate.lib.evidence

test_success_fresh_keeps_fresh_and_young if {
	evidence.fresh(
		[
			{"ref": "a@v1", "fresh": true, "age_days": 6},
			{"ref": "b@v1", "fresh": false, "age_days": 6},
			{"ref": "c@v1", "fresh": true, "age_days": 91},
			{"ref": "d@v1", "fresh": true, "age_days": 90},
		],
		90,
	) == [{"ref": "a@v1", "fresh": true, "age_days": 6}, {"ref": "d@v1", "fresh": true, "age_days": 90}]
}

test_success_fresh_of_nothing if {
	evidence.fresh([], 90) == []
}

_mixed := [
	{"ref": "imported@v1", "fresh": true, "age_days": 1, "entry": "imported"},
	{"ref": "declared@v1", "fresh": true, "age_days": 1, "entry": "declared"},
	{"ref": "stale@v1", "fresh": false, "age_days": 1, "entry": "imported"},
]

test_success_usable_requires_imported_when_switched_on if {
	thresholds := {"evidence_max_age_days": 90, "require_imported_evidence": {"p": true}}
	[e.ref | some e in evidence.usable(_mixed, thresholds, "p")] == ["imported@v1"]
	evidence.declared_only(_mixed, thresholds, "p") == ["declared@v1"]
}

test_success_usable_takes_declared_when_switched_off if {
	off := {"evidence_max_age_days": 90, "require_imported_evidence": {"p": false}}
	[e.ref | some e in evidence.usable(_mixed, off, "p")] == ["imported@v1", "declared@v1"]
	unnamed := {"evidence_max_age_days": 90, "require_imported_evidence": {}}
	[e.ref | some e in evidence.usable(_mixed, unnamed, "p")] == ["imported@v1", "declared@v1"]
	evidence.declared_only(_mixed, off, "p") == []
}
