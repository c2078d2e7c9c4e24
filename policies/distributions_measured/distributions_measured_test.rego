package capgate.policies.distributions_measured_test

import data.capgate.policies.distributions_measured

_class := {
	"measured": {"prompt_tokens": true, "output_tokens": true, "concurrency": true, "arrival": true},
	"prompt_tokens_samples": 22310455,
	"output_tokens_samples": 22310455,
	"prompt_tokens_p50": 620, "prompt_tokens_p99": 6100,
	"output_tokens_p50": 180, "output_tokens_p99": 1100,
}

_evidence := {"ref": "ev@v1", "fresh": true, "age_days": 6, "findings": {"prompt_tokens_cv": 1.31, "output_tokens_cv": 1.08}}

_input := {
	"workload": {"ref": "chat@v1", "classes": {"interactive": _class}, "trace_digest": "sha256:2f9e"},
	"evidence": [_evidence],
}

test_success_compliant if {
	distributions_measured.violations == set() with input as _input
}

test_success_stale_uniform_test_ignored if {
	stale := object.union(_evidence, {"ref": "old@v1", "fresh": false, "findings": {"prompt_tokens_cv": 0}})
	distributions_measured.violations == set() with input as object.union(_input, {"evidence": [_evidence, stale]})
}

test_fail_uniform_prompts if {
	inp := object.union(_input, {"evidence": [object.union(_evidence, {"findings": {"prompt_tokens_cv": 0}})]})
	distributions_measured.violations == {{
		"policy": "distributions_measured", "rule": "uniform_load_test", "severity": "high",
		"message": "no fresh load test has prompt_tokens_cv above 0.2 (of 1 fresh tests, listed in details): the load tests do not reproduce the workload's distribution",
		"details": {"metric": "prompt_tokens_cv", "min_cv": 0.2, "evidence": ["ev@v1"]},
	}} with input as inp
}

test_fail_unknown_cv_counts_as_uniform if {
	inp := object.union(_input, {"evidence": [object.union(_evidence, {"findings": {"output_tokens_cv": null}})]})
	[v.message | some v in distributions_measured.violations] == ["no fresh load test has output_tokens_cv above 0.2 (of 1 fresh tests, listed in details): the load tests do not reproduce the workload's distribution"] with input as inp
}

test_success_an_extra_microbenchmark_does_not_hurt if {
	# A realistic test plus a fixed-length microbenchmark: the set covers the distribution.
	micro := object.union(_evidence, {"ref": "micro@v1", "findings": {"prompt_tokens_cv": 0, "output_tokens_cv": 0}})
	distributions_measured.violations == set() with input as object.union(_input, {"evidence": [_evidence, micro]})
}

test_success_requirements_covered_by_different_tests if {
	a := object.union(_evidence, {"ref": "a@v1", "findings": {"output_tokens_cv": 0}})
	b := object.union(_evidence, {"ref": "b@v1", "findings": {"prompt_tokens_cv": 0}})
	distributions_measured.violations == set() with input as object.union(_input, {"evidence": [a, b]})
}

test_fail_distribution_assumed if {
	inp := object.union(_input, {"workload": {"classes": {"interactive": {"measured": {"arrival": false}}}}})
	distributions_measured.violations == {{
		"policy": "distributions_measured", "rule": "distribution_not_measured", "severity": "high",
		"message": "class interactive: the arrival distribution is assumed, not measured",
		"details": {"class": "interactive", "distribution": "arrival"},
	}} with input as inp
}

test_fail_no_samples if {
	inp := object.union(_input, {"workload": {"classes": {"interactive": {"output_tokens_samples": null}}}})
	distributions_measured.violations == {{
		"policy": "distributions_measured", "rule": "distribution_without_samples", "severity": "high",
		"message": "class interactive: the output_tokens distribution has no samples",
		"details": {"class": "interactive", "distribution": "output_tokens", "samples": null},
	}} with input as inp
}

test_fail_trace_digest_missing if {
	distributions_measured.violations == {{
		"policy": "distributions_measured", "rule": "trace_digest_missing", "severity": "high",
		"message": "workload chat@v1 names no trace digest for its measured distributions",
		"details": {"workload": "chat@v1", "trace_digest": null},
	}} with input as object.union(_input, {"workload": {"trace_digest": null}})
}

test_fail_measured_from_forty_samples if {
	inp := object.union(_input, {"workload": {"classes": {"interactive": object.union(_class, {"prompt_tokens_samples": 40})}}})
	distributions_measured.violations == {{
		"policy": "distributions_measured", "rule": "distribution_too_few_samples", "severity": "high",
		"message": "class interactive: the prompt_tokens distribution rests on 40 samples, fewer than distribution_min_samples 1000: its p99 is not measured",
		"details": {"class": "interactive", "distribution": "prompt_tokens", "samples": 40, "min_samples": 1000},
	}} with input as inp
}

test_fail_collapsed_distribution if {
	# The "measured" output lengths are one value stated twice: a mean, not a distribution.
	collapsed := object.union(_class, {"output_tokens_p50": 256, "output_tokens_p99": 256})
	inp := object.union(_input, {"workload": {"classes": {"interactive": collapsed}}})
	{[v.rule, v.details.distribution, v.details.p99] | some v in distributions_measured.violations} == {["distribution_collapsed", "output_tokens", 256]} with input as inp
}

test_success_narrow_but_assumed_distribution_is_reported_as_assumed_only if {
	collapsed := object.union(_class, {
		"output_tokens_p50": 256, "output_tokens_p99": 256,
		"measured": {"prompt_tokens": true, "output_tokens": false, "concurrency": true, "arrival": true},
	})
	inp := object.union(_input, {"workload": {"classes": {"interactive": collapsed}}})
	{v.rule | some v in distributions_measured.violations} == {"distribution_not_measured"} with input as inp
}
