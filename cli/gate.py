"""`capgate gate check|show|list|recheck|verify|public-key` and `capgate plan size`."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from cli.options import JsonOpt, ServerOpt, instant
from cli.output import emit_json, emit_more, emit_table

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from cli.backend import Backend
    from registry.gate.outcome import DecisionLike
    from registry.gate.views import DecisionView


def _planner_progress(
    backend: Backend, *, terminal_only: bool = False
) -> AbstractContextManager[object]:
    """Planner progress on stderr for a recomputation run here (after 2 s; stdout untouched).

    A remote server recomputes on its side: nothing to report, and the planner is not
    imported. ``terminal_only``: only when stderr is a terminal (the gate's pipelines read
    exactly one verdict line on stderr).
    """
    import sys
    from contextlib import nullcontext

    from cli.backend import LocalBackend

    if not isinstance(backend, LocalBackend) or (terminal_only and not sys.stderr.isatty()):
        return nullcontext()
    from registry.planner.progress import StderrProgress, reporting

    return reporting(StderrProgress())


gate_app = typer.Typer(
    help="Policy decisions on capacity plans. Exit 0 allow, 1 deny, 2 error.",
    no_args_is_help=True,
)


class EngineChoice(StrEnum):
    embedded = "embedded"
    opa = "opa"
    both = "both"


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


def _reports(
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


@gate_app.command("check")
def check(
    plan: Annotated[str, typer.Argument(help="Plan reference: name, name@vN or sha256:...")],
    output_format: FormatOpt = None,
    json_out: JsonFormatOpt = False,
    output: OutputOpt = None,
    report: ReportOpt = None,
    plan_file: PlanFileOpt = None,
    manifests: Annotated[
        list[str] | None,
        typer.Option(
            "--manifests",
            help="Kubernetes manifests that ship the plan (files, folders or - for stdin; "
            "repeatable): every plan field they state must agree with the plan, or the "
            "manifests_consistent policy denies it, naming file and line.",
        ),
    ] = None,
    policy_release: Annotated[
        str | None,
        typer.Option(
            "--policy-release",
            help="Pin the policy release (NAME@vN) this check must run under: exit 2 unless "
            "it is the approved release in force.",
        ),
    ] = None,
    engine: Annotated[
        EngineChoice | None,
        typer.Option(
            "--engine",
            help="embedded, opa or both (default: CAPGATE_POLICY_ENGINE). both decides on "
            "the embedded engine and on the OPA server at CAPGATE_OPA_URL and is an error "
            "(exit 2) when the two disagree.",
            show_default=False,
        ),
    ] = None,
    server: ServerOpt = None,
) -> None:
    """Evaluate every policy on PLAN, store the decision, write each report and exit with
    its code (an error that leaves no decision is written in each report too)."""
    from cli.output import fail

    reports = _reports(output_format, output, json_out, report)
    if engine is not None and server:
        fail("--engine chooses a local check's engine; with --server the server's decides")
    if engine is not None:
        import os

        os.environ["CAPGATE_POLICY_ENGINE"] = engine.value
    try:
        decision = _decide(plan, manifests, policy_release, server)
    except (typer.Exit, typer.Abort, typer.TyperException):
        # Typer's own (it vendors click since 0.28: the click package, which a bare
        # install lacks, raises other classes): usage errors and exits, not failures.
        raise
    except Exception as exc:
        # No decision: the reports say why the pipeline stopped; the error itself is
        # raised on, for the one line on stderr and exit 2 (cli.main.run).
        from registry.gate.undecided import Undecided

        _emit(Undecided(plan, _error_line(exc)), reports, plan_file, verdict=False)
        raise
    _emit(decision, reports, plan_file, verdict=True)
    raise typer.Exit(decision.outcome.exit_code)


def _decide(
    plan: str, manifests: list[str] | None, policy_release: str | None, server: str | None
) -> DecisionLike:
    # Manifests are read here, where the files are, and before anything is asked of the
    # registry: one that cannot be read is an error (exit 2) and no decision is stored.
    if server:
        from cli.remote_gate import check_remote
        from registry.settings import Settings

        # The thin path: one request, no ORM, schema or planner imported (pipeline speed);
        # the server validates what the manifests state.
        sent = None
        if manifests:
            from registry.manifests.stated import stated_document

            sent = stated_document(manifests)
        return check_remote(
            server, Settings.from_env().token(), plan, sent, policy_release=policy_release
        )
    from cli.backend import open_backend

    stated = None
    if manifests:
        from registry.manifests.consistency import stated_fields

        stated = stated_fields(manifests)
    backend = open_backend(None)
    with _planner_progress(backend, terminal_only=True):
        return backend.gate_check(plan, stated, policy_release)


def _error_line(exc: Exception) -> str:
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


def _emit(
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
        rendered = _render(decision, report.format, plan_file, relative=relative, text=text)
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


def _render(
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


@gate_app.command("show")
def show(
    decision_id: Annotated[str, typer.Argument(help="Decision id (a UUID).")],
    output_format: FormatOpt = None,
    json_out: JsonFormatOpt = False,
    output: OutputOpt = None,
    report: ReportOpt = None,
    plan_file: PlanFileOpt = None,
    server: ServerOpt = None,
) -> None:
    """Show a stored decision: outcome, violations, waivers and the digests of its inputs;
    in any report format, as `gate check` wrote it (exit 0: the decision was read)."""
    from cli.backend import open_backend

    reports = _reports(output_format, output, json_out, report)
    decision = open_backend(server).get_decision(decision_id)
    _emit(decision, reports, plan_file, verdict=False, text=_shown_text)


def _shown_text(decision: DecisionView) -> str:
    from registry.gate.report import render_text

    lines = [
        render_text(decision),
        f"  asked by {decision.principal} at {decision.created_at.isoformat()}",
    ]
    if decision.needs_recheck:
        lines.append(
            "  needs re-evaluation: the policy bundle changed since (capgate gate recheck)"
        )
    return "\n".join(lines)


class OutcomeFilter(StrEnum):
    allow = "allow"
    deny = "deny"
    error = "error"


@gate_app.command("list")
def list_decisions(
    plan: Annotated[str | None, typer.Option(help="Only this plan name.")] = None,
    outcome: Annotated[OutcomeFilter | None, typer.Option(help="Only this outcome.")] = None,
    principal: Annotated[str | None, typer.Option(help="Only decisions asked by.")] = None,
    since: Annotated[
        str | None, typer.Option(help="Decisions at or after this instant (ISO 8601, with zone).")
    ] = None,
    until: Annotated[str | None, typer.Option(help="Decisions before this instant.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500)] = 50,
    offset: Annotated[int, typer.Option(min=0, max=10_000)] = 0,
    cursor: Annotated[
        str | None, typer.Option(help="Start after this position (a page's next cursor).")
    ] = None,
    total: Annotated[bool, typer.Option("--total", help="Count every match.")] = False,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """The audit trail of decisions, newest first."""
    from cli.backend import open_backend
    from registry.gate.views import Outcome

    filters: dict[str, Any] = {
        "plan": plan,
        "outcome": Outcome(outcome.value) if outcome else None,
        "principal": principal,
        "since": instant("since", since) if since else None,
        "until": instant("until", until) if until else None,
        "cursor": cursor,
        "total": total or None,
    }
    page = open_backend(server).list_decisions(filters, limit=limit, offset=offset)
    if json_out:
        emit_json(page)
        return
    emit_table(
        ("DECISION", "PLAN", "OUTCOME", "VIOLATIONS", "BY", "AT"),
        [
            (
                d.id,
                d.plan,
                d.outcome.value,
                len(d.violations),
                d.principal,
                d.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            )
            for d in page.items
        ],
    )
    emit_more(page.next_cursor, page.total)


@gate_app.command("recheck")
def recheck(
    all_plans: Annotated[
        bool, typer.Option("--all", help="Every plan whose last allow predates the bundle.")
    ] = False,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Re-run earlier allow decisions under the current policy bundle; report what changed."""
    from cli.backend import open_backend
    from cli.output import fail

    if not all_plans:
        fail("say which decisions to re-evaluate: --all")
    report = open_backend(server).recheck_all()
    if json_out:
        emit_json(report)
    else:
        for item in report.rechecked:
            change = "changed" if item.changed else "unchanged"
            typer.echo(
                f"{item.plan}: {item.previous_outcome.value} -> {item.decision.outcome.value} "
                f"({change}; decision {item.decision.id})"
            )
            for added in item.new_violations:
                typer.echo(f"  + {added}")
            for resolved in item.resolved_violations:
                typer.echo(f"  - {resolved}")
        typer.echo(
            f"{len(report.rechecked)} re-evaluated, {len(report.up_to_date)} up to date "
            f"(bundle {report.bundle_revision[:19]})"
        )
    worst = max((i.decision.outcome.exit_code for i in report.rechecked), default=0)
    raise typer.Exit(worst)


