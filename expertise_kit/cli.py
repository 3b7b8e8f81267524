"""Click wiring only: each command's logic lives in ``commands/<name>.py``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from expertise_kit import __version__
from expertise_kit.commands import COMMANDS
from expertise_kit.errors import Failures, UserError

__all__ = ["cli", "main"]

_CWD_GONE = "the current directory no longer exists; cd to your project"


def _cwd_gone() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


class _ExpertiseGroup(click.Group):
    """The one place exit codes are decided: user errors → 1 and one line, Ctrl-C → 130, bugs → traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Failures as exc:
            for line in exc.lines():
                click.echo(f"expertise: error: {line}", err=True)
            ctx.exit(1)
        except UserError as exc:
            click.echo(f"expertise: error: {exc.one_line()}", err=True)
            ctx.exit(1)
        except KeyboardInterrupt:
            click.echo("expertise: interrupted", err=True)
            ctx.exit(130)
        except FileNotFoundError:
            # With `-C` the command gets going, but any relative path (`learn t.jsonl`) needs getcwd.
            if not _cwd_gone():
                raise
            click.echo(f"expertise: error: {_CWD_GONE}", err=True)
            ctx.exit(1)


@click.group(cls=_ExpertiseGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-C",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run as if expertise was started in DIRECTORY.",
)
@click.version_option(__version__, prog_name="expertise")
@click.pass_context
def cli(ctx: click.Context, directory: Path | None) -> None:
    """Per-domain memory for AI coding agents, kept as YAML in your git repo."""
    try:
        ctx.obj = (directory or Path.cwd()).resolve()
    except FileNotFoundError:
        # The directory was removed under the shell (`rm -rf` of the checkout it sits in): getcwd fails.
        raise UserError(_CWD_GONE) from None


for _command in COMMANDS:
    cli.add_command(_command)


def main() -> None:
    cli(prog_name="expertise")
