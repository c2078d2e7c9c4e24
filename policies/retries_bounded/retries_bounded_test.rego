package capgate.policies.retries_bounded_test

import data.capgate.policies.retries_bounded

_retry := {"max_attempts": 3, "backoff_initial_ms": 250, "backoff_max_ms": 4000, "jitter": true, "retry_budget_ratio": 0.1}

_input := {"plan": {"admission": {"retry": _retry}}}

_with(patch) := object.union(_input, {"plan": {"admission": {"retry": patch}}})

test_success_compliant if {
	retries_bounded.violations == set() with input as _input
}

test_success_at_the_limits if {
	retries_bounded.violations == set() with input as _with({"max_attempts": 4, "retry_budget_ratio": 0.2, "backoff_max_ms": 250})
}

test_fail_unbounded if {
	retries_bounded.violations == {
		{
			"policy": "retries_bounded", "rule": "attempts_unbounded", "severity": "high",
			"message": "admission.retry.max_attempts is unknown; at most 4 allowed",
			"details": {"max_attempts": null, "max_allowed": 4},
		},
		{
			"policy": "retries_bounded", "rule": "backoff_missing", "severity": "high",
			"message": "retries do not back off: admission.retry.backoff_initial_ms 0 ms, backoff_max_ms 0 ms",
			"details": {"backoff_initial_ms": 0, "backoff_max_ms": 0},
		},
		{
			"policy": "retries_bounded", "rule": "jitter_missing", "severity": "high",
			"message": "retries have no jitter: set admission.retry.jitter: true",
			"details": {"jitter": false},
		},
		{
			"policy": "retries_bounded", "rule": "retry_budget_unbounded", "severity": "high",
			"message": "admission.retry.retry_budget_ratio is 0.5; at most 0.2 allowed",
			"details": {"retry_budget_ratio": 0.5, "max_allowed": 0.2},
		},
	} with input as _with({"max_attempts": null, "backoff_initial_ms": 0, "backoff_max_ms": 0, "jitter": false, "retry_budget_ratio": 0.5})
}

test_fail_backoff_max_below_initial if {
	{v.rule | some v in retries_bounded.violations} == {"backoff_missing"} with input as _with({"backoff_max_ms": 100})
}

test_fail_too_many_attempts if {
	[v.message | some v in retries_bounded.violations] == ["admission.retry.max_attempts is 10; at most 4 allowed"] with input as _with({"max_attempts": 10})
}

test_fail_retry_policy_missing if {
	retries_bounded.violations == {{
		"policy": "retries_bounded", "rule": "retry_policy_missing", "severity": "high",
		"message": "the plan declares no retry policy: add admission.retry",
		"details": {"retry": null},
	}} with input as {"plan": {"admission": {"classes": {}}}}
}
