from __future__ import annotations

import click

from expertise_kit.commands._output import echo_json
from expertise_kit.errors import CheckFailed, Failures


@click.command()
@click.argument("domain", required=False)
@click.option("--check", is_flag=True, help="Change nothing; exit 1 if anything needs correcting (for CI).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: per domain, what was corrected or found.")
@click.pass_context
def validate(ctx: click.Context, domain: str | None, check: bool, as_json: bool) -> None:
    """Check the expertise against the code, and correct it in one commit per domain.

    Renamed core files are followed (git's rename detection since the last validation), deleted ones
    removed; entries that mention files or `symbols` the code no longer has are marked stale, not
    deleted; failures not seen within the retention period are pruned; last_validated is set.
    """
    from expertise_kit.commands._shared import open_store, report_commit
    from expertise_kit.upkeep.validate import validate_domains

    store = open_store(ctx.obj)
    if domain:
        store.path_for(domain)  # a known, well-formed domain name, or a clear error
    names = [domain] if domain else list(store.config.domain_names)
    reports, errors = validate_domains(store, names, check=check)
    if domain and errors:
        raise errors[0]
    if as_json:
        echo_json([r.as_json() for r in reports])
    else:
        for report in reports:
            verb = "needed" if check else "made"
            click.echo(f"{report.domain}: {report.problems} correction{'s' if report.problems != 1 else ''} {verb}")
            for rename in report.renamed:
                click.echo(f"  renamed  {rename['from']} -> {rename['to']}")
            for path in report.removed:
                click.echo(f"  removed  {path} (deleted)")
            for stale in report.stale:
                known = "" if stale["new"] else " (already marked)"
                click.echo(
                    f"  stale    {stale['id']} {stale['section']}: {', '.join(stale['missing'])} not found{known}"
                )
            for line in report.pruned_failures:
                click.echo(f"  pruned   {line} (past retention)")
            for conflict in report.conflicts:
                where = conflict["section"] or "top-level key"
                click.echo(f"  conflict {conflict['id']} {where}: resolve it and delete `conflict:`")
        commits = {r.commit.sha or r.commit.deferred: r.commit for r in reports if r.commit}
        for outcome in commits.values():
            report_commit(outcome)
    if errors:
        raise Failures(errors)
    needed = sum(r.problems for r in reports)
    if check and needed:
        raise CheckFailed(
            f"{needed} correction{'s' if needed != 1 else ''} needed", hint="run `expertise validate` to make them"
        )
