"""The measures behind ``bench_quality.py``: what a session did, whether injected text names it, and what
a learned store holds. Pure functions over sessions, text and ``expertise show --json`` records, so they
can be tested on small synthetic data and reused by later benchmarks.

Definitions (each one is what the bench prints; docs/quality.md says the same in prose):

- A session's **failing programs**: the main program (a test or check program wins in a compound
  command) of each shell call that failed with a lesson in it: not interrupted, not agent-harness noise,
  not a look-up that found nothing, not an error that says nothing; the learner's own judgement.
  Tool-protocol failures (Read, Edit) are no program.
- A session's **edited files**: the paths its successful calls wrote, relative to the session's cwd;
  files outside it are left out, as the learner leaves them out.
- Text **names a program** when one of its code spans runs that program (`` `cd web && npm run test` ``
  names ``npm test``), or the program appears in it as whole words (``git push`` in "git push needs...").
- Text **names a file** when the file's project-relative path appears in it, not as part of a longer path
  or name (``src/a.py`` is not named by ``src/a.pyc`` or ``lib/src/a.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from expertise_kit.learning.extract import _lookup_miss as lookup_miss
from expertise_kit.learning.extract import _unescape as unescape
from expertise_kit.learning.extract import main_program, pick_error
from expertise_kit.learning.quality import harness_noise as learner_noise
from expertise_kit.learning.redact import redact
from expertise_kit.learning.transcripts.model import Session
from expertise_kit.learning.transcripts.shell import program_of, programs_in

__all__ = [
    "Ratio",
    "StoreFigures",
    "edited_files",
    "failing_programs",
    "harness_noise",
    "ids_in_two_domains",
    "mask",
    "names_action",
    "names_file",
    "names_program",
    "near_duplicates",
    "paths_in_two_domains",
    "precision",
    "programs_run",
    "prompt_problem",
    "recall",
    "touched_files",
    "says_nothing",
    "store_figures",
]


@dataclass
class Ratio:
    """A share with its counts, so a series can add its sessions' hits and totals before dividing."""

    hits: int = 0
    total: int = 0

    def add(self, other: Ratio) -> None:
        self.hits += other.hits
        self.total += other.total

    @property
    def share(self) -> float | None:
        return self.hits / self.total if self.total else None

    def __str__(self) -> str:
        share = self.share
        return "-" if share is None else f"{share:.2f} ({self.hits}/{self.total})"


# -- what a session did ------------------------------------------------------------------------------

# A program key is a command word, optionally with a subcommand; anything else program_of returns (a
# heredoc's first line taken for a command, say) names no program anyone would look for.
_PROGRAM_SHAPE = re.compile(r"[\w.+@-]{1,40}(?: (?:-m )?[\w.:+-]{1,40})?")


def failing_programs(session: Session) -> set[str]:
    """Programs whose failure is a lesson about the project: not an agent-harness error, not a look-up
    that found nothing (``rg``/``cat`` on a guessed path), not an error that says nothing. The same
    judgement the learner applies, so recall is measured on what could have been learned."""
    found: set[str] = set()
    for call in session.calls:
        if call.ok is not False or call.interrupted or not call.command:
            continue
        output = redact(unescape(call.error or ""))
        error = pick_error(output)
        if learner_noise(output) or not error or lookup_miss(call, error):
            continue
        program = main_program(call.command)
        if program and _PROGRAM_SHAPE.fullmatch(program):
            found.add(program)
    return found


def _slashed(path: str) -> str:
    """Forward slashes, and a Windows drive letter in lower case (`C:\\x` and `c:/x` are one path)."""
    cleaned = path.strip().replace("\\", "/")
    return cleaned[0].lower() + cleaned[1:] if re.match(r"^[A-Za-z]:/", cleaned) else cleaned


def _relative(path: str, cwd: str | None) -> str | None:
    cleaned = _slashed(path)
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    if not cleaned:
        return None
    if not cleaned.startswith("/") and not re.match(r"^[a-z]:/", cleaned):
        return None if cleaned.startswith("../") else cleaned
    base = _slashed(cwd or "").rstrip("/")
    if base and cleaned.startswith(base + "/"):
        return cleaned[len(base) + 1 :]
    return None


