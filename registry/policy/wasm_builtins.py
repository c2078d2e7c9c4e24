"""The one built-in OPA's WebAssembly leaves to its host: ``sprintf``, for the verbs we use.

``opa build -t wasm`` compiles every other built-in the policies call into the module
(OPA's C library for numbers, strings, objects, aggregates). ``sprintf`` is Go's
``fmt.Sprintf`` inside OPA, and a host cannot see what OPA sees of a number (OPA keeps a
number's text: ``5.0`` is a float to ``%d``, ``5`` an integer). So the host formats only
the verbs and operand kinds on which Go's answer is certain, and refuses everything
else: a refusal is an evaluation error, never a different string.

| verb | operand | Go / OPA prints | here |
|---|---|---|---|
| ``%s`` | string | the string | the string |
| ``%v`` | string | the string | the string |
| ``%v`` | boolean | ``true`` / ``false`` | the same |
| ``%%`` | none | ``%`` | ``%`` |

Numbers never reach ``sprintf``: ``result.show`` (policies/lib/result.rego) writes them
with ``format_int`` and string built-ins, which OPA compiles into the module.
tests/policy/test_differential_*.py hold every message to OPA's on generated inputs.
"""

from __future__ import annotations

import re
from typing import Any

VERB = re.compile(r"%(?P<verb>[sv%])|%")


class UnsupportedFormat(ValueError):
    """A format or operand outside what this host formats exactly as OPA does."""


def sprintf(fmt: Any, operands: Any) -> str:
    """``sprintf(format, [operands])`` for the vetted verbs; anything else refused."""
    if not isinstance(fmt, str):
        raise UnsupportedFormat("sprintf: the format is not a string")
    if not isinstance(operands, list):
        raise UnsupportedFormat("sprintf: the operands are not an array")
    matches = list(VERB.finditer(fmt))
    for match in matches:
        if match.group("verb") is None:
            raise UnsupportedFormat(f"sprintf: unsupported verb at {fmt[match.start() :]!r}")
    taking = [match for match in matches if match.group("verb") != "%"]
    if len(taking) != len(operands):
        # Go prints "%!(EXTRA ...)" or "%!v(MISSING)": a policy bug, not a message.
        raise UnsupportedFormat(
            f"sprintf: {fmt!r} has {len(taking)} verbs for {len(operands)} operands"
        )
    out: list[str] = []
    position = 0
    remaining = iter(operands)
    for match in matches:
        out.append(fmt[position : match.start()])
        position = match.end()
        verb = match.group("verb")
        out.append("%" if verb == "%" else _format(verb, next(remaining)))
    out.append(fmt[position:])
    return "".join(out)


def _format(verb: str, operand: Any) -> str:
    if isinstance(operand, str):
        return operand
    if verb == "v" and isinstance(operand, bool):
        return "true" if operand else "false"
    raise UnsupportedFormat(
        f"sprintf: %{verb} of a {type(operand).__name__}: pass numbers through "
        "result.show, other values as strings"
    )
