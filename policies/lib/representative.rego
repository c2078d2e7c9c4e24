# METADATA
# title: Representative evidence
# description: >-
#   The ways a load test fails to represent the workload it is held against: arrivals
#   smoother than the workload's bursts (an inter-arrival coefficient of variation below
#   evidence_min_arrival_cv_share of the burstiest offered class's, or unknown) and
#   prompts shorter than the workload's (a class's offered p99 below
#   evidence_min_prompt_p99_share of its workload p99, or unknown) and a prefix cache that
#   served more of the prompts than production's will (a hit rate above the workload's
#   prefix-cache share for the offered mix by more than evidence_max_prefix_hit_excess;
#   an unknown rate is no gap, see tail_slo's prefix_cache_hit_rate_unknown note). Such a
#   test measured another workload: it supports no latency claim.
package capgate.lib.representative

import data.capgate.lib.result

_thresholds := data.capgate.thresholds

_classes := input.workload.classes

# The classes a test offered that the workload knows (a test may name none: then all).
_offered(e) := [name | some name in e.classes; _classes[name]] if count(e.classes) > 0

_offered(e) := [name | some name in object.keys(_classes)] if count(e.classes) == 0

_burstiest(e) := max([_classes[name].interarrival_cv | some name in _offered(e)])

# Each figure is compared with the unrounded product of the workload's figure and the
# share, and the product is never shown: OPA multiplies decimals exactly, the Wasm engine
# in binary, so a product rounded for a message (64.755 x 0.5 = 32.3775) can land on
# either side of a half (the differential suite found it). The details give the share.
_arrival_shown(e, workload_cv) if {
	is_number(e.arrival_cv)
	e.arrival_cv >= workload_cv * _thresholds.evidence_min_arrival_cv_share
}

_prompt_shown(e, name, workload_p99) if {
	is_number(e.per_class[name].prompt_tokens_p99)
	e.per_class[name].prompt_tokens_p99 >= workload_p99 * _thresholds.evidence_min_prompt_p99_share
}

# METADATA
# title: gaps
# description: >-
#   One object per (evidence, check) that fails: evidence ref, check (arrival,
#   prompt_length or prefix_cache), class (prompt checks), the test's figure, the
#   workload's figure, the share of it the figure had to reach (min_share; for
#   prefix_cache: the excess allowed over the workload's figure, max_excess) and a
#   sentence naming them.
gaps contains g if {
	some e in input.evidence
	workload_cv := _burstiest(e)
	not _arrival_shown(e, workload_cv)
	cv := object.get(e, "arrival_cv", null)
	g := {
		"evidence": e.ref,
		"check": "arrival",
		"test_value": cv,
		"workload_value": workload_cv,
		"min_share": _thresholds.evidence_min_arrival_cv_share,
		"message": concat("", ["evidence ", e.ref, ": inter-arrival CV ", result.show(cv), ", below evidence_min_arrival_cv_share ", result.show(_thresholds.evidence_min_arrival_cv_share), " of the burstiest offered class's ", result.show(workload_cv), " (0 for a constant-rate test, unknown when the file states no burstiness): the test hides the queueing the workload's bursts cause"]),
	}
}

gaps contains g if {
	some e in input.evidence
	some name in _offered(e)
	e.per_class[name]
	workload_p99 := _classes[name].prompt_tokens_p99
	not _prompt_shown(e, name, workload_p99)
	offered := object.get(e.per_class[name], "prompt_tokens_p99", null)
	g := {
		"evidence": e.ref,
		"check": "prompt_length",
		"class": name,
		"test_value": offered,
		"workload_value": workload_p99,
		"min_share": _thresholds.evidence_min_prompt_p99_share,
		"message": concat("", ["evidence ", e.ref, ": class ", name, " was offered prompts with a p99 of ", result.show(offered), " tokens, below evidence_min_prompt_p99_share ", result.show(_thresholds.evidence_min_prompt_p99_share), " of the workload's p99 of ", result.show(workload_p99), " tokens (unknown when the file states no prompt lengths): the workload's long prompts were never exercised"]),
	}
}

# A test whose prompts hit the prefix cache far more often than production's skips most of
# their prefill: its TTFT and its capacity per replica flatter the plan.
gaps contains g if {
	some e in input.evidence
	rate := e.prefix_cache_hit_rate
	share := e.workload_prefix_cache_share
	is_number(rate)
	is_number(share)

	# The sum is compared unrounded and not shown (OPA adds decimals exactly, the Wasm
	# engine in binary: a rounded sum can land on either side of a half).
	rate > share + _thresholds.evidence_max_prefix_hit_excess
	g := {
		"evidence": e.ref,
		"check": "prefix_cache",
		"test_value": rate,
		"workload_value": share,
		"max_excess": _thresholds.evidence_max_prefix_hit_excess,
		"message": concat("", ["evidence ", e.ref, ": the prefix cache served ", result.show(rate), " of the test's prompt tokens, more than the workload's prefix-cache share of ", result.show(share), " for the offered classes + evidence_max_prefix_hit_excess ", result.show(_thresholds.evidence_max_prefix_hit_excess), ": the test skipped prefill production will do, so its TTFT and capacity flatter the plan; rerun it with production's prompt diversity"]),
	}
}

# METADATA
# title: represents
# description: True when the evidence with this ref has no gap.
represents(ref) if not _has_gap(ref)

_has_gap(ref) if {
	some g in gaps
	g.evidence == ref
}
