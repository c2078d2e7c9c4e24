"""`capgate ARGS` in this process (typer's CliRunner), checking the exit code."""

from __future__ import annotations

import json
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
