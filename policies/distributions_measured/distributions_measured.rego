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
		sprintf("class %s: the %s distribution is assumed, not measured", [name, distribution]),
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
		sprintf("class %s: the %s distribution has no samples", [name, distribution]),
		{"class": name, "distribution": distribution, "samples": object.get(class, field, null)},
	)
}

_positive(x) if {
	is_number(x)
	x > 0
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
		sprintf("workload %s names no trace digest for its measured distributions", [input.workload.ref]),
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
#   Every fresh load test's prompt_tokens_cv and output_tokens_cv exceed
#   load_test_min_prompt_tokens_cv and load_test_min_output_tokens_cv; null is unknown
#   and fails.
# custom:
#   severity: high
#   guards: "failure mode: uniform prompts hide queue and cache behaviour"
violations contains v if {
	some e in _fresh
	some cv_field, threshold_field in _cvs
	cv := object.get(e.findings, cv_field, null)
	minimum := _thresholds[threshold_field]
	not _above(cv, minimum)
	v := result.violation(
		_policy, "uniform_load_test", "high",
		sprintf(
			"evidence %s: %s is %v, not above %v: the load test does not reproduce the workload's distribution",
			[e.ref, cv_field, result.show(cv), result.show(minimum)],
		),
		{"evidence": e.ref, "metric": cv_field, "cv": cv, "min_cv": minimum},
	)
}

_above(x, minimum) if {
	is_number(x)
	x > minimum
}