def size(
    plan: Annotated[str, typer.Argument(help="A plan reference, or a plan file to size first.")],
    chart: Annotated[
        Path | None, typer.Option("--chart", help="Draw latency against load (PNG).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Simulation seed.")] = 0,
    server: ServerOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Recompute a plan's sizing from its workload and provider, whatever it claims."""
    # The cyclic collector is off for this one bounded command: most of its objects are the
    # modules it imports (storage, records, the planner, about 0.5 s), which every collection
    # would walk again as they pile up (about 0.08 s here), and a recomputation leaves a few
    # hundred objects in cycles at most, freed when the process ends. Reference counting
    # still frees everything else as it goes.
    with _collector_off():
        _size(plan, chart, seed, server, json_out)


@contextmanager
def _collector_off() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _size(plan: str, chart: Path | None, seed: int, server: str | None, json_out: bool) -> None:
    from cli.backend import open_backend
    from registry.planner import render_chart, render_text

    backend = open_backend(server)
    path = Path(plan)
    with _planner_progress(backend):
        if path.suffix.lower() in {".yaml", ".yml", ".json"} or path.exists():
            from registry.records.documents import load_document

            result = backend.size_draft(load_document(path), source=str(path), seed=seed)
        else:
            result = backend.size_plan(plan, seed=seed).result
    if json_out:
        emit_json(result)
    else:
        typer.echo(render_text(result))
    if chart is not None:
        render_chart(result, chart)
        typer.echo(f"chart written to {chart}", err=True)


def _read_envelope(decision_or_file: str, server: str | None) -> tuple[Any, str]:
    """The envelope JSON from a file, else fetched by decision id; and where it came from."""
    import json
    import uuid

    from cli.output import fail

    path = Path(decision_or_file)
    if not path.is_file():
        try:
            uuid.UUID(decision_or_file)
        except ValueError:
            fail(f"{decision_or_file}: file not found (and not a decision id)")
        from cli.backend import open_backend

        envelope = open_backend(server).get_attestation(decision_or_file)
        return envelope, f"decision {decision_or_file}"
    try:
        return json.loads(path.read_text(encoding="utf-8")), str(path)
    except OSError as exc:
        fail(f"{path}: cannot read: {exc.strerror}")
    except (UnicodeDecodeError, ValueError):
        fail(f"{path}: not JSON (a DSSE envelope is expected)")
    raise AssertionError("unreachable")  # fail() always exits


@gate_app.command("verify")
def verify(
    decision_or_file: Annotated[
        str,
        typer.Argument(
            metavar="DECISION_OR_FILE",
            help="An attestation file (DSSE envelope JSON), or a decision id whose "
            "attestation is fetched from the registry.",
        ),
    ],
    key: Annotated[
        Path,
        typer.Option(
            "--key", help="Public key (PEM) to verify with, as `capgate gate public-key` gives."
        ),
    ],
    plan_digest: Annotated[
        str | None,
        typer.Option("--plan-digest", help="Fail unless the decision is about this plan digest."),
    ] = None,
    expect_outcome: Annotated[
        OutcomeFilter | None,
        typer.Option("--expect-outcome", help="Fail unless the decision's outcome is this."),
    ] = None,
    server: ServerOpt = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the verified statement as JSON.")
    ] = False,
) -> None:
    """Check a signed decision offline: signature, in-toto statement, expectations.

    Exit 0 when it verifies, 1 when the signature or an expectation fails, 2 when the
    input cannot be read.
    """
    from cli.output import fail
    from registry.attestation.dsse import AttestationRejected, EnvelopeUnreadable
    from registry.attestation.statement import digest_hex
    from registry.errors import InvalidInput
    from registry.keys import key_id, load_public_key

    try:
        verifying_key = load_public_key(key)
        if plan_digest is not None:
            digest_hex(plan_digest)
    except InvalidInput as exc:
        fail(exc.one_line())
    envelope, source = _read_envelope(decision_or_file, server)
    from registry.attestation.verify import verify_attestation

    try:
        verified = verify_attestation(
            envelope,
            verifying_key,
            plan_digest=plan_digest,
            expect_outcome=expect_outcome.value if expect_outcome else None,
        )
    except EnvelopeUnreadable as exc:
        fail(f"{source}: not a DSSE envelope: {exc.message}")
    except AttestationRejected as exc:
        fail(f"{source}: not verified: {exc.message}", code=1)
    if json_out:
        emit_json(verified.statement)
        return
    typer.echo(f"verified  {verified.plan}  {verified.outcome}")
    typer.echo(f"  plan digest  {verified.plan_digest}")
    typer.echo(f"  decision     {verified.decision_id}")
    typer.echo(f"  bundle       {verified.bundle_revision}")
    typer.echo(f"  decided at   {verified.created_at}")
    typer.echo(f"  signed by    {key_id(verifying_key)}")


@gate_app.command("public-key")
def public_key(server: ServerOpt = None) -> None:
    """Print the public key (PEM) the registry signs decisions with, for `gate verify`."""
    from cli.backend import open_backend

    typer.echo(open_backend(server).attestation_public_key(), nl=False)
