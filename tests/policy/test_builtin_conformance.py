"""Every built-in the policies call gives OPA's answer in the embedded engine.

The embedded engine runs OPA's compiled module, so its built-ins are OPA's C library,
not Go's. This table holds the two to each other on the inputs that break engines
(issue 25: regopy ordered numbers by their text): digit counts, magnitudes up to the
gate input's limit of 1e12, floats at rounding edges, negatives, empty and single
collections, mixed types, non-ASCII text; plus seeded generated numbers of every shape.
Each row is evaluated by the compiled module and by ``opa eval`` (non-strict, as the
module is: a built-in error drops the row in both) and the two answers must be equal.

The table must name every built-in the shipped bundle calls (read from OPA's own plan
of the gate), so a policy that starts calling a new built-in fails here until its rows
are written.
"""

from __future__ import annotations

import io
import json
import random
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.embedded import WasmPolicy
from registry.policy.engine import PolicyError
from registry.policy.wasm_build import ENTRYPOINT, compiled_policy

pytestmark = pytest.mark.opa

ENTRY = "conformance/results"

EDGE_NUMBERS: list[Any] = [
    0,
    1,
    -1,
    9,
    10,
    100,
    0.5,
    -0.5,
    1.5,
    2.5,
    2.675,
    6.375,
    12.75,
    9.5,
    62.3,
    0.001,
    0.0005,
    999999999,
    1000000000,
    2147483647,
    2147483648,
    123456789012,
    999999999999.5,
    1e12,
    -1e12,
]
SCALARS: list[Any] = [0, 1.5, "1", "", "é", None, True, False, [], [1], {}, {"a": 1}]


def _generated_numbers(seed: int, n: int) -> list[Any]:
    """Numbers of every shape: 1 to 13 digits, 0 to 6 decimals, either sign."""
    rng = random.Random(seed)
    out: list[Any] = []
    for _ in range(n):
        digits = rng.randint(1, 12)
        whole = rng.randint(0, 10**digits - 1)
        decimals = rng.choice([0, 0, 1, 2, 3, 6])
        value: Any = whole if decimals == 0 else round(whole / 10**decimals, decimals)
        out.append(-value if rng.random() < 0.3 else value)
    return out


def _lists(seed: int, n: int) -> list[list[Any]]:
    rng = random.Random(seed)
    pool = _generated_numbers(seed + 1, 400) + EDGE_NUMBERS
    return [[rng.choice(pool) for _ in range(rng.choice([0, 1, 2, 3, 5, 9]))] for _ in range(n)]


def _pairs(seed: int, n: int) -> list[list[Any]]:
    rng = random.Random(seed)
    pool = _generated_numbers(seed + 2, 200) + EDGE_NUMBERS
    return [[rng.choice(pool), rng.choice(pool)] for _ in range(n)]


def _pairs_of_lists() -> list[tuple[list[Any], list[Any]]]:
    lists = _lists(14, 40)
    return list(zip(lists[::2], lists[1::2], strict=True))


NUMBERS = EDGE_NUMBERS + _generated_numbers(11, 150)
LISTS = [[[]], [[3, 10]], [[6.375, 12.75]], [[9.5, 62.3]], [[10, 9, 100, 2]], [[7]]] + [
    [items] for items in _lists(12, 150)
]
PAIRS = [[a, b] for a in (0, 1, -1, 9, 10, 0.5, 2.5, 1e12) for b in (1, 3, 10, 0.25, -7)]
PAIRS += _pairs(13, 150)
COMPARED = PAIRS + [[a, b] for a in SCALARS for b in SCALARS]

