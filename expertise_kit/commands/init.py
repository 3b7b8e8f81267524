from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.commands._shared import report_commit
from expertise_kit.project import project_for_init
from expertise_kit.vocab import agent_names


@click.command()
@click.option(
    "--agent",
    type=click.Choice(agent_names()),
    default=None,
    help="Also install this agent's hooks.",
)
@click.option(
    "--reflect", is_flag=True,
    help="With --agent: ask the agent, when a session has something to learn, to write its lessons.",
)  # fmt: skip
@click.pass_obj
def init(start: Path, agent: str | None, reflect: bool) -> None:
    """Create .expertise/ with its config and the domain files.

    Safe to run again: files that exist are left alone, and missing ones (say, a domain newly added
    to config.yaml) are created. It also registers git's merge driver for .expertise/ in this clone's
    git config, which does not travel with a clone: run it once after cloning.
    """
    from expertise_kit.store.scaffold import initialise

    if reflect and not agent:
        raise click.UsageError("--reflect needs --agent: it installs that agent's end-of-turn hook")
    project = project_for_init(start)
    if reflect:
        from expertise_kit.agents.installer import AGENTS, reflect_unavailable

        reflect_unavailable(AGENTS[str(agent)])  # refused before anything is written
    result = initialise(project, reflect="failures" if reflect else None)
    if agent:
        from expertise_kit.agents.installer import install_hooks
        from expertise_kit.commands.hooks import after_install, turn_on_reflect

        hooked = install_hooks(project.root, agent, reflect=reflect)
        if hooked.changed:
            click.echo(f"installed {agent} hooks in {hooked.path.relative_to(project.root)}")
        if reflect:
            turn_on_reflect(project.expertise_dir)  # a config.yaml that was there already
        after_install(agent)
    if result.driver_registered:
        click.echo("registered the merge driver for .expertise/ in this clone's git config")
    if not result.created and not result.updated:
        if not result.driver_registered:
            click.echo(f"{project.expertise_dir} is already set up; nothing to do")
        return
    for path in result.created:
        click.echo(f"created {path.relative_to(project.root)}")
    for path in result.updated:
        click.echo(f"updated {path.relative_to(project.root)}")
    report_commit(result.commit)
