from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.commands._output import echo_json
from expertise_kit.commands._shared import open_store, report_commit
from expertise_kit.errors import Failures
from expertise_kit.vocab import format_names


@click.command()
@click.argument("transcripts", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", *format_names()]),
    default="auto",
    show_default=True,
    help="The transcript format; auto detects it from the first records.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON: per domain, what was added, updated and rejected.")
@click.option("--dry-run", is_flag=True, help="Show what would be learned without writing or committing.")
@click.pass_context
def learn(ctx: click.Context, transcripts: tuple[Path, ...], fmt: str, as_json: bool, dry_run: bool) -> None:
    """Learn from agent session transcripts and commit what they teach.

    Reads Claude Code, Codex and Gemini CLI session logs, Aider chat histories (and generic tool-call
    JSON lines), finds failures and
    their fixes, files touched, tool patterns that worked and techniques of sessions that ended well,
    scrubs secrets from all of it, and merges it into the domain files: one commit per domain.
    A transcript that can't be read is reported and the others are still learned from (exit 1).
    """
    from expertise_kit.learning.learn import learn_from

    store = open_store(ctx.obj)
    report = learn_from(store, list(transcripts), fmt=fmt, dry_run=dry_run)
    if as_json:
        echo_json(report.as_json())
    else:
        quiet = [s for s in report.sessions if not s["tool_calls"]]
        for session in report.sessions:
            if not session["tool_calls"]:
                continue
            click.echo(
                f"session {session['id'][:12]} ({session['format']}): {session['tool_calls']} tool calls, "
                f"{session['failures']} failures, {len(session['modified_files'])} files modified"
            )
        if quiet:
            click.echo(f"{len(quiet)} transcript{'s' if len(quiet) != 1 else ''} with no tool calls: nothing to learn")
        data = report.as_json()["domains"]
        verb = "would learn" if dry_run else "learned"
        for name, merge in data.items():
            click.echo(
                f"{name}: {verb} {len(merge['added'])} new, {len(merge['updated'])} seen again, "
                f"{len(merge['rejected'])} rejected"
            )
            merged = report.domains.get(name)
            if merged is not None and not dry_run:
                report_commit(merged.commit)
            for pruned in merged.pruned if merged else []:
                kind = "learned" if pruned.learned else "hand-written"
                click.echo(
                    f"warning: pruned {kind} {pruned.section} entry to stay under the cap: {pruned.text[:80]}", err=True
                )
            if merged is not None and merged.over_by:
                cap = store.config.line_cap
                click.echo(f"warning: {name}.yaml is still {merged.over_by} lines over the {cap}-line cap", err=True)
        kinds = [h.get("kind") for h in report.held]
        failures, files, facts = kinds.count("failure"), kinds.count("file"), kinds.count("fact")
        if failures:
            click.echo(
                f"held {failures} failure{'s' if failures != 1 else ''} seen once with no fix: "
                "stored when it recurs in another session or a session fixes it"
            )
        if files:
            click.echo(
                f"held {files} file{'s' if files != 1 else ''} edited in one session: "
                f"stored as key files when another session edits {'them' if files != 1 else 'it'} too"
            )
        if facts:
            click.echo(
                f"held {facts} note{'s' if facts != 1 else ''} on where a guessed file really is: "
                "stored when another session guesses the same path"
            )
        if not data and not report.errors and not report.held:
            click.echo("nothing to learn")
    for warning in report.warnings:
        click.echo(f"expertise: warning: {warning}", err=True)
    if report.errors:
        raise Failures(report.errors)
