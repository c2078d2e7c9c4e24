"""Generated tables of docs/policies.md: thresholds, and what enforces the method.

Both come from the files that decide, never from a hand-kept copy: the thresholds and
their values from policies/data.json, who reads each from the Rego and Python sources,
the rules and what each guards from the policies' METADATA, and the tests that prove a
rule from the scenario corpus (tests/gate/inputs/expected.json) and the Rego unit tests.

    python -m registry.policy.docs          # rewrite the tables in docs/policies.md
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "policies"
DOC = ROOT / "docs" / "policies.md"
CORPUS = ROOT / "tests" / "gate" / "inputs" / "expected.json"

# What each threshold means; its value and its readers are read from the sources.
MEANINGS: dict[str, str] = {
    "autoscaling_blind_metrics": "autoscaling metrics that do not see queueing or KV pressure",
    "claims_max_relative_error": "how far below the prediction a claimed p99 may be",
    "claims_required": "a missing p99 claim denies (true) or is one note per plan (false)",
    "context_max_rejected_share": "share of a class's requests allowed past max_model_len",
    "distribution_min_p99_over_p50": "a measured distribution's p99 over its median, at least",
    "distribution_min_samples": "samples a measured p99 rests on, at least",
    "evidence_max_age_days": "evidence older than this satisfies nothing",
    "evidence_max_error_rate": "a test with more failed requests shows nothing about the SLO",
    "evidence_max_prefix_hit_excess": "a test's prefix-cache hit rate above the workload's "
    "share, at most",
    "evidence_min_arrival_cv_share": "a test's inter-arrival CV over the workload's, at least",
    "evidence_min_prompt_p99_share": "a test's prompt p99 over the workload's, at least",
    "hpa_default_scale_down_stabilization_s": "window assumed when autoscaling declares none",
    "kv_max_preemption_rate": "share of simulated requests preempted per failure scenario",
    "load_test_max_cancellation_share": "a class's tested cancellation rate over the "
    "workload's, at most",
    "load_test_min_cancellation_share": "a class's tested cancellation rate over the "
    "workload's, at least",
    "load_test_min_output_tokens_cv": "output-length CV a test must exceed",
    "load_test_min_priority_classes": "priority classes a test must offer together",
    "load_test_min_prompt_tokens_cv": "prompt-length CV a test must exceed",
    "require_imported_evidence": "policies that count only evidence read from raw files",
    "reserve_min_worker_failures": "worker failures the reserve must cover",
    "reserve_min_zone_failures": "zone failures the reserve must cover",
    "retry_max_attempts": "attempts per request, at most",
    "retry_max_budget_ratio": "retries as a share of requests, at most",
    "staleness": "material-change limits that make evidence stale",
    "tp_fast_interconnects": "interconnects tensor parallelism may run over",
    "tp_min_latency_gain": "p99 latency gain TP must show at equal GPUs",
    "waiver_approval": "who may approve a waiver: an approver of the plan's team "
    "(`plan_team`) or any (`any_team`); `global_approver_teams` approve every team's",
    "waiver_max_lifetime_days": "latest expiry a waiver may state (checked at submission)",
    "warmup_measured_max_excess": "how far a measured warm-up may exceed the stated one",
}


@dataclass(frozen=True)
class SeedItem:
    kind: str
    text: str
    guards: tuple[str, ...]  # substrings of a rule's `guards` that enforce it


SEED: tuple[SeedItem, ...] = (
    SeedItem(
        "decision",
        "Model token-work distributions, not requests per second alone",
        ("distributions are measured", "versioned trace"),
    ),
    SeedItem(
        "decision",
        "Size to tail objectives and defined worker failures",
        ("size to tail objectives", "per-class p99", "reserve is recomputed"),
    ),
    SeedItem(
        "decision",
        "Use admission and backpressure while replicas warm",
        ("admission and backpressure", "queue deadlines", "load shedding"),
    ),
    SeedItem(
        "decision",
        "Choose replication or partitioning from memory fit and interconnect evidence",
        ("replication or partitioning", "memory fit", "kv cache sized", "more gpus"),
    ),
    SeedItem(
        "failure mode", "Uniform prompts hide queue and cache behaviour", ("uniform prompts",)
    ),
    SeedItem("failure mode", "Cold replicas are counted as ready capacity", ("cold replicas",)),
    SeedItem("failure mode", "Retry storms amplify overload", ("retry storms",)),
    SeedItem("failure mode", "More GPUs are assumed to reduce latency", ("more gpus",)),
    SeedItem(
        "checklist",
        "Prompt, output, concurrency and burst distributions are measured",
        ("distributions are measured",),
    ),
    SeedItem(
        "checklist",
        "Load tests include cancellation and mixed priority classes",
        ("load tests include",),
    ),
    SeedItem(
        "checklist",
        "One-worker and one-zone failure reserve is explicit",
        ("failure reserve is explicit",),
    ),
    SeedItem(
        "checklist",
        "Queue deadlines and load shedding are configured",
        ("queue deadlines", "load shedding"),
    ),
    SeedItem("checklist", "Scale-down drains active work safely", ("scale-down drains",)),
)

_BLOCK = re.compile(r"# METADATA\n((?:#.*\n)+)((?:(?!# METADATA)[^\n]*\n)*)")
_GUARDS = re.compile(r'#\s+guards:\s*"([^"]+)"')
_RULE = re.compile(r'result\.violation\(\s*_policy,\s*"([a-z_]+)"')


@dataclass(frozen=True)
class Rule:
    policy: str
    rule: str
    guards: str


def policy_rules() -> list[Rule]:
    """Every violation rule with the `guards` of its METADATA block."""
    rules: list[Rule] = []
    for path in sorted(POLICIES.glob("*/*.rego")):
        policy = path.parent.name
        if path.name.endswith("_test.rego") or policy in {"lib", "gate"}:
            continue
        for header, body in _BLOCK.findall(path.read_text(encoding="utf-8")):
            guards = _GUARDS.search(header)
            name = _RULE.search(body)
            if guards and name and "violations contains" in body:
                rules.append(Rule(policy, name.group(1), guards.group(1)))
    return rules


def proving_tests(rule: Rule) -> list[str]:
    """Corpus cases that expect the rule (both engines), else Rego unit tests naming it."""
    expected = json.loads(CORPUS.read_text(encoding="utf-8"))
    key = f"{rule.policy}/{rule.rule}"
    cases = [name.removesuffix(".json") for name, case in expected.items() if key in case["rules"]]
    if cases:
        return [f"corpus `{case}`" for case in sorted(cases)]
    test_file = POLICIES / rule.policy / f"{rule.policy}_test.rego"
    found: list[str] = []
    current = None
    for line in test_file.read_text(encoding="utf-8").splitlines():
        match = re.match(r"(test_\w+) if", line)
        if match:
            current = match.group(1)
        elif current and f'"{rule.rule}"' in line and current not in found:
            found.append(current)
    return [f"rego `{rule.policy}_test.{name}`" for name in found]


def coverage_table() -> str:
    rules = policy_rules()
    lines = ["| seed item | enforced by | proved by |", "|---|---|---|"]
    for item in SEED:
        enforcing = [r for r in rules if any(g in r.guards.lower() for g in item.guards)]
        names = ", ".join(f"`{r.policy}.{r.rule}`" for r in enforcing) or "**nothing**"
        proofs = sorted({t for r in enforcing for t in proving_tests(r)})
        shown = ", ".join(proofs[:4]) + (f" (+{len(proofs) - 4} more)" if len(proofs) > 4 else "")
        lines.append(f"| {item.kind}: {item.text} | {names} | {shown or '**no test**'} |")
    return "\n".join(lines)


def _readers(name: str) -> list[str]:
    readers = sorted(
        path.parent.name
        for path in POLICIES.glob("*/*.rego")
        if not path.name.endswith("_test.rego")
        and path.parent.name != "lib"
        and re.search(rf"\b{name}\b", path.read_text(encoding="utf-8"))
    )
    for path in sorted(POLICIES.glob("lib/*.rego")):
        if not path.name.endswith("_test.rego") and name in path.read_text(encoding="utf-8"):
            readers.append(f"lib/{path.stem}")
    # Python reads thresholds by key: the name quoted, not a word that happens to match.
    quoted = re.compile(rf"(get\(|\[)[\"']{name}[\"']")
    python = [
        path.relative_to(ROOT).as_posix()
        for path in sorted((ROOT / "registry").rglob("*.py"))
        if path.name != "docs.py" and quoted.search(path.read_text(encoding="utf-8"))
    ]
    return readers + python


def _value(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_value(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return json.dumps(value)


def thresholds_table() -> str:
    data = json.loads((POLICIES / "data.json").read_text(encoding="utf-8"))
    thresholds: dict[str, object] = data["capgate"]["thresholds"]
    lines = ["| threshold | value | read by | meaning |", "|---|---|---|---|"]
    for name, value in thresholds.items():
        readers = ", ".join(f"`{r}`" for r in _readers(name)) or "**nobody**"
        lines.append(f"| `{name}` | {_value(value)} | {readers} | {MEANINGS.get(name, '')} |")
    return "\n".join(lines)


def _replace(text: str, marker: str, table: str) -> str:
    start, end = f"<!-- generated: {marker} -->", f"<!-- end generated: {marker} -->"
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    return f"{before}{start}\n{table}\n{end}{after}"


def render(text: str) -> str:
    text = _replace(text, "thresholds", thresholds_table())
    return _replace(text, "coverage", coverage_table())


if __name__ == "__main__":
    DOC.write_text(render(DOC.read_text(encoding="utf-8")), encoding="utf-8")
