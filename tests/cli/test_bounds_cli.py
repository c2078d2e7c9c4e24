"""Malformed record files and out-of-range references: exit 2 naming the field (issue 12)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from registry.records.references import MAX_VERSION
from tests.cli.test_cli import capgate, local_env
from tests.factories import example, example_path

__all__ = ["local_env"]


@pytest.fixture
def file_env(tmp_path: Path) -> dict[str, str]:
    """Files are rejected before the registry is opened: no database needed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(
        CAPGATE_DATABASE_URL=f"sqlite:///{tmp_path / 'unused.db'}", CAPGATE_PRINCIPAL="alice"
    )
    return env


def workload_yaml() -> str:
    return example_path("workload").read_text(encoding="utf-8")


def submit(tmp_path: Path, name: str, text: str, env: dict[str, str]):  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path, capgate("workload", "submit", str(path), env=env)


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", ".NaN", "1.0e+309"])
def test_non_finite_yaml_number_exits_2_naming_the_field(
    tmp_path: Path, file_env: dict[str, str], value: str
):
    text = workload_yaml().replace("mean_rps: 18.0", f"mean_rps: {value}", 1)
    assert text != workload_yaml()
    path, result = submit(tmp_path, "w.yaml", text, file_env)
    assert result.returncode == 2, result.stderr
    assert f"{path}: classes.0.arrival.mean_rps: must be a finite number" in result.stderr
    assert "internal error" not in result.stderr


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e309"])
def test_non_finite_json_number_exits_2_naming_the_field(
    tmp_path: Path, file_env: dict[str, str], value: str
):
    text = json.dumps(example("workload")).replace('"mean_rps": 18.0', f'"mean_rps": {value}', 1)
    path, result = submit(tmp_path, "w.json", text, file_env)
    assert result.returncode == 2, result.stderr
    assert f"{path}: classes.0.arrival.mean_rps: must be a finite number" in result.stderr


def test_duplicate_yaml_key_exits_2_naming_key_and_path(tmp_path: Path, file_env: dict[str, str]):
    text = workload_yaml().replace("peak_window_s: 60", "peak_window_s: 60\n      peak_rps: 1.0", 1)
    path, result = submit(tmp_path, "w.yaml", text, file_env)
    assert result.returncode == 2, result.stderr
    assert f"{path}: classes.0.arrival.peak_rps: duplicate key" in result.stderr


def test_duplicate_json_key_exits_2_naming_key_and_path(tmp_path: Path, file_env: dict[str, str]):
    text = json.dumps(example("workload")).replace('"owner":', '"owner": "x", "owner":', 1)
    path, result = submit(tmp_path, "w.json", text, file_env)
    assert result.returncode == 2, result.stderr
    assert f"{path}: owner: duplicate key" in result.stderr


def test_yaml_aliases_are_refused(tmp_path: Path, file_env: dict[str, str]):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8)
    )
    _path, result = submit(tmp_path, "bomb.yaml", bomb, file_env)
    assert result.returncode == 2, result.stderr
    assert "aliases" in result.stderr
    assert "internal error" not in result.stderr


@pytest.mark.parametrize("depth", [100, 50_000])
def test_deep_yaml_nesting_exits_2(tmp_path: Path, file_env: dict[str, str], depth: int):
    _path, result = submit(tmp_path, "deep.yaml", "a: " + "[" * depth + "]" * depth, file_env)
    assert result.returncode == 2, result.stderr
    assert "nested deeper than" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("depth", [100, 50_000])
def test_deep_json_nesting_exits_2(tmp_path: Path, file_env: dict[str, str], depth: int):
    _path, result = submit(
        tmp_path, "deep.json", '{"a": ' + "[" * depth + "]" * depth + "}", file_env
    )
    assert result.returncode == 2, result.stderr
    assert "nested deeper than" in result.stderr


def test_huge_version_reference_exits_2_naming_ref(local_env: dict[str, str]):
    result = capgate("workload", "show", f"chat-assistant@v{MAX_VERSION + 1}", env=local_env)
    assert result.returncode == 2, result.stderr
    assert "ref: version must be between 1 and" in result.stderr
    assert "internal error" not in result.stderr


def test_huge_offset_exits_2(file_env: dict[str, str]):
    result = capgate("workload", "list", "--offset", str(2**63), env=file_env)
    assert result.returncode == 2
    assert "--offset" in result.stderr