# name -> (call written in Rego over the row `a`, rows)
TABLE: dict[str, tuple[str, list[list[Any]]]] = {
    "abs": ("abs(a[0])", [[x] for x in NUMBERS]),
    "ceil": ("ceil(a[0])", [[x] for x in NUMBERS]),
    "floor": ("floor(a[0])", [[x] for x in NUMBERS]),
    "round": ("round(a[0])", [[x] for x in NUMBERS] + [[x * 1000] for x in NUMBERS]),
    "format_int": (
        "format_int(a[0], a[1])",
        [[x, 10] for x in NUMBERS] + [[255, 16], [-255, 2], [7, 8]],
    ),
    "max": ("max(a[0])", [*LISTS, [["b", "a", "B"]]]),
    "min": ("min(a[0])", [*LISTS, [["b", "a", "B"]]]),
    "sort": ("sort(a[0])", [*LISTS, [["b", "a", "B", "é"]], [[1, "a", True, None, [], {}]]]),
    "count": ("count(a[0])", [[[]], [["a"]], [{"a": 1}], [""], ["héllo"], [[None, None]]]),
    "concat": (
        "concat(a[0], a[1])",
        [[", ", []], ["", ["a"]], ["; ", ["a", "b", "c"]], ["", ["é", "ß", ""]], ["", [1]]],
    ),
    "substring": (
        "substring(a[0], a[1], a[2])",
        [
            ["000000000", 0, 3],
            ["000000000", 0, 0],
            ["000000000", 0, 9],
            ["abc", 2, 10],
            ["abc", 5, 1],
            ["héllo", 1, 3],
            ["abc", 0, -1],
        ],
    ),
    "trim_right": (
        "trim_right(a[0], a[1])",
        [["1.500", "0"], ["000", "0"], ["", "0"], ["12", ""], ["ab..", "."]],
    ),
    "contains": ("contains(a[0], a[1])", [["abc", "b"], ["abc", ""], ["", "a"], ["é", "é"]]),
    "object.get": (
        "object.get(a[0], a[1], a[2])",
        [
            [{"a": 1}, "a", None],
            [{"a": 1}, "b", 0],
            [{"a": None}, "a", 5],
            [{"a": {"b": 2}}, ["a", "b"], None],
            [{"a": {"b": 2}}, ["a", "c"], "d"],
            [{}, [], 5],
        ],
    ),
    "object.union": (
        "object.union(a[0], a[1])",
        [
            [{}, {}],
            [{"a": {"b": 1}}, {"a": {"c": 2}}],
            [{"a": 1}, {"a": {"b": 1}}],
            [{"a": [1]}, {"a": [2]}],
        ],
    ),
    "object.remove": (
        "object.remove(a[0], a[1])",
        [[{"a": 1, "b": 2}, ["a"]], [{}, []], [{"a": 1}, ["z"]], [{"a": 1}, {"a": 0}]],
    ),
    "object.keys": ("object.keys(a[0])", [[{}], [{"b": 1, "a": 2}]]),
    "json.remove": (
        "json.remove(a[0], a[1])",
        [
            [{"a": {"b": 1, "c": 2}}, ["a/b"]],
            [{"a": [1, 2]}, ["a/0"]],
            [{"a": 1}, ["z"]],
            [{"a": {"b": 1}}, [["a", "b"]]],
        ],
    ),
    "json.marshal": ("json.marshal(a[0])", [[x] for x in SCALARS + EDGE_NUMBERS]),
    "is_number": ("is_number(a[0])", [[x] for x in SCALARS]),
    "is_string": ("is_string(a[0])", [[x] for x in SCALARS]),
    "is_boolean": ("is_boolean(a[0])", [[x] for x in SCALARS]),
    "is_array": ("is_array(a[0])", [[x] for x in SCALARS]),
    "is_object": ("is_object(a[0])", [[x] for x in SCALARS]),
    "plus": ("a[0] + a[1]", PAIRS),
    "minus": ("a[0] - a[1]", PAIRS),
    "mul": ("a[0] * a[1]", PAIRS),
    "div": ("a[0] / a[1]", [*PAIRS, [1, 0]]),
    "rem": ("a[0] % a[1]", [[7, 3], [-7, 3], [10, 10], [5, 0]]),
    "equal": ("a[0] == a[1]", COMPARED),
    "neq": ("a[0] != a[1]", COMPARED),
    "lt": ("a[0] < a[1]", COMPARED),
    "lte": ("a[0] <= a[1]", COMPARED),
    "gt": ("a[0] > a[1]", COMPARED),
    "gte": ("a[0] >= a[1]", COMPARED),
    "internal.member_2": ("a[0] in a[1]", [[1, [1, 2]], [1.0, [1]], ["a", []], [3, {"a": 3}]]),
    "or": (
        "{x | some x in a[0]} | {x | some x in a[1]}",
        [[[], []], [[1], [1.0, 2]], [["b", 3], ["a", 10, 9]]]
        + [[x, y] for x, y in _pairs_of_lists()],
    ),
}


# Not built-ins, but where their answers meet: every number in a message goes through
# result.show, and a set turned into an array or a string takes the set's order.
TABLE["result.show"] = (
    "result.show(a[0])",
    [[x] for x in NUMBERS + _generated_numbers(15, 150) + [None, "text", True, [1, "a"]]],
)
TABLE["set iteration"] = ("[x | some x in {y | some y in a[0]}]", LISTS)
TABLE["concat of a set"] = (
    'concat(",", {y | some y in a[0]})',
    [[["b", "a", "c", "ab"]], [["x"]], [[]], [["zone-b", "zone-a"]]],
)
TABLE["sort of a set"] = ("sort({y | some y in a[0]})", LISTS)


