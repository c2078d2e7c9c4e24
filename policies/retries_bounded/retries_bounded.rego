# METADATA
# title: Retries bounded
# description: >-
#   The plan's retry policy caps attempts (retry_max_attempts), backs off
#   exponentially from a positive initial delay to a maximum no smaller than it, adds
#   jitter, and spends at most retry_max_budget_ratio of traffic on retries.
# custom:
#   id: retries_bounded
#   severity: high
#   guards: "failure mode: retry storms amplify overload"
package capgate.policies.retries_bounded

import data.capgate.lib.result

_policy := "retries_bounded"

_thresholds := data.capgate.thresholds

_retry := input.plan.admission.retry

_declared if is_object(_retry)

_get(key) := object.get(_retry, key, null)

_at_most(x, maximum) if {
	is_number(x)
	x <= maximum
}

# METADATA
# title: Retry policy declared
# description: plan.admission.retry exists.
# custom:
#   severity: high
#   guards: "failure mode: retry storms amplify overload"
violations contains v if {
	not _declared
	v := result.violation(
		_policy, "retry_policy_missing", "high",
		"the plan declares no retry policy: add admission.retry",
		{"retry": null},
	)
}

# METADATA
# title: Attempts capped
# description: retry.max_attempts is a number no larger than retry_max_attempts.
# custom:
#   severity: high
#   guards: "failure mode: retry storms amplify overload"
violations contains v if {
	is_object(_retry)
	not _at_most(_get("max_attempts"), _thresholds.retry_max_attempts)
	v := result.violation(
		_policy, "attempts_unbounded", "high",
		concat("", ["admission.retry.max_attempts is ", result.show(_get("max_attempts")), "; at most ", result.show(_thresholds.retry_max_attempts), " allowed"]),
		{"max_attempts": _get("max_attempts"), "max_allowed": _thresholds.retry_max_attempts},
	)
}

# METADATA
# title: Backoff
# description: retry.backoff_initial_ms > 0 and retry.backoff_max_ms >= backoff_initial_ms.
# custom:
#   severity: high
#   guards: "failure mode: retry storms amplify overload"
violations contains v if {
	is_object(_retry)
	not _backs_off
	v := result.violation(
		_policy, "backoff_missing", "high",
		concat("", ["retries do not back off: admission.retry.backoff_initial_ms ", result.show(_get("backoff_initial_ms")), " ms, backoff_max_ms ", result.show(_get("backoff_max_ms")), " ms"]),
		{"backoff_initial_ms": _get("backoff_initial_ms"), "backoff_max_ms": _get("backoff_max_ms")},
	)
}

_backs_off if {
	is_number(_retry.backoff_initial_ms)
	is_number(_retry.backoff_max_ms)
	_retry.backoff_initial_ms > 0
	_retry.backoff_max_ms >= _retry.backoff_initial_ms
}

# METADATA
# title: Jitter
# description: retry.jitter is true, so retries from many clients do not synchronise.
# custom:
#   severity: high
#   guards: "failure mode: retry storms amplify overload"
violations contains v if {
	is_object(_retry)
	_get("jitter") != true
	v := result.violation(
		_policy, "jitter_missing", "high",
		"retries have no jitter: set admission.retry.jitter: true",
		{"jitter": _get("jitter")},
	)
}

# METADATA
# title: Retry budget
# description: retry.retry_budget_ratio is a number no larger than retry_max_budget_ratio.
# custom:
#   severity: high
#   guards: "failure mode: retry storms amplify overload"
violations contains v if {
	is_object(_retry)
	not _at_most(_get("retry_budget_ratio"), _thresholds.retry_max_budget_ratio)
	v := result.violation(
		_policy, "retry_budget_unbounded", "high",
		concat("", ["admission.retry.retry_budget_ratio is ", result.show(_get("retry_budget_ratio")), "; at most ", result.show(_thresholds.retry_max_budget_ratio), " allowed"]),
		{"retry_budget_ratio": _get("retry_budget_ratio"), "max_allowed": _thresholds.retry_max_budget_ratio},
	)
}
