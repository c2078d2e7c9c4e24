"""Evidence import, stale evidence and staleness history on either backend.

The same contract as cli.backend: each function takes the backend `open_backend` gave
and returns the service's view models, whether the registry is embedded (LocalBackend)
or a capgate server (RemoteBackend). Heavy imports stay inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cli.backend import Backend
    from registry.importers.service import ImportFile, ImportOptions, ImportResult
    from registry.records.views import Page
    from registry.staleness.views import StaleEvidence, StalenessHistory


def import_files(
    backend: Backend, files: Sequence[ImportFile], options: ImportOptions
) -> list[ImportResult]:
    """Import result files as evidence, all or nothing; one result per stage (with the
    import's notes, such as a re-imported file keeping its first measured time)."""
    from cli.backend import LocalBackend, RemoteBackend

    if isinstance(backend, LocalBackend):
        from registry.importers.service import import_files as import_into_registry

        return import_into_registry(backend.database, files, options, principal=backend.principal)
    if isinstance(backend, RemoteBackend):
        from registry.importers.service import ImportResult

        form: dict[str, str | list[str]] = {
            "tool": options.tool,
            "workload": options.workload,
            "provider": options.provider,
        }
        if options.plan is not None:
            form["plan"] = options.plan
        if options.mixed and all(f.traffic_class for f in files):
            form["traffic_class"] = [f"{f.traffic_class}={f.name}" for f in files]
        elif options.mixed:
            form["together"] = "true"  # each file names its own class
        elif options.traffic_class is not None:
            form["traffic_class"] = options.traffic_class
        if options.measured_at is not None:
            form["measured_at"] = options.measured_at.isoformat()
        if options.replicas is not None:
            form["replicas"] = str(options.replicas)
        if options.runtime is not None:
            form["runtime"] = f"{options.runtime.name}=={options.runtime.version}"
        if options.name is not None:
            form["name"] = options.name
        if options.prometheus is not None:
            form["prometheus"] = options.prometheus
        if options.selector is not None:
            form["selector"] = options.selector
        data = backend._request(
            "POST",
            "/v1/evidence/import",
            source=files[0].name if len(files) == 1 else None,
            data=form,
            files=[("files", (f.name, f.data, "application/octet-stream")) for f in files],
        )
        return [ImportResult.model_validate(item) for item in data]
    raise TypeError(f"unknown backend {type(backend).__name__}")


def list_stale(
    backend: Backend, *, limit: int, offset: int, include_replaced: bool
) -> Page[StaleEvidence]:
    from cli.backend import LocalBackend, RemoteBackend
    from registry.records.views import Page
    from registry.staleness.views import StaleEvidence

    if isinstance(backend, LocalBackend):
        from datetime import UTC

        from registry.staleness import service

        with backend.database.reading() as session:
            return service.list_stale(
                session,
                now=datetime.now(UTC),
                limit=limit,
                offset=offset,
                include_replaced=include_replaced,
            )
    if isinstance(backend, RemoteBackend):
        data = backend._request(
            "GET",
            "/v1/evidence/stale",
            params={
                "limit": limit,
                "offset": offset,
                "include_replaced": str(include_replaced).lower(),
            },
        )
        return Page[StaleEvidence].model_validate(data)
    raise TypeError(f"unknown backend {type(backend).__name__}")


def staleness_history(backend: Backend, ref: str) -> StalenessHistory:
    from cli.backend import LocalBackend, RemoteBackend
    from registry.staleness.views import StalenessHistory

    if isinstance(backend, LocalBackend):
        from datetime import UTC

        from registry.staleness import service

        with backend.database.reading() as session:
            return service.staleness_history(session, ref, now=datetime.now(UTC))
    if isinstance(backend, RemoteBackend):
        from urllib.parse import quote

        data = backend._request("GET", f"/v1/evidence/{quote(ref, safe='')}/staleness")
        return StalenessHistory.model_validate(data)
    raise TypeError(f"unknown backend {type(backend).__name__}")