def edited_files(session: Session) -> set[str]:
    found: set[str] = set()
    for call in session.calls:
        if call.ok is not True:
            continue
        for path in call.modifies:
            relative = _relative(path, session.cwd)
            if relative:
                found.add(relative)
    return found


def touched_files(session: Session) -> set[str]:
    """Every file the session read or wrote, relative to its cwd: what an injected bullet about a file
    must name to be related to the session."""
    found: set[str] = set()
    for call in session.calls:
        for path in (*call.paths, *call.modifies):
            relative = _relative(path, session.cwd)
            if relative:
                found.add(relative)
    return found


# Look-ups and shell helpers: naming one says nothing about the session's work ("cat", "ls", "echo").
_HELPERS = frozenset(
    {
        "cat", "ls", "head", "tail", "sed", "awk", "grep", "rg", "find", "wc", "nl", "echo", "printf", "pwd", "cd",
        "true", "false", "sleep", "test", "which", "type", "sort", "uniq", "cut", "tr", "xargs", "tee", "mkdir",
        "rm", "cp", "mv", "touch", "chmod", "ln", "date", "env", "export", "set",
    }
)  # fmt: skip


def programs_run(session: Session) -> set[str]:
    """The programs of every shell call of the session, failed or not (compound commands: each part), but
    look-ups and shell helpers."""
    found: set[str] = set()
    for call in session.calls:
        if call.command:
            found |= {p for p in programs_in(call.command) if _PROGRAM_SHAPE.fullmatch(p) and p not in _HELPERS}
    return found


def bullets(text: str) -> list[str]:
    """The injected entries: a text's Markdown bullets (a wrapped bullet's lines are one)."""
    return [line[2:] for line in text.splitlines() if line.startswith("- ")]


def precision(text: str, files: set[str], programs: set[str]) -> Ratio:
    """How many of the text's bullets are related to the session: they name a file it read or wrote, or
    a program it ran. A bullet about neither told the agent nothing it used."""
    found = bullets(text)
    related = sum(
        1 for bullet in found
        if any(names_file(bullet, f) for f in files) or any(names_program(bullet, p) for p in programs)
    )  # fmt: skip
    return Ratio(related, len(found))


# -- does text name it -------------------------------------------------------------------------------

_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def names_program(text: str, program: str) -> bool:
    if any(program_of(span) == program for span in _CODE_SPAN.findall(text)):
        return True
    words = r"\s+".join(re.escape(word) for word in program.split())
    return re.search(rf"(?<![\w./-]){words}(?![\w/-])", text) is not None


def names_file(text: str, path: str) -> bool:
    return re.search(rf"(?<![\w./-]){re.escape(path)}(?![\w/-]|\.\w)", text) is not None


def recall(text: str, wanted: Iterable[str], names: Callable[[str, str], bool]) -> Ratio:
    """How many of ``wanted`` the text names, by the ``names(text, item)`` test."""
    items = sorted(set(wanted))
    return Ratio(sum(1 for item in items if names(text, item)), len(items))


# -- is the session's task a real prompt -------------------------------------------------------------

# Text an agent or harness put in the user's turn: tags, markers and injected instructions.
_NOT_A_PROMPT = (
    ("system reminder", re.compile(r"^\s*<system-reminder>")),
    ("command", re.compile(r"^\s*<(?:command-name|command-message|command-args|local-command-[\w-]+)>")),
    # A bare slash command (`/clarify`) names a template, not the work; the CLI's own session commands
    # (`/model opus`, `/compact keep errors`) ask for none. `/fix the login bug` is a task.
    ("command", re.compile(r"^\s*/[\w:.-]+\s*$")),
    ("command", re.compile(r"^\s*/(?:model|compact|clear|exit|quit|resume|config|login|logout|cost|help|status|"
                           r"permissions|memory|theme|vim|mcp|hooks|doctor|rename|context|usage)\b")),  # fmt: skip
    ("command", re.compile(r"^\s*Caveat: The messages below were generated by the user while running")),
    ("task notification", re.compile(r"^\s*<task-notification>")),
    ("interrupt", re.compile(r"^\s*\[Request interrupted by user")),
    ("interrupt", re.compile(r"^\s*<turn_aborted>")),
    ("compaction summary", re.compile(r"^\s*This session is being continued from a previous conversation")),
    (
        "instructions",
        re.compile(
            r"^\s*(?:<(?:environment_context|user_instructions|INSTRUCTIONS|user_shell_command|ide_[\w-]+)>"
            r"|# AGENTS\.md instructions for )"
        ),
    ),
)


