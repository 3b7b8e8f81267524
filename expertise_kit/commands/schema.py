from __future__ import annotations

import click


@click.command()
def schema() -> None:
    """Print the JSON Schema for domain files.

    Every domain file names it in its first line, so editors with the YAML language server validate
    and complete as you type.
    """
    from expertise_kit.store.scaffold import schema_text

    click.echo(schema_text(), nl=False)
