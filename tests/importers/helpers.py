"""Loading result files for the importer tests.

Third-party files come from ../shared/fixtures (the test skips when absent); files named
``synthetic__*`` are the project's own, under tests/fixtures/load-tests.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from registry.errors import InvalidInput
from registry.importers import ImportedStage, import_result_file_with_findings
from registry.importers.build_record import slug
from registry.importers.parsed_stage import MeasuredAtSource
from registry.records.kinds import RecordKind
from tests.factories import example
from tests.support import fixtures

if TYPE_CHECKING:
    from registry.storage.database import Database

# --measured-at for files that leave the time to it (no time, or one without a zone). A file
# that states its own time with a zone keeps it, and a --measured-at far from it is refused.
WHEN = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def path_of(rel: str) -> Path:
    """``tool/file.json``: an own synthetic file, or a shared real one (skips when absent)."""
    if rel.split("/")[-1].startswith("synthetic__"):
        return fixtures.own(f"load-tests/{rel}")
    return fixtures.shared(f"load-tests/{rel}")


def load(rel: str, **kw: object) -> list[ImportedStage]:
    """Import a file as the user would: ``measured_at=WHEN`` only where the file leaves the
    time to --measured-at (unless ``measured_at`` is given)."""
    path = path_of(rel)
    args: dict[str, object] = {"workload": "chat@v1", "provider": "h100@v1", "replicas": 1}
    args.update(kw)
    file_name = str(args.pop("file_name", path.name))

    def run(**extra: object) -> list[ImportedStage]:
        return import_result_file_with_findings(
            path.read_bytes(),
            file_name=file_name,
            **args,  # type: ignore[arg-type]
            **extra,  # type: ignore[arg-type]
        )

    if "measured_at" in kw:
        return run()
    try:
        stages = run()
    except InvalidInput as exc:
        if exc.problems and exc.problems[0].loc == "--measured-at":
            return run(measured_at=WHEN)  # the file states no time
        raise
    if all(s.measured_at_source is MeasuredAtSource.FILE for s in stages):
        return stages
    return run(measured_at=WHEN)  # a time without a zone yields to --measured-at


def one(rel: str, **kw: object) -> ImportedStage:
    stages = load(rel, **kw)
    assert len(stages) == 1
    return stages[0]


def local_cli_env(database_url: str) -> dict[str, str]:
    """The CLI's environment on the local registry at ``database_url``, as alice."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    environment.update(CAPGATE_DATABASE_URL=database_url, CAPGATE_PRINCIPAL="alice")
    return environment


# ---- providers serving what the files measured ----------------------------------------------

# The worked example's provider: meta-llama/Llama-3.1-8B-Instruct on H100s with vLLM 0.10.2.
EXAMPLE_PROVIDER = "llama31-8b-h100-vllm"
# The other models the result files imported into a registry here name (a file is imported
# for a provider serving the model it measured, as a user imports it).
OTHER_MODELS = (
    "openai/gpt-oss-20b",
    "Qwen/Qwen3-4B-Thinking-2507",
    "facebook/opt-125m",
    "example/model-8b",
    "example/model",
)


def serving_name(model: str) -> str:
    """The name of the provider `serving(model)` describes: ``gpt-oss-20b-h100-vllm``."""
    return f"{slug(model.rsplit('/', 1)[-1])}-h100-vllm"


def serving(model: str, **changes: Any) -> dict[str, Any]:
    """The worked example's provider profile serving `model` instead (the same shape, H100s,
    vLLM 0.10.2, named ``serving_name(model)``), with top-level fields replaced."""
    record = example(RecordKind.provider, **{"name": serving_name(model), **changes})
    record["description"] = f"{model} on {record['accelerator']['name']}"
    record["model"]["name"] = model
    record["model"].pop("weights_digest", None)
    return record


def register_provider(database: Database, record: dict[str, Any]) -> str:
    """Submit a provider profile document; its name."""
    from registry.records import service
    from registry.records.documents import validate_record

    profile = validate_record(RecordKind.provider, record)
    database.write(
        lambda ctx: service.submit(ctx, kind=RecordKind.provider, record=profile), principal="t"
    )
    return str(record["name"])


def register_providers(database: Database, *models: str) -> list[str]:
    """Providers serving each of `models` (default: ``OTHER_MODELS``); their names."""
    return [register_provider(database, serving(model)) for model in models or OTHER_MODELS]


@cache
def measured_model(rel: str) -> str | None:
    """The model a test file says it measured (its first stage's, as ``measured_model``)."""
    from registry.importers import _parse

    path = path_of(rel)
    return _parse(path.read_bytes(), file_name=path.name, tool="auto")[0].identity.model


def provider_for(rel: str) -> str:
    """The provider a test file is imported for: one of ``register_providers`` serving the
    model it measured, else the example's (its model, or a name that cannot be compared)."""
    model = measured_model(rel)
    return serving_name(model) if model in OTHER_MODELS else EXAMPLE_PROVIDER
