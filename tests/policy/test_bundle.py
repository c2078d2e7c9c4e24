"""The bundle and its revision, and revision checks on the OPA server."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from registry.policy.bundle import PolicyBundle, load_bundle, policies_root, read_bundle
from registry.policy.embedded import EmbeddedEngine
from registry.policy.engine import PolicyError
from registry.policy.opa_server import OpaServerEngine
from registry.policy.selection import engine_from_settings
from registry.settings import Settings
from tests.policy.conftest import load_case
from tests.support.opa_server import running_opa


def test_success_bundle_has_no_test_modules() -> None:
    bundle = load_bundle()
    assert bundle.modules
    assert not [path for path in bundle.modules if path.endswith("_test.rego")]
    assert "gate/gate.rego" in bundle.modules
    assert "lib/result.rego" in bundle.modules
    assert set(bundle.data["capgate"]["thresholds"]) >= {
        "claims_max_relative_error",
        "evidence_max_age_days",
        "retry_max_attempts",
    }


def test_success_revision_is_deterministic_and_content_addressed(tmp_path: Path) -> None:
    root = tmp_path / "policies"
    root.mkdir()
    (root / "a").mkdir()
    (root / "a" / "a.rego").write_text("package a\n\nx := 1\n")
    (root / "a" / "a_test.rego").write_text("package a_test\n")
    (root / "data.json").write_text('{"capgate": {"thresholds": {"t": 1}}}')
    first = read_bundle(root)
    assert read_bundle(root).revision == first.revision
    assert first.revision.startswith("sha256:") and len(first.revision) == 71
    (root / "a" / "a_test.rego").write_text("package a_test\n\n# changed\n")
    assert read_bundle(root).revision == first.revision  # tests are not in the bundle
    (root / "data.json").write_text('{"capgate": {"thresholds": {"t": 2}}}')
    assert read_bundle(root).revision != first.revision
    assert list(first.modules) == ["a/a.rego"]


def test_success_installed_bundle_is_the_policies_package() -> None:
    assert read_bundle(policies_root()).revision == load_bundle().revision


def test_fail_test_modules_rejected_from_a_bundle() -> None:
    with pytest.raises(ValueError, match="test module"):
        PolicyBundle.from_sources({"a/a_test.rego": "package a_test\n"}, {})


def test_success_engine_from_settings() -> None:
    def settings(engine: str, url: str | None = None) -> Settings:
        return Settings(
            database_url="sqlite://", server=None, principal="t", policy_engine=engine, opa_url=url
        )

    assert isinstance(engine_from_settings(settings("embedded")), EmbeddedEngine)
    opa = engine_from_settings(settings("opa", "http://127.0.0.1:8181"))
    assert isinstance(opa, OpaServerEngine)
    assert (opa.name, opa.revision) == ("opa", load_bundle().revision)
    with pytest.raises(PolicyError, match="needs CAPGATE_OPA_URL"):
        engine_from_settings(settings("opa"))
    with pytest.raises(PolicyError, match="unknown CAPGATE_POLICY_ENGINE"):
        engine_from_settings(settings("wasm"))


def _stricter_bundle() -> PolicyBundle:
    """The shipped bundle with a 1-day evidence age limit: compliant.json (6 days) fails."""
    base = load_bundle()
    data = copy.deepcopy(base.data)
    data["capgate"]["thresholds"]["evidence_max_age_days"] = 1
    return PolicyBundle.from_sources(dict(base.modules), data)


@pytest.mark.opa
def test_fail_engine_refuses_an_opa_holding_another_revision(opa_binary: Path) -> None:
    """Two replicas with different bundles and one OPA: only the replica whose bundle
    that OPA activated gets decisions; the other errors, never decides under it."""
    shipped, stricter = load_bundle(), _stricter_bundle()
    assert shipped.revision != stricter.revision
    doc = load_case("compliant.json")
    with running_opa(opa_binary, bundle=stricter) as url:
        assert OpaServerEngine(url, stricter).decide(doc).allow is False
        with pytest.raises(
            PolicyError,
            match=f"decided under bundle .* revision {stricter.revision}, "
            f"expected {shipped.revision}",
        ):
            OpaServerEngine(url, shipped).decide(doc)
