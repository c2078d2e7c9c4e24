"""`gate check --format sarif` against the official SARIF 2.1.0 JSON schema.

The schema is third-party data: it is not in the repository. It is read from
``../shared/fixtures/schemas/sarif-schema-2.1.0.json`` (OASIS, ``oasis-tcs/sarif-spec``,
``Schemata/sarif-schema-2.1.0.json``), or from the file ``CAPGATE_SARIF_SCHEMA`` names;
every test here skips with one line when it is absent.

Formats are asserted (``uri``, ``uri-reference``, ``date-time``), not only annotated:
SARIF consumers parse those strings as URIs and times.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import jsonschema_rs
import pytest

from registry.gate.formats import render_sarif
from registry.gate.views import DecisionView, Outcome
from tests.cli.test_gate_cli import import_load_test
from tests.cli.test_gate_formats import DENY, ERROR, MANIFEST_DENY, WAIVED, decision, violation
from tests.factories import short_grace_plan_file
from tests.gate.test_manifest_consistency import drifted, line_of
from tests.support.cli_runner import capgate_in_process
from tests.support.fixtures import shared

SCHEMA_REL = "schemas/sarif-schema-2.1.0.json"
PLAN = "chat-assistant-prod"


def schema_path() -> Path:
    """The schema file: CAPGATE_SARIF_SCHEMA when set, else ../shared/fixtures; or skip."""
    override = os.environ.get("CAPGATE_SARIF_SCHEMA")
    if not override:
        return shared(SCHEMA_REL)
    path = Path(override)
    if not path.is_file():
        pytest.skip(f"SARIF schema absent: CAPGATE_SARIF_SCHEMA={override}")
    return path


def load_schema(path: Path) -> dict[str, Any]:
    schema = json.loads(path.read_text(encoding="utf-8"))
    # The OASIS file nests region's anyOf (startLine, charOffset or byteOffset: SARIF
    # 3.30.2) inside "properties", where it is not a schema and the 2020-12 meta-schema
    # refuses the whole file; it is moved to where it was meant to be, and so applies.
    region = schema["definitions"]["region"]
    misplaced = region["properties"].get("anyOf")
    if isinstance(misplaced, list):
        region["anyOf"] = region["properties"].pop("anyOf")
    return dict(schema)


@pytest.fixture(scope="session")
def validator() -> Any:
    """The official schema, compiled (session scope: the skip comes before any seeding)."""
    return jsonschema_rs.validator_for(
        load_schema(schema_path()), validate_formats=True, offline=True
    )


def violations_of(validator: Any, log: dict[str, Any]) -> list[str]:
    return [
        f"{'/'.join(map(str, error.instance_path))}: {error.message}"
        for error in validator.iter_errors(log)
    ]


def assert_valid(validator: Any, report: str) -> dict[str, Any]:
    log = json.loads(report)
    assert violations_of(validator, log) == []
    return dict(log)


# ---- the validator is live ---------------------------------------------------------------


def _no_message(log: dict[str, Any]) -> None:
    del log["runs"][0]["results"][0]["message"]


def _unknown_level(log: dict[str, Any]) -> None:
    log["runs"][0]["results"][0]["level"] = "critical"


def _unknown_property(log: dict[str, Any]) -> None:
    log["runs"][0]["results"][0]["severity"] = "high"  # belongs in the property bag


def _not_a_time(log: dict[str, Any]) -> None:
    log["runs"][0]["invocations"][0]["endTimeUtc"] = "yesterday"


def _unencoded_path(log: dict[str, Any]) -> None:
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    location["artifactLocation"]["uri"] = "deploy plans/plan.yaml"


def _line_zero(log: dict[str, Any]) -> None:
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0


@pytest.mark.parametrize(
    ("break_it", "where", "why"),
    [
        (_no_message, "runs/0/results/0", '"message" is a required property'),
        (_unknown_level, "runs/0/results/0/level", '"critical" is not one of'),
        (_unknown_property, "runs/0/results/0", "Additional properties are not allowed"),
        (_not_a_time, "runs/0/invocations/0/endTimeUtc", 'is not a "date-time"'),
        (
            _unencoded_path,
            "runs/0/results/0/locations/0/physicalLocation/artifactLocation/uri",
            'is not a "uri-reference"',
        ),
        (
            _line_zero,
            "runs/0/results/0/locations/0/physicalLocation/region/startLine",
            "less than the minimum of 1",
        ),
    ],
)
def test_malformed_sarif_fails_validation(
    validator: Any, break_it: Callable[[dict[str, Any]], None], where: str, why: str
) -> None:
    good = assert_valid(validator, render_sarif(MANIFEST_DENY, plan_file="deploy/plan.yaml"))
    bad = copy.deepcopy(good)
    break_it(bad)
    found = violations_of(validator, bad)
    assert len(found) == 1, found
    assert found[0].startswith(f"{where}: "), found
    assert why in found[0], found


# ---- decisions of every shape, rendered in process ---------------------------------------


@pytest.mark.parametrize(
    ("shown", "plan_file"),
    [
        (decision(Outcome.allow), None),
        (DENY, None),
        (DENY, "deploy/plan,prod.yaml"),
        (WAIVED, "deploy/plan.yaml"),
        (ERROR, None),
        (MANIFEST_DENY, "deploy/plan.yaml"),
    ],
    ids=["allow-empty", "deny", "deny-plan-file", "waived", "error", "manifests"],
)
def test_every_decision_shape_is_valid_sarif(
    validator: Any, shown: DecisionView, plan_file: str | None
) -> None:
    assert_valid(validator, render_sarif(shown, plan_file=plan_file))


# Paths as people name them, where capgate writes artifactLocation.uri. A uri-reference
# (RFC 3986) has no spaces, no bare "%" and no non-ASCII: capgate percent-encodes them.
AWKWARD_PATHS = ["deploy plans/plan.yaml", "plans/50%.yaml", "déploiement/plan.yaml"]


@pytest.mark.parametrize("path", AWKWARD_PATHS)
def test_any_plan_file_or_manifest_path_is_a_uri_reference(validator: Any, path: str) -> None:
    located = violation(
        "manifests_consistent",
        "manifest_contradicts_plan",
        "drain.termination_grace_period_s is 300 in the plan but 30",
        field="drain.termination_grace_period_s",
        file=path,
        line=30,
    )
    shown = decision(violations=[located, violation("tail_slo", "ttft_p99_exceeded", "910 ms")])
    log = assert_valid(validator, render_sarif(shown, plan_file=path))
    uris = [
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
    ]
    assert len(uris) == 2 and all(unquote(uri) == path for uri in uris), uris


# ---- `capgate gate check --format sarif`, end to end -------------------------------------

# The report is the subject: the console entry point in this process (tests/support/cli_runner.py).
run = capgate_in_process


def sarif_check(env: dict[str, str], *args: str, exit_code: int) -> dict[str, Any]:
    result = run("gate", "check", PLAN, "--format", "sarif", *args, env=env)
    assert result.returncode == exit_code, result.stdout + result.stderr
    return dict(json.loads(result.stdout))


def test_allow_is_valid_sarif(validator: Any, env: dict[str, str], tmp_path: Path) -> None:
    # Evidence past its maximum age beside the fresh one: an allow with warnings.
    old = import_load_test(tmp_path, env, days_ago=120, run=1, name="old-load-test", cli=run)
    assert old.returncode == 0, old.stderr
    log = sarif_check(env, "--plan-file", "deploy/plan.yaml", exit_code=0)
    assert violations_of(validator, log) == []
    (sarif_run,) = log["runs"]
    assert sarif_run["properties"]["outcome"] == "allow"
    assert {r["level"] for r in sarif_run["results"]} == {"warning"}
    assert all(
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "deploy/plan.yaml"
        for r in sarif_run["results"]
    )


def test_deny_is_valid_sarif(validator: Any, env: dict[str, str], tmp_path: Path) -> None:
    assert run("plan", "submit", str(short_grace_plan_file(tmp_path)), env=env).returncode == 0
    log = sarif_check(env, exit_code=1)
    assert violations_of(validator, log) == []
    (sarif_run,) = log["runs"]
    assert sarif_run["properties"]["outcome"] == "deny"
    errors = [r for r in sarif_run["results"] if r["level"] == "error"]
    assert errors and all(r["ruleId"].startswith("drain_configured.") for r in errors)


def test_deny_with_manifests_is_valid_sarif_located_at_file_and_line(
    validator: Any, env: dict[str, str], tmp_path: Path
) -> None:
    folder = drifted(tmp_path)
    deployment = folder / "deployment.yaml"
    grace = line_of(deployment, "terminationGracePeriodSeconds")
    log = sarif_check(
        env, "--manifests", str(folder), "--plan-file", "deploy/plan.yaml", exit_code=1
    )
    assert violations_of(validator, log) == []
    located = [
        r["locations"][0]["physicalLocation"]
        for r in log["runs"][0]["results"]
        if r["ruleId"] == "manifests_consistent.manifest_contradicts_plan"
    ]
    assert len(located) == 8  # 3 zones, the total, TP, GPUs, grace period, metric
    assert {
        "artifactLocation": {"uri": str(deployment)},
        "region": {"startLine": grace},
    } in located
