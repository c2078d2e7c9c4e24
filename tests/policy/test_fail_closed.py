"""Fail closed: every way an engine can fail to decide is an error, never an allow."""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import pytest

from registry.errors import CapgateError, InvalidInput, Unavailable
from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.embedded import EmbeddedEngine
from registry.policy.engine import PolicyError, decision_from_result
from registry.policy.opa_bundle import build_opa_bundle
from registry.policy.opa_server import OpaServerEngine
from tests.policy.conftest import load_case
from tests.support.opa_server import (
    BundleServer,
    free_port,
    health_status,
    running_opa,
    running_opa_sidecar,
    sidecar_config,
    signing_key_for_tests,
)

GATE = "gate/gate.rego"


def _bundle_with(
    modules: dict[str, str] | None = None, *, drop: tuple[str, ...] = ()
) -> PolicyBundle:
    base = load_bundle()
    sources = {path: src for path, src in base.modules.items() if path not in drop}
    sources.update(modules or {})
    return PolicyBundle.from_sources(sources, copy.deepcopy(base.data))


# A gate whose only violation needs a built-in that fails (to_number of a plan ref).
# With built-in errors left undefined the violation silently vanishes: an allow.
BUILTIN_ERROR_GATE = """package capgate.gate

violations contains v if {
	to_number(input.plan.ref) > 0
	v := {"policy": "p", "rule": "r", "severity": "high", "message": "m", "details": {}}
}

decision := {"allow": count(violations) == 0, "violations": violations, "notes": []}
"""

# A gate whose decision is the wrong shape: allow is a string.
WRONG_SHAPE_GATE = """package capgate.gate

decision := {"allow": "yes", "violations": [], "notes": []}
"""

# A gate that has two values for one complete rule: an evaluation (conflict) error.
CONFLICT_GATE = """package capgate.gate

decision := {"allow": true, "violations": []} if input.plan

decision := {"allow": false, "violations": []} if input.workload
"""


def test_success_wasm_trap_builtin_errors_are_undefined() -> None:
    """Why the policies may call no built-in that can fail on a valid input.

    OPA's WebAssembly has no strict mode: a built-in error is an undefined value, so
    this gate's only violation vanishes and the compiled module allows, where OPA's
    server (strict-builtin-errors) answers an error (test_fail_opa_builtin_error_is_an_error).
    The shipped policies divide only by constants and convert no text to numbers
    (tests/policy/test_policy_hygiene.py), and tests/policy/test_differential.py shows
    both engines agree, errors included, on generated inputs.
    """
    engine = EmbeddedEngine(_bundle_with({GATE: BUILTIN_ERROR_GATE}))
    assert engine.decide(load_case("compliant.json")).allow is True


def test_fail_embedded_bundle_needing_a_host_builtin_is_refused_at_load() -> None:
    """OPA's Wasm leaves sprintf to its host; this engine provides no host built-in, so a
    policy that calls one stops the engine at start, not at the first decision that
    happens to reach the call (and never with a guessed string)."""
    gate = """package capgate.gate

violations contains v if {
	msg := sprintf("%.2f", [input.plan.total_replicas])
	v := {"policy": "p", "rule": "r", "severity": "high", "message": msg, "details": {}}
}

decision := {"allow": count(violations) == 0, "violations": violations, "notes": []}
"""
    with pytest.raises(PolicyError, match=r"the policies call sprintf, which OPA's Wasm leaves"):
        EmbeddedEngine(_bundle_with({GATE: gate}))


def test_fail_embedded_bundle_without_the_gate_is_an_error() -> None:
    """OPA's compiler refuses an entrypoint that names no rule: no engine at all."""
    with pytest.raises(PolicyError, match=r'entrypoint "capgate/gate/decision" does not refer'):
        EmbeddedEngine(_bundle_with(drop=(GATE,)))


def test_fail_embedded_undefined_decision_is_an_error() -> None:
    gate = "package capgate.gate\n\ndecision := {} if input.plan.ref == 0\n"
    engine = EmbeddedEngine(_bundle_with({GATE: gate}))
    with pytest.raises(PolicyError, match="is undefined"):
        engine.decide(load_case("compliant.json"))


def test_fail_embedded_wrong_shape_is_an_error() -> None:
    engine = EmbeddedEngine(_bundle_with({GATE: WRONG_SHAPE_GATE}))
    with pytest.raises(PolicyError, match="wrong shape"):
        engine.decide(load_case("compliant.json"))


def test_fail_embedded_bundle_that_does_not_compile() -> None:
    broken = _bundle_with({"broken/broken.rego": "package capgate.broken\n\nx := \n"})
    with pytest.raises(PolicyError, match="does not compile"):
        EmbeddedEngine(broken)


def test_fail_malformed_input_never_reaches_an_engine(embedded: EmbeddedEngine) -> None:
    doc = load_case("compliant.json")
    del doc["recomputation"]
    with pytest.raises(InvalidInput) as caught:
        embedded.decide(doc)
    assert [str(problem) for problem in caught.value.problems] == ["recomputation: Field required"]


def test_success_policy_error_is_a_capgate_error_with_exit_code_2() -> None:
    error = PolicyError("x")
    assert isinstance(error, Unavailable)
    assert isinstance(error, CapgateError)
    assert (error.exit_code, error.status_code) == (2, 503)


