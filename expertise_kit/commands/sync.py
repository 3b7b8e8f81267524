from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.commands._shared import open_store

_SHOWN = 40  # entry lines printed of what came in; the rest are counted


@click.command()
@click.option("--remote", default=None, help="The remote to sync with (default: the branch's, else origin).")
@click.option("--no-push", is_flag=True, help="Only fetch and take in the remote's lessons; push nothing.")
@click.pass_obj
def sync(start: Path, remote: str | None, no_push: bool) -> None:
    """Share lessons with the other clones of this repository, without merging any branch.

    Fetches the remote's shared layer (refs/expertise/shared), checks it as a write is checked (a layer
    that fails is refused and this clone's is kept), merges it with this clone's entry by entry, prints
    what came in, and pushes the result (not with `shared: read`). Every worktree and branch here then
    reads what the other clones learned, and they read what was learned here. If another clone pushed
    first, it fetches and merges again.
    """
    from expertise_kit.store.sharing import sync_shared

    store = open_store(start)
    outcome = sync_shared(store, remote, push=not no_push)
    after = outcome.after[:12] if outcome.after else "nothing yet"
    parts = {
        "unchanged": [] if outcome.pushed else ["nothing new"],
        "fast-forward": ["took in the remote's new lessons"],
        "created": ["took in the remote's lessons"],
        "reset": ["the remote's shared layer was reset: what it dropped was dropped here too"],
        "merged": ["merged the remote's lessons with this clone's"],
    }[outcome.how]
    if outcome.merged_files:
        count = len(outcome.merged_files)
        parts.append(f"{count} file{'s' if count != 1 else ''} merged entry by entry")
    if outcome.pushed:
        parts.append("pushed")
    elif outcome.read_only:
        parts.append("nothing published (`shared: read`)")
    click.echo(f"{outcome.remote}: {', '.join(parts)}; shared layer at {after}")
    shown = 0
    for path, lines in outcome.incoming.items():  # what came in, entry by entry
        click.echo(f"  {path}")
        for line in lines[: max(0, _SHOWN - shown)]:
            click.echo(f"    {line}")
        shown += len(lines)
    if shown > _SHOWN:
        click.echo(f"  ... and {shown - _SHOWN} more entry changes (`expertise history --shared` lists them)")
