"""`capgate ARGS` in this process (typer's CliRunner), checking the exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from typer.testing import CliRunner, Result

from cli.main import app


class Capgate:
    """`capgate ARGS` in this process, on the registry the environment names."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str, code: int = 0) -> Result:
        result = self.runner.invoke(app, list(args))
        assert result.exit_code == code, (result.output, result.exception)
        return result

    def json(self, *args: str, code: int = 0) -> Any:
        return json.loads(self(*args, "--json", code=code).stdout)


def capgate_in_process(
    *args: str, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`capgate ARGS` as tests/support/cli_process.py's `capgate` runs it (the console entry
    point, `cli.main.run`: capgate's errors mapped to one line and an exit code), but in
    this process, with exactly ``env`` as the environment: no interpreter start and no
    imports per command, and the planner's in-process cache is shared. For tests of what a
    command says and stores; tests of the process itself (signals, the interpreter's
    environment, what a fresh process imports) run it as a process."""
    from cli.main import run

    overrides: dict[str, str | None] = {name: None for name in os.environ if name not in env}
    overrides.update(env)
    runner = CliRunner()
    with runner.isolation(input=stdin, env=overrides) as (out, err, _):
        argv = sys.argv
        sys.argv = ["capgate", *args]
        try:
            run()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.argv = argv
            # The swapped streams are text wrappers over bytes: flushed before reading.
            sys.stdout.flush()
            sys.stderr.flush()
        stdout = out.getvalue().decode()
        stderr = err.getvalue().decode()
    return subprocess.CompletedProcess(["capgate", *args], code, stdout, stderr)
