"""The files ``expertise export`` writes, one row per agent, with the size each gets.

Budgets are characters of what we write, chosen from each agent's documented limits (docs/export.md says
where each fact comes from). The always-loaded files get 6,000: the same as ``expertise render
--domain``'s default, ~60 lines, well inside Codex's 32 KiB cap on all AGENTS.md files together and
Claude Code's advice to keep a CLAUDE.md under 200 lines, with room left for the user's own text.
Copilot's file gets 3,000, because Copilot code review has read only the first 4,000 characters of it.
A Cursor rule loads only when its files are in play, so each domain's rule gets 4,000; the essentials rule
loads into every chat, so it gets what the session-start hook injects, 1,500.

No imports beyond the standard library's typing: ``cli`` reads the target names to build its choices.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Target", "TARGETS", "TARGET_NAMES", "target"]


class Target(NamedTuple):
    name: str
    default: str  # relative to the project root: a file, or for Cursor a directory
    label: str  # how the agent's docs name it
    kind: str  # "markdown": our section between markers; "cursor": one rule file per domain
    budget: int  # characters: of our section (markers included), or of each domain's rule file


ESSENTIALS_RULE_CHARS = 1500  # Cursor's always-applied essentials rule: what the session-start hook injects

TARGETS: tuple[Target, ...] = (
    Target("agents-md", "AGENTS.md", "AGENTS.md", "markdown", 6000),
    Target("claude-md", "CLAUDE.md", "CLAUDE.md", "markdown", 6000),
    Target("gemini-md", "GEMINI.md", "GEMINI.md", "markdown", 6000),
    Target("cursor-rules", ".cursor/rules", ".cursor/rules", "cursor", 4000),
    Target("copilot", ".github/copilot-instructions.md", ".github/copilot-instructions.md", "markdown", 3000),
)
TARGET_NAMES: tuple[str, ...] = tuple(t.name for t in TARGETS)


def target(name: str) -> Target:
    for candidate in TARGETS:
        if candidate.name == name:
            return candidate
    raise KeyError(f"no export target {name!r}")
