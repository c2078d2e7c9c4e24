"""How `capgate gate check` and `gate show` write a decision: the report formats.

The reports asked for (--format, on stdout or in --output, then each --report
FORMAT=PATH), each rendered (text, JSON, JUnit, GitHub annotations, SARIF, GitLab Code
Quality) and written; an error that leaves no decision is written in each report too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

if TYPE_CHECKING:
    from registry.gate.outcome import DecisionLike
    from registry.gate.views import DecisionView


class Format(StrEnum):
    text = "text"
    json = "json"
    junit = "junit"
    github = "github"
    sarif = "sarif"
    gitlab = "gitlab"


# The formats that place findings in files (the plan's, the manifests'); their paths are
# written relative to the repository root.
LOCATED = frozenset({Format.junit, Format.github, Format.sarif, Format.gitlab})
FORMATS = ", ".join(f.value for f in Format)

FormatOpt = Annotated[
    list[Format] | None,
    typer.Option(
        "--format",
        help="Report format: text, json, junit (JUnit XML), github (GitHub Actions "
        "annotations), sarif (SARIF 2.1.0) or gitlab (GitLab Code Quality). Default text, "
        "on stdout or in --output; each further report: --report.",
        show_default=False,
    ),
]
OutputOpt = Annotated[
    list[Path] | None,
    typer.Option("--output", help="Write the --format report to this file, not stdout."),
]
ReportOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--report",
        metavar="FORMAT=PATH",
        help="Also write the same decision as FORMAT to the file PATH (repeatable: "
        "--report junit=gate.xml --report sarif=gate.sarif).",
        show_default=False,
    ),
]
PlanFileOpt = Annotated[
    str | None,
    typer.Option(
        "--plan-file",
        help="The file the plan was submitted from: reports place findings that no "
        "manifest locates there (capgate does not know where a plan came from).",
    ),
]
JsonFormatOpt = Annotated[bool, typer.Option("--json", help="The same as --format json.")]


@dataclass(frozen=True)
class Report:
    format: Format
    path: Path | None  # None: stdout


def asked_reports(
    formats: list[Format] | None,
    outputs: list[Path] | None,
    json_out: bool,
    extra: list[str] | None,
) -> list[Report]:
    """The reports asked for: the --format one (stdout or --output), then each --report.

    A usage error (exit 2, before anything is decided) for a --format or --output given
    twice: options do not say which --output follows which --format, so further reports
    are named with theirs (--report FORMAT=PATH)."""
    from cli.output import fail

    for name, given in (("--format", formats), ("--output", outputs)):
        if given and len(given) > 1:
            fail(
                f"{name} given {len(given)} times: one --format (on stdout, or in --output), "
                "and --report FORMAT=PATH for each further report"
            )
    chosen = formats[0] if formats else None
    if json_out and chosen not in (None, Format.json):
        fail(f"--json and --format {chosen} disagree: --json is --format json; give one")
    reports = [
        Report(Format.json if json_out else chosen or Format.text, outputs[0] if outputs else None)
    ]
    for value in extra or []:
        name, _, path = value.partition("=")
        if name not in Format.__members__ or not path:
            fail(f"--report {value}: give FORMAT=PATH, FORMAT one of {FORMATS}")
        reports.append(Report(Format(name), Path(path)))
    files = [report.path.resolve() for report in reports if report.path is not None]
    for file in files:
        if files.count(file) > 1:
            fail(f"{file}: two reports would be written to this file")
    return reports


def error_line(exc: Exception) -> str:
    """The error as the one line on stderr says it (cli.main.run)."""
    from registry.errors import CapgateError, InvalidInput

    if isinstance(exc, InvalidInput):
        # Every problem, as stderr lists them one per line: a pipeline that reads only its
        # report (SARIF, JUnit, annotations) must see all of what stopped it.
        rest = "; ".join(str(problem) for problem in exc.problems[1:])
        return f"{exc.one_line()}: {rest}" if rest else exc.one_line()
    if isinstance(exc, CapgateError):
        return exc.message
    return f"internal error: {type(exc).__name__}: {exc}"


def emit_reports(
    decision: DecisionLike,
    reports: list[Report],
    plan_file: str | None,
    *,
    verdict: bool,
    text: Callable[[Any], str] | None = None,
) -> None:
    """Every report of one decision: the files first, then stdout; then (``verdict``) the
    one-line verdict on stderr unless stdout is the text report, which begins with it."""
    from cli.output import fail
    from registry.gate.undecided import Undecided

    relative = None
    if any(report.format in LOCATED for report in reports):
        from cli.repo_paths import repo_relative

        relative = repo_relative()
    undecided = isinstance(decision, Undecided)
    for report in reports:
        if report.path is None and report.format is Format.text and undecided:
            continue  # the error's one line on stderr is that report
        rendered = render(decision, report.format, plan_file, relative=relative, text=text)
        if report.path is None:
            typer.echo(rendered)
            continue
        try:
            report.path.write_text(rendered + "\n", encoding="utf-8")
        except OSError as exc:
            fail(f"{report.path}: cannot write the {report.format} report: {exc.strerror}")
    if verdict and any(r.path is not None or r.format is not Format.text for r in reports):
        # Pipelines read one line on stderr whatever the reports' formats or destinations.
        typer.echo(decision.verdict(), err=True)


def render(
    decision: DecisionLike,
    chosen: Format,
    plan_file: str | None = None,
    *,
    relative: Callable[[str], str] | None = None,
    text: Callable[[Any], str] | None = None,
) -> str:
    from registry.gate.undecided import Undecided

    if isinstance(decision, Undecided) and chosen in (Format.json, Format.text):
        return (
            json.dumps(decision.as_json(), indent=2, ensure_ascii=False)
            if chosen is Format.json
            else decision.verdict()
        )
    if chosen is Format.json:
        from registry.gate.outcome import WireDecision

        if isinstance(decision, WireDecision):
            # The server's JSON as it came, laid out as model_dump_json(indent=2) lays it.
            return json.dumps(decision.raw, indent=2, ensure_ascii=False)
        return cast("DecisionView", decision).model_dump_json(indent=2)
    if chosen is Format.junit:
        from registry.gate.junit import render_junit
        from registry.gate.report import policy_ids
        from registry.policy.bundle import load_bundle

        ids = policy_ids(list(load_bundle().modules))
        return render_junit(decision, ids, plan_file=plan_file, relative=relative)
    if chosen is Format.github:
        from registry.gate.formats import render_github

        return render_github(decision, plan_file=plan_file, relative=relative)
    if chosen is Format.sarif:
        from registry.gate.formats import render_sarif

        return render_sarif(decision, plan_file=plan_file, relative=relative)
    if chosen is Format.gitlab:
        from registry.gate.formats import render_gitlab

        return render_gitlab(decision, plan_file=plan_file, relative=relative)
    if text is not None:
        return text(decision)
    from registry.gate.report import render_text

    return render_text(decision)
