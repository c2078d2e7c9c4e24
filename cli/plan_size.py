"""`capgate plan size`: recompute a plan's sizing, with the planner's progress on stderr."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.options import JsonOpt, ServerOpt
from cli.output import emit_json

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from cli.backend import Backend


def planner_progress(
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
    with planner_progress(backend):
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