@dataclass(frozen=True)
class Divergence:
    """Where OPA's Wasm answers otherwise than OPA, and why the policies never meet it."""

    name: str
    applies: Callable[[list[Any]], bool]
    why: str


def _negative_fraction(row: list[Any]) -> bool:
    return isinstance(row[0], (int, float)) and -1 < row[0] < 0


def _beyond_int32(row: list[Any]) -> bool:
    return isinstance(row[0], (int, float)) and not -(2**31) <= row[0] < 2**31


def _big_product(row: list[Any]) -> bool:
    return all(isinstance(x, (int, float)) for x in row) and abs(row[0] * row[1]) >= 2**53


def _tiny_quotient(row: list[Any]) -> bool:
    return (
        all(isinstance(x, (int, float)) for x in row)
        and row[1] != 0
        and abs(row[0] / row[1]) < 1e-6
    )


def _several(row: list[Any]) -> bool:
    return any(isinstance(x, (list, dict)) and len(x) > 1 for x in row)


def _always(row: list[Any]) -> bool:
    return True


KNOWN = [
    Divergence(
        "ceil",
        _negative_fraction,
        "OPA 1.22.3 answers 1 for ceil of a number in (-1, 0), the module 0: the policies "
        "ceil only token counts, which the gate input holds at >= 0",
    ),
    Divergence(
        "floor",
        _negative_fraction,
        "OPA 1.22.3 answers 0 for floor of a number in (-1, 0), the module -1: the "
        "policies floor only absolute values (result.show)",
    ),
    Divergence(
        "format_int",
        _beyond_int32,
        "the module's format_int fails from 2^31 on: result.show writes whole numbers in "
        "parts below 10^9",
    ),
    Divergence(
        "mul",
        _big_product,
        "OPA multiplies exactly, the module in doubles: products stay below 2^53 because "
        "the gate input's numbers are at most 1e12 and the policies scale by constants",
    ),
    Divergence(
        "div",
        _tiny_quotient,
        "the last digit of a quotient below 1e-6 may differ (OPA divides in decimal): the "
        "policies compare quotients and show them to three decimals",
    ),
    Divergence(
        "object.keys",
        _several,
        "the module returns a set in its own order, OPA sorted: a set is never output "
        "or iterated into an order (docs/policies.md)",
    ),
    Divergence("or", _several, "set order, as object.keys"),
    Divergence("set iteration", _several, "set order, as object.keys"),
    Divergence("concat of a set", _several, "set order: the policies sort() a set first"),
]


def _explained(name: str, row: list[Any]) -> Divergence | None:
    for known in KNOWN:
        if known.name == name and known.applies(row):
            return known
    return None


def _key(name: str) -> str:
    return name.replace(".", "_").replace(" ", "_")


def _module() -> str:
    lines = ["package conformance", "", "import data.capgate.lib.result", "", "results := {"]
    for name, (call, _rows) in TABLE.items():
        body = f"some i, a in input.{_key(name)}\n\t\tv := {call}"
        lines.append(f'\t"{name}": [[i, v] |\n\t\t{body}\n\t],')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _input() -> dict[str, Any]:
    return {_key(name): rows for name, (_call, rows) in TABLE.items()}


UNDEFINED = ("undefined", None)


