"""A deny's violations as a person reads them on a page (issue 27, section 5): one row
group per policy with a heading, the policy holding the most severe violation first;
manifest paths below the folder they share, the full path in a title; a violation's
numbers in words, never a Python or JSON literal."""

from __future__ import annotations

from typing import Any

import pytest

from registry.gate.paths import shared_folder, shortened
from registry.gate.severity import by_policy, in_order, severity_rank
from registry.report.render import environment, manifest_folder, paths_within, plain
from tests.report.html_checks import parse

DEEP = "deploy/overlays/production/us-east1/serving/"


def violation(policy: str, rule: str, severity: str, **details: Any) -> dict[str, Any]:
    return {
        "policy": policy,
        "rule": rule,
        "severity": severity,
        "message": f"{policy}.{rule} failed",
        "details": details,
    }


# In the order a decision might list them: by policy name.
MIXED = [
    violation("drain_configured", "grace_too_short", "low", grace_s=30),
    violation("evidence_fresh", "too_old", "medium"),
    violation("tail_slo", "ttft_exceeded", "medium"),
    violation("tail_slo", "kv_exhausted", "critical"),
    violation("zone_spread", "one_zone", "high"),
    violation("zone_spread", "skew", "whatever"),
]


def table(violations: list[dict[str, Any]], folder: str = "") -> str:
    template = environment().from_string(
        '{% from "macros.html" import violation_table %}{{ violation_table(vs, folder) }}'
    )
    return template.render(vs=violations, folder=folder)


def test_groups_put_the_most_severe_policy_first_then_by_name() -> None:
    groups = by_policy(MIXED)
    assert [(g.policy, g.severity) for g in groups] == [
        ("tail_slo", "critical"),
        ("zone_spread", "high"),
        ("evidence_fresh", "medium"),
        ("drain_configured", "low"),
    ]
    assert [v["rule"] for v in groups[0].violations] == ["kv_exhausted", "ttft_exceeded"]
    # An unknown severity ranks after low, inside its policy's group.
    assert [v["rule"] for v in groups[1].violations] == ["one_zone", "skew"]
    assert severity_rank("whatever") > severity_rank("low")
    assert [v["policy"] for v in in_order(MIXED)][:2] == ["tail_slo", "zone_spread"]


def test_the_violation_table_has_a_heading_row_per_policy_in_that_order() -> None:
    page = parse(table(MIXED))
    assert page.errors == []
    groups = [t.attrs["data-policy"] for t in page.named("tbody")]
    assert groups == ["tail_slo", "zone_spread", "evidence_fresh", "drain_configured"]
    headings = [t for t in page.named("th") if t.attrs.get("scope") == "rowgroup"]
    assert len(headings) == 4 and all(t.attrs["colspan"] == "4" for t in headings)
    text = page.text
    assert "tail_slo 2 violations, critical" in text
    assert "drain_configured 1 violation, low" in text
    assert text.index("kv_exhausted") < text.index("ttft_exceeded") < text.index("one_zone")
    assert "6 violations of 4 policies deny the plan, the most severe first" in text


def test_manifest_paths_show_below_their_folder_with_the_full_path_as_title() -> None:
    found = violation(
        "manifests_consistent",
        "manifest_contradicts_plan",
        "high",
        field="total_replicas",
        file=f"{DEEP}deployment.yaml",
        line=13,
    )
    found["message"] = f"total_replicas is 9 in the plan but 7 in {DEEP}deployment.yaml:13"
    inputs = {"manifests": {"files": {f"{DEEP}deployment.yaml": "sha256:1", f"{DEEP}hpa.yaml": ""}}}
    folder = manifest_folder(inputs, [found])
    assert folder == DEEP
    html = table([found], folder)
    page = parse(html)
    spans = [t for t in page.named("span") if t.attrs.get("class") == "path" and "title" in t.attrs]
    assert [t.attrs["title"] for t in spans] == [f"{DEEP}deployment.yaml"] * 2  # message, numbers
    assert page.text.count(DEEP) == 1  # in the caption, once
    assert "7 in deployment.yaml :13" in page.text or "7 in deployment.yaml:13" in page.text


def test_paths_within_escapes_the_rest_of_the_message() -> None:
    shown = str(paths_within(f"<b>{DEEP}a.yaml</b>", DEEP))
    assert shown == f'&lt;b&gt;<span class="path" title="{DEEP}a.yaml">a.yaml</span>&lt;/b&gt;'
    assert str(paths_within("x < y", "")) == "x &lt; y"


@pytest.mark.parametrize(
    ("paths", "folder"),
    [
        ([f"{DEEP}a.yaml", f"{DEEP}b/c.yaml"], DEEP),
        (["/abs/k8s/a.yaml", "/abs/k8s/b.yaml"], "/abs/k8s/"),
        (["deploy/a.yaml", "deploy-b/c.yaml"], ""),  # whole segments only
        (["a.yaml"], ""),
        ([f"{DEEP}a.yaml"], DEEP),
        ([], ""),
    ],
)
def test_the_shared_folder_is_whole_segments(paths: list[str], folder: str) -> None:
    assert shared_folder(paths) == folder
    assert [p.full for p in shortened(paths)] == paths
    assert all(folder + p.short == p.full for p in shortened(paths))


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ([], "none"),
        ({}, "none"),
        (None, "-"),
        (True, "yes"),
        (["ev-a@v1", "ev-b@v2"], "ev-a@v1, ev-b@v2"),
        ({"us-east1-b": 3, "us-east1-c": 2.5}, "us-east1-b: 3, us-east1-c: 2.5"),
        ([{"a": 1}, {"a": None}], "a: 1; a: -"),
    ],
)
def test_a_violations_numbers_are_words_not_literals(value: object, words: str) -> None:
    assert plain(value) == words
    page = parse(table([violation("p", "r", "high", value=value)]))
    assert f"value {words}" in page.text


def test_a_path_ends_before_a_full_stop() -> None:
    shown = str(paths_within(f"see {DEEP}a.yaml.", DEEP))
    assert shown == f'see <span class="path" title="{DEEP}a.yaml">a.yaml</span>.'
