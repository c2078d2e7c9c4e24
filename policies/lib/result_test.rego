package capgate.lib.result_test

import data.capgate.lib.result

test_success_violation_shape if {
	result.violation("p", "r", "high", "m", {"x": 1}) == {
		"policy": "p",
		"rule": "r",
		"severity": "high",
		"message": "m",
		"details": {"x": 1},
	}
}

test_success_rounded if {
	result.rounded(95.30799999999999) == 95.308
	result.rounded(0.09090909090909091) == 0.091
	result.rounded(30) == 30
}
