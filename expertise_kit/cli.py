"""Click wiring only: each command's logic lives in ``commands/<name>.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from expertise_kit import __version__
from expertise_kit.commands import COMMANDS
from expertise_kit.errors import Failures, UserError

__all__ = ["cli", "main"]


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
    ctx.obj = (directory or Path.cwd()).resolve()


for _command in COMMANDS:
    cli.add_command(_command)


def main() -> None:
    cli(prog_name="expertise")