def prompt_problem(prompt: str | None) -> str | None:
    """Why ``prompt`` is not a real task, or None when it is one."""
    if prompt is None or not prompt.strip():
        return "no prompt"
    for reason, pattern in _NOT_A_PROMPT:
        if pattern.search(prompt):
            return reason
    return None


# -- what a learned store holds ----------------------------------------------------------------------

_HARNESS_NOISE = (
    ("sibling call errored", re.compile(r"Sibling tool call errored", re.I)),
    ("file not read yet", re.compile(r"File has not been read yet", re.I)),
    ("output too large", re.compile(r"exceeds maximum allowed tokens", re.I)),
    ("edit did not match", re.compile(r"String to replace not found", re.I)),
    ("file does not exist", re.compile(r"File does not exist", re.I)),
    ("input validation", re.compile(r"InputValidationError", re.I)),
    ("EISDIR", re.compile(r"EISDIR|illegal operation on a directory", re.I)),
    (
        "refusal or interrupt",
        re.compile(
            r"doesn't want to proceed|User rejected|tool use was rejected|Request interrupted"
            r"|interrupted by (?:the )?user|aborted by (?:the )?user|turn_aborted"
            r"|permission (?:to use \S+ )?(?:was |has been )?denied by",
            re.I,
        ),
    ),
)


def harness_noise(error: str) -> str | None:
    """Which agent-harness error ``error`` is, or None when it is about the project."""
    for reason, pattern in _HARNESS_NOISE:
        if pattern.search(error):
            return reason
    return None


# Words that say only that something failed: with them and exit codes taken out, a real error has
# something left ("ModuleNotFoundError: No module named x", "fatal: not a git repository").
_FILLER = re.compile(
    r"\b(?:exit(?:ed)?|code|status|with|returned|non-?zero|error|errors|failed|failure|exception|command|process"
    r"|bash|shell|exec_command|tool|unknown|none|null|undefined)\b",
    re.I,
)
_LETTER = re.compile(r"[^\W\d_]")


def says_nothing(error: str) -> bool:
    """True for an error that is only an exit code or boilerplate: fewer than 4 letters of anything else."""
    return len(_LETTER.findall(_FILLER.sub(" ", error))) < 4


# Parts of a solution that are no action by themselves: which files were read or edited.
_NO_ACTION = re.compile(
    r"\bread\s+[^;]*?\s+first\b|\bedited\s+[^\s;:,]+(?:,\s*[^\s;:,]+)*(?:\s+and\s+\d+\s+more)?", re.I
)
_ACTION_VERB = re.compile(
    r"\b(?:ran|run|runs|added|adds|add|changed|change|set|sets|installed|install|replaced|replace|removed|remove"
    r"|used|use|uses|passed|pass|passes|renamed|created|moved|updated|upgraded|pinned|switched|fixed|wrapped)\b",
    re.I,
)
_EDIT_EXCERPT = re.compile(r"^\s*[+-]\s|->|→|=>", re.M)  # `+ new line`, `old -> new`


def names_action(solution: str | None) -> bool:
    """Whether a solution says what changed: a command or code in backticks, an edit excerpt (``+ line``,
    ``old -> new``), or an action verb, once "read X first" and "edited X, Y" are taken out: those alone
    say where the fix was, not what it was."""
    rest = _NO_ACTION.sub(" ", solution or "")
    return "`" in rest or bool(_EDIT_EXCERPT.search(rest)) or bool(_ACTION_VERB.search(rest))


