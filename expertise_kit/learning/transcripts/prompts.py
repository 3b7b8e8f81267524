"""Which user messages are the user's own requests, and which are text the agent harness wrote.

A session's task is its first real prompt. Agents put much else in the user's turn: reminders, slash-command
wrappers and their output, interrupt markers, compaction summaries, injected instructions (AGENTS.md, the
environment), notifications from background tasks. Taking any of those as the task files the session's
lessons under the wrong domain.
"""

from __future__ import annotations

import re

from expertise_kit.learning.transcripts.model import MAX_PROMPT_CHARS

__all__ = ["COMPACTION_PREFIX", "REFLECTION_PREFIX", "is_compaction_summary", "local_command", "task_text"]

# Claude Code writes this at the top of the user message that replaces a compacted conversation.
COMPACTION_PREFIX = "This session is being continued from a previous conversation"
# The first words of what the reflection hook sends the agent back with (docs/reflect.md): Gemini CLI hands
# it over as a user turn of its own, Codex wraps it in <hook_prompt>, Claude Code after "Stop hook feedback:".
# Also the start of what older versions sent ("expertise_kit asks once per session: ...").
REFLECTION_PREFIX = "expertise_kit asks"
_HARNESS_PREFIXES = (
    REFLECTION_PREFIX,
    "Stop hook feedback:",
    "<hook_prompt",
    "<command-",
    "<local-command",
    "[Request interrupted",
    "Caveat:",
    "<task-notification>",
    "<bash-notification>",
    "<session-start-hook>",
    "<system-reminder>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<user-prompt-submit-hook>",
    "<environment_context>",
    "<user_instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "# AGENTS.md",
    "<INSTRUCTIONS>",
    "<permissions",
    COMPACTION_PREFIX,
)
_IDE_NOTE = re.compile(r"<(ide_[\w-]+)>.*?(?:</\1>|\Z)", re.S)
_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.S)
_IMAGES_ONLY = re.compile(r"(?:\s*\[Image(?: #\d+)?[^\]]*\])+\s*")
# spec-kit and similar prompt templates quote what the user typed under "## User Input" in a text fence.
_TEMPLATE_INPUT = re.compile(r"\A## User Input\s*```(?:text)?\n(.*?)```", re.S)
# Codex's IDE extension sends "# Context from my IDE setup:" (active file, open tabs), then the request.
_IDE_CONTEXT = "# Context from my IDE setup:"
_IDE_REQUEST = re.compile(r"^## My request for [\w .-]+:[ \t]*\n(.*)", re.S | re.M)
# Claude Code's built-in commands that set up the session rather than ask for work; their arguments too
# (`/model opus`, `/compact keep the errors`). A prompt command (`/init`, `/review`, a project's own
# command) is a task.
_LOCAL_COMMANDS = frozenset(
    {
        "add-dir", "agents", "bashes", "bug", "clear", "compact", "config", "context", "copy", "cost",
        "doctor", "effort", "exit", "export", "extra-usage", "fast", "feedback", "help", "hooks", "ide",
        "keybindings", "login", "logout", "mcp", "memory", "migrate-installer", "model", "output-style",
        "permissions", "plugin", "plugins", "privacy-settings", "quit", "release-notes", "remote-env",
        "rename", "resume", "rewind", "sandbox", "stats", "status", "statusline", "tasks", "terminal-setup",
        "theme", "todos", "upgrade", "usage", "vim",
    }
)  # fmt: skip


def is_compaction_summary(text: str) -> bool:
    return text.lstrip().startswith(COMPACTION_PREFIX)


def task_text(text: str) -> str:
    """``text`` as a request the user made, or "" when the harness wrote it."""
    stripped = text.strip()
    if "<system-reminder>" in stripped:
        stripped = _REMINDER.sub("", stripped).strip()
    if "<ide_" in stripped:
        # The IDE extension's notes (the file the user opened, the lines selected, diagnostics) come before
        # or beside the user's words: context, not the request.
        stripped = _IDE_NOTE.sub("", stripped).strip()
    if not stripped or stripped.startswith(_HARNESS_PREFIXES) or stripped == "Warmup":
        return ""
    if _IMAGES_ONLY.fullmatch(stripped):
        return ""
    if stripped.startswith(_IDE_CONTEXT):
        # The IDE extension's wrapper: open tabs and the active file, then the request under its heading.
        request = _IDE_REQUEST.search(stripped)
        stripped = request.group(1).strip() if request else ""
        if not stripped:
            return ""
    quoted = _TEMPLATE_INPUT.match(stripped)
    if quoted and quoted.group(1).strip():
        stripped = quoted.group(1).strip()
    return stripped[:MAX_PROMPT_CHARS]


def local_command(name: str) -> bool:
    """Whether ``/name`` is one of Claude Code's own session commands, not a request for work."""
    return name.strip().lstrip("/") in _LOCAL_COMMANDS
