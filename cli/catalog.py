"""`capgate catalog list|show|validate`: the model and accelerator cards the planner reads.

The cards are YAML files (registry/planner/card_files.py): the ones capgate ships and a
team's own in the folders CAPGATE_CATALOG_PATH names. Read-only and offline: no registry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cli.options import JsonOpt

catalog_app = typer.Typer(
    help="The model and accelerator cards the planner reads (shipped, and yours through "
    "CAPGATE_CATALOG_PATH).",
    no_args_is_help=True,
)

KindOpt = Annotated[
    str | None,
    typer.Option("--kind", help="model or accelerator (default: both).", show_default=False),
]


def _kind(kind: str | None) -> str | None:
    from registry.errors import FieldProblem, InvalidInput
    from registry.planner.card_files import KINDS

    if kind is not None and kind not in KINDS:
        problem = FieldProblem("--kind", f"{kind!r} is not one of {', '.join(KINDS)}")
        raise InvalidInput("bad option", problems=[problem])
    return kind


def _summary(card: Any) -> str:
    if card.kind == "model":
        experts = f", {card.num_experts} experts" if card.num_experts > 1 else ""
        return (
            f"{card.total_params_b:g}B params{experts}, {card.layers} layers, "
            f"{card.kv_heads} KV heads x {card.head_dim}, context {card.max_context_tokens:,}"
        )
    dtypes = ", ".join(f"{d} {v:g}" for d, v in card.dense_tflops.items())
    return (
        f"{card.memory_gib:g} GiB, {card.memory_bandwidth_gb_s:,.0f} GB/s, "
        f"dense TFLOP/s {dtypes}, {card.interconnect} {card.interconnect_gb_s:g} GB/s"
    )


@catalog_app.command("list")
def list_cards(kind: KindOpt = None, json_out: JsonOpt = False) -> None:
    """Every card in force: kind, name, where it is from, and its headline figures."""
    from cli.output import emit_json
    from registry.planner.card_files import current

    wanted = _kind(kind)
    entries = [e for e in current() if wanted is None or e.card.kind == wanted]
    if json_out:
        emit_json(
            [
                {
                    "kind": e.card.kind,
                    "name": e.card.name,
                    "aliases": list(e.card.aliases),
                    "shipped": e.shipped,
                    "file": None if e.shipped else str(e.file),
                }
                for e in entries
            ]
        )
        return
    width = max((len(e.card.name) for e in entries), default=0)
    for entry in entries:
        origin = "shipped" if entry.shipped else str(entry.file)
        typer.echo(
            f"{entry.card.kind:<11}  {entry.card.name:<{width}}  {_summary(entry.card)}  ({origin})"
        )


@catalog_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="A card's name or alias (h100, llama-3.1-8b).")],
    kind: KindOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """One card as the planner reads it, with its source."""
    from cli.output import emit_json
    from registry.errors import NotFound
    from registry.planner.card_files import as_dict, current

    wanted = _kind(kind)
    key = name.lower()
    found = [
        e
        for e in current()
        if (wanted is None or e.card.kind == wanted)
        and (key == e.card.name.lower() or key in e.card.aliases)
    ]
    if not found:
        raise NotFound(f"no catalog card is named {name!r} (capgate catalog list shows them)")
    for entry in found:
        document = dict(as_dict(entry.card))
        if not entry.shipped:
            document["file"] = str(entry.file)
        if json_out:
            emit_json(document)
            continue
        from cli.yaml_out import dump_yaml

        typer.echo(dump_yaml(document), nl=False)


@catalog_app.command("validate")
def validate(
    files: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Card files (YAML). Default: every card in force, shipped and yours.",
            show_default=False,
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Check card files against the catalog schema: every problem of every file, and any
    name or alias they would take from a card already in force. Exit 2 if any."""
    from cli.output import emit_json
    from registry.errors import FieldProblem, InvalidInput
    from registry.planner.card_files import load, read_card, user_folders

    problems: list[FieldProblem] = []
    checked: list[str] = []
    try:
        loaded = load(user_folders())
    except InvalidInput as exc:
        loaded = []
        problems.extend(exc.problems)
    claimed = {(e.card.kind, k): e.file for e in loaded for k in _names(e.card)}
    for path in files or []:
        try:
            card = read_card(path)
        except InvalidInput as exc:
            problems.extend(
                FieldProblem(f"{path}: {p.loc}" if p.loc else str(path), p.message)
                for p in exc.problems or [FieldProblem("", exc.message)]
            )
            continue
        checked.append(str(path))
        for key in _names(card):
            owner = claimed.get((card.kind, key))
            if owner is not None and owner.resolve() != path.resolve():
                problems.append(
                    FieldProblem(str(path), f"{card.kind} name {key!r} is already {owner}'s")
                )
    if not files:
        checked = [str(e.file) for e in loaded]
    if json_out:
        emit_json(
            {
                "valid": not problems,
                "checked": checked,
                "problems": [{"loc": p.loc, "message": p.message} for p in problems],
            }
        )
    else:
        for problem in problems:
            typer.echo(str(problem), err=True)
        if not problems:
            typer.echo(f"ok  {len(checked)} card(s)")
    if problems:
        raise typer.Exit(2)


def _names(card: Any) -> list[str]:
    return [card.name.lower(), *card.aliases]
