"""What a new user types first: `capgate --version`, shell completion, and help that reads
at 80 columns."""

from __future__ import annotations

import os
import re
from importlib.metadata import version
from pathlib import Path

from tests.cli.test_cli import capgate

WIDE = dict(os.environ, COLUMNS="80", TERM="dumb")


def test_version_prints_the_installed_version() -> None:
    result = capgate("--version", env=WIDE)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"capgate {version('capgate')}\n"


def test_completion_script_for_bash() -> None:
    # Typer detects the shell from the process tree unless told not to; under pytest-xdist
    # the parent is Python, not a shell. With detection off the option takes the shell named.
    env = dict(WIDE, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    result = capgate("--show-completion", "bash", env=env)
    assert result.returncode == 0, result.stderr
    assert "complete " in result.stdout and "_CAPGATE_COMPLETE" in result.stdout


def _help_lines(*command: str) -> list[str]:
    result = capgate(*command, "--help", env=WIDE)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_help_fits_80_columns_and_reflows_paragraphs() -> None:
    """No line past 80 columns, and a sentence is not broken where its source line ended
    (the observe summary used to stop at "compare them with the" and go on a line later)."""
    for command in ((), ("gate",), ("gate", "check"), ("evidence", "import"), ("observe",)):
        lines = _help_lines(*command)
        assert max(len(line) for line in lines) <= 80, command
    text = " ".join(_help_lines())
    summary = re.search(r"observe\s+(Read the plan's vLLM series.*?)\s+report\s", text)
    assert summary is not None
    cells = [part.strip(" │") for part in summary.group(1).split("│")]
    widths = [len(cell) for cell in cells if cell]
    # Reflowed cells fill the column: every row but the last is close to its width.
    assert all(width >= 55 for width in widths[:-1]), widths


def test_every_problem_of_a_record_is_reported_in_one_run(tmp_path: Path) -> None:
    """One line that names the file and the first problem, then one line per other problem:
    a record is fixed in one round, not one error at a time."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "name: broken\nworkload: chat-assistant\nprovider: llama31-8b-h100-vllm\n"
        "replicas_per_zone: {a: -1}\nserving: {max_num_seqs: -3, gpu_memory_utilization: 7}\n"
    )
    env = dict(WIDE, CAPGATE_DATABASE_URL=f"sqlite:///{tmp_path / 'registry.db'}")
    result = capgate("plan", "submit", str(plan), env=env)
    assert result.returncode == 2
    first, *others = result.stderr.splitlines()
    assert first.startswith(f"capgate: error: {plan}: replicas_per_zone.a: ")
    assert first.endswith("(and 4 more problems)")
    assert [line.split(":")[0].strip() for line in others] == [
        "serving.max_num_seqs",
        "serving.max_num_batched_tokens",
        "serving.gpu_memory_utilization",
        "serving.max_model_len",
    ]


def test_validate_checks_files_offline_every_problem_of_every_file(tmp_path: Path) -> None:
    """The example's records pass, judged by their fields; a broken plan and a file of no
    kind are reported in full in the same run; no registry is opened or created."""
    from tests.factories import example_path

    broken = tmp_path / "broken-plan.yaml"
    broken.write_text(
        "name: broken\nworkload: w\nprovider: p\nreplicas_per_zone: {a: -1}\n"
        "serving: {max_num_seqs: -3}\n"
    )
    stray = tmp_path / "notes.yaml"
    stray.write_text("title: not a record\n")
    database = tmp_path / "never.db"
    env = dict(WIDE, CAPGATE_DATABASE_URL=f"sqlite:///{database}")
    good = [str(example_path(kind)) for kind in ("workload", "provider", "plan", "evidence")]
    result = capgate("validate", *good, str(broken), str(stray), env=env)
    assert result.returncode == 2
    assert result.stdout.splitlines() == [
        f"ok  {path}  ({kind})"
        for path, kind in zip(good, ("workload", "provider", "plan", "evidence"), strict=True)
    ]
    errors = result.stderr.splitlines()
    assert f"{broken}: replicas_per_zone.a: Input should be greater than or equal to 0" in errors
    assert f"{broken}: serving.max_num_seqs: Input should be greater than 0" in errors
    assert sum(line.startswith(f"{broken}: ") for line in errors) >= 4
    assert [line for line in errors if line.startswith(str(stray))] == [
        f"{stray}: the fields fit no record kind (workload, provider, evidence, plan, waiver, "
        "observation): give --kind to see what is missing"
    ]
    assert not database.exists()
    clean = capgate("validate", *good, env=env)
    assert clean.returncode == 0 and clean.stderr == ""
