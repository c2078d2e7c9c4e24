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

test_success_show if {
	[result.show(x) | some x in [95.30799999999999, 0.45454545454545453, 30, 240.0, -3.25, -0.0004, 0.0005, null, "pcie", true]] == [
		"95.308", "0.455", "30", "240", "-3.25", "0", "0.001", "unknown", "pcie", "true",
	]
}
