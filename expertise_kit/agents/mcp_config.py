"""Registering ``expertise mcp`` in the project's MCP config of the agents that read one, recognisably,
repeatably and reversibly.

Claude Code (``.mcp.json``), Cursor (``.cursor/mcp.json``) and Gemini CLI (``.gemini/settings.json``) all
take ``{"mcpServers": {NAME: {"command": ..., "args": [...]}}}``. We add one server, ``expertise``, that runs
``expertise mcp`` found on PATH: no path of this machine, so the file can be committed. A server of that
name that runs anything else is the user's, and is never changed. Other servers and keys stay as they were.
Codex keeps its servers in TOML (``config.toml``), which we don't rewrite; the error says what to run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from expertise_kit.agents.installer import InstallResult, _read, _write
from expertise_kit.errors import UserError

__all__ = ["MCP_CONFIGS", "SERVER_NAME", "PROGRAM", "install_mcp", "registered", "uninstall_mcp", "our_server"]

MCP_CONFIGS = {"claude-code": ".mcp.json", "cursor": ".cursor/mcp.json", "gemini": ".gemini/settings.json"}
SERVER_NAME = "expertise"
PROGRAM = "expertise"
_OUR_ARGS = (["mcp"], ["mcp", "--read-only"])  # a user who made it read-only keeps that on a reinstall
_UNCHANGED = "fix it first; nothing was changed"


def our_server(entry: Any) -> bool:
    """Whether a server entry runs exactly ``expertise mcp`` (read-only or not), as we write it."""
    return isinstance(entry, dict) and entry.get("command") == PROGRAM and entry.get("args") in _OUR_ARGS


def _comments(agent: str) -> bool:
    from expertise_kit.agents.installer import AGENTS

    return bool(MCP_CONFIGS.get(agent) == AGENTS[agent].settings and AGENTS[agent].jsonc)


def _config_path(root: Path, agent: str) -> Path:
    relative = MCP_CONFIGS.get(agent)
    if relative is None:
        raise UserError(
            f"{agent} keeps its MCP servers in config.toml, which expertise does not edit",
            hint=f"run `codex mcp add {SERVER_NAME} -- {PROGRAM} mcp` once; nothing was changed",
        )
    return root / relative


def _servers(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise UserError("`mcpServers` is not an object", path=path, hint=_UNCHANGED)
    return servers


def check_mcp(root: Path, agent: str) -> None:
    """Raise the error ``install_mcp`` would, writing nothing: so a refusal comes before the hooks are written."""
    path = _config_path(root, agent)
    current = _servers(path, _read(path, comments=_comments(agent)).data).get(SERVER_NAME)
    if current is not None and not our_server(current):
        raise UserError(
            f"already has an MCP server named {SERVER_NAME!r} that runs something else",
            path=path,
            hint="rename or remove it; nothing was changed",
        )


def check_server_starts(root: Path) -> None:
    """Refuse to register a server the agent can't start: ``expertise mcp`` (on PATH, as the agent runs it;
    else this installation's) must answer an initialize and list its tools. Without the ``mcp`` extra it
    exits 1, and the agent shows a dead server."""
    from expertise_kit.agents.mcp_probe import MCP_EXTRA_HINT, probe_server, this_installation

    probe = probe_server(root, PROGRAM, ["mcp"])
    if not probe.ok and not probe.missing_extra and "is not on PATH" in probe.detail:
        program, args = this_installation()  # `hooks install` warns about PATH; this one must work at least
        probe = probe_server(root, program, args)
    if probe.ok:
        return
    if probe.missing_extra:
        raise UserError(
            "`expertise mcp` can't start here: the mcp package is not installed",
            hint=f"{MCP_EXTRA_HINT}, then run install again; nothing was changed",
        )
    raise UserError(f"`expertise mcp` can't start here: {probe.detail}", hint="fix that first; nothing was changed")


def registered(root: Path, agent: str) -> bool:
    """Whether the project's MCP config for ``agent`` runs our server (False where we don't edit one)."""
    relative = MCP_CONFIGS.get(agent)
    path = root / relative if relative else None
    if path is None or not path.is_file():
        return False
    servers = _read(path, comments=_comments(agent)).data.get("mcpServers")
    return isinstance(servers, dict) and our_server(servers.get(SERVER_NAME))


def install_mcp(root: Path, agent: str) -> InstallResult:
    check_mcp(root, agent)
    path = _config_path(root, agent)
    settings = _read(path, comments=_comments(agent))
    servers = _servers(path, settings.data)
    if our_server(servers.get(SERVER_NAME)):
        return InstallResult(path, False, [SERVER_NAME])
    servers[SERVER_NAME] = {"command": PROGRAM, "args": ["mcp"]}
    _write(settings, root)
    return InstallResult(path, True, [SERVER_NAME])


def uninstall_mcp(root: Path, agent: str) -> InstallResult:
    """Remove our server, and ``mcpServers`` when nothing else was in it."""
    relative = MCP_CONFIGS.get(agent)
    if relative is None:
        return InstallResult(root, False, [])
    path = root / relative
    if not path.exists() and not path.is_symlink():
        return InstallResult(path, False, [])
    settings = _read(path, comments=_comments(agent))
    data = settings.data
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or not our_server(servers.get(SERVER_NAME)):
        return InstallResult(path, False, [])
    del servers[SERVER_NAME]
    if not servers:
        del data["mcpServers"]
    _write(settings, root)
    return InstallResult(path, True, [SERVER_NAME])