# Masks applied in this order: a branch name may hold a slash (`fix/login`), and a path's digits go with it.
_MASKS = (
    (re.compile(r"\b(?:branch|checkout -b|switch -c|origin|upstream)\s+[\w./-]+", re.I), "<branch>"),
    (re.compile(r"(?:[\w.~-]*/)+[\w.@-]+/?"), "<path>"),
    (re.compile(r"\b(?=[a-f]*\d)[0-9a-f]{7,64}\b", re.I), "<hash>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds?|minutes?|m|h)\b", re.I), "<duration>"),
    (re.compile(r"\d+(?:\.\d+)*"), "<n>"),
)


def mask(text: str) -> str:
    """``text`` with paths, branch names, hashes, durations and numbers masked, lower-cased, spaces folded."""
    for pattern, token in _MASKS:
        text = pattern.sub(token, text)
    return " ".join(text.lower().split())


def _lesson_key(record: dict[str, Any]) -> str:
    if "error" in record or "issue" in record:
        # A failure is the same lesson when the same program failed with the same (masked) error, however
        # its arguments differed.
        spans = _CODE_SPAN.findall(str(record.get("issue") or ""))
        program = program_of(spans[0]) if spans else mask(str(record.get("issue") or ""))
        return f"failure|{program}|{mask(str(record.get('error') or ''))}"
    return f"{record.get('section')}|{mask(str(record.get('text') or ''))}"


def near_duplicates(records: list[dict[str, Any]]) -> int:
    """How many non-file entries repeat an earlier one's lesson after masking, across all domains."""
    keys = [_lesson_key(r) for r in records if "path" not in r]
    return len(keys) - len(set(keys))


def _in_two_domains(entries: list[tuple[str, dict[str, Any]]], key: str, files: bool) -> list[str]:
    domains: dict[str, set[str]] = {}
    for domain, record in entries:
        if ("path" in record) == files and record.get(key):
            domains.setdefault(str(record[key]), set()).add(domain)
    return sorted(value for value, found in domains.items() if len(found) > 1)


def paths_in_two_domains(entries: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """File paths stored as core files in more than one domain."""
    return _in_two_domains(entries, "path", files=True)


def ids_in_two_domains(entries: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Ids of lessons (not files) stored in more than one domain: one lesson with two homes."""
    return _in_two_domains(entries, "id", files=False)


@dataclass
class StoreFigures:
    entries: int = 0
    failures: int = 0
    files: int = 0
    harness_noise: list[str] = field(default_factory=list)  # "reason: error" of each such failure
    says_nothing: list[str] = field(default_factory=list)
    with_action: Ratio = field(default_factory=Ratio)
    paths_in_two_domains: list[str] = field(default_factory=list)
    ids_in_two_domains: list[str] = field(default_factory=list)
    near_duplicates: Ratio = field(default_factory=Ratio)


def store_figures(entries: list[tuple[str, dict[str, Any]]]) -> StoreFigures:
    """Figures for a store, from ``(domain, entry record)`` pairs as ``expertise show DOMAIN --json`` lists
    them: a failure has ``issue``/``error``/``solution``, a file ``path``, the rest ``text``."""
    figures = StoreFigures(entries=len(entries))
    records = [record for _, record in entries]
    for record in records:
        if "path" in record:
            figures.files += 1
        if not ("error" in record or "issue" in record):
            continue
        figures.failures += 1
        error = str(record.get("error") or "")
        noise = harness_noise(f"{error} {record.get('issue') or ''}")
        if noise:
            figures.harness_noise.append(f"{noise}: {error[:80]}")
        if says_nothing(error):
            figures.says_nothing.append(error[:80])
        figures.with_action.add(Ratio(int(names_action(record.get("solution"))), 1))
    figures.paths_in_two_domains = paths_in_two_domains(entries)
    figures.ids_in_two_domains = ids_in_two_domains(entries)
    lessons = [r for r in records if "path" not in r]
    figures.near_duplicates = Ratio(near_duplicates(lessons), len(lessons))
    return figures
