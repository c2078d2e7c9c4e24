"""`capgate gate check PLAN --manifests DIR` on 200 Kubernetes documents, beside the same
check without manifests (target: reading and checking 200 manifests takes < 1 s beyond
the gate's own time).

    .venv/bin/python -m benchmarks.manifests.bench_manifests [--runs 7] [--keep DIR] [--write]

The worked example is registered in a throwaway SQLite registry through a live `capgate`
API server (workload, provider, plan and its load test, one check so the planner's result
is stored); the server is then stopped. 200 documents are written as multi-document YAML
files in a temporary folder, variations of examples/chat-assistant/k8s that state what
the example's plan says:

- the serving pool split per zone: three vLLM Deployments (three replicas each, each
  pinned to its zone), one HPA each (3 to 6 replicas, together the plan's 9 to 18), one
  Service and one PodDisruptionBudget over all three (8 documents);
- 32 other components of the namespace, 6 documents each: a Deployment or StatefulSet
  that runs no vLLM, its Service, HPA (on cpu), PodDisruptionBudget and ConfigMap, and
  one more kind (ServiceAccount, NetworkPolicy, Ingress, CronJob, Role or Secret). The
  reader parses them all and leaves them out.

Before anything is timed the folder is checked to state exactly the fields the example's
own manifests state, with the same values, and no discrepancy with the plan (the decision
stays an allow). Then, as fresh processes and interleaved round by round so that machine
noise falls on both alike: `capgate gate check PLAN` and `capgate gate check PLAN
--manifests DIR`. In process, the manifests' own cost: `stated_fields` (what
`--manifests` calls: find, read, parse and extract) plus `discrepancies` (the comparison
the gate makes with the plan). Progress on stderr; the table on stdout.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from benchmarks.doc_blocks import Measurement, add_write_flag, publish, sqlite_version
from benchmarks.gate.bench_decisions import EXAMPLE, register_example
from benchmarks.registry.bench_submissions import api_server, sqlite_database

ROOT = Path(__file__).resolve().parents[2]
CAPGATE = str(ROOT / ".venv" / "bin" / "capgate")
PLAN = "chat-assistant-prod"
K8S = EXAMPLE / "k8s"
ZONES = ("us-east1-b", "us-east1-c", "us-east1-d")
COMPONENTS = 32
DOCUMENTS = 8 + 6 * COMPONENTS  # the serving pool, then the other components
TARGET_S = 1.0
BLOCK = "manifests"
# The table's header: tests/docs checks that the page's block has it.
HEADER = (
    "| documents | runs | without `--manifests` s "
    "| with s | difference s | in-process read + compare s | target |"
)
ROLES = ("gateway", "router", "tokenizer", "redis", "auth", "metrics", "ui", "worker")
EXTRA_KINDS = ("ServiceAccount", "NetworkPolicy", "Ingress", "CronJob", "Role", "Secret")


# ---- the 200 documents -------------------------------------------------------------------


def _example(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((K8S / name).read_text(encoding="utf-8")) if d]


def serving_pool() -> list[dict[str, Any]]:
    """The example's Deployment, HPA and PDB, the Deployment split into one per zone."""
    deployment, service = _example("deployment.yaml")
    (hpa,) = _example("hpa.yaml")
    (pdb,) = _example("pdb.yaml")
    per_zone = len(ZONES)
    assert deployment["spec"]["replicas"] % per_zone == 0
    replicas = deployment["spec"]["replicas"] // per_zone
    deployments, hpas = [], []
    for zone in ZONES:
        name = f"chat-assistant-{zone}"
        one = copy.deepcopy(deployment)
        one["metadata"]["name"] = name
        one["spec"]["replicas"] = replicas
        # Each Deployment its own selector; the PDB and Service select all three.
        instance = {"app.kubernetes.io/instance": name}
        one["spec"]["selector"]["matchLabels"].update(instance)
        one["spec"]["template"]["metadata"]["labels"].update(instance)
        pod = one["spec"]["template"]["spec"]
        terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        (expression,) = [
            e
            for e in terms["nodeSelectorTerms"][0]["matchExpressions"]
            if e["key"] == "topology.kubernetes.io/zone"
        ]
        expression["values"] = [zone]
        deployments.append(one)
        scaler = copy.deepcopy(hpa)
        scaler["metadata"]["name"] = name
        scaler["spec"]["scaleTargetRef"]["name"] = name
        scaler["spec"]["minReplicas"] //= per_zone
        scaler["spec"]["maxReplicas"] //= per_zone
        hpas.append(scaler)
    return [*deployments, service, *hpas, pdb]


