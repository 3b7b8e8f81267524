"""Writing our hooks into each agent's settings file, recognisably, repeatably and reversibly.

Every hook we add runs ``<python> -I -c "import expertise_kit.hook ..."``; that module name is the mark by
which install finds what it already added (and updates it, say, after a venv moved) and uninstall
removes only ours. Everything else in the file is left as it was, key order and indentation included.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expertise_kit.document.atomic import write_atomic
from expertise_kit.errors import UserError

__all__ = ["AGENTS", "MARK", "InstallResult", "install_hooks", "uninstall_hooks", "hook_command"]

MARK = "expertise_kit.hook"


@dataclass(frozen=True)
class _Agent:
    settings: str  # relative to the project root
    style: str  # "nested": event -> [{hooks: [...]}], as Claude Code, Codex and Gemini; "cursor": flat
    pre: tuple[str, ...]
    post: tuple[str, ...]


AGENTS: dict[str, _Agent] = {
    "claude-code": _Agent(".claude/settings.json", "nested", ("SessionStart", "UserPromptSubmit"), ("SessionEnd",)),
    "codex": _Agent(".codex/hooks.json", "nested", ("SessionStart", "UserPromptSubmit"), ("Stop",)),
    "gemini": _Agent(".gemini/settings.json", "nested", ("SessionStart", "BeforeAgent"), ("SessionEnd",)),
    "cursor": _Agent(".cursor/hooks.json", "cursor", ("sessionStart",), ("stop",)),
}
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


def _read(path: Path) -> tuple[dict[str, Any], str, bool]:
    """The settings, the indentation they use, and whether the file ended with a newline."""
    if not path.exists():
        return {}, "  ", True
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}, "  ", True
    try:
        data = json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        raise UserError(
            f"not valid JSON: {exc}", path=path, line=line, hint="fix it first; nothing was changed"
        ) from None
    if not isinstance(data, dict):
        raise UserError("top level is not a JSON object", path=path, hint="fix it first; nothing was changed")
    indent = "  "
    for raw in text.splitlines()[1:]:
        stripped = raw.lstrip(" \t")
        if stripped and len(stripped) < len(raw):
            indent = raw[: len(raw) - len(stripped)]
            break
    return data, indent, text.endswith("\n")


def _write(path: Path, data: dict[str, Any], indent: str, newline: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=indent, ensure_ascii=False) + ("\n" if newline else "")
    write_atomic(path, text.encode("utf-8"))


def _ours(hook: Any) -> bool:
    return isinstance(hook, dict) and MARK in str(hook.get("command", ""))


def _wanted(agent: str, spec: _Agent, python: str | None) -> list[tuple[str, str, str]]:
    return [
        (event, mode, hook_command(mode, agent, python))
        for mode, events in (("pre", spec.pre), ("post", spec.post))
        for event in events
    ]


def _merge(hooks: dict[str, Any], wanted: list[tuple[str, str, str]], nested: bool) -> bool:
    """Add our hook to each wanted event, or point an existing one of ours at the current command.

    ``nested`` is the Claude Code, Codex and Gemini shape (event -> groups -> hooks); Cursor's is flat
    (event -> hooks).
    """
    changed = False
    for event, mode, command in wanted:
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise UserError(f"hooks.{event} is not a list", hint="fix it first; nothing was changed")
        flat = [h for g in entries if isinstance(g, dict) for h in g.get("hooks", [])] if nested else entries
        mine = [h for h in flat if _ours(h)]
        for hook in mine:
            if hook.get("command") != command:
                hook["command"] = command
                changed = True
        if not mine:
            hook = (
                {"type": "command", "command": command, "timeout": _TIMEOUTS[mode]} if nested else {"command": command}
            )
            entries.append({"hooks": [hook]} if nested else hook)
            changed = True
    return changed


def install_hooks(root: Path, agent: str, python: str | None = None) -> InstallResult:
    spec = AGENTS[agent]
    path = root / spec.settings
    data, indent, newline = _read(path)
    if spec.style == "cursor":
        data.setdefault("version", 1)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UserError("`hooks` is not an object", path=path, hint="fix it first; nothing was changed")
    wanted = _wanted(agent, spec, python)
    changed = _merge(hooks, wanted, nested=spec.style != "cursor")
    if changed:
        _write(path, data, indent, newline)
    return InstallResult(path, changed, [event for event, _, _ in wanted])


def uninstall_hooks(root: Path, agent: str) -> InstallResult:
    spec = AGENTS[agent]
    path = root / spec.settings
    if not path.exists():
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
            if spec.style == "cursor":
                if _ours(entry):
                    removed.append(event)
                    continue
                kept.append(entry)
                continue
            if isinstance(entry, dict) and isinstance(entry.get("hooks"), list):
                inner = [h for h in entry["hooks"] if not _ours(h)]
                if len(inner) != len(entry["hooks"]):
                    removed.append(event)
                    if not inner:
                        continue  # the group held only ours
                    entry = {**entry, "hooks": inner}
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
