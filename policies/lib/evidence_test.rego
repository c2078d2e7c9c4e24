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