def _labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "assistant"}


def _meta(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "namespace": "assistant", "labels": _labels(name), **more}


def _workload(name: str, index: int) -> dict[str, Any]:
    stateful = ROLES[index % len(ROLES)] == "redis"
    container = {
        "name": "main",
        "image": f"ghcr.io/example/{name}:1.{index}.0",
        "command": ["/app/server"],
        "args": [f"--port={8080 + index}", "--log-format=json"],
        "envFrom": [{"configMapRef": {"name": f"{name}-config"}}],
        "ports": [{"name": "http", "containerPort": 8080 + index}],
        "resources": {
            "requests": {"cpu": "500m", "memory": "512Mi"},
            "limits": {"cpu": "1", "memory": "1Gi"},
        },
        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
    }
    spec: dict[str, Any] = {
        "replicas": 2 + index % 3,
        "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
        "template": {
            "metadata": {"labels": _labels(name)},
            "spec": {"terminationGracePeriodSeconds": 30, "containers": [container]},
        },
    }
    if stateful:
        spec["serviceName"] = name
        spec["updateStrategy"] = {"type": "RollingUpdate"}
    else:
        spec["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    kind = "StatefulSet" if stateful else "Deployment"
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": _meta(name), "spec": spec}


def _extra(name: str, index: int) -> dict[str, Any]:
    kind = EXTRA_KINDS[index % len(EXTRA_KINDS)]
    selector = {"matchLabels": {"app.kubernetes.io/name": name}}
    if kind == "ServiceAccount":
        return {"apiVersion": "v1", "kind": kind, "metadata": _meta(name)}
    if kind == "NetworkPolicy":
        spec = {
            "podSelector": selector,
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {}}], "ports": [{"port": 8080 + index}]}],
        }
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": kind,
            "metadata": _meta(name),
            "spec": spec,
        }
    if kind == "Ingress":
        backend = {"service": {"name": name, "port": {"name": "http"}}}
        rule = {
            "host": f"{name}.assistant.example.com",
            "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]},
        }
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": kind,
            "metadata": _meta(name),
            "spec": {"ingressClassName": "nginx", "rules": [rule]},
        }
    if kind == "CronJob":
        job = {
            "template": {
                "spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [{"name": "cleanup", "image": "busybox:1.36", "args": ["true"]}],
                }
            }
        }
        return {
            "apiVersion": "batch/v1",
            "kind": kind,
            "metadata": _meta(f"{name}-cleanup"),
            "spec": {"schedule": f"{index} 3 * * *", "jobTemplate": {"spec": job}},
        }
    if kind == "Role":
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": kind,
            "metadata": _meta(name),
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
        }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(f"{name}-credentials"),
        "type": "Opaque",
        "stringData": {"username": name, "password": "not-a-real-secret"},
    }


def component(index: int) -> list[dict[str, Any]]:
    """Six documents of a component that is not the serving pool."""
    name = f"{ROLES[index % len(ROLES)]}-{index:02d}"
    workload = _workload(name, index)
    port = workload["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(name),
        "spec": {
            "selector": {"app.kubernetes.io/name": name},
            "ports": [{"name": "http", "port": 80, "targetPort": port}],
        },
    }
    cpu = {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _meta(name),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": workload["kind"], "name": name},
            "minReplicas": workload["spec"]["replicas"],
            "maxReplicas": 2 * workload["spec"]["replicas"],
            "metrics": [{"type": "Resource", "resource": cpu}],
        },
    }
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(name),
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": name}}},
    }
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(f"{name}-config"),
        "data": {
            "LOG_LEVEL": "info",
            "UPSTREAM": f"http://{name}.assistant.svc",
            "SHARD": str(index),
        },
    }
    return [workload, service, hpa, pdb, config, _extra(name, index)]


def write_manifests(folder: Path) -> int:
    """The 200 documents, one multi-document file per component; the documents written."""
    files = {"serving.yaml": serving_pool()}
    for index in range(COMPONENTS):
        files[f"{ROLES[index % len(ROLES)]}-{index:02d}.yaml"] = component(index)
    for name, documents in files.items():
        text = yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False)
        (folder / name).write_text(text, encoding="utf-8")
    return sum(len(documents) for documents in files.values())