@pytest.mark.parametrize(
    ("result", "message"),
    [
        (None, "is not an object"),
        ({}, "has keys"),
        ({"allow": True}, "has keys"),
        ({"allow": True, "violations": []}, "has keys"),
        ({"allow": True, "violations": {}, "notes": []}, "violations is not a list"),
        ({"allow": True, "violations": [], "notes": {}}, "notes is not a list"),
        ({"allow": "true", "violations": [], "notes": []}, "wrong shape"),
        (
            {"allow": True, "violations": [{"policy": "p"}], "notes": []},
            "an item of violations has",
        ),
        ({"allow": True, "violations": [], "notes": [{"policy": "p"}]}, "an item of notes has"),
        (
            {
                "allow": True,
                "violations": [
                    {"policy": "p", "rule": "r", "severity": "high", "message": "m", "details": {}}
                ],
                "notes": [],
            },
            "inconsistent",
        ),
        ({"allow": False, "violations": [], "notes": []}, "inconsistent"),
        (
            {
                "allow": False,
                "violations": [
                    {"policy": "p", "rule": "r", "severity": "high", "message": 3, "details": {}}
                ],
                "notes": [],
            },
            "wrong shape",
        ),
    ],
)
def test_fail_decision_shape_is_validated(result: Any, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        decision_from_result(result, engine="test")


def test_success_violations_sorted_and_canonical() -> None:
    def v(policy: str, rule: str, value: float) -> dict[str, Any]:
        return {
            "policy": policy,
            "rule": rule,
            "severity": "high",
            "message": "m",
            "details": {"x": value},
        }

    decision = decision_from_result(
        {
            "allow": False,
            "violations": [v("b", "r", 4.0), v("a", "z", 0.45454545454545453), v("a", "b", 1)],
            "notes": [v("n", "b", 2.0), v("n", "a", 1)],
        },
        engine="test",
    )
    assert [x.model_dump() for x in decision.violations] == [
        v("a", "b", 1),
        v("a", "z", 0.454545454545),
        v("b", "r", 4),
    ]
    assert isinstance(decision.violations[2].details["x"], int)
    assert [x.model_dump() for x in decision.notes] == [v("n", "a", 1), v("n", "b", 2)]


@pytest.mark.opa
def test_fail_opa_server_killed(opa_binary: Path) -> None:
    with running_opa(opa_binary) as url:
        engine = OpaServerEngine(url, timeout=2.0)
        assert engine.decide(load_case("compliant.json")).allow is True
    # The context manager has stopped the server.
    with pytest.raises(PolicyError, match=f"opa engine at {url}: could not evaluate"):
        engine.decide(load_case("compliant.json"))


def test_fail_opa_wrong_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    engine = OpaServerEngine(url, timeout=1.0)
    with pytest.raises(PolicyError, match="ConnectionError"):
        engine.decide(load_case("compliant.json"))


@pytest.mark.parametrize("url", ["127.0.0.1:8181", "ftp://opa:8181", "http://opa:8181/v1/data"])
def test_fail_opa_url_must_be_a_server_base_url(url: str) -> None:
    with pytest.raises(PolicyError, match="opa engine"):
        OpaServerEngine(url)


@pytest.mark.opa
def test_fail_opa_undefined_decision_gate_missing(opa_binary: Path) -> None:
    bundle = _bundle_with(drop=(GATE,))
    with running_opa(opa_binary, bundle=bundle) as url:
        engine = OpaServerEngine(url, bundle)
        with pytest.raises(PolicyError, match="is undefined"):
            engine.decide(load_case("compliant.json"))


@pytest.mark.opa
def test_fail_opa_builtin_error_is_an_error(opa_binary: Path) -> None:
    bundle = _bundle_with({GATE: BUILTIN_ERROR_GATE})
    with running_opa(opa_binary, bundle=bundle) as url:
        engine = OpaServerEngine(url, bundle)
        with pytest.raises(PolicyError, match=r"HTTP 500: .*to_number"):
            engine.decide(load_case("compliant.json"))


@pytest.mark.opa
def test_fail_opa_conflict_error_keeps_opa_error_body(opa_binary: Path) -> None:
    bundle = _bundle_with({GATE: CONFLICT_GATE})
    with running_opa(opa_binary, bundle=bundle) as url:
        engine = OpaServerEngine(url, bundle)
        with pytest.raises(PolicyError, match=r"HTTP 500: .*conflicting values"):
            engine.decide(load_case("compliant.json"))


@pytest.mark.opa
def test_fail_opa_bundle_that_does_not_compile_is_never_active(opa_binary: Path) -> None:
    """OPA refuses a bundle it cannot compile (here a v0-syntax module, which an old
    client would silently have rewritten): it never activates, so the engine errors."""
    v0 = "package capgate.v0\n\nallow { true }\n"
    bundle = _bundle_with({"v0/v0.rego": v0})
    key = signing_key_for_tests()
    with BundleServer() as server:
        server.serve(build_opa_bundle(bundle, key).tarball)
        config = sidecar_config(server.url, None, key, decision_logs=False)
        with running_opa_sidecar(opa_binary, config, wait_for_activation=False) as opa:
            deadline = time.monotonic() + 10
            while "`if` keyword is required" not in opa.log():
                assert time.monotonic() < deadline, opa.log()
                time.sleep(0.05)
            assert health_status(opa.url, "/health?bundles") != 200
            with pytest.raises(PolicyError, match="holds no activated bundle"):
                OpaServerEngine(opa.url, bundle).decide(load_case("compliant.json"))
