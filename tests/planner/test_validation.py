"""Validation against published measurements (benchmarks/planner/validation.py).

Every case prints its error. Cases within their target must stay there; the known misses
(read in benchmarks/planner/validation_doc.py) are strict xfails, so a model change that
fixes one shows up as an unexpected pass and its reading must go rather than drift.
"""

from __future__ import annotations

import math

import pytest

from benchmarks.planner import profiles
from benchmarks.planner.validation import (
    CASES,
    QWEN3_32B_H100_DEFAULTS,
    STARTUP_VERDICTS,
    Case,
    Host,
    Outcome,
    _launch,
    _vllm_fit,
    nerd_calibration,
    run_all,
)
from benchmarks.planner.validation_doc import (
    DOC,
    ERRORS,
    READINGS,
    error_ranges,
    render,
)
from registry.planner.catalog import exposed_memory_gib
from registry.planner.kv_layout import kv_bytes_per_token
from registry.planner.memory import GIB, MemoryParams
from registry.planner.model_shape import resolve_model

# The H100 API server's defaults (8192 batched tokens, 1024 sequences) on the 94 GB H100.
H100_NVL = Host("H100-NVL-94GB", 8192, 1024)

KNOWN_MISSES = set(READINGS)


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True, reason="known miss"))
        if c.name in KNOWN_MISSES
        else c
        for c in CASES
    ],
    ids=[c.name for c in CASES],
)
def test_case_within_target(case: Case) -> None:
    outcome = Outcome(case, case.compute())
    print(
        f"{case.name}: published {case.published:g} {case.unit}, planner "
        f"{outcome.predicted:.4g}, error {outcome.error:+.1%} ({case.source})"
    )
    assert outcome.within, f"error {outcome.error:+.1%} beyond ±{case.target:.0%}"


def test_memory_cases_within_target_with_matching_verdicts() -> None:
    memory = [Outcome(c, c.compute()) for c in CASES if c.kind == "memory"]
    for o in memory:
        if o.case.name not in KNOWN_MISSES:  # those are strict xfails above
            assert o.within, f"{o.case.name}: {o.error:+.1%}, verdict ok {o.verdict_ok}"
    # vLLM start-up logs: KV GiB within 5 %, unbiased, on the cases no default was read from.
    logs = [o for o in memory if o.case.unit == "GiB" and o.case.fits is not None]
    held_out = [o for o in logs if o.case.held_out]
    assert len(logs) >= 10 and len(held_out) >= 6
    assert all(o.case.target <= 0.05 for o in logs)
    assert any(o.case.fits is False for o in held_out)
    # On H100, where the per-release profiles were read, the held-out logs are unbiased;
    # the A100 and RTX 3090 logs (256 profiled sequences) are known misses, reported in
    # docs/planner-validation.md with their signed mean.
    h100 = [o for o in held_out if "H100" in o.case.name]
    assert len(h100) >= 6
    assert abs(sum(o.error for o in h100) / len(h100)) <= 0.05


def test_every_known_miss_names_a_case() -> None:
    assert {c.name for c in CASES} >= KNOWN_MISSES


def test_validation_document_and_error_ranges_are_current() -> None:
    results = run_all()
    assert DOC.read_text(encoding="utf-8") == render(results), (
        "docs/planner-validation.md is out of date: python -m benchmarks.planner.validation_doc"
    )
    # The intervals the planner states are read from this file: never hand-edited.
    assert ERRORS.read_text(encoding="utf-8") == error_ranges(results), (
        "registry/planner/validation_error.json is out of date: "
        "python -m benchmarks.planner.validation_doc"
    )


