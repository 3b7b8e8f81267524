from __future__ import annotations

from pathlib import Path

import click

from expertise_kit.vocab import agent_names

_AGENTS = list(agent_names())


@click.group()
def hooks() -> None:
    """Install or remove the agent hooks that read and feed the expertise."""


@hooks.command()
@click.option("--agent", type=click.Choice(_AGENTS), required=True, help="Which agent's settings to write.")
@click.pass_obj
def install(start: Path, agent: str) -> None:
    """Add our hooks to the agent's project settings file.

    A pre-task hook renders the expertise for each prompt; a post-session hook learns from the
    transcript. Other settings and hooks are kept; running it twice changes nothing.
    """
    from expertise_kit.agents.installer import install_hooks
    from expertise_kit.project import find_project

    project = find_project(start)
    result = install_hooks(project.root, agent)
    where = result.path.relative_to(project.root)
    if result.changed:
        click.echo(f"installed {agent} hooks ({', '.join(result.events)}) in {where}")
    else:
        click.echo(f"{agent} hooks already installed in {where}; nothing changed")


@hooks.command()
@click.option("--agent", type=click.Choice(_AGENTS), default=None, help="Only this agent (default: all).")
@click.pass_obj
def uninstall(start: Path, agent: str | None) -> None:
    """Remove only the hooks expertise_kit added; everything else in the files stays."""
    from expertise_kit.agents.installer import uninstall_hooks
    from expertise_kit.project import find_project

    project = find_project(start)
    removed = False
    for name in [agent] if agent else _AGENTS:
        result = uninstall_hooks(project.root, name)
        if result.changed:
            removed = True
            events = ", ".join(sorted(set(result.events)))
            click.echo(f"removed {name} hooks ({events}) from {result.path.relative_to(project.root)}")
    if not removed:
        click.echo("no expertise_kit hooks found; nothing changed")
