"""Writing our hooks into each agent's settings file, recognisably, repeatably and reversibly.

The command we write is the same on every machine: ``expertise-hook pre|post|reflect --agent NAME``, found on
PATH when the hook runs, behind a guard that makes it do nothing where it isn't installed. So the project's
settings file can be committed: a teammate without expertise_kit gets no error and no output, one with it
gets the hooks, and nobody's venv path lands in the repo (nor churns it, nor revokes Codex's trust in the
hook, whose hash covers the command). Earlier versions wrote ``<python> -I -c "import expertise_kit.hook
..."`` (or ``-m``); those are still recognised, so install replaces them and uninstall removes them.

A hook is ours only when its command is exactly one of those forms: a user's own command that merely
mentions us (a ``timeout`` wrapper, a script of theirs) is never changed. Everything else in the file is
left as it was, key order, group order and indentation included.
"""

from __future__ import annotations

import itertools
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expertise_kit import vocab
from expertise_kit.agents.settingsfile import Settings, read_settings, write_settings
from expertise_kit.errors import UserError
from expertise_kit.vocab import Agent

__all__ = [
    "AGENTS", "MARK", "PROGRAM", "InstallResult", "install_hooks", "reflect_unavailable", "uninstall_hooks",
    "hook_command", "ours",
]  # fmt: skip

MARK = "expertise_kit.hook"
PROGRAM = "expertise-hook"  # the console script: expertise_kit.hook:main


AGENTS: dict[str, Agent] = {spec.name: spec for spec in vocab.AGENTS}
# Seconds. The post hook only queues the session for a detached learner, so it needs far less than the
# 60 s Claude Code allows at SessionEnd; a cap an agent imposes is respected anyway (``timeout_caps``).
_TIMEOUTS = {"pre": 10, "post": 30, "reflect": 30}
MODES = tuple(_TIMEOUTS)


@dataclass
class InstallResult:
    path: Path
    changed: bool
    events: list[str]


def hook_command(mode: str, agent: str) -> str:
    """The shell command a hook runs: silent, and exit 0, on a machine without ``expertise-hook`` on PATH
    (never 2, which Claude Code takes as "block this prompt")."""
    return f"command -v {PROGRAM} >/dev/null 2>&1 && {PROGRAM} {mode} --agent {agent} || true"


def _legacy_commands(mode: str, agent: str, python: str) -> tuple[str, ...]:
    """The forms earlier versions installed, still recognised so they can be replaced and removed."""
    code = f'import {MARK} as h; h.main(["{mode}", "--agent", "{agent}"])'
    return (
        f"{shlex.quote(python)} -I -c {shlex.quote(code)}",
        f"{shlex.quote(python)} -I -m {MARK} {mode} --agent {agent}",
    )


_UNCHANGED = "fix it first; nothing was changed"


def _read(path: Path, *, comments: bool = False) -> Settings:
    """The settings, to edit in place (``settingsfile``): bytes outside what we change stay as they are."""
    return read_settings(path, comments=comments)


def _write(settings: Settings, root: Path) -> None:
    """Written in place, through a symlink too (a settings file linked from one's dotfiles stays linked),
    but not through one the repository brought that leads out of it: a clone must not edit a file of the
    user's elsewhere (their agent's settings for every project)."""
    path, top = settings.path, root.resolve()
    # The file or a folder on its way (`.claude -> ~/.claude`) may be the link.
    steps = [root / part for part in itertools.accumulate(path.relative_to(root).parts, lambda a, b: f"{a}/{b}")]
    for step in steps:
        if step.is_symlink() and not step.resolve().is_relative_to(top) and _tracked(root, step):
            raise UserError(
                f"is a symlink committed to the repository that leads outside it (to {step.resolve()})",
                path=step,
                hint="hooks are installed only inside the repository: replace the link with a file or folder; "
                "nothing was changed",
            )
    write_settings(settings)


def _tracked(root: Path, path: Path) -> bool:
    from expertise_kit.versioning.git import GitMissing, run_git

    try:
        listed = run_git(root, ["ls-files", "--", str(path.relative_to(root))], check=False)
    except (GitMissing, ValueError):
        return False
    return listed.status == 0 and bool(listed.stdout.strip())


