"""The serving runtime a test measured (vllm==0.8.5): parsed, compared, and settled between
what the file states and what ``--runtime`` states.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

from registry.errors import FieldProblem, InvalidInput
from registry.importers.json_values import refuse
from registry.importers.parsed_stage import ImportContext, ParsedStage
from registry.records.evidence import (
    RuntimeInfo,
)

RUNTIME_SYNTAX = "NAME==VERSION, e.g. vllm==0.8.5"
_RUNTIME_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
_RUNTIME_TEXT = re.compile(r"^\s*(?P<name>[^=\s]+)\s*==\s*(?P<version>\S+)\s*$")


def runtime_info(name: str, version: str, *, loc: str, source: str | None = None) -> RuntimeInfo:
    """A serving runtime from its name and version (a leading "v", as in image tags, is
    dropped: v0.8.5 is 0.8.5); InvalidInput naming `loc` when either is malformed."""
    name, version = name.strip(), version.strip()
    if version[:1] in ("v", "V") and version[1:2].isdigit():
        version = version[1:]
    problem = None
    if not _RUNTIME_NAME.match(name):
        problem = f"{name!r} is not a runtime name (letters, digits, '.', '_', '+', '-')"
    else:
        try:
            return RuntimeInfo(name=name, version=version)
        except ValidationError:
            problem = (
                f"{version!r} is not a runtime version: major.minor[.patch] with an optional "
                "suffix, e.g. 0.8.5 or 0.10.2+cu128"
            )
    raise InvalidInput(
        f"cannot import {source}: {loc}: {problem}" if source else f"{loc}: {problem}",
        problems=[FieldProblem(loc=loc, message=problem)],
        source=source,
    )


def parse_runtime(text: str, *, loc: str, source: str | None = None) -> RuntimeInfo:
    """``NAME==VERSION`` (``vllm==0.8.5``), as ``--runtime`` and vLLM metadata state it."""
    match = _RUNTIME_TEXT.match(text) if isinstance(text, str) else None
    if match is None:
        problem = f"{text!r} is not {RUNTIME_SYNTAX} (the serving runtime and its version)"
        raise InvalidInput(
            f"cannot import {source}: {loc}: {problem}" if source else f"{loc}: {problem}",
            problems=[FieldProblem(loc=loc, message=problem)],
            source=source,
        )
    return runtime_info(match["name"], match["version"], loc=loc, source=source)


def same_runtime(a: RuntimeInfo, b: RuntimeInfo) -> bool:
    return a.name.casefold() == b.name.casefold() and a.version == b.version


def settle_runtime(stage: ParsedStage, ctx: ImportContext) -> RuntimeInfo | None:
    """The runtime measured: from the file, else as stated at import, else unknown (None).

    A stated runtime that contradicts the file's is refused, naming both.
    """
    stated, given = stage.runtime, ctx.runtime
    if stated is not None and given is not None and not same_runtime(stated, given):
        raise refuse(
            "--runtime",
            f"the file states runtime {stated.describe()} ({stage.runtime_basis}) but "
            f"--runtime {given.name}=={given.version} was given; drop the flag or correct it",
            source=ctx.file_name,
        )
    if stated is not None:
        stage.notes.append(
            f"serving runtime {stated.describe()}, from the file ({stage.runtime_basis})"
        )
        return stated
    if given is not None:
        stage.notes.append(f"serving runtime {given.describe()}, stated at import (--runtime)")
    return given
