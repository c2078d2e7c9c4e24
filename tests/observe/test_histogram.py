"""Quantiles from Prometheus buckets: PromQL's interpolation, with the bucket kept."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from registry.observe.catalog import buckets, one_two_five
from registry.observe.histogram import Buckets

INF = math.inf


def from_samples(samples: np.ndarray, bounds: tuple[float, ...]) -> Buckets:
    """Cumulative counts per le as Prometheus' client keeps them (x <= le)."""
    pairs = [(b, float(np.sum(samples <= b))) for b in bounds]
    return Buckets.from_pairs([*pairs, (INF, float(len(samples)))])


def test_interpolates_inside_the_bucket_as_histogram_quantile_does() -> None:
    # 100 samples: 10 <= 1, 60 in (1, 2], 30 in (2, 5]. p50 is rank 50: 40 into 60 of (1, 2].
    hist = Buckets.from_pairs([(1.0, 10), (2.0, 70), (5.0, 100), (INF, 100)])
    q = hist.quantile(50)
    assert (q.lower, q.upper) == (1.0, 2.0)
    assert q.value == pytest.approx(1 + 40 / 60)
    # The first bucket starts at 0, as in PromQL.
    first = hist.quantile(5)
    assert (first.lower, first.upper, first.value) == (0.0, 1.0, 0.5)


def test_a_quantile_past_the_last_bound_is_a_floor_and_says_so() -> None:
    hist = Buckets.from_pairs([(1.0, 50), (2.0, 90), (INF, 100)])
    q = hist.quantile(99)
    assert q.open_ended and q.value == 2.0 and q.lower == 2.0


def test_extrapolated_counts_are_made_monotone_and_need_inf() -> None:
    hist = Buckets.from_pairs([(INF, 10.2), (1.0, 5.1), (2.0, 5.0)])
    assert hist.cumulative == (5.1, 5.1, 10.2)
    with pytest.raises(ValueError, match=r"\+Inf"):
        Buckets.from_pairs([(1.0, 5.0)])
    with pytest.raises(ValueError, match="no samples"):
        Buckets.from_pairs([(1.0, 0.0), (INF, 0.0)]).quantile(50)


@given(
    st.lists(st.integers(min_value=1, max_value=8192), min_size=50, max_size=400),
    st.sampled_from([50.0, 90.0, 99.0]),
)
def test_the_true_quantile_lies_in_the_reported_bucket(values: list[int], level: float) -> None:
    samples = np.array(values, dtype=float)
    hist = from_samples(samples, one_two_five(8192))
    q = hist.quantile(level)
    # The k-th smallest sample with k = ceil(level% of n) is the quantile a bucket can bound.
    k = max(1, math.ceil(level / 100 * len(samples)))
    truth = float(np.sort(samples)[k - 1])
    assert q.lower <= truth <= q.upper or (q.lower < truth and q.open_ended)
    assert q.lower <= q.value <= q.upper


def test_share_within_a_limit_is_exact_at_a_bound_and_bounded_between() -> None:
    hist = Buckets.from_pairs([(0.1, 50), (0.25, 90), (0.5, 99), (INF, 100)])
    assert hist.share_at_most(0.25) == (0.9, 0.9)
    assert hist.share_at_most(0.3) == (0.9, 0.99)
    assert hist.share_at_most(0.05) == (0.0, 0.5)
    assert hist.share_at_most(10.0) == (0.99, 1.0)


def test_edges_and_counts_close_the_top_bucket() -> None:
    hist = Buckets.from_pairs([(0.0, 2), (10.0, 5), (100.0, 9), (INF, 10)])
    edges, counts = hist.edges_and_counts(top=4096)
    assert edges == [0.0, 10.0, 100.0, 4096]
    assert counts == [5, 4, 1]
    with pytest.raises(ValueError, match="not above"):
        hist.edges_and_counts(top=50)


def test_catalog_buckets_are_vllms() -> None:
    assert one_two_five(8192)[-1] == 5000.0 and one_two_five(10_000)[-1] == 10_000.0
    assert buckets("ttft", 8192)[0] == 0.001 and len(buckets("ttft", 8192)) == 22
    with pytest.raises(KeyError):
        buckets("running", 8192)
