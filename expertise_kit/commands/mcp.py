from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command()
@click.option("--read-only", is_flag=True, help="Offer search and get only; add and feedback are not listed.")
@click.pass_obj
def mcp(start: Path, read_only: bool) -> None:
    """Serve this project's expertise to an agent over MCP, on stdin and stdout, until stdin closes.

    Tools: search (entries relevant to a task, ranked as the pre-task hook ranks them), get (one entry,
    whole), add (a hand-written entry, secrets scrubbed, one commit) and feedback (helpful or harmful, one
    commit). Bad arguments come back as one-line tool errors; logs go to stderr. Register it for an agent
    with `expertise hooks install --agent NAME --mcp`. See docs/mcp.md.
    """
    from expertise_kit.errors import UserError
    from expertise_kit.project import find_project

    find_project(start)  # no project: one line now, not an error on every call
    try:
        from expertise_kit.serve.server import serve
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != "mcp":
            raise
        raise UserError("the mcp package is not installed", hint="pip install 'expertise-kit[mcp]'") from None
    if sys.stdin.isatty():
        click.echo("expertise: serving MCP on stdin/stdout; an agent starts this (Ctrl-C to stop)", err=True)
    serve(start, read_only=read_only)
