from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.commands._shared import open_store
from expertise_kit.errors import Failures


@click.command()
@click.option(
    "--html",
    "out",
    required=True,
    metavar="OUT",
    type=click.Path(path_type=Path),
    help="Write the page to the file OUT (replaced if it exists); - prints it.",
)
@click.pass_obj
def report(start: Path, out: Path) -> None:
    """One self-contained HTML page about the expertise, for people.

    It shows entries per domain and section against the line cap, learnings over time, recurring
    failures and whether they stopped, helpful and harmful feedback, stale entries, and the last 20
    revisions with their sessions; the figures are those of `expertise stats`.

    The page needs nothing else: its CSS is inline, its charts are SVG, and it runs no script and
    fetches nothing. A domain file that can't be read is named on the page and on stderr, the rest are
    shown, and the exit status is 1.
    """
    from expertise_kit.report import collect_report, render_page, write_report
    from expertise_kit.report.page import check_output

    store = open_store(start)
    to_stdout = str(out) == "-"
    if not to_stdout:
        check_output(out, store.project)
    data = collect_report(store)
    if to_stdout:
        click.echo(render_page(data), nl=False)
    else:
        size = write_report(data, out)
        revisions = f"{data.revision_count:,} revision{'' if data.revision_count == 1 else 's'}"
        click.echo(f"wrote {out} ({size:,} bytes, {revisions})")
    if data.errors:
        raise Failures(data.errors)
