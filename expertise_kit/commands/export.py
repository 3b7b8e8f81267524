from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.export.targets import TARGET_NAMES


@click.command()
@click.option("--to", "target", required=True, type=click.Choice(TARGET_NAMES), help="The agent file to write.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Write here instead: a file, or for cursor-rules a directory (inside the repository).",
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 naming the files that are out of date.")
@click.option("--commit", is_flag=True, help="Commit exactly the exported files (your other changes stay out).")
@click.pass_obj
def export(start: Path, target: str, out: Path | None, check: bool, commit: bool) -> None:
    """Write the project's expertise into an agent's own instructions file.

    agents-md, claude-md, gemini-md and copilot get one section between `<!-- expertise:begin ... -->` and
    `<!-- expertise:end -->` lines in AGENTS.md, CLAUDE.md, GEMINI.md or .github/copilot-instructions.md;
    the rest of the file is never touched. cursor-rules writes .cursor/rules/expertise-essentials.mdc and one
    <domain>.mdc per domain, and removes its own files of domains left with nothing. What goes in: the
    project's essentials and each domain's best entries, ranked as the hooks rank them, stale ones left out,
    learned text quoted. The same store always writes the same bytes. Nothing is committed unless --commit.
    """
    from expertise_kit.commands._shared import open_store, report_commit
    from expertise_kit.errors import CheckFailed
    from expertise_kit.export.run import export as run_export
    from expertise_kit.export.run import plan_export

    if check and commit:
        raise click.UsageError("--check writes nothing, so it can't --commit")
    store = open_store(start)
    if out is not None and not out.is_absolute():
        out = start / out
    if check:
        plan = plan_export(store, target, out)
        stale = [change.shown for change in plan.out_of_date]
        if stale:
            raise CheckFailed(f"out of date: {', '.join(stale)}", hint=f"run `expertise export --to {target}`")
        names = ", ".join(change.shown for change in plan.changes) or f"nothing to export to {plan.target.label}"
        click.echo(f"up to date: {names}")
        return
    plan, outcome = run_export(store, target, out, commit=commit)
    for change in plan.changes:
        if not change.changed:
            click.echo(f"up to date: {change.shown}")
        elif change.new is None:
            click.echo(f"removed {change.shown} (nothing left to hold)")
        else:
            shown = f"{change.entries} entr{'y' if change.entries == 1 else 'ies'}, {len(change.new):,} bytes"
            click.echo(f"wrote {change.shown} ({shown})")
    if not plan.changes:
        click.echo(f"nothing to export to {plan.target.label} yet")
    if commit:
        if outcome is not None and outcome.sha:
            report_commit(outcome)
        else:
            click.echo("nothing to commit: the exported files are committed as they are")
