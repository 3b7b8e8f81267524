"""The text of each export: the markdown section for AGENTS.md and its kin, and Cursor's rule files.

Markdown: a title and a note, the essentials, then each domain's best entries (those not already in the
essentials), in config order, until the budget is spent: each domain gets an even share of what is left,
and what it doesn't use passes on to the next.

Cursor: ``expertise-essentials.mdc`` (``alwaysApply: true``) and one ``<domain>.mdc`` per domain with
entries beyond the essentials, attached by globs (the domain's file, its core files and its path rules from
config). The front matter is YAML that both YAML parsers and Cursor's own line reader take the same way:
plain scalars only (Cursor keeps quote characters as part of a glob), so the globs line never starts with
``*`` (a YAML alias) and no value holds ``: `` or `` #``.
"""

from __future__ import annotations

import re
from typing import Any

from expertise_kit.export.content import (
    INTRO,
    MORE,
    NOTHING_YET,
    Block,
    Learned,
    domain_block,
    essentials_block,
    quoted,
)
from expertise_kit.export.markers import BEGIN, END
from expertise_kit.export.targets import ESSENTIALS_RULE_CHARS
from expertise_kit.vocab import FILES, OVERVIEWS

__all__ = [
    "markdown_section",
    "cursor_rules",
    "ESSENTIALS_RULE",
    "RULE_MARKER",
    "is_our_rule",
    "rule_globs",
    "path_rule_globs",
]

TITLE = "## Project expertise"
ESSENTIALS_RULE = "expertise-essentials.mdc"  # domain names have no '-': no domain's file can be called this
RULE_MARKER = (
    "<!-- expertise:export (written by `expertise export` from .expertise/; edit those files, not this one) -->"
)
_MARKER_PREFIX = "<!-- expertise:export"
MAX_GLOBS = 40
MAX_CORE_FILE_GLOBS = 20
# Characters a glob may hold here: enough for paths and patterns, nothing YAML or Cursor's list reads as syntax.
_GLOB_SAFE = re.compile(r"[A-Za-z0-9._/*+-]+")


def _with_entries(learned: Learned) -> list[str]:
    return [d for d in learned.domains if learned.cache["domains"][d]["entries"]]


def markdown_section(learned: Learned, budget: int) -> tuple[str, list[str]]:
    """The lines between our markers (``\\n``-separated, ending in a blank line) and the ids they show,
    the whole section (markers included) within ``budget`` characters."""
    head = [TITLE, "", INTRO]
    if learned.empty:
        return "\n".join([*head, "", NOTHING_YET, ""]), []
    fixed = len(BEGIN) + len(END) + 3  # their newlines, and the blank line before the end marker
    room = budget - fixed - sum(len(line) + 1 for line in head) - len(MORE) - 2
    essential = essentials_block(learned, room - len("### Essentials") - 3, level=4)
    blocks: list[Block] = []
    if essential.lines:
        essential.lines[:0] = ["", "### Essentials", ""]
        room -= essential.chars
        blocks.append(essential)
    rest = learned.without(set(essential.ids))
    domains = _with_entries(rest)
    for position, domain in enumerate(domains):
        share = room // (len(domains) - position)
        block = domain_block(rest, domain, share - 1, level=4, heading=f"### {domain}")
        if block.lines:
            block.lines.insert(0, "")
            room -= block.chars
        blocks.append(block)
    lines = [*head, *(line for block in blocks for line in block.lines)]
    if any(block.truncated for block in blocks) or essential.truncated:
        lines += ["", MORE]
    return "\n".join([*lines, ""]), [i for block in blocks for i in block.ids]


# -- Cursor ----------------------------------------------------------------------------------------------


def path_rule_globs(rule: str) -> list[str]:
    """A config path rule as Cursor globs, matching what the classifier matches (``fast.classify``):
    ``migrations/`` a directory segment anywhere, ``*.sql`` a file-name suffix, ``Dockerfile`` a file name
    or a directory segment (``models.py``, with a dot, only a file name). A rule with a ``/`` inside and
    none at the end matches nothing there either."""
    if rule.endswith("/"):
        wanted = rule.strip("/")
        return [f"**/{wanted}/**"] if wanted else []
    if rule.startswith("*"):
        return [f"**/{rule}"]
    if "/" in rule or not rule:
        return []
    return [f"**/{rule}"] if "." in rule else [f"**/{rule}", f"**/{rule}/**"]


