from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.commands._output import echo_json
from expertise_kit.commands._shared import open_store, report_commit


@click.command()
@click.argument("entry_id")
# Two flags, not one option with two flag values: click keeps the last of those, so `--helpful --harmful`
# would record "harmful" without a word.
@click.option("--helpful", is_flag=True, help="The entry helped.")
@click.option("--harmful", is_flag=True, help="The entry misled, or did not prevent the failure.")
@click.option("--note", default=None, help="Why, in a sentence; kept in the commit message.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: the entry, its domain and the new count.")
@click.pass_obj
def feedback(start: Path, entry_id: str, helpful: bool, harmful: bool, note: str | None, as_json: bool) -> None:
    """Record whether an entry helped, as one revision; ranking weighs it.

    ENTRY_ID is the id `expertise show` prints (4 or more characters of it), looked up in every domain.
    For people and for agents: an entry with strong harmful evidence sinks in what agents are shown, and
    the line cap prunes it first.
    """
    from expertise_kit.api import feedback_record
    from expertise_kit.store.feedback import record_feedback

    if helpful and harmful:
        raise click.UsageError("say --helpful or --harmful, not both")
    if not (helpful or harmful):
        raise click.UsageError("say --helpful or --harmful")
    verdict = "helpful" if helpful else "harmful"
    result = record_feedback(open_store(start), entry_id, verdict, note)
    if as_json:
        echo_json(feedback_record(result))
        return
    click.echo(f"{result.verdict} +1 ({result.count}) on {result.entry} in {result.domain}: {result.text[:80]}")
    report_commit(result.commit)
