"""What a person reads: no Python reprs in the CLI's text output on the worked example
(a dict's `{'us-east1-b': 3}`, a bare `None` or `True`). YAML's own `{}` and `[]` (an
empty mapping or list in a record shown as YAML) are the format, not a leak."""

from __future__ import annotations

import re

import pytest

from tests.cli.test_gate_cli import capgate

# A Python repr as it leaks into text: a dict or list literal with quoted strings, a bare
# None/True/False word.
REPR = re.compile(r"\{'|\['|\bNone\b|\bTrue\b|\bFalse\b")

COMMANDS = (
    ("plan", "size", "chat-assistant-prod"),
    ("plan", "show", "chat-assistant-prod"),
    ("plan", "list"),
    ("workload", "show", "chat-assistant"),
    ("evidence", "list"),
    ("gate", "check", "chat-assistant-prod"),
)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_text_output_holds_no_python_repr(env: dict[str, str], command: tuple[str, ...]) -> None:
    result = capgate(*command, env=env)
    assert result.returncode in (0, 1), result.stderr
    for stream in (result.stdout, result.stderr):
        found = [line for line in stream.splitlines() if REPR.search(line)]
        assert found == [], found
