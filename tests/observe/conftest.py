"""A real Prometheus server holding backfilled vLLM series (tests/support/prometheus.py).

The fixtures live here, not in the generator's module, so that the generator runs without
pytest (the observe demo uses it: tests/support/prometheus_demo.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest

# `client`: the worked example registered through the API, with a pipeline token.
from tests.api.test_gate_api import client
from tests.support.prometheus import (
    BackfilledPrometheus,
    Dataset,
    PrometheusBinaries,
    find_binaries,
    prometheus_holding,
)
from tests.support.real_parts import absent

__all__ = ["backfilled_prometheus", "client", "prometheus_binaries"]


@pytest.fixture(scope="session")
def prometheus_binaries() -> PrometheusBinaries:
    """The prometheus and promtool binaries, or skip (scripts/ci/prometheus.sh installs them)."""
    found = find_binaries()
    if found is None:
        absent("prometheus absent", "run scripts/ci/prometheus.sh")
    return found


@pytest.fixture(scope="module")
def backfilled_prometheus(
    prometheus_binaries: PrometheusBinaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., BackfilledPrometheus]]:
    """A factory: ``backfilled_prometheus(dataset, ...)`` -> a running server holding the
    datasets (started once per module for equal arguments; all stopped at module end)."""
    servers: dict[tuple[Dataset, ...], BackfilledPrometheus] = {}
    with ExitStack() as stack:

        def start(*datasets: Dataset) -> BackfilledPrometheus:
            if datasets not in servers:
                directory = tmp_path_factory.mktemp("prometheus")
                servers[datasets] = stack.enter_context(
                    prometheus_holding(prometheus_binaries, datasets, directory)
                )
            return servers[datasets]

        yield start