def rule_globs(domain: str, core_files: list[str], path_rules: list[str]) -> list[str]:
    """The globs a domain's rule attaches by, first its own ``.expertise/`` file (which also keeps the line
    from starting with ``*``), then its core files, then its path rules; unsafe ones left out."""
    found = [f".expertise/{domain}.yaml"]
    found += [p.removeprefix("./") for p in core_files[:MAX_CORE_FILE_GLOBS]]
    found += [g for rule in path_rules for g in path_rule_globs(rule)]
    safe = [g for g in dict.fromkeys(found) if _GLOB_SAFE.fullmatch(g) and ".." not in g.split("/")]
    return safe[:MAX_GLOBS]


def _plain(text: str) -> bool:
    """Whether ``text`` reads back as itself from a front-matter line, in YAML and in Cursor's reader."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    if not text or text != text.strip() or any(ch in text for ch in "\n\r\t\"'"):
        return False
    try:
        value = YAML(typ="safe", pure=True).load(f"key: {text}\n")
    except YAMLError:
        return False
    return isinstance(value, dict) and value.get("key") == text


def _description(domain: str, description: str) -> str:
    about = OVERVIEWS.get(domain) or description.strip()
    text = f"What this repo learned about {domain} (from .expertise/{domain}.yaml)"
    if about and _plain(f"{text}. {about}"):
        text = f"{text}. {about}"
    return text


def _rule(description: str, globs: list[str] | None, lines: list[str]) -> str:
    front = ["---", f"description: {description}"]
    if globs:
        front += [f"globs: {', '.join(globs)}", "alwaysApply: false"]
    else:
        front += ["globs:", "alwaysApply: true"]
    return "\n".join([*front, "---", RULE_MARKER, *lines]) + "\n"


def cursor_rules(
    learned: Learned, budget: int, path_rules: dict[str, list[str]], descriptions: dict[str, str]
) -> dict[str, tuple[str, list[str]]]:
    """Rule file name -> (its text, the ids it shows), for the essentials and each domain with entries
    beyond them."""
    rules: dict[str, tuple[str, list[str]]] = {}
    essential = Block()
    if not learned.empty:
        head = [f"{TITLE}: essentials", "", INTRO, ""]
        description = "The lessons that matter on any task in this repo (from .expertise/), written by expertise export"
        overhead = len(_rule(description, None, [*head, "", MORE]))
        essential = essentials_block(learned, ESSENTIALS_RULE_CHARS - overhead, level=3)
        if essential.lines:
            more = ["", MORE] if essential.truncated else []
            rules[ESSENTIALS_RULE] = (_rule(description, None, [*head, *essential.lines, *more]), essential.ids)
    rest = learned.without(set(essential.ids))
    for domain in _with_entries(rest):
        part: dict[str, Any] = rest.cache["domains"][domain]
        every = learned.cache["domains"][domain]["entries"]  # its files in the essentials still attach its rule
        core = [str(e["path"]) for e in every if e.get("kind") == FILES and e.get("path")]
        globs = rule_globs(domain, core, path_rules.get(domain, []))
        description = _description(domain, descriptions.get(domain, ""))
        head = [f"{TITLE}: {domain}", "", INTRO]
        if part["overview"].strip():
            head += ["", f"Overview: {quoted(part['overview'])}"]
        overhead = len(_rule(description, globs, [*head, "", MORE]))
        block = domain_block(rest, domain, budget - overhead, level=3)
        if block.lines:
            more = ["", MORE] if block.truncated else []
            rules[f"{domain}.mdc"] = (_rule(description, globs, [*head, "", *block.lines, *more]), block.ids)
    return rules


def is_our_rule(text: str) -> bool:
    """Whether a rule file is one we wrote: our marker is the first line after its front matter."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        return False
    for number, line in enumerate(lines[1:], 1):
        if line.rstrip("\r") == "---":
            following = lines[number + 1] if number + 1 < len(lines) else ""
            return following.startswith(_MARKER_PREFIX)
    return False
