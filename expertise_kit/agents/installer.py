"""Writing our hooks into each agent's settings file, recognisably, repeatably and reversibly.

Every hook we add runs ``<python> -I -c "import expertise_kit.hook ..."``. A hook is ours only when its
command is exactly that (any interpreter path, one of our modes and agents, or the older ``-m`` form):
install finds what it already added by that (and updates it, say, after a venv moved), and uninstall
removes only those. A user's own command that merely mentions the module (a ``timeout`` wrapper, a
script of theirs) is not ours and is never changed. Everything else in the file is left as it was, key
order, group order and indentation included.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expertise_kit import vocab
from expertise_kit.document.atomic import write_atomic
from expertise_kit.errors import UserError
from expertise_kit.vocab import Agent

__all__ = ["AGENTS", "MARK", "InstallResult", "install_hooks", "uninstall_hooks", "hook_command"]

MARK = "expertise_kit.hook"


AGENTS: dict[str, Agent] = {spec.name: spec for spec in vocab.AGENTS}
_TIMEOUTS = {"pre": 10, "post": 120}


@dataclass
class InstallResult:
    path: Path
    changed: bool
    events: list[str]


def hook_command(mode: str, agent: str, python: str | None = None) -> str:
    # `-c` rather than `-m`: runpy and importlib.util cost ~3 ms on every prompt.
    code = f'import {MARK} as h; h.main(["{mode}", "--agent", "{agent}"])'
    return f"{shlex.quote(python or sys.executable)} -I -c {shlex.quote(code)}"


def _legacy_command(mode: str, agent: str, python: str) -> str:
    """The form earlier versions installed, still recognised so they can be updated and removed."""
    return f"{shlex.quote(python)} -I -m {MARK} {mode} --agent {agent}"


_UNCHANGED = "fix it first; nothing was changed"


def _read(path: Path) -> tuple[dict[str, Any], str, bool]:
    """The settings, the indentation they use, and whether the file ended with a newline."""
    if path.is_dir():
        raise UserError("is a directory, not a settings file", path=path, hint="move it aside; nothing was changed")
    try:
        content = path.read_bytes()
    except FileNotFoundError:
        return {}, "  ", True
    except OSError as exc:  # unreadable, or a parent that is a file (`.claude` not a directory)
        raise UserError(f"can't read it: {exc.strerror or exc}", path=path, hint=_UNCHANGED) from None
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = content[: exc.start].count(b"\n") + 1
        raise UserError("not UTF-8 text", path=path, line=where, hint=_UNCHANGED) from None
    if not text.strip():
        return {}, "  ", True
    try:
        data = json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        raise UserError(f"not valid JSON: {exc}", path=path, line=line, hint=_UNCHANGED) from None
    except RecursionError:
        raise UserError("nested too deeply to read", path=path, hint=_UNCHANGED) from None
    if not isinstance(data, dict):
        raise UserError("top level is not a JSON object", path=path, hint=_UNCHANGED)
    indent = "  "
    for raw in text.splitlines()[1:]:
        stripped = raw.lstrip(" \t")
        if stripped and len(stripped) < len(raw):
            indent = raw[: len(raw) - len(stripped)]
            break
    return data, indent, text.endswith("\n")


def _write(path: Path, data: dict[str, Any], indent: str, newline: bool) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"can't create its directory: {exc.strerror or exc}", path=path) from None
    text = json.dumps(data, indent=indent, ensure_ascii=False) + ("\n" if newline else "")
    # Through a symlink, not over it: a settings file linked from a dotfiles repo stays linked.
    write_atomic(path.resolve() if path.is_symlink() else path, text.encode("utf-8"))


def _ours(hook: Any) -> bool:
    """Whether ``hook`` runs exactly a command we write; a user's command that mentions us is theirs."""
    if not isinstance(hook, dict):
        return False
    command = hook.get("command")
    if not isinstance(command, str) or MARK not in command:
        return False
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: not something we wrote
        return False
    if not words:
        return False
    return any(
        command in (hook_command(mode, agent, words[0]), _legacy_command(mode, agent, words[0]))
        for mode in ("pre", "post")
        for agent in AGENTS
    )


def _groups(entries: list[Any]) -> list[list[Any]]:
    """The hook lists of an event's groups, skipping any group whose shape we don't know."""
    return [g["hooks"] for g in entries if isinstance(g, dict) and isinstance(g.get("hooks"), list)]


def _wanted(agent: str, spec: Agent, python: str | None) -> list[tuple[str, str, str]]:
    pre = (spec.start_event, *((spec.prompt_event,) if spec.prompt_event else ()))
    return [
        (event, mode, hook_command(mode, agent, python))
        for mode, events in (("pre", pre), ("post", spec.end_events))
        for event in events
    ]


def _timeouts(spec: Agent) -> dict[str, int]:
    """Our hooks' time limits in the unit the agent reads: seconds, or milliseconds for Gemini CLI (which
    otherwise kills a 10 "ms" hook at once and tells nobody)."""
    scale = 1000 if spec.timeout_unit == "ms" else 1
    return {mode: seconds * scale for mode, seconds in _TIMEOUTS.items()}


def _merge(
    path: Path, hooks: dict[str, Any], wanted: list[tuple[str, str, str]], nested: bool, timeouts: dict[str, int]
) -> bool:
    """Add our hook to each wanted event, or point an existing one of ours at the current command.

    ``nested`` is the Claude Code, Codex and Gemini shape (event -> groups -> hooks); Cursor's is flat
    (event -> hooks).
    """
    changed = False
    for event, mode, command in wanted:
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise UserError(f"hooks.{event} is not a list", path=path, hint=_UNCHANGED)
        flat = [h for group in _groups(entries) for h in group] if nested else entries
        mine = [h for h in flat if _ours(h)]
        for hook in mine:
            if hook.get("command") != command:
                hook["command"] = command
                changed = True
            if nested and "timeout" in hook and hook["timeout"] != timeouts[mode]:
                hook["timeout"] = timeouts[mode]  # an earlier install's wrong unit is corrected
                changed = True
        if not mine:
            hook = (
                {"type": "command", "command": command, "timeout": timeouts[mode]} if nested else {"command": command}
            )
            entries.append({"hooks": [hook]} if nested else hook)
            changed = True
    return changed


def install_hooks(root: Path, agent: str, python: str | None = None) -> InstallResult:
    spec = AGENTS[agent]
    path = root / spec.settings
    data, indent, newline = _read(path)
    if spec.style == "flat":
        data.setdefault("version", 1)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UserError("`hooks` is not an object", path=path, hint=_UNCHANGED)
    wanted = _wanted(agent, spec, python)
    changed = _merge(path, hooks, wanted, nested=spec.style != "flat", timeouts=_timeouts(spec))
    if changed:
        _write(path, data, indent, newline)
    return InstallResult(path, changed, [event for event, _, _ in wanted])


def uninstall_hooks(root: Path, agent: str) -> InstallResult:
    """Remove our hook objects, and a group or event only when nothing but ours was in it.

    A group holding a user's hook too keeps its place and its other keys; only our entries leave its list.
    """
    spec = AGENTS[agent]
    path = root / spec.settings
    if not path.exists() and not path.is_symlink():
        return InstallResult(path, False, [])
    data, indent, newline = _read(path)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return InstallResult(path, False, [])
    removed: list[str] = []
    for event in list(hooks):
        entries = hooks[event]
        if not isinstance(entries, list):
            continue
        kept: list[Any] = []
        for entry in entries:
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
                if not theirs:
                    continue  # the group held only ours
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
    _write(path, data, indent, newline)
    return InstallResult(path, True, removed)