def _opa_eval(binary: Path, root: Path, doc: dict[str, Any], *, strict: bool) -> Any:
    """OPA's value of the results, or None when strict evaluation stopped on an error."""
    (root / "input.json").write_text(json.dumps(doc), encoding="utf-8")
    done = subprocess.run(
        [
            str(binary),
            "eval",
            *(["--strict-builtin-errors"] if strict else []),
            "--format",
            "json",
            "--data",
            str(root / "conformance.rego"),
            "--data",
            str(root / "result.rego"),
            "--input",
            str(root / "input.json"),
            "data.conformance.results",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if done.returncode != 0:
        assert strict, done.stderr
        return None
    return json.loads(done.stdout)["result"][0]["expressions"][0]["value"]


def _result_module() -> str:
    return load_bundle().modules["lib/result.rego"]


def _opa_outcomes(binary: Path, module: str) -> dict[str, dict[int, tuple[str, Any]]]:
    """("value", v), UNDEFINED or ("error", None) per row, as OPA answers it.

    One non-strict run gives every defined value; each row it leaves out is run again
    with strict built-in errors to tell an error from an undefined value.
    """
    with tempfile.TemporaryDirectory(prefix="capgate-conformance-") as work:
        root = Path(work)
        (root / "conformance.rego").write_text(module, encoding="utf-8")
        (root / "result.rego").write_text(_result_module(), encoding="utf-8")
        values = _opa_eval(binary, root, _input(), strict=False)
        outcomes: dict[str, dict[int, tuple[str, Any]]] = {}
        for name, (_call, rows) in TABLE.items():
            found = {index: ("value", value) for index, value in values[name]}
            for index in set(range(len(rows))) - set(found):
                single = _opa_eval(binary, root, {_key(name): [rows[index]]}, strict=True)
                found[index] = ("error", None) if single is None else UNDEFINED
            outcomes[name] = found
    return outcomes


def _embedded_outcomes(policy: WasmPolicy) -> dict[str, dict[int, tuple[str, Any]]]:
    """The same per row from the compiled module. OPA's Wasm aborts the evaluation on
    some built-in errors (an error, as the gate then answers) and leaves others
    undefined (it has no strict mode), so a builtin whose rows abort is run row by row."""

    def run(doc: dict[str, Any]) -> Any:
        defined, value = policy.evaluate(json.dumps(doc).encode("utf-8"))
        assert defined
        return value

    outcomes: dict[str, dict[int, tuple[str, Any]]] = {}
    for name, (_call, rows) in TABLE.items():
        key = _key(name)
        try:
            batch = run({key: rows})[name]
            found = {index: ("value", value) for index, value in batch}
        except PolicyError:
            found = {}
            for index, row in enumerate(rows):
                try:
                    single = run({key: [row]})[name]
                except PolicyError:
                    found[index] = ("error", None)
                    continue
                if single:
                    found[index] = ("value", single[0][1])
        outcomes[name] = {index: found.get(index, UNDEFINED) for index in range(len(rows))}
    return outcomes


def _agree(opa: tuple[str, Any], embedded: tuple[str, Any]) -> bool:
    # Without strict mode, OPA's Wasm turns some built-in errors into undefined values:
    # the documented limit (docs/opa.md) the policies are written around.
    if opa[0] == "error":
        return embedded[0] in ("error", "undefined")
    return opa == embedded


def test_success_every_builtin_row_gives_opas_answer(
    opa_binary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAPGATE_OPA_BINARY", str(opa_binary))
    module = _module()
    modules = {"conformance.rego": module, "lib/result.rego": _result_module()}
    compiled = compiled_policy(PolicyBundle.from_sources(modules, {}), ENTRY)
    embedded = _embedded_outcomes(WasmPolicy(compiled, {}, ENTRY))
    opa = _opa_outcomes(opa_binary, module)

    unexplained, seen = [], set()
    for name, (_call, rows) in TABLE.items():
        values = [index for index, outcome in opa[name].items() if outcome[0] == "value"]
        # A table whose rows all fail would prove nothing: most rows must have a value.
        assert len(values) >= max(1, len(rows) // 2), (name, len(values), len(rows))
        for index, row in enumerate(rows):
            theirs, ours = opa[name][index], embedded[name][index]
            if _agree(theirs, ours):
                continue
            known = _explained(name, row)
            if known is None:
                unexplained.append(f"{name}{row}: OPA {theirs!r}, embedded {ours!r}")
            else:
                seen.add(known.name)
    assert unexplained == []
    # Each known divergence is still there: when OPA or its Wasm changes, this says so.
    assert sorted({known.name for known in KNOWN} - seen) == []


def _planned_builtins(binary: Path, bundle: PolicyBundle) -> set[str]:
    """The built-ins OPA's own plan of the gate calls (``opa build -t plan``)."""
    with tempfile.TemporaryDirectory(prefix="capgate-plan-") as work:
        root = Path(work)
        for name, text in bundle.files().items():
            path = root / "src" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        subprocess.run(
            [str(binary), "build", "-t", "plan", "-e", ENTRYPOINT, "-o", "plan.tar.gz", "src"],
            cwd=root,
            capture_output=True,
            check=True,
            timeout=120,
        )
        with tarfile.open(root / "plan.tar.gz") as tar:
            member = tar.extractfile("/plan.json")
            assert member is not None
            plan = json.load(io.TextIOWrapper(member, encoding="utf-8"))
    return {item["name"] for item in plan["static"].get("builtin_funcs", [])}


def test_success_the_table_names_every_builtin_the_gate_calls(opa_binary: Path) -> None:
    used = _planned_builtins(opa_binary, load_bundle())
    assert used, "OPA's plan lists no built-in: the plan format changed"
    assert sorted(used - set(TABLE)) == []