def ours(hook: Any) -> str | None:
    """The mode ("pre", "post" or "reflect") of a hook object that runs exactly a command we write, else
    None; a user's command that mentions us is theirs."""
    if not isinstance(hook, dict):
        return None
    command = hook.get("command")
    if not isinstance(command, str) or (MARK not in command and PROGRAM not in command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: not something we wrote
        return None
    for mode in MODES:
        for agent in AGENTS:
            if command == hook_command(mode, agent) or (words and command in _legacy_commands(mode, agent, words[0])):
                return mode
    return None


def _ours(hook: Any) -> bool:
    return ours(hook) is not None


def _groups(entries: list[Any]) -> list[list[Any]]:
    """The hook lists of an event's groups, skipping any group whose shape we don't know."""
    return [g["hooks"] for g in entries if isinstance(g, dict) and isinstance(g.get("hooks"), list)]


def _wanted(agent: str, spec: Agent, reflect: bool = False) -> list[tuple[str, str, str]]:
    pre = (spec.start_event, *((spec.prompt_event,) if spec.prompt_event else ()))
    modes = [("pre", pre), ("post", spec.end_events)]
    if reflect and spec.reflect_event:
        modes.append(("reflect", (spec.reflect_event,)))
    return [(event, mode, hook_command(mode, agent)) for mode, events in modes for event in events]


def timeout_for(spec: Agent, mode: str, event: str) -> int:
    """Our hook's time limit for ``event``, in the unit the agent reads: seconds, or milliseconds for
    Gemini CLI (which otherwise kills a 10 "ms" hook at once and tells nobody); never over the agent's cap."""
    seconds = min(_TIMEOUTS[mode], spec.timeout_caps.get(event, _TIMEOUTS[mode]))
    return seconds * 1000 if spec.timeout_unit == "ms" else seconds


def _merge(path: Path, hooks: dict[str, Any], wanted: list[tuple[str, str, str]], spec: Agent) -> bool:
    """Add our hook to each wanted event, or point an existing one of ours at the current command.

    ``nested`` is the Claude Code, Codex and Gemini shape (event -> groups -> hooks); Cursor's is flat
    (event -> hooks).
    """
    nested = spec.style != "flat"
    changed = False
    for event, mode, command in wanted:
        timeout = timeout_for(spec, mode, event)
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise UserError(f"hooks.{event} is not a list", path=path, hint=_UNCHANGED)
        flat = [h for group in _groups(entries) for h in group] if nested else entries
        mine = [h for h in flat if ours(h) == mode]  # Codex's Stop holds our post and reflect hooks
        for hook in mine:
            if hook.get("command") != command:
                hook["command"] = command
                changed = True
            if nested and "timeout" in hook and hook["timeout"] != timeout:
                hook["timeout"] = timeout  # an earlier install's wrong unit or limit is corrected
                changed = True
        if not mine:
            hook = {"type": "command", "command": command, "timeout": timeout} if nested else {"command": command}
            entries.append({"hooks": [hook]} if nested else hook)
            changed = True
    return changed


def reflect_unavailable(spec: Agent) -> None:
    """Refuse ``--reflect`` for an agent whose end-of-turn hook can't send it back (or that we could not check)."""
    if spec.reflect_event is None:
        raise UserError(f"--reflect is not available for {spec.name}: {spec.reflect_note}", hint="leave it out")


def install_hooks(root: Path, agent: str, *, reflect: bool = False) -> InstallResult:
    """Our hooks in the agent's settings; with ``reflect``, the end-of-turn hook of docs/reflect.md too (an
    install without it leaves one already there: ``reflect: off`` in config.yaml turns it off)."""
    spec = AGENTS[agent]
    if reflect:
        reflect_unavailable(spec)
    path = root / spec.settings
    settings = _read(path, comments=spec.jsonc)
    data = settings.data
    if spec.style == "flat":
        data.setdefault("version", 1)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UserError("`hooks` is not an object", path=path, hint=_UNCHANGED)
    wanted = _wanted(agent, spec, reflect)
    changed = _merge(path, hooks, wanted, spec)
    if changed:
        _write(settings, root)
    return InstallResult(path, changed, [event for event, _, _ in wanted])


def uninstall_hooks(root: Path, agent: str) -> InstallResult:
    """Remove our hook objects, and a group or event only when nothing but ours was in it.

    A group holding a user's hook too keeps its place and its other keys; only our entries leave its list.
    Where the agent trusts hooks by position (Codex), a group that held only ours and has groups after it
    stays, emptied, so the user's later hooks keep their positions and their trust.
    """
    spec = AGENTS[agent]
    path = root / spec.settings
    if not path.exists() and not path.is_symlink():
        return InstallResult(path, False, [])
    settings = _read(path, comments=spec.jsonc)
    data = settings.data
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return InstallResult(path, False, [])
    removed: list[str] = []
    for event in list(hooks):
        entries = hooks[event]
        if not isinstance(entries, list):
            continue
        kept: list[Any] = []
        for position, entry in enumerate(entries):
            if spec.style == "flat":
                if _ours(entry):
                    removed.append(event)
                    continue
                kept.append(entry)
                continue
            inner = entry.get("hooks") if isinstance(entry, dict) else None
            if isinstance(inner, list) and any(_ours(h) for h in inner):
                removed.append(event)
                theirs = [h for h in inner if not _ours(h)]
                if not theirs and not (spec.positional_trust and _holds_hooks(entries[position + 1 :])):
                    continue  # the group held only ours, and no one's position depends on it
                entry["hooks"] = theirs  # in place: the group keeps its position and its other keys
            kept.append(entry)
        if len(kept) != len(entries):
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    if not removed:
        return InstallResult(path, False, [])
    if not hooks:
        del data["hooks"]
    _write(settings, root)
    return InstallResult(path, True, removed)


def _holds_hooks(groups: list[Any]) -> bool:
    """Whether any of these groups has a hook in it (or is something we don't know, which we keep)."""
    return any(not (isinstance(g, dict) and g.get("hooks") == []) for g in groups)
