"""Joint prompt/output lengths: kept from traces, drawn together, never cut to the context.

A synthetic summarisation-like trace (long prompts get long outputs) is written here in the
generic CSV form and fitted. Its stored joint histogram must reproduce the trace's rank
correlation and the output tail among long prompts when drawn through ``draw_class``, where
independent draws from the same marginals do not. Requests past ``max_model_len`` are marked
``rejected`` with their lengths uncut, and profiles without the joint histogram dump exactly
as before it existed.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from registry.digest import canonical_json, content_digest
from registry.errors import InvalidInput
from registry.planner.sampling import (
    ClassStream,
    context_overflow_share,
    draw_class,
    draw_lengths,
)
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.workload import JOINT_MAX_BINS, ClassSLO, TrafficClass, WorkloadProfile
from registry.traces import fit_trace
from tests.factories import example, example_path

SLO = ClassSLO(ttft_p99_ms=2000.0, tpot_p99_ms=100.0, e2e_p99_ms=60000.0, queue_deadline_ms=5000.0)
ROWS = 20_000
DRAWS = 40_000
MAX_MODEL_LEN = 8192


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (ties share theirs), as Spearman's coefficient needs."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return (ends - (counts - 1) / 2.0)[inverse]


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(_ranks(a), _ranks(b))[0, 1])


def _tail_among_long(prompt: np.ndarray, output: np.ndarray, threshold: float) -> float:
    """p99 of the output among requests whose prompt is above ``threshold``."""
    return float(np.percentile(output[prompt > threshold], 99))


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    """A summarisation-like trace: log output follows log prompt (slope 0.9, noise 0.3)."""
    rng = np.random.default_rng(7)
    log_prompt = rng.normal(np.log(3000.0), 0.8, ROWS)
    log_output = np.log(250.0) + 0.9 * (log_prompt - np.log(3000.0)) + rng.normal(0, 0.3, ROWS)
    prompt = np.maximum(1, np.rint(np.exp(log_prompt))).astype(np.int64)
    output = np.maximum(1, np.rint(np.exp(log_output))).astype(np.int64)
    times = 1.7e9 + np.cumsum(rng.exponential(0.05, ROWS))
    path = tmp_path_factory.mktemp("joint") / "trace.csv"
    lines = ["timestamp,prompt_tokens,output_tokens"]
    lines += [f"{t:.3f},{p},{o}" for t, p, o in zip(times, prompt, output, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, prompt, output


@pytest.fixture(scope="module")
def fitted(trace: tuple[Path, np.ndarray, np.ndarray]) -> TrafficClass:
    path, _, _ = trace
    [cls] = fit_trace(path, name="summaries", slo=SLO).profile.classes
    return cls


def _independent(cls: TrafficClass) -> TrafficClass:
    return cls.model_copy(update={"joint_lengths": None})


def _with(cls: TrafficClass, **changes: Any) -> TrafficClass:
    """The class re-validated with fields changed (model_copy would skip the validators)."""
    data = cls.model_dump(mode="json")
    data.update(changes)
    return TrafficClass.model_validate(data)


# --- what the fit stores ----------------------------------------------------------------------


def test_fit_stores_a_bounded_joint_histogram(fitted: TrafficClass) -> None:
    joint = fitted.joint_lengths
    assert joint is not None
    assert len(joint.prompt_edges) - 1 <= JOINT_MAX_BINS
    assert len(joint.output_edges) - 1 <= JOINT_MAX_BINS
    assert len(joint.cells) <= JOINT_MAX_BINS**2
    assert all(count > 0 for _, _, count in joint.cells)  # sparse: non-empty cells only
    assert joint.total == fitted.prompt_tokens.samples == fitted.output_tokens.samples == ROWS
    # The edges bound every request of the trace.
    assert fitted.prompt_tokens.min is not None and fitted.prompt_tokens.max is not None
    assert joint.prompt_edges[0] <= fitted.prompt_tokens.min < fitted.prompt_tokens.max
    assert fitted.prompt_tokens.max < joint.prompt_edges[-1]
    # The stored record round-trips through its JSON form to the same digest.
    data = fitted.model_dump(mode="json")
    assert "joint_lengths" in data
    again = TrafficClass.model_validate(copy.deepcopy(data))
    assert content_digest(again.model_dump(mode="json")) == content_digest(data)


# --- drawing ----------------------------------------------------------------------------------


def test_joint_draws_keep_the_correlation_independent_ones_lose(
    trace: tuple[Path, np.ndarray, np.ndarray], fitted: TrafficClass
) -> None:
    _, prompt, output = trace
    big = 10**9  # no rejections: compare lengths only
    joint = draw_class(fitted, DRAWS, np.random.default_rng(1), max_model_len=big)
    indep = draw_class(_independent(fitted), DRAWS, np.random.default_rng(1), max_model_len=big)

    rho_trace = _spearman(prompt, output)
    rho_joint = _spearman(joint.prompt, joint.output)
    rho_indep = _spearman(indep.prompt, indep.output)
    assert rho_trace > 0.85
    assert abs(rho_joint - rho_trace) < 0.03
    assert abs(rho_indep) < 0.05
    assert rho_joint - rho_indep > 0.8  # fails if the joint path is dropped

    # The output tail of the long prompts (above the trace's p90): an arxiv-like class.
    long_prompt = float(np.percentile(prompt, 90))
    tail_trace = _tail_among_long(prompt, output, long_prompt)
    tail_joint = _tail_among_long(joint.prompt, joint.output, long_prompt)
    tail_indep = _tail_among_long(indep.prompt, indep.output, long_prompt)
    assert abs(tail_joint / tail_trace - 1) < 0.05
    assert tail_indep / tail_trace < 0.7


def test_joint_draws_keep_each_marginal(
    trace: tuple[Path, np.ndarray, np.ndarray], fitted: TrafficClass
) -> None:
    _, prompt, output = trace
    joint = draw_class(fitted, DRAWS, np.random.default_rng(2), max_model_len=10**9)
    for drawn, exact in ((joint.prompt, prompt), (joint.output, output)):
        for level in (10, 50, 90, 99):
            got, want = np.percentile(drawn, level), np.percentile(exact, level)
            assert abs(got / want - 1) < 0.05, (level, got, want)


# --- rejected, never cut ------------------------------------------------------------------------


def test_requests_past_the_model_length_are_rejected_not_cut(fitted: TrafficClass) -> None:
    roomy = draw_class(fitted, DRAWS, np.random.default_rng(3), max_model_len=10**9)
    tight = draw_class(fitted, DRAWS, np.random.default_rng(3), max_model_len=MAX_MODEL_LEN)
    assert tight.rejected.dtype == np.bool_
    assert len(tight.rejected) == len(tight.prompt) == len(tight.output) == DRAWS
    # Same draws whatever the model length: nothing is clipped to the context.
    assert np.array_equal(tight.prompt, roomy.prompt)
    assert np.array_equal(tight.output, roomy.output)
    over = tight.prompt + tight.output > MAX_MODEL_LEN
    assert np.array_equal(tight.rejected, over)
    assert 0.05 < tight.rejected.mean() < 0.25
    assert (tight.prompt >= MAX_MODEL_LEN).any()  # a prompt alone past the limit: rejected
    assert tight.rejected[tight.prompt >= MAX_MODEL_LEN].all()
    assert not roomy.rejected.any()
    # The share the recomputation reports is the share the stream rejects.
    assert abs(context_overflow_share(fitted, MAX_MODEL_LEN) - tight.rejected.mean()) < 0.01
    # Cutting a stream keeps its rejections in step with its requests.
    head = tight.head(1000)
    assert np.array_equal(head.rejected, tight.rejected[:1000])


def test_max_output_tokens_caps_without_rejecting(fitted: TrafficClass) -> None:
    p99 = fitted.output_tokens.quantile(99)
    assert p99 is not None
    cap = int(p99) + 1
    capped = _with(fitted, max_output_tokens=cap)
    stream = draw_class(capped, DRAWS, np.random.default_rng(4), max_model_len=10**9)
    assert stream.output.max() == cap  # the client's max_tokens ends the longest outputs
    assert not stream.rejected.any()


def test_overflow_share_uses_the_joint_draw() -> None:
    """Comonotone lengths overflow far more often than the same marginals drawn apart."""
    dist = {"samples": 1000, "quantiles": {"p1": 10.0, "p50": 1000.0, "p99": 4000.0}}
    dist |= {"min": 8.0, "max": 4500.0}
    edges = [8.0, 100.0, 500.0, 1000.0, 2000.0, 3000.0, 4600.0]
    counts = [10, 190, 300, 300, 150, 50]
    cls = TrafficClass.model_validate(
        {
            "name": "twins",
            "priority": 0,
            "arrival": {"mean_rps": 1.0, "peak_rps": 2.0},
            "prompt_tokens": dist,
            "output_tokens": dist,
            "slo": SLO.model_dump(),
            "joint_lengths": {
                "prompt_edges": edges,
                "output_edges": edges,
                "cells": [[i, i, c] for i, c in enumerate(counts)],
            },
        }
    )
    joint = context_overflow_share(cls, 6000)
    apart = context_overflow_share(_independent(cls), 6000)
    assert joint > 0.08 and apart < 0.04
    prompt, output = draw_lengths(cls, 5000, np.random.default_rng(5))
    assert _spearman(prompt, output) > 0.9  # six bins a side: ranks tied within each


# --- the record -------------------------------------------------------------------------------

# The worked example's canonical JSON as it was before joint_lengths existed, pinned to the
# example file it came from (checked only while that file is unchanged).
EXAMPLE_FILE_SHA256 = "aa212b09ff1408fe1590261a2eea2e3f265c6ec32fb7d0daed258f77f7f4e431"
EXAMPLE_DIGEST = "sha256:bfb4071b2d3db38af93f41645d5a1bc46c57852d2d2c2d3a51dded90ec417a79"
FIELDS_BEFORE = {
    "name",
    "priority",
    "arrival",
    "prompt_tokens",
    "output_tokens",
    "concurrency",
    "max_output_tokens",
    "prefix_cache_share",
    "cancellation_rate",
    "unknown",
    "slo",
}


def test_profile_without_joint_dumps_as_before() -> None:
    document = example("workload")
    wl = validate_record(RecordKind.workload, copy.deepcopy(document))
    assert isinstance(wl, WorkloadProfile)
    dumped = wl.model_dump(mode="json")
    assert all(c.joint_lengths is None for c in wl.classes)
    assert all(set(c) <= FIELDS_BEFORE for c in dumped["classes"])
    again = validate_record(RecordKind.workload, copy.deepcopy(dumped))
    assert canonical_json(again.model_dump(mode="json")) == canonical_json(dumped)
    if hashlib.sha256(example_path("workload").read_bytes()).hexdigest() == EXAMPLE_FILE_SHA256:
        assert content_digest(dumped) == EXAMPLE_DIGEST


def _problems(edit: Any) -> list[tuple[str, str]]:
    document = example("workload")
    cls = document["classes"][0]
    cls["joint_lengths"] = {
        "prompt_edges": [0.0, 1000.0, 16000.0],
        "output_edges": [1.0, 200.0, 4096.0],
        "cells": [[0, 0, 12_000_000], [1, 1, 10_310_455]],
    }
    edit(cls["joint_lengths"])
    with pytest.raises(InvalidInput) as err:
        validate_record(RecordKind.workload, document)
    return [(p.loc, p.message) for p in err.value.problems]


@pytest.mark.parametrize(
    ("edit", "loc", "words"),
    [
        (
            lambda j: j.update(prompt_edges=[0.0, 16000.0, 1000.0]),
            "classes.0.joint_lengths.prompt_edges",
            "strictly increasing",
        ),
        (
            lambda j: j["cells"].append([1, 0, -3]),
            "classes.0.joint_lengths.cells.2.2",
            "greater than or equal to 0",
        ),
        (
            lambda j: j["cells"].append([0, 2, 1]),
            "classes.0.joint_lengths.cells",
            "output bin 2 is past the last of the 2 bins",
        ),
        (
            lambda j: j["cells"].append([0, 0, 1]),
            "classes.0.joint_lengths.cells",
            "listed twice",
        ),
        (
            lambda j: j["cells"].__setitem__(0, [0, 0, 5]),
            "classes.0.joint_lengths",
            "prompt_tokens.samples is 22310455",
        ),
        (
            lambda j: j.update(output_edges=[1.0, 200.0, 2048.0]),
            "classes.0.joint_lengths",
            "output_edges end at 2048, not above output_tokens.max (2048)",
        ),
    ],
)
def test_joint_histogram_is_validated(edit: Any, loc: str, words: str) -> None:
    problems = _problems(edit)
    assert any(p_loc == loc and words in msg for p_loc, msg in problems), problems


def test_a_valid_joint_histogram_is_accepted_and_dumped() -> None:
    document = example("workload")
    joint = {
        "prompt_edges": [0.0, 1000.0, 16000.0],
        "output_edges": [1.0, 200.0, 4096.0],
        "cells": [[0, 0, 12_000_000], [1, 1, 10_310_455]],
    }
    document["classes"][0]["joint_lengths"] = joint
    wl = validate_record(RecordKind.workload, document)
    assert isinstance(wl, WorkloadProfile)
    assert wl.classes[0].model_dump(mode="json")["joint_lengths"] == joint


def test_class_stream_defaults_to_no_rejections() -> None:
    n = 3
    stream = ClassStream(
        name="c",
        unit_times=np.arange(n, dtype=np.float64),
        prompt=np.ones(n, dtype=np.int64),
        output=np.ones(n, dtype=np.int64),
        cancel_fraction=np.full(n, np.nan),
    )
    assert stream.rejected.shape == (n,) and not stream.rejected.any()
