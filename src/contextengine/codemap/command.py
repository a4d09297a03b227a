"""The ``codemap`` command of the CLI (registered in ``contextengine.cli``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from contextengine.codemap.code_map import DEFAULT_TOKENS, CodeMap, Focus
from contextengine.errors import ContextEngineError
from contextengine.toolkit.workspace import Workspace


def codemap_command(
    workspace: Annotated[Path, typer.Argument(help="The folder to map.", file_okay=False)] = Path(
        "."
    ),
    tokens: Annotated[
        int, typer.Option(help="Token budget of the map.", min=64, max=16_384)
    ] = DEFAULT_TOKENS,
    focus: Annotated[
        list[str] | None,
        typer.Option(help="A workspace file or a name to centre the map on (repeatable)."),
    ] = None,
) -> None:
    """Print WORKSPACE's code map: its most-used definitions, ranked, within the budget."""
    if not workspace.is_dir():
        raise ContextEngineError(f"{workspace}: not a folder")
    space = Workspace(workspace)
    centre = Focus.of(space, focus or ())
    view = CodeMap(space, tokens).build(tokens, centre.files, centre.names)
    typer.echo(view.text or "(no definitions found)")
    typer.echo(f"-- {view.summary()}, {view.tokens} tokens", err=True)
