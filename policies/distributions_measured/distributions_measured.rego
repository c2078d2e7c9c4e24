# METADATA
# title: Distributions measured and non-uniform
# description: >-
#   Every traffic class's prompt, output, concurrency and arrival distributions were
#   measured (not assumed), prompt and output samples exist, the workload names the
#   trace they came from, and fresh load tests are not uniform: their prompt and output
#   token coefficients of variation exceed the minimums in data (an unknown cv counts
#   as uniform).
# custom:
#   id: distributions_measured
#   severity: high
#   guards: "checklist: prompt, output, concurrency and burst distributions are measured; failure mode: uniform prompts hide queue and cache behaviour"
package capgate.policies.distributions_measured

import data.capgate.lib.evidence
import data.capgate.lib.result

_policy := "distributions_measured"

_thresholds := data.capgate.thresholds

_fresh := evidence.fresh(input.evidence, _thresholds.evidence_max_age_days)

_distributions := ["prompt_tokens", "output_tokens", "concurrency", "arrival"]

_samples := {"prompt_tokens": "prompt_tokens_samples", "output_tokens": "output_tokens_samples"}

_cvs := {
	"prompt_tokens_cv": "load_test_min_prompt_tokens_cv",
	"output_tokens_cv": "load_test_min_output_tokens_cv",
}

# METADATA
# title: Distribution measured
# description: workload.classes[c].measured.<distribution> is true for all four distributions.
# custom:
#   severity: high
#   guards: "checklist: prompt, output, concurrency and burst distributions are measured"
violations contains v if {
	some name, class in input.workload.classes
	some distribution in _distributions
	object.get(class.measured, distribution, null) != true
	v := result.violation(
		_policy, "distribution_not_measured", "high",
		concat("", ["class ", name, ": the ", distribution, " distribution is assumed, not measured"]),
		{"class": name, "distribution": distribution},
	)
}

# METADATA
# title: Distribution has samples
# description: Each class has prompt and output token samples (count > 0).
# custom:
#   severity: high
#   guards: "checklist: prompt, output, concurrency and burst distributions are measured"
violations contains v if {
	some name, class in input.workload.classes
	some distribution, field in _samples
	not _positive(object.get(class, field, null))
	v := result.violation(
		_policy, "distribution_without_samples", "high",
		concat("", ["class ", name, ": the ", distribution, " distribution has no samples"]),
		{"class": name, "distribution": distribution, "samples": object.get(class, field, null)},
	)
}

_positive(x) if {
	is_number(x)
	x > 0
}

# METADATA
# title: Enough samples for a p99
# description: >-
#   A measured prompt or output distribution rests on at least distribution_min_samples
#   samples: a p99 from a few dozen requests is a guess (1000 samples leave 10 beyond it).
# custom:
#   severity: high
#   guards: "checklist: prompt, output, concurrency and burst distributions are measured"
violations contains v if {
	some name, class in input.workload.classes
	some distribution, field in _samples
	samples := object.get(class, field, null)
	_positive(samples)
	samples < _thresholds.distribution_min_samples
	v := result.violation(
		_policy, "distribution_too_few_samples", "high",
		concat("", ["class ", name, ": the ", distribution, " distribution rests on ", result.show(samples), " samples, fewer than distribution_min_samples ", result.show(_thresholds.distribution_min_samples), ": its p99 is not measured"]),
		{"class": name, "distribution": distribution, "samples": samples, "min_samples": _thresholds.distribution_min_samples},
	)
}

_quantiles := {"prompt_tokens": ["prompt_tokens_p50", "prompt_tokens_p99"], "output_tokens": ["output_tokens_p50", "output_tokens_p99"]}

# METADATA
# title: Distribution not collapsed
# description: >-
#   A measured prompt or output distribution has a p99 at least
#   distribution_min_p99_over_p50 times its median: one value stated as p50 and p99 is a
#   mean written as a distribution, and it hides the tail that drives queueing and KV use.
# custom:
#   severity: high
#   guards: "failure mode: uniform prompts hide queue and cache behaviour"
violations contains v if {
	some name, class in input.workload.classes
	some distribution, keys in _quantiles
	class.measured[distribution] == true
	p50 := class[keys[0]]
	p99 := class[keys[1]]
	p99 < p50 * _thresholds.distribution_min_p99_over_p50
	v := result.violation(
		_policy, "distribution_collapsed", "high",
		concat("", ["class ", name, ": the measured ", distribution, " distribution has p50 ", result.show(p50), " and p99 ", result.show(p99), " (p99 below distribution_min_p99_over_p50 ", result.show(_thresholds.distribution_min_p99_over_p50), " times the median): a single value, not a measured distribution"]),
		{"class": name, "distribution": distribution, "p50": p50, "p99": p99, "min_p99_over_p50": _thresholds.distribution_min_p99_over_p50},
	)
}

# METADATA
# title: Trace named
# description: The workload carries the digest of the trace its distributions came from.
# custom:
#   severity: high
#   guards: "method: each decision needs a versioned trace as evidence"
violations contains v if {
	not _has_trace_digest
	v := result.violation(
		_policy, "trace_digest_missing", "high",
		concat("", ["workload ", input.workload.ref, " names no trace digest for its measured distributions"]),
		{"workload": input.workload.ref, "trace_digest": object.get(input.workload, "trace_digest", null)},
	)
}

_has_trace_digest if {
	is_string(input.workload.trace_digest)
	input.workload.trace_digest != ""
}

# METADATA
# title: Load test not uniform
# description: >-
#   Some fresh load test's prompt_tokens_cv exceeds load_test_min_prompt_tokens_cv, and
#   some fresh test's output_tokens_cv exceeds load_test_min_output_tokens_cv (null is
#   unknown and does not count). Coverage is judged over the set: an extra fixed-length
#   microbenchmark beside a realistic test does not fail the plan.
# custom:
#   severity: high
#   guards: "failure mode: uniform prompts hide queue and cache behaviour"
violations contains v if {
	count(_fresh) > 0
	some cv_field, threshold_field in _cvs
	minimum := _thresholds[threshold_field]
	not _reproduced(cv_field, minimum)

	tests := [e.ref | some e in _fresh]
	v := result.violation(
		_policy, "uniform_load_test", "high",
		concat("", ["no fresh load test has ", cv_field, " above ", result.show(minimum), " (of ", result.show(count(tests)), " fresh tests, listed in details): the load tests do not reproduce the workload's distribution"]),
		{"metric": cv_field, "min_cv": minimum, "evidence": tests},
	)
}

_reproduced(cv_field, minimum) if {
	some e in _fresh
	_above(object.get(e.findings, cv_field, null), minimum)
}

_above(x, minimum) if {
	is_number(x)
	x > minimum
}