def test_calibrating_on_one_test_makes_no_held_out_figure_worse() -> None:
    """Issue 28: calibrated on the 10 req/s point of the vLLM 0.8.3 run alone, the figures at
    1 and 20 req/s (which it never saw) are each compared with the uncalibrated planner's
    error on the same figure: none may be worse, with no tolerance.

    What holds it is the calibration's own rule, not these figures: the fit is used only as
    far as no held-out group of the 10 req/s point (its TTFT, its TPOT) gets worse. On this
    evidence no share of it passes (the calibration's findings name the group: the TTFT
    fold, fitted to TPOT alone at the runtime's API server time, moves TTFT p50 further
    off), so the defaults stay and the figures equal the uncalibrated ones. The full fit,
    used before this rule, made two of the seven worse (TTFT p50 at 20 req/s -1.8 % to
    +2.7 %, TPOT p50 at 20 req/s -8.3 % to +8.6 %) while halving their RMS; should the
    evidence or the step-time model change so that a share of the fit passes, the RMS must
    then fall. The rule checks the groups the evidence has, not loads it did not cover:
    calibrated on 1 and 10 req/s (four groups) it keeps the whole fit, and TPOT p50 at
    20 req/s still goes from -8.3 % to +8.6 % (measured when this test was written), so
    the strict bound here holds because the rule declines, not because a fit cannot
    overshoot an unseen load."""
    by_name = {c.name: c for c in CASES}
    pairs = []
    for case in CASES:
        if case.kind != "calibrated":
            continue
        plain = by_name[case.name.replace(", calibrated on 10 req/s", ", 1000/100 tokens")]
        pairs.append((Outcome(plain, plain.compute()), Outcome(case, case.compute())))
    assert len(pairs) == 7
    for before, after in pairs:
        assert abs(after.error) <= abs(before.error), (before.case.name, before.error, after.error)

    def rms(errors: list[float]) -> float:
        return (sum(e * e for e in errors) / len(errors)) ** 0.5

    _, cal = nerd_calibration()
    # The state the docstring describes; should a share of the fit pass one day, this says
    # so and the test must then require the RMS to fall (rms below), not pass silently.
    assert not cal.fitted, (
        f"a share ({cal.shrinkage}) of the fit now passes: require the held-out RMS to fall "
        f"({rms([a.error for _, a in pairs]):.4f} against {rms([b.error for b, _ in pairs]):.4f})"
    )
    # Refused by the per-group rule, which says which group and by how much: TTFT.
    worst = cal.worst_group
    assert worst is not None and worst.metric == "ttft"
    assert worst.held_out_error > worst.default_error
    assert cal.rejected is not None and f"worst group {worst.evidence}" in cal.rejected
    assert [a.error for _, a in pairs] == [b.error for b, _ in pairs]


def test_startup_verdicts_match_where_the_source_shows_one() -> None:
    shown = [v for v in STARTUP_VERDICTS if v.started is not None]
    assert shown, "no start-up verdict with a stated outcome"
    for v in shown:
        fit = v.planner()
        assert fit.fits is v.started, f"{v.name}: planner says {fit.reason}"
    # A verdict the source leaves open carries its reading, and the document shows it.
    open_ = [v for v in STARTUP_VERDICTS if v.started is None]
    assert all(v.reading for v in open_)
    assert all(v.reading in DOC.read_text(encoding="utf-8") for v in open_)


def test_qwen3_32b_at_40960_tokens_cannot_start_on_an_80_gb_h100_at_the_defaults() -> None:
    """Issue 28's case, as stated (vLLM 0.11.0's defaults on one 80 GB H100), checked with
    vLLM's own start-up arithmetic and no activation model: the logged weights and one
    max_model_len request of KV leave less than the profile pass's Q/K/V output alone."""
    model, tp, util, version, mml = QWEN3_32B_H100_DEFAULTS
    shape = resolve_model(profiles.provider(str(model), "H100-SXM-80GB"))
    exposed, _ = exposed_memory_gib(80, "H100-SXM-80GB")
    logged_weights = 61.03  # "Model loading took 61.03 GiB": the llm-d and A100 logs cited
    one_request = math.ceil(int(mml) / 16) * 16 * kv_bytes_per_token(shape) / GIB
    assert abs(one_request - 10.0) < 1e-9  # 256 KiB a token
    left = float(util) * exposed - logged_weights - one_request
    qkv_8192 = 8192 * (shape.attention_heads + 2 * shape.kv_heads) * shape.head_dim * 2 / GIB
    assert left < qkv_8192 + MemoryParams().non_torch_gib
    stated = _vllm_fit(*QWEN3_32B_H100_DEFAULTS)
    assert not stated.fits and "vLLM refuses to start" in stated.reason
    # What would start, by the planner: its own remedy, or the 94 GB H100 at the defaults.
    assert stated.utilization_for_max_model_len is not None
    raised = _vllm_fit(model, tp, stated.utilization_for_max_model_len, version, mml)
    assert raised.fits and raised.kv_tokens >= int(mml)
    nvl = _vllm_fit(*_launch(str(model), 1, 0.9, str(version), int(mml), H100_NVL))
    assert nvl.fits
