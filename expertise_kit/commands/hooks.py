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
@click.option(
    "--mcp", "with_mcp", is_flag=True, help="Also register `expertise mcp` in the agent's project MCP config."
)
@click.option(
    "--reflect", is_flag=True,
    help="Also ask the agent, when a session has something to learn, to write its lessons (docs/reflect.md).",
)  # fmt: skip
@click.pass_obj
def install(start: Path, agent: str, with_mcp: bool, reflect: bool) -> None:
    """Add our hooks to the agent's project settings file.

    A pre-task hook renders the expertise for each prompt; a post-session hook learns from the
    transcript. Other settings and hooks are kept; running it twice changes nothing. With --mcp, the
    `expertise` MCP server too (.mcp.json for Claude Code, .cursor/mcp.json, .gemini/settings.json).
    With --reflect, an end-of-turn hook that sends the agent back to record its lessons (at most four
    times a session), and `reflect: failures` in config.yaml (unless it says `always`).
    """
    from expertise_kit.agents.installer import install_hooks
    from expertise_kit.agents.mcp_config import check_mcp, check_server_starts, install_mcp
    from expertise_kit.project import find_project

    project = find_project(start)
    if reflect:  # a config.yaml that can't take `reflect:` is refused before anything is written
        from expertise_kit.config import load_config

        load_config(project.expertise_dir)
    if with_mcp:
        check_mcp(project.root, agent)  # a refusal comes before anything is written
        check_server_starts(project.root)
    result = install_hooks(project.root, agent, reflect=reflect)
    where = result.path.relative_to(project.root)
    if result.changed:
        click.echo(f"installed {agent} hooks ({', '.join(result.events)}) in {where}")
    else:
        click.echo(f"{agent} hooks already installed in {where}; nothing changed")
    if with_mcp:
        registered = install_mcp(project.root, agent)
        where = registered.path.relative_to(project.root)
        if registered.changed:
            click.echo(f"registered the expertise MCP server (`expertise mcp`) in {where}")
        else:
            click.echo(f"the expertise MCP server is already registered in {where}; nothing changed")
    if reflect:
        turn_on_reflect(project.expertise_dir)
    after_install(agent, with_mcp=with_mcp)


def turn_on_reflect(expertise_dir: Path) -> None:
    """``reflect: failures`` in config.yaml, unless it asks for more already; said once."""
    from expertise_kit.config import load_config, set_reflect

    if load_config(expertise_dir).reflect != "off":
        return
    set_reflect(expertise_dir, "failures")
    click.echo(
        "set `reflect: failures` in .expertise/config.yaml: commit it to turn reflection on for the team "
        "(EXPERTISE_REFLECT=off turns it off for one session)"
    )


def after_install(agent: str, *, with_mcp: bool = False) -> None:
    """What the user still has to do for the hooks to run: said once, at install."""
    import shutil

    from expertise_kit.agents.installer import AGENTS, PROGRAM

    spec = AGENTS[agent]
    needed = [(PROGRAM, "the hooks do nothing")]
    if with_mcp:
        needed.append(("expertise", "the MCP server can't start"))
    for program, needs in needed:
        if shutil.which(program) is None:
            click.echo(
                f"warning: `{program}` is not on PATH here, and {needs} without it: install expertise-kit "
                "where the agent's PATH finds it (pipx, uv tool), or start the agent with this venv activated",
                err=True,
            )
    if spec.trust_step:
        click.echo(f"once per clone: {spec.trust_step}")
    if spec.learning:
        click.echo(f"note: {spec.learning}")
    click.echo(f"check with: expertise hooks doctor --agent {agent}")


@hooks.command()
@click.option("--agent", type=click.Choice(_AGENTS), default=None, help="Only this agent (default: all).")
@click.pass_obj
def uninstall(start: Path, agent: str | None) -> None:
    """Remove only the hooks expertise_kit added, and the `expertise` MCP server `install --mcp`
    registered; everything else in the files stays."""
    from expertise_kit.agents.installer import uninstall_hooks
    from expertise_kit.agents.mcp_config import uninstall_mcp
    from expertise_kit.project import find_project

    project = find_project(start)
    removed = False
    for name in [agent] if agent else _AGENTS:
        result = uninstall_hooks(project.root, name)
        if result.changed:
            removed = True
            events = ", ".join(sorted(set(result.events)))
            click.echo(f"removed {name} hooks ({events}) from {result.path.relative_to(project.root)}")
        server = uninstall_mcp(project.root, name)
        if server.changed:
            removed = True
            click.echo(f"removed the expertise MCP server from {server.path.relative_to(project.root)}")
    if not removed:
        click.echo("no expertise_kit hooks found; nothing changed")


@hooks.command()
@click.option(
    "--agent", type=click.Choice(_AGENTS), default=None, help="Only this agent (default: every one installed)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
def doctor(start: Path, agent: str | None, as_json: bool) -> None:
    """Check that each agent's hooks will really run: settings parse, hooks are not disabled nor kept from
    running by a matcher, the command is found, timeouts are in the agent's unit, the agent trusts them, its
    version, a live round trip of the pre-task hook, and, where `expertise mcp` is registered, that the
    server starts and lists its tools.

    Exits 1 when a check fails.
    """
    import json

    from expertise_kit.agents.doctor import diagnose, merge_driver_check, shared_layer_check
    from expertise_kit.agents.installer import AGENTS
    from expertise_kit.errors import CheckFailed
    from expertise_kit.project import find_project

    project = find_project(start)
    names = [agent] if agent else [n for n in _AGENTS if (project.root / AGENTS[n].settings).exists()]
    if not names:
        if as_json:
            click.echo(json.dumps({"agents": [], "status": "fail"}, indent=2))
        raise CheckFailed("no agent's hooks are installed here", hint="run `expertise hooks install --agent NAME`")
    reports = diagnose(project.root, names)
    project_checks = (
        [merge_driver_check(project.root), shared_layer_check(project)] if project.git is not None else []
    )
    broken = [r.agent for r in reports if r.status == "fail"] + [
        check.name for check in project_checks if check.status == "fail"
    ]
    if as_json:
        status = "fail" if broken else "ok"
        click.echo(json.dumps({"agents": [r.as_json() for r in reports], "project": [vars(c) for c in project_checks],
                               "status": status}, indent=2))  # fmt: skip
    else:
        for report in reports:
            version = f" {report.version}" if report.version else ""
            click.echo(f"{report.agent}{version} ({report.settings}): {report.status}")
            for check in report.checks:
                click.echo(f"  {check.status:<4} {check.name}: {check.detail}")
        if project_checks:
            worst = "fail" if any(c.status == "fail" for c in project_checks) else (
                "warn" if any(c.status == "warn" for c in project_checks) else "ok"
            )
            click.echo(f"project: {worst}")
            for check in project_checks:
                click.echo(f"  {check.status:<4} {check.name}: {check.detail}")
    if broken:
        raise CheckFailed(f"hooks doctor found problems for {', '.join(broken)}", hint="see the fail lines above")