# ---- what is measured --------------------------------------------------------------------


def example_plan() -> dict[str, Any]:
    """The example's plan as the gate compares it: validated, defaults included."""
    from registry.records.documents import load_document, validate_record
    from registry.records.kinds import RecordKind

    plan = validate_record(RecordKind.plan, load_document(EXAMPLE / "plan.yaml"))
    return dict(plan.model_dump(mode="json"))


def read_and_check(folder: Path, plan: dict[str, Any]) -> list[Any]:
    """What --manifests adds to a check: read the manifests (the client), compare the
    fields they state with the plan (the gate); the discrepancies found."""
    from registry.manifests.consistency import discrepancies, stated_fields

    return discrepancies(plan, stated_fields([str(folder)]))


def verify(folder: Path, plan: dict[str, Any]) -> None:
    """The generated folder states what the example's manifests state, and agrees."""
    from registry.manifests.consistency import stated_fields

    def values(path: Path) -> dict[str, Any]:
        return {name: f.value for name, f in stated_fields([str(path)]).fields.items()}

    generated, example = values(folder), values(K8S)
    if generated != example:
        differ = sorted(
            k for k in generated.keys() | example.keys() if generated.get(k) != example.get(k)
        )
        sys.exit(f"the generated manifests do not state what the example's do: {differ}")
    found = read_and_check(folder, plan)
    if found:
        sys.exit(f"the generated manifests contradict the plan: {found}")


def run_once(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:  # 0 is an allow: the decision must not change
        sys.exit(f"{' '.join(command[2:])} exited {result.returncode}: {result.stderr.strip()}")
    return elapsed


def time_call(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


@contextmanager
def manifests_folder(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="capgate-manifests-") as folder:
        yield Path(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="write the manifests here and keep them")
    add_write_flag(parser, BLOCK)
    args = parser.parse_args()
    measurement = Measurement(BLOCK)
    with (
        tempfile.TemporaryDirectory(prefix="capgate-bench-data-") as data_home,
        sqlite_database() as url,
        manifests_folder(args.keep) as folder,
    ):
        # The registry's defaults (signing key) in a throwaway data directory.
        os.environ["XDG_DATA_HOME"] = data_home
        documents = write_manifests(folder)
        assert documents == DOCUMENTS, documents
        print(
            f"wrote {documents} documents in {len(list(folder.glob('*.yaml')))} files",
            file=sys.stderr,
        )
        plan = example_plan()
        verify(folder, plan)
        print("registering the worked example through the API...", file=sys.stderr)
        with api_server(url, workers=1) as server:
            register_example(server)

        env = dict(os.environ, CAPGATE_DATABASE_URL=url, CAPGATE_PRINCIPAL="bench")
        for name in ("CAPGATE_SERVER", "CAPGATE_TOKEN", "CAPGATE_TOKEN_FILE"):
            env.pop(name, None)
        commands = {
            "without": [CAPGATE, "gate", "check", PLAN],
            "with": [CAPGATE, "gate", "check", PLAN, "--manifests", str(folder)],
        }
        samples: dict[str, list[float]] = {name: [] for name in (*commands, "in_process")}
        for command in commands.values():  # warm the page cache and .pyc files
            run_once(command, env)
        read_and_check(folder, plan)  # warm: imports
        for round_ in range(args.runs):
            print(f"round {round_ + 1}/{args.runs}", file=sys.stderr)
            for name, command in commands.items():
                samples[name].append(run_once(command, env))
            samples["in_process"].append(time_call(lambda: read_and_check(folder, plan)))

    medians = {name: statistics.median(values) for name, values in samples.items()}
    difference = medians["with"] - medians["without"]
    met = "met" if difference < TARGET_S else "**not met**"
    table = "\n".join(
        [
            HEADER,
            "|---|---|---|---|---|---|---|",
            f"| {documents} | {args.runs} | {medians['without']:.3f} | {medians['with']:.3f} "
            f"| {difference:.3f} | {medians['in_process']:.3f} | < {TARGET_S:g} s beyond the "
            f"gate's own time: {met} |",
        ]
    )
    print(table)
    if args.write:
        publish(
            measurement,
            table,
            f"{args.runs} rounds of fresh processes interleaved (after one warm-up), medians",
            [sqlite_version()],
        )


if __name__ == "__main__":
    main()
