"""Turning one Session into candidate learnings: failures and their fixes, files touched, tool
patterns that worked, and the technique of a session that ended well.

Every string that may be stored is scrubbed of secrets and cut to size here, before it can
reach a file, a commit or ``--json`` output: always the whole text first (a command, an output, a
prompt), then its paths made portable, then the cut, so no cut can leave part of a secret behind.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

from expertise_kit import clock
from expertise_kit.clock import iso
from expertise_kit.document.ids import error_signature, normalise_path
from expertise_kit.document.sightings import UNRESOLVED
from expertise_kit.fast.render import strip_controls
from expertise_kit.learning.portable import _portable
from expertise_kit.learning.quality import (
    OFFLINE_RUN,
    command_typo,
    environment_gotcha,
    harness_noise,
    network_failure,
    network_line,
    says_nothing,
    web_page_answer,
)
from expertise_kit.learning.redact import mask_generated, redact
from expertise_kit.learning.rules import RULE_CHARS, terminal_runs, user_rules
from expertise_kit.learning.transcripts.model import MAX_TASK_CHARS, Session, ToolCall
from expertise_kit.learning.transcripts.shell import program_of, programs_in
from expertise_kit.learning.transcripts.tools import changed_lines

__all__ = [
    "Learning", "Rejected", "Extraction", "extract", "pick_error", "program_kind", "ISSUE_CHARS", "ERROR_CHARS",
    "TEXT_CHARS", "SANDBOX_SOLUTION",
]  # fmt: skip

ISSUE_CHARS = 100  # a one-line summary: what was being done
ERROR_CHARS = 200  # the telling line of the error, not the whole log
TEXT_CHARS = 200
PATH_CHARS = 300
MAX_FILES_PER_SESSION = 50

# Test, check and format programs across ecosystems, as `program_of` names them (wrappers seen through).
_TEST_PROGRAMS = {
    "pytest", "python -m pytest", "python -m unittest", "npm test", "yarn test", "pnpm test", "bun test",
    "go test", "cargo test", "jest", "vitest", "mocha", "playwright", "cypress", "rspec", "phpunit", "tox", "nox",
    "make test", "mvn test", "mvn verify", "gradle test", "gradlew test", "dotnet test", "deno test", "ctest",
    "mix test", "rails test", "rake test", "rake spec", "swift test", "flutter test", "dart test", "nx test",
    "turbo test",
}  # fmt: skip
_FORMAT_PROGRAMS = {
    "prettier", "black", "isort", "gofmt", "goimports", "rustfmt", "cargo fmt", "mix format", "ruff format",
    "biome", "dprint", "deno fmt", "npm format", "pnpm format", "yarn format", "clang-format", "shfmt",
}  # fmt: skip
_LINT_PROGRAMS = {
    "ruff", "eslint", "flake8", "pylint", "mypy", "pyright", "tsc", "npm lint", "pnpm lint", "yarn lint",
    "npm typecheck", "pnpm typecheck", "yarn typecheck", "cargo clippy", "cargo check", "go vet", "golangci-lint",
    "staticcheck", "mix credo", "mix dialyzer", "mix compile", "rubocop", "standardrb", "shellcheck", "hadolint",
    "stylelint", "markdownlint", "pre-commit", "lint-staged", "husky", "make lint", "make check",
}  # fmt: skip
_BUILD_PROGRAMS = {
    "npm build", "yarn build", "pnpm build", "bun build", "cargo build", "go build", "make", "mvn package",
    "mvn compile", "mvn install", "gradle build", "gradlew build", "dotnet build", "mix compile", "next build",
    "vite build", "webpack", "tsup", "make build", "nx build", "turbo build",
}  # fmt: skip
_CHECK_PROGRAMS = _TEST_PROGRAMS | _FORMAT_PROGRAMS | _LINT_PROGRAMS | _BUILD_PROGRAMS
# Project-wide tooling: a lesson about it belongs to no one domain (`git push` needing --set-upstream was
# once stored four times, under database, api and frontend).
_TOOLING_NAMES = {
    "aider", "claude", "codex", "gemini",  # the coding agent itself: its model, provider and set-up
    "git", "gh", "npm", "pnpm", "yarn", "bun", "pip", "pip3", "uv", "poetry", "pipenv", "pdm", "bundle", "gem",
    "cargo", "go", "mix", "composer", "brew", "apt", "apt-get", "make", "pre-commit", "husky", "lint-staged",
    "nvm", "corepack", "rustup", "asdf", "mise",
}  # fmt: skip
# Read-only look-ups: failing says the agent guessed a path or searched for nothing, not a project lesson.
_LOOKUPS = {"cat", "ls", "head", "tail", "sed", "rg", "grep", "find", "wc", "nl", "stat", "file", "less", "bat",
            "tree", "fd", "awk", "realpath", "readlink", "du", "which", "type", "test", "[", "echo", "pwd"}  # fmt: skip
_ERRORISH = re.compile(
    r"(?:error|exception|traceback|failed|failure|fatal|not found|no such file|cannot|can't|denied|invalid|"
    r"refused|timed? ?out|undefined|unexpected|missing|EISDIR|ENOENT|EACCES|panic|abort)"
    r"(?![\w-]*\.\w|/)",  # not a file or directory named so (`error.test.ts`, `errors/`)
    re.I,
)
STUCK_TRIES = 3  # a failure seen this often in one session, never passing after, is an open problem
_WEB_TOOLS = {"WebFetch", "WebSearch", "web_search", "web_fetch", "google_web_search"}
# A file an error names: a traceback's `File "x.py", line 3`, a compiler's `src/a.rs:12:5`.
_NAMED_FILE = re.compile(r"(?<![\w./~-])([\w./~-]{1,200}\.[A-Za-z]{1,6})(?:\"?, line \d+|:\d+)")
_WARNING = re.compile(r"^\s*(?:npm\s+)?warn(?:ing)?\b", re.I)


@dataclass
class Learning:
    kind: str  # "failure", "file", "pattern" or "technique"
    section: str
    raw: dict[str, Any]
    text: str  # for routing and reports
    files: list[str] = field(default_factory=list)
    program: str = ""  # a failure's program and subcommand, for routing (`git push`, `mix test`)
    gotcha: bool = False  # a fact about the machine or the setup: kept the first time, fix or not
    fix_files: list[str] = field(default_factory=list)  # what the fix changed: where the lesson lives
    recur_first: bool = False  # held until another session sees it too, though it has a fix
    stuck: bool = False  # failed STUCK_TRIES times in the session and never passed: kept the first time


@dataclass
class Rejected:
    kind: str
    text: str
    reason: str


@dataclass
class Extraction:
    session: Session
    learnings: list[Learning] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    failures_seen: int = 0
    modified_files: list[str] = field(default_factory=list)  # as the transcript names them
    deleted_files: list[str] = field(default_factory=list)
    task: str = ""


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


@dataclass
class _Context:
    """Per-session helpers: transcript paths mapped into the project, and the text cleaner."""

    rel: dict[str, str]
    bases: tuple[str, ...]

    def clean(self, text: str, limit: int) -> str:
        return _cut(_portable(redact(strip_controls(text)), self.bases), limit)

    def first_line(self, text: str, limit: int) -> str:
        """The first line of ``text``, cleaned: redacted whole first, as a secret may span lines."""
        scrubbed = redact(text).strip()
        return self.clean(scrubbed.splitlines()[0] if scrubbed else "", limit)


def _moment(stamp: str) -> str:
    try:
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return iso(clock.now())
    return iso(parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc))


def _slashed(path: str) -> str:
    """Forward slashes, and a Windows drive letter in lower case (`C:\\x` and `c:/x` are one path)."""
    cleaned = path.strip().replace("\\", "/")
    return cleaned[0].lower() + cleaned[1:] if re.match(r"^[A-Za-z]:/", cleaned) else cleaned


def relative_path(path: str, cwd: str | None, root: str | None) -> str | None:
    """The path relative to the project, or None when it lies outside it (``/tmp``, ``~/.claude``)."""
    cleaned = _slashed(path)
    if not cleaned:
        return None
    if not cleaned.startswith("/") and not re.match(r"^[a-z]:/", cleaned):
        relative = normalise_path(cleaned)
        return None if relative.startswith("../") or relative == ".." else relative
    for base in (root, cwd):
        if base:
            base_clean = _slashed(base).rstrip("/")
            if cleaned == base_clean:
                return None
            if cleaned.startswith(base_clean + "/"):
                return normalise_path(cleaned[len(base_clean) + 1 :])
    return None


# Headers the harnesses put before a command's output; they say how it ended, not what went wrong.
_HEADER = re.compile(
    r"^(?:Exit code:?\s*-?\d+|Process exited with code -?\d+|Command exited with code -?\d+|Wall time:.*|"
    r"Output:|Chunk ID:.*|Original token count:.*|Total output lines:.*|Error: Exit code -?\d+)\s*$",
    re.I,
)
_ELIXIR = re.compile(r"^\*\* \([\w.]+\)")  # ** (CompileError) lib/x.ex:3: undefined function
_LEADING = re.compile(r"^(?:fatal|error|panic|npm ERR!|npm error|ERROR|FATAL|E)(?:\[\w+\])?(?::|\s{2,}|!)")
# `× No files were processed`: biome's, pnpm's and others' mark of an error; not a count (`✖ 2 problems`).
_MARKED = re.compile(r"^[\u00d7\u2716\u2717\u2718] (?!\d+ (?:problems?|errors?|tests?|failed|passed)\b)\w")
# A rule drawn with box characters (`check ━━━━━━`): a heading of the output, never what went wrong.
_RULE = re.compile(r"^[^\n]{0,30}?[\u2500-\u257f]{8,}[^\n]{0,30}$", re.M)
_NPM_CODE = re.compile(r"^npm (?:error|ERR!) E[A-Z]{3,} \S")  # `npm error ERESOLVE unable to resolve ...`
_CLASS = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Failure)\b(?::|$)")
# Source code shown in an error (a diff, a stack frame's line) is never the error itself.
_CODE = re.compile(
    r"\{:error\b|:error\b|\berror\s*->|=>|\|>|^[-+]\s|^\d+\s*[|│]|^\s*(?:def|defp|fn|case|if|else|elif|return|"
    r"const|let|var|import|from|function|catch|rescue|raise|throw|except)\b|[;{]\s*$|^\}|^\s*#"
)
_HIDDEN = re.compile(
    r"^FAILED\b|^FAIL\b|^Traceback \(most recent|"
    r"\b[1-9]\d* (?:failed|failures?|errors?)\b(?! \(\d+ fixed, 0 remaining\))",  # not ruff's all-fixed count
    re.M,
)
# A compiler's error in a check's piped output (`npm run build 2>&1 | head`): tsc, rustc and cargo, gcc and clang.
_COMPILER_ERROR = re.compile(r"\berror TS\d{4}:|^error(?:\[E\d{4}\])?: |^\S+:\d+:\d+: (?:fatal )?error: ", re.M)


# Progress lines of builds and installers: they mention "timeout" or "error" crates, not a failure.
_PROGRESS = re.compile(r"^(?:Compiling|Downloading|Downloaded|Running|Finished|Checking|Fresh|Updating|Installing|"
                       r"Collecting|Resolving|Fetching|Building|Locking|Adding|Blocking|Waiting)\b|"
                       # a test that passed (`✓ src/a.test.ts`, `PASS src/a.test.ts`); the script line npm
                       # echoes before running it (`> vitest run src/error.test.ts`)
                       r"^(?:[✓✔√]|PASS\b|> )")  # fmt: skip
# Terminal colours and cursor moves: `\x1b[31m`, and the same escaped in text stored as JSON.
_ANSI = re.compile(r"(?:\x1b|\\u001[bB]|\\x1[bB]|\\033)\[[0-9;?]*[ -/]*[@-~]")
_TRIVIAL = {"rm", "mkdir", "cp", "mv", "touch", "echo", "printf", "true", "sleep", "chmod", "ln", "clear"}


@lru_cache(maxsize=4096)
def main_program(command: str) -> str:
    """The program a compound command is about: `rm -rf x && cargo new y && cargo check` is `cargo check`,
    `pytest -q | tail -5` is `pytest`: the first test, check or tooling program, else the first that is
    not a trivial helper or a look-up."""
    programs = programs_in(command)
    return min(programs, key=_program_rank) if programs else ""  # min keeps the first of equal rank


def span_programs(text: str) -> list[str]:
    """The program each code span of ``text`` runs, in order ("" for a span that runs none): what a
    stored issue (`` `cd web && npm test` ``) or fix (``then `python3 x.py` worked``) names."""
    return [main_program(span) for span in text.split("`")[1::2] if span.strip()]


def _program_rank(program: str) -> int:
    if program in _TEST_PROGRAMS or program.endswith(" test"):
        return 0
    if program in _CHECK_PROGRAMS:
        return 1
    if program_kind(program):
        return 2
    return 3 if program not in _TRIVIAL and program not in _LOOKUPS else 4


def _unescape(text: str) -> str:
    """Outputs stored as JSON strings inside a string keep literal ``\\n``: read them as lines."""
    if text.count("\\n") > text.count("\n"):
        text = text.replace("\\r\\n", "\n").replace("\\n", "\n").replace("\\t", "\t").replace('\\"', '"')
    return text


def _error_score(line: str) -> int:
    if _CODE.search(line):
        return -2  # `{:error, _reason}` or `error ->` is code that mentions an error
    if _WARNING.match(line) or _PROGRESS.match(line):
        return -1
    if line.startswith("Traceback (most recent call last)"):
        return 1  # the exception itself comes last
    if _ELIXIR.match(line):
        return 6
    score = 0
    if _LEADING.match(line) or _NPM_CODE.match(line):
        score += 4
    elif _MARKED.match(line):
        score += 3  # a class name on its own line (`AssertionError: ...`) still wins the tie by coming first
    if _CLASS.search(line):
        score += 3
    if _ERRORISH.search(line):
        score += 1
    return score


def pick_error(text: str) -> str:
    """The most telling line of an error output, or "" when no line says more than how it ended.

    ``** (SomeError)``, ``fatal:``/``error:`` at the start of a line, or a ``...Error:`` class name win;
    ``E   AssertionError: assert 1999 == 2000`` beats ``1 failed in 0.12s``; a warning, an "Exit code N"
    header or a line of code never wins.
    """
    lines = [line.strip() for line in _ANSI.sub("", _unescape(text)).splitlines()]
    lines = [line for line in lines if line and not _HEADER.match(line) and not _RULE.search(line)]
    if not lines:
        return ""
    scores = [_error_score(line) for line in lines]
    best = max(scores)
    if best <= 0:
        return ""
    return lines[scores.index(best)]


# What the user's shell prints as it starts, before any command's output: nvm's and direnv's.
_SHELL_START = re.compile(r"^(?:Now using node v\S+(?: \(npm v\S+\))?|direnv: .*)$")


def _unheaded(text: str) -> str:
    """``text`` from its first line that is not a harness's header (`Exit code: 1`, `Wall time: 0.3 seconds`,
    `Output:`), the shell's start-up (`Now using node v22.20.0`), a build's progress (`Compiling x`) or code:
    where no line reads as an error, what the command printed first is what it said ("You are not logged
    into any GitHub hosts")."""
    lines = text.strip().splitlines()
    said = (n for n, line in enumerate(map(str.strip, lines)) if line and not _HEADER.match(line)
            and not _SHELL_START.match(line) and not _PROGRESS.match(line) and not _CODE.search(line))  # fmt: skip
    return "\n".join(lines[next(said, len(lines)) :])


def _describe_call(call: ToolCall, ctx: _Context) -> str:
    if call.command:
        line = ctx.first_line(call.command, 80)
        first = call.command.strip().split("\n", 1)[0]
        if "\n" in call.command.strip() and (first.count('"') % 2 or first.count("'") % 2 or first.endswith("\\")):
            # `python -c "` alone says nothing: the lines that follow, folded into one, say what ran. A
            # heredoc's first line (`python - <<'PY'`) is whole; its body is data.
            line = ctx.clean(" ".join(redact(call.command).split()), 80)
        return f"`{line}`"
    if call.paths:
        return f"{call.name} {ctx.rel.get(call.paths[0], PurePosixPath(call.paths[0]).name)}"
    return call.name


def _kind_key(call: ToolCall) -> tuple[str, str]:
    """What makes two calls the same attempt: the program and its subcommand (`mix test` is not
    `mix deps.get`), or the tool and its file."""
    if call.command:
        return ("Bash", main_program(call.command))
    return (call.name, call.paths[0] if call.paths else "")


def _failure_text(call: ToolCall) -> str | None:
    """The output of a failed call, or of one whose exit 0 hid a failure (`pytest | tail` with FAILED)."""
    if call.interrupted:
        return None
    if call.ok is False:
        return call.error
    # A test, build or check only: not `git log | head` that printed a commit about "2 failed tests".
    rank = _program_rank(main_program(call.command)) if call.ok and call.output and "|" in call.command else 9
    # A compiler's error only from a build or check: a test run's passing output may print `error: ...`.
    if rank <= 1 and (_HIDDEN.search(call.output) or rank == 1 and _COMPILER_ERROR.search(call.output)):
        return call.output
    return None


def _passed(call: ToolCall) -> bool:
    """The call worked: it exited 0, and no pipe hid a failing check's output."""
    return call.ok is True and _failure_text(call) is None


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    for end in (". ", "! ", "? ", ": "):
        cut = flat.find(end)
        if 20 <= cut <= 200:
            return flat[: cut + 1]
    return flat


def _solution(failed: ToolCall, signature: str, later: list[ToolCall], ctx: _Context) -> str | None:
    """What changed between a failure and the next success of the same program and subcommand.

    The window closes at that success, or when the same program fails with a different error: then
    this error is gone, and the edits made in between are its fix (with no edit, only commands, it is
    a new problem and not this one fixed). When the program is not run again, an edit of a file the
    error names, made next, is the fix, said as not re-run. Said as actions: the agent's own
    explanation of the cause, what differs in the command that then worked, the edits' new lines, the
    commands run in between. Not a fix: a formatter run, a commit, a look-up, an edit later undone, an
    edit of an unrelated file when the error names the files at fault.
    """
    key = _kind_key(failed)
    # `python: command not found` is fixed by whatever ran next under a near name (`python3`).
    missing = bool(key[1]) and bool(re.search(r"command not found|not installed|not recognized as", failed.error))
    named = _named_files(failed)
    texts: list[str] = []
    edits: list[tuple[ToolCall, str]] = []  # (the edit, its file as shown)
    commands: list[tuple[str, str]] = []  # (the command, as said in the solution)
    for index, call in enumerate(later):
        texts.append(str(getattr(call, "said", "") or ""))
        if call.interrupted:
            continue
        hidden = _failure_text(call) if call.ok is True else None  # a piped check that printed its failure
        ok, failing = call.ok is True and not hidden, call.ok is False or bool(hidden)
        same = _kind_key(call) == key or (
            missing and ok and (_kind_key(call)[1].startswith(key[1]) or _same_arguments(failed, call))
        )
        if same and failing:
            if _signature_of(hidden or call.error) != signature:
                if _unpiped(call.command) != _unpiped(failed.command):
                    return None  # `gh api user` after `gh api repos`: another call, not this one again
                # The same command fails differently: this error is gone. An edit made since is its fix;
                # commands alone (`mix deps.get` before `mix test`) moved on to another problem.
                kept = _fixing_edits(edits, named, later[:index], ctx)
                if not kept:
                    return None
                return _join(_explanation(texts, failed, ctx), *kept)
            continue
        if not ok:
            continue
        if same and not _same_target(failed, call):
            # `gh api repos/x` after `gh api user` failed, another test file, `-X PUT` after a GET: another
            # call that worked, not this one fixed.
            continue
        if same:
            parts = [_explanation(texts, failed, ctx)]
            # The command that worked goes before the edits: a long excerpt must not cut it off.
            changed = bool(call.command) and _unpiped(call.command) != _unpiped(failed.command)  # not only shaped
            printing = changed and _only_shaped(failed.command, call.command)  # `--jq .url`: the same call again
            if changed and not printing:
                parts.append(_command_change(failed.command, call.command, ctx))
            kept = _fixing_edits(edits, named, later[:index], ctx)
            parts += kept
            if not kept:  # with an edit, the edit is the fix: `npm install` on the way is not
                closest = _closest_commands(commands, failed)
                if closest and printing:
                    return None  # the retry only prints differently (`--jq`): which command before it fixed it?
                parts += closest
            return _join(*parts)  # nothing changed: it just worked on a retry, and that is no fix
        if call.modifies:
            edits.extend((call, ctx.rel.get(path, PurePosixPath(path).name)) for path in call.modifies)
        elif call.command and _helps_fix(call.command):
            commands.append((call.command, f"ran `{ctx.first_line(call.command, 80)}`"))
    return _unconfirmed(failed, later, _explanation(texts[:1], failed, ctx), ctx)


@lru_cache(maxsize=1024)
def _signature_of(output: str) -> str:
    """The signature of the error a failed call printed: each later call is judged again for every failure
    before it, so a session failing a check a thousand times would redact each output a thousand times."""
    return error_signature(pick_error(redact(output)))


# What only shapes a command's output: `2>&1`, and a last `| head -50`, `| tail`, `| grep x` on its first line.
_SHAPING = re.compile(r"\s*2>&1|\s*\|\s*(?:head|tail|grep|less|more|cat|tee)\b[^|'\"\n]*$")


def _unpiped(command: str) -> str:
    """A command without what only shapes its output: `npm run build 2>&1 | head -50` is `npm run build`.
    Only its first line is looked at; a heredoc's body is kept whole."""
    head, _, body = command.strip().partition("\n")
    return " ".join(_SHAPING.sub("", head).split()) + (f"\n{body}" if body else "")


def _closest_commands(commands: list[tuple[str, str]], failed: ToolCall) -> list[str]:
    """The commands that fixed a failure when no file was edited: those acting on what the failed command
    names (`perl -pi ... setup-plan.sh` for `setup-plan.sh` failing), else the last two before it worked;
    the first tries are most often the ones that did not work."""
    named = {PurePosixPath(w).name for w in _words_of(failed.command) if "/" in w or "." in w}
    on_target = [shown for command, shown in commands if named & {PurePosixPath(w).name for w in _words_of(command)}]
    chosen = on_target or [shown for _, shown in commands][-2:]
    return list(dict.fromkeys(chosen))[:2]


_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_SUBCOMMAND = re.compile(r"^[a-z][a-z-]{1,15}$")  # a bare word, no path, no file name, no number


def _positionals(command: str) -> set[str] | None:
    """The arguments of a command's main program that are no flag, no flag's HTTP method (`-X PUT`) and no
    setting (`PYTHONPATH=.`); None when its words can't be told apart (a heredoc's body in the way)."""
    words = _words_of(command)
    program = main_program(command).split()
    if not program:
        return None
    at = next((n for n, w in enumerate(words) if w == program[0]), None)  # `cd /srv/pytest && pytest x`: the second
    if at is None:  # `./scripts/setup-plan.sh`, named by its file
        at = next((n for n, w in enumerate(words) if w.endswith("/" + program[0])), None)
    if at is None:
        return None
    rest = words[at + len(program) :]
    for separator in ("&&", "||", ";", "|"):
        rest = rest[: rest.index(separator)] if separator in rest else rest
    rest = [w for n, w in enumerate(rest) if not (n and rest[n - 1] in ("-X", "--method", "--request"))]
    positionals = [w for w in rest if not w.startswith("-") and not _ASSIGNMENT.match(w)]
    if len(program) == 1 and len(positionals) > 1 and _SUBCOMMAND.match(positionals[0]):
        return set(positionals[1:])  # `biome check x.js`: `check` is what it does; `eslint src`: src is the target
    return set(positionals)


_METHOD = re.compile(r"(?:^|\s)(?:-X|--method|--request)[\s=]*([A-Za-z]+)")


def _method(command: str) -> str:
    found = _METHOD.search(command)
    return found.group(1).upper() if found else "GET"


def _same_target(failed: ToolCall, call: ToolCall) -> bool:
    """Whether two runs of one program act on the same thing: they share an argument that is no flag, or
    one of them has none (`pytest -q` and `pytest -q -x`), with the same HTTP method. Not `gh api user` and
    `gh api repos/x`, not two different test files, not `python -c A` and `python -c B`, not a `-X PUT`
    after a GET."""
    if not failed.command or not call.command:
        return True
    if _method(failed.command) != _method(call.command):
        return False
    before, after = _positionals(failed.command), _positionals(call.command)
    if before is None or after is None:
        return False  # unsure: no fix rather than a wrong one
    return not before or not after or bool(before & after)


def _same_arguments(failed: ToolCall, call: ToolCall) -> bool:
    """Another program run on the same arguments (`gofmt -w ./cmd` after `gofumpt -w ./cmd` was missing):
    the workaround for a program this machine lacks."""
    if not call.command:
        return False
    before, after = _words_of(failed.command), _words_of(call.command)
    return len(before) > 1 and before[1:] == after[1:]


_SAID_CHARS = 8000  # of an edit's changed lines, read for where the two sides differ


def _said_words(lines: str) -> str:
    """``lines`` with their whitespace collapsed, as far as they are read; a word cut in two at the end is
    left out, as a key's tail would be too short for the mask."""
    words = " ".join(lines[:_SAID_CHARS].split())
    return words.rsplit(" ", 1)[0] if len(lines) > _SAID_CHARS else words


def _change_said(shown: str, call: ToolCall, ctx: _Context, limit: int = 120) -> str:
    """An edit as a solution says it: the file, a head of its new lines and, for an edit of one place, of
    the lines they replaced, or only the file. The lines around the change are scrubbed with it (a key's
    body is known for one by its BEGIN and END lines), and key-like tokens the scrubbing may not know are
    masked: the line a fix took out is often the key it moved away."""
    old, new = call.change
    if not (old or new):
        added = mask_generated(call.excerpt.strip())
        return f"changed {shown}: `{ctx.clean(added, limit)}`" if added else f"edited {shown}"
    taken, put = changed_lines(redact(old), redact(new))
    if not (taken or put):  # the change was all in a secret
        return f"edited {shown}"
    removed, added = _said_words(taken), _said_words(put)
    read_in_part = max(len(taken), len(put)) > _SAID_CHARS
    if read_in_part:  # the two sides are compared as far as both were read, in whole words
        both = min(len(removed), len(added))
        removed, added = (words[:both].rsplit(" ", 1)[0] for words in (removed, added))
    if removed == added:  # the same words: only indentation or spacing changed, as far as they were read
        if read_in_part:
            return f"edited {shown}"
        return f"changed {shown}: the indentation or spacing of `{ctx.clean(mask_generated(added), limit)}`"
    removed, added = mask_generated(removed), mask_generated(added)
    if removed == added:  # the change was all in key-like tokens
        return f"edited {shown}"
    if not removed:
        return f"changed {shown}: `{ctx.clean(added, limit)}`"
    if not added:
        return f"changed {shown}: removed `{ctx.clean(removed, 60)}`"
    removed, added = _from_difference(removed, added)
    return f"changed {shown}: `{ctx.clean(added, limit - 40)}` (was `{ctx.clean(removed, 60)}`)"


def _from_difference(removed: str, added: str, shown: int = 45) -> tuple[str, str]:
    """Both sides from a word or so before they first differ, when their common head is longer than
    ``shown``: cut at 60 characters, a change at the end of a long line would look like no change."""
    same = len(os.path.commonprefix([removed, added]))
    if same <= shown:
        return removed, added
    start = removed.rfind(" ", same - 30, same - 12) + 1 or same - 12  # a long word (a URL) is cut into
    marker = removed.rfind("[REDACTED", 0, start + 8)  # one that starts before the cut
    if marker >= 0 and removed.find("]", marker) >= start:
        start = marker  # a scrubbed secret's marker is never cut into
    return "..." + removed[start:], "..." + added[start:]


def _join(*parts: str) -> str | None:
    return "; ".join(p for p in parts if p) or None


# Commands on the way to a fix that are not the fix: formatting, committing, looking around.
_NOT_FIXES = {"git commit", "git add", "git status", "git diff", "git log", "git show", "git push", "git stash"}


def _helps_fix(command: str) -> bool:
    program = main_program(command)
    return not (
        _is_test(command) or program in _LOOKUPS or program in _FORMAT_PROGRAMS or program in _NOT_FIXES
        or program.split(" ", 1)[0] in _TRIVIAL
    )  # fmt: skip


def _named_files(failed: ToolCall) -> set[str]:
    """The file names an error points at: a traceback's frames, a compiler's `path:line`."""
    return {PurePosixPath(p).name for p in _NAMED_FILE.findall(failed.error or "")}


_UNDO = re.compile(r"^git\s+(?:checkout|restore)\b(?!.*\s(?:-b|-B|--staged|-S)\b)")


def _undone(calls: list[ToolCall]) -> set[str]:
    """The file names ``git checkout -- f`` and ``git restore f`` in ``calls`` put back (not `checkout -b`,
    not `restore --staged`)."""
    names: set[str] = set()
    for call in calls:
        if call.ok is True and call.command and _UNDO.match(call.command.strip()):
            names |= {PurePosixPath(w).name for w in _words_of(call.command)[2:] if not w.startswith("-")}
    return names


_PROSE = {".md", ".markdown", ".rst", ".adoc"}  # not .txt: requirements.txt, CMakeLists.txt
# Options that only change how a command prints what it found (and their values).
_PRINTING = {"--jq", "-q", "--json", "--quiet", "--silent", "-s", "--format", "--pretty", "--template",
             "--verbose", "-v", "--no-pager", "--color", "--no-color", "--porcelain", "-i", "--include"}  # fmt: skip


def _only_shaped(failed: str, worked: str) -> bool:
    """Whether ``worked`` is ``failed`` with only printing options added (`gh api x --jq .a`)."""
    before, after = _words_of(failed), _words_of(worked)
    if not set(before) <= set(after):
        return False
    added = [n for n, word in enumerate(after) if word not in before]
    return bool(added) and all(
        after[n].split("=", 1)[0] in _PRINTING or (n and after[n - 1] in _PRINTING and not after[n].startswith("-"))
        for n in added
    )


def _fixing_edits(
    edits: list[tuple[ToolCall, str]], named: set[str], window: list[ToolCall], ctx: _Context
) -> list[str]:
    """The edits (each with the file as shown) that may have fixed the failure, said: not one undone before
    the check passed (`git checkout -- f`, `git restore f` in ``window``), and, when the error names files,
    only edits of those files (if any was edited)."""
    undone = _undone(window)
    kept = [
        (call, text) for call, text in edits
        if not any(PurePosixPath(p).name in undone for p in call.modifies)
        # notes and docs written on the way (the agent's memory file, a changelog) fix no failure that
        # does not name them
        and not all(PurePosixPath(p).suffix.lower() in _PROSE and PurePosixPath(p).name not in named
                    for p in call.modifies)
    ]  # fmt: skip
    if named:
        at_fault = [(c, t) for c, t in kept if any(PurePosixPath(p).name in named for p in c.modifies)]
        if at_fault:
            kept = at_fault
    return [_change_said(shown, call, ctx) for call, shown in kept[:3]]


def _command_change(failed: str, worked: str, ctx: _Context) -> str:
    """The command that worked, shown around what differs from the one that failed: a flag, a directory,
    an environment variable. A long command is never cut before the part that changed. The words are compared
    redacted: a password changed between the two (`mysql -pOLD`, `-pNEW`) is no word of the change."""
    before, after = _words_of(redact(failed)), _words_of(redact(worked))
    added = [w for w in after if w not in before]
    dropped = [w for w in before if w not in after]
    line = ctx.first_line(worked, 400)
    if not added and not dropped and failed.strip() != worked.strip():  # the same first line: a script that changed
        old_lines = {part.strip() for part in failed.splitlines()}
        new_lines = [part.strip() for part in worked.splitlines()[1:] if part.strip() and part.strip() not in old_lines]
        if new_lines:
            shown = "`, `".join(ctx.clean(part, 80) for part in new_lines[:2])
            more = f" and {len(new_lines) - 2} more lines" if len(new_lines) > 2 else ""
            return f"then `{ctx.first_line(worked, 80)}` worked with `{shown}`{more} in its script"
    if len(line) > 90 and added:
        at = max(0, line.find(added[0]) - 30)
        line = ("..." if at else "") + line[at : at + 84] + ("..." if at + 84 < len(line) else "")
    said = f"then `{line}` worked"
    change = []
    if added and len(added) <= 4:
        change.append("added `" + ctx.clean(" ".join(added), 60) + "`")
    if dropped and len(dropped) <= 4:
        change.append("dropped `" + ctx.clean(" ".join(dropped), 60) + "`")
    return f"{said} ({', '.join(change)})" if change and len(added) + len(dropped) <= 6 else said


def _words_of(command: str) -> list[str]:
    try:
        return shlex.split(command.strip().split("\n", 1)[0])
    except ValueError:
        return command.split()


# A sentence that says why something failed, or what it needs: the agent's own diagnosis.
_CAUSE = re.compile(
    r"\b(?:the\s+(?:real\s+)?(?:issue|problem|error|bug|cause|culprit|reason|fix)\b|root\s+cause|because|caused\s+by|"
    r"due\s+to|turns\s+out|lives\s+in|belongs\s+(?:in|to)|needs?\s+(?:to\s+be|a|an|the)\b|requires?\b|expects?\b|"
    r"instead\s+of|rather\s+than|must\s+be|should\s+be|is(?:n't|\s+not)\s+(?:installed|available|exported|defined|"
    r"supported|set|on)|(?:doesn't|does\s+not|don't|do\s+not)\s+(?:exist|support|accept|have|work)|not\s+supported|"
    r"deprecated|renamed|moved\s+to|only\s+works|is\s+missing|are\s+missing|wrong)\b|,\s+not\s+(?:a|an|the|in|from)\b",
    re.I,
)
# Words of a status report, not a diagnosis: "Perfect! Now let me run the tests".
_STATUS = re.compile(r"^(?:perfect|great|good|excellent|now\b|let\s+me|let's|i'll|i\s+will|next\b|done\b|ok\b)", re.I)


def _explanation(texts: list[str], failed: ToolCall, ctx: _Context, *, named: bool = True) -> str:
    """The agent's own account of what was wrong, from what it wrote between the failure and the fix: the
    first sentence that gives a cause and speaks of what failed (any cause, when ``named`` is false: a
    session about the error the user pasted); else its first words after the failure, when they speak of
    it ("Wrong key name" after "Unrecognized key")."""
    for text in texts:
        for sentence in _SENTENCES.split(" ".join(text.split())):
            sentence = sentence.strip()
            telling = 20 <= len(sentence) <= 240 and _CAUSE.search(sentence) and not _STATUS.match(sentence)
            if telling and (not named or _about(sentence, failed)):
                return ctx.clean(sentence, 160)
    for text in texts:
        first = _about(_first_sentence(text), failed)
        if first:
            return ctx.clean(first, 160)
    return ""


_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])|(?<=:)\s+(?=[A-Z])")


# Words that say nothing of what a failure was about, left out when an explanation is matched to it.
_PLAIN = frozenset(
    {
        "error", "errors", "failed", "fails", "failure", "failing", "the", "this", "that", "there", "these",
        "with", "from", "have", "need", "needs", "let's", "lets", "will", "would", "should", "could", "into",
        "than", "then", "when", "what", "which", "while", "also", "again", "just", "still", "file", "files",
        "command", "run", "running", "line", "code", "test", "tests", "output",
        "not", "and", "for", "are", "was", "were", "can", "has", "but", "its", "all", "any", "one", "you", "your",
        "our", "now", "too", "how", "why", "did", "does", "doesn", "don", "isn", "wasn", "been", "being",
        "didn", "couldn", "won", "they", "them",
    }
)  # fmt: skip


def _words(text: str) -> set[str]:
    """Content words of ``text`` cut to five letters, so `imports` meets `import` and `keys` meets `key`."""
    return {w.rstrip("s")[:5] for w in re.findall(r"[a-z][a-z0-9_]{2,}", text.lower()) if w not in _PLAIN}


def _about(sentence: str, failed: ToolCall) -> str:
    """``sentence`` when it shares a content word with the failed call's command or error, else "": the
    agent's next words are its explanation only when they speak of what failed ("Wrong key name" after
    "Unrecognized key"), not a status report that happens to come next."""
    if not sentence:
        return ""
    return sentence if _words(sentence) & _words(f"{failed.command} {failed.error}") else ""


def _unconfirmed(failed: ToolCall, later: list[ToolCall], said: str, ctx: _Context) -> str | None:
    """The fix of a failure the session never ran again: the first edit made after it, when it changed a
    file the error names (a traceback's file, a compiler's path) and no other program ran in between."""
    named = _named_files(failed)
    if not named:
        return None
    for call in later:
        if call.interrupted or call.ok is not True:
            continue
        if call.modifies:
            hit = [p for p in call.modifies if PurePosixPath(p).name in named]
            if not hit:
                return None
            if not (call.excerpt.strip() or any(call.change)):
                return None
            shown = ctx.rel.get(hit[0], PurePosixPath(hit[0]).name)
            parts = [said] if said else []
            parts.append(f"{_change_said(shown, call, ctx)} (not re-run)")
            return "; ".join(parts)
        if call.command and main_program(call.command) not in _LOOKUPS:
            return None
    return None


def _provenance(session: Session, stamp: str) -> dict[str, Any]:
    moment = _moment(stamp or session.ended or session.started)
    return {"source": "learned", "sessions": [session.id], "first_seen": moment, "last_seen": moment}


def _is_test(command: str) -> bool:
    program = main_program(command)
    if program == "test" and not any(
        w.endswith("/test") and w not in ("/bin/test", "/usr/bin/test") for w in _words_of(command)
    ):
        return False  # the shell's `test -f build/out`, not a runner (`script/test`, `./test` are scripts)
    return program in _TEST_PROGRAMS or program.endswith(" test") or program.startswith("test")


def program_kind(program: str) -> str:
    """"test", "tooling" (version control, packages, formatters, linters, the build, commit hooks) or ""."""
    if program in _TEST_PROGRAMS or program.endswith(" test"):
        return "test"
    if program in _FORMAT_PROGRAMS or program in _LINT_PROGRAMS or program in _BUILD_PROGRAMS:
        return "tooling"
    if program.split(" ", 1)[0] in _TOOLING_NAMES:
        return "tooling"
    return ""


_PATHISH = re.compile(r"^[\w@~.+-]*(?:/[\w@.+-]+)+/?$|^[\w@+-][\w@.+-]*\.[A-Za-z]\w{0,5}$")


def _paths_named(call: ToolCall) -> list[str]:
    words = [w.lstrip("@") for w in _words_of(call.command)] if call.command else []
    return [w for w in [*words, *call.paths] if _PATHISH.match(w.strip("'\"")) and not w.startswith("-")]


def _found_elsewhere(call: ToolCall, later: list[ToolCall], ctx: _Context) -> str | None:
    """A path the agent could not find, then found under another directory within the next few calls:
    "`bmad/bmm/agents/pm.md` is at `_bmad/bmm/agents/pm.md`". None when it never found it."""
    missing = [p for p in _paths_named(call) if PurePosixPath(p).name not in ("", ".", "..")]
    if not missing:
        return None
    for found in later[:6]:
        if found.ok is not True:
            continue
        for path in _paths_named(found):
            for wanted in missing:
                if "/" not in path.rstrip("/"):
                    continue  # found from another directory (`cd x && cat a.md`): where it is stays unsaid
                if PurePosixPath(path).name == PurePosixPath(wanted).name and path.rstrip("/") != wanted.rstrip("/"):
                    where = ctx.rel.get(path, _portable(path, ctx.bases))
                    was = ctx.rel.get(wanted, _portable(wanted, ctx.bases))
                    if where.endswith("/" + was) or where == was:
                        continue  # the same file named from another directory: nothing moved
                    return ctx.clean(f"`{was}` is not there: read `{where}`", TEXT_CHARS)
    return None


def _offline_run(failed: ToolCall, later: list[ToolCall]) -> ToolCall | None:
    """The run of the same program that worked offline after ``failed`` could not reach the network
    (`cargo run --offline` after crates.io did not resolve), or None: with no way around it seen, a
    failed connection is taken as passing."""
    program = main_program(failed.command).split(" ", 1)[0] if failed.command else ""
    if not program:
        return None
    for call in later[:20]:
        command = call.command or ""
        if call.ok is True and OFFLINE_RUN.search(command) and main_program(command).split(" ", 1)[0] == program:
            return call
    return None


FIX_WINDOW = 200  # calls after a failure where its fix is looked for; in the fixtures' sessions, within 30
SANDBOX_SOLUTION = "the agent's sandbox "  # how a sandbox lesson's solution starts: routing knows it by this
# What the agent's sandbox refuses: writes outside the workspace (`.git` included); and the network.
_SANDBOX_REFUSAL = re.compile(r"Operation not permitted|\bEPERM\b|Read-only file system", re.I)
# Codex quotes the command's own output inside its denial: `stderr: StreamOutput { text: "fatal: ..."`, or
# in older versions `..., stderr: bash: cannot create ...`.
_QUOTED = re.compile(r'.*(?:text: "|std(?:out|err): )')
_IN_GIT_DIR = re.compile(r"(?:^|[\s'\"/])\.git/")


def _refusal(output: str) -> str:
    """The line of ``output`` that says what the sandbox refused, out of any quoting of Codex's, or ""."""
    for line in output.splitlines():
        if _SANDBOX_REFUSAL.search(line):
            quoted = _QUOTED.match(line)  # anchored: one pass, however long the line
            said = line[quoted.end() :] if quoted else line
            # Codex's quote ends at the next `"` or literal `\n`; a quote inside the text, or a line that
            # quotes its own path (`mkdir: cannot create directory "x": ...`), keeps the rest.
            cut = said.split('"', 1)[0].split("\\n", 1)[0] if quoted else said
            said = (cut if _SANDBOX_REFUSAL.search(cut) else said).strip()
            if _SANDBOX_REFUSAL.search(said):
                return said
    return ""


def _escalated_run(failed: ToolCall, later: list[ToolCall]) -> ToolCall | None:
    """The same command run again outside the agent's sandbox, when that run worked, or None. Whether the
    sandbox was what stopped ``failed`` is for its output to say (a refused write, no network): a test
    that failed on its own merits and passed when escalated is no sandbox lesson."""
    if failed.escalated or not failed.command:
        return None
    for call in later[:10]:
        if call.escalated and _unpiped(call.command) == _unpiped(failed.command):
            return call if _passed(call) else None
    return None


# Classic programs and the modern ones a user's shell often aliases them to (Claude Code runs commands with
# the user's aliases). Output signed by the other one means the name ran it, with options of its own.
_ALIAS_TARGETS = {
    "ls": ("eza", "exa", "lsd"), "tree": ("eza", "exa", "lsd", "broot"), "cat": ("bat", "batcat"),
    "grep": ("rg", "ugrep", "ag"), "find": ("fd", "fdfind"), "du": ("dust", "dua", "gdu"), "df": ("duf",),
    "ps": ("procs",), "top": ("btop", "htop", "btm"), "vi": ("nvim", "vim"), "vim": ("nvim",),
    "diff": ("delta", "difft"), "rm": ("trash", "trash-put", "rip", "rmtrash"), "sed": ("sd",),
    "curl": ("xh", "curlie"), "man": ("tldr",), "less": ("bat",), "ping": ("gping", "prettyping"),
}  # fmt: skip
_SIGNED = re.compile(r"^(?:error:\s*)?\[?([\w-]+)(?: error)?\]?:\s(.*)", re.I)  # `lsd: ...`, `[bat error]: ...`


def _alias(call: ToolCall, error: str) -> str | None:
    """The way around a classic program that this shell aliases to another (`tree` printing lsd's errors),
    or None."""
    signed = _SIGNED.match(error.strip())
    if not signed or not call.command:
        return None
    other = signed.group(1).lower()
    missing = re.match(r"(\S+): No such file", signed.group(2))
    if missing and re.search(r"[^\W\d]", missing.group(1)):
        return None  # `eza: src/componets: No such file`: a guessed path, whatever lists it
    programs = programs_in(call.command)
    if other in programs:
        return None  # the command ran it itself
    for program in programs:
        if other in _ALIAS_TARGETS.get(program, ()):
            way = f"use {other}'s, or `command {program}` if {program} is installed"
            return f"`{program}` runs {other} here (a shell alias), whose options differ: {way}"
    return None


def _setup_fact(
    session: Session, failed: ToolCall, issue: str, error: str, solution: str | None, ctx: _Context
) -> Learning:
    """A failure that is a fact about the machine or the agent's setup, with the way around it the session
    found (`--offline`, a run outside the sandbox) if any: kept the first time."""
    fact = {"issue": issue, "error": ctx.clean(error, ERROR_CHARS)}
    if solution:
        fact["solution"] = ctx.clean(solution, ERROR_CHARS)
    fact.update(_provenance(session, failed.timestamp))
    return Learning("failure", "learned_from_failures", fact, f"{issue} {fact['error']}", [],
                    main_program(failed.command), gotcha=True)  # fmt: skip


def _killed_every_time(extraction: Extraction, killed: dict[str, list[ToolCall]], ctx: _Context) -> None:
    """A program the agent's sandbox killed in each of two or more runs, every run it had there: something
    it does is forbidden there, a fact about the setup and not a passing hiccup. Its fix is a run outside
    the sandbox that passed, or the same check run another way that passed (`python3 -m pytest tests` for
    `pytest tests`: sharing a path argument); else it has none."""
    killed = {program: runs for program, runs in killed.items() if len(runs) >= 2}
    if not killed:
        return
    session = extraction.session
    ran = [(call, main_program(call.command)) for thread in session.threads.values() for call in thread
           if call.command]  # fmt: skip
    for program, runs in killed.items():
        if sum(1 for call, name in ran if name == program and not call.escalated) > len(runs):
            continue  # it ran in the sandbox too: not every run was killed
        word = program.split()[-1]
        targets = {w for run in runs for w in _path_arguments(run.command)}
        outside = next((c for c, name in ran if name == program and c.escalated and _passed(c)), None)
        instead = next(
            (call for call, name in ran if name != program and word in name.split() and not call.escalated
             and _passed(call) and targets & set(_path_arguments(call.command))),
            None,
        )  # fmt: skip
        error = f'the agent\'s sandbox killed `{program}` in each of its {len(runs)} runs ("killed by a signal")'
        way = None
        if outside:
            way = f"{SANDBOX_SOLUTION}kills `{program}` here: run it outside the sandbox ({outside.escalated})"
        elif instead:
            way = f"{SANDBOX_SOLUTION}kills `{program}` here: `{ctx.first_line(instead.command, 80)}` worked"
        issue = ctx.clean(_describe_call(runs[0], ctx), ISSUE_CHARS)
        extraction.learnings.append(_setup_fact(session, runs[0], issue, error, way, ctx))


def _path_arguments(command: str) -> list[str]:
    """The words of a command's first part that name a file or folder: not a flag, not a redirection."""
    words = _words_of(command)
    for separator in ("|", "&&", "||", ";"):
        words = words[: words.index(separator)] if separator in words else words
    return [w for w in words if ("/" in w or "." in w) and not w.startswith("-") and not re.search(r"[<>]", w)]


# Codex's words when its sandbox killed a command, at the start of what the call said (after any header).
_KILLED = re.compile(r"\s*(?:failed in sandbox:\s*)?sandbox error: command was killed")


def _lookup_miss(call: ToolCall, error: str) -> bool:
    """A read-only look-up that found nothing: the agent guessing a path, not a project lesson. A compound
    of look-ups and helpers (`sleep 60 && ls -t out/ | head && tail log.txt`) is one too."""
    if not call.command:
        return False
    programs = programs_in(call.command)
    if not error and call.exit_code == 1 and programs and programs[-1] in ("grep", "rg", "egrep", "fgrep"):
        return True  # the search the command ends with selected no line (`git branch | rg -e '^x$'`)
    looks = main_program(call.command) in _LOOKUPS or (
        any(p in _LOOKUPS for p in programs) and all(p in _LOOKUPS or p in _TRIVIAL for p in programs)
    )
    return looks and (
        not error or bool(re.search(r"no such file|cannot access|can't read|not found|No matches", error, re.I))
    )


def _failures(extraction: Extraction, ctx: _Context) -> None:
    rel = ctx.rel
    session = extraction.session
    first_calls: dict[str, ToolCall] = {}  # error signature -> the call that first failed with it
    # error signature -> its sightings, and the thread and position where the calls after the first begin
    tries: dict[str, tuple[int, list[ToolCall], int]] = {}
    learned: dict[str, Learning] = {}  # error signature -> the failure learned for it
    killed: dict[str, list[ToolCall]] = {}  # program -> its runs the agent's sandbox killed
    for calls in session.threads.values():
        for position, call in enumerate(calls):
            if call.interrupted and call.ok is False:  # kept in --json, but no failure of the code
                text = ctx.first_line(call.error, ERROR_CHARS) or _describe_call(call, ctx)
                extraction.rejected.append(Rejected("failure", text, "the user interrupted or refused the call"))
                continue
            output = _failure_text(call)
            if output is None:
                continue
            extraction.failures_seen += 1
            if call.name in _WEB_TOOLS:
                reason = "a web look-up failed: the site's answer, not the project's"
                extraction.rejected.append(Rejected("failure", f"{call.name} {ctx.first_line(output, 120)}", reason))
                continue
            # The whole output is scrubbed before a line of it is picked: a key may span lines.
            scrubbed = redact(_unescape(output))
            later = calls[position + 1 : position + 1 + FIX_WINDOW]  # where its fix may be: bounded work
            issue = ctx.clean(_describe_call(call, ctx), ISSUE_CHARS)
            noise = harness_noise(scrubbed)
            unreachable = network_line(scrubbed) if call.command else None
            outside = _escalated_run(call, later)
            refused = (unreachable or _refusal(scrubbed)) if outside else ""
            if outside and refused:  # the sandbox was in the way, and the same command worked outside it
                blocked = "keeps .git read-only" if _IN_GIT_DIR.search(refused) else "refused it"
                blocked = "has no network" if unreachable else blocked
                way = f"{SANDBOX_SOLUTION}{blocked}: run it outside the sandbox ({outside.escalated})"
                extraction.learnings.append(_setup_fact(session, call, issue, refused, way, ctx))
                continue
            moved = _found_elsewhere(call, later, ctx) if noise and "wrong path" in noise else None
            if noise and moved is None:
                program = main_program(call.command) if _KILLED.match(_unheaded(scrubbed)) else ""
                if program[:1].isalpha():  # a name: not a backquoted `` `which pytest` `` or nothing
                    killed.setdefault(program, []).append(call)
                extraction.rejected.append(Rejected("failure", f"{issue} {ctx.first_line(scrubbed, 120)}", noise))
                continue
            error = pick_error(scrubbed) or ctx.first_line(_unheaded(scrubbed), ERROR_CHARS)
            offline = _offline_run(call, later) if unreachable else None
            if unreachable and offline is not None:  # no network here, and the session found the way around it
                change = _command_change(call.command, offline.command, ctx)
                extraction.learnings.append(_setup_fact(session, call, issue, unreachable, change, ctx))
                continue
            typo = command_typo(error) or network_failure(error)
            if typo:
                extraction.rejected.append(Rejected("failure", f"{issue} {ctx.clean(error, 120)}", typo))
                continue
            aliased = _alias(call, error)
            if aliased:  # a fact about this shell, kept the first time
                extraction.learnings.append(_setup_fact(session, call, issue, error, aliased, ctx))
                continue
            if moved is None and _lookup_miss(call, error):  # "": it printed nothing of its own
                moved = _found_elsewhere(call, later, ctx)
                if moved is None:
                    reason = "a look-up that found nothing: a guessed path or an empty search"
                    extraction.rejected.append(Rejected("failure", f"{issue} {ctx.clean(error, 120)}", reason))
                    continue
            if moved is not None:  # where a file really is: a lesson once another session guesses the same
                if moved not in {item.text for item in extraction.learnings}:
                    fact = {"text": moved, **_provenance(session, call.timestamp)}
                    extraction.learnings.append(Learning("fact", "patterns", fact, moved, recur_first=True))
                continue
            if not error or says_nothing(error):
                code = f"exit code {call.exit_code}" if call.exit_code not in (None, 0) else error or "failed"
                reason = f"the error says nothing useful: no more than how it ended ({code!r})"
                extraction.rejected.append(Rejected("failure", issue, reason))
                continue
            signature = error_signature(error)
            earlier = learned[signature].raw if signature in learned else None
            if earlier is not None and earlier.get("solution"):
                continue
            solution = _solution(call, signature, later, ctx)
            if earlier is not None:  # seen unsolved earlier in the session: this sighting may bring the fix
                first = first_calls[signature]  # not another script's same error: the same program, same target
                if _kind_key(first) == _kind_key(call) and _same_target(first, call):
                    if solution:
                        earlier["solution"] = ctx.clean(solution, ERROR_CHARS)
                    count, thread, start = tries[signature]
                    tries[signature] = (count + 1, thread, start)
                continue
            first_calls[signature] = call
            tries[signature] = (1, calls, position + 1)  # a pass anywhere after the first sighting ends it
            said = web_page_answer(error, scrubbed)  # as stored; the signature stays the line's, as later calls'
            raw: dict[str, Any] = {"issue": issue, "error": ctx.clean(said, ERROR_CHARS)}
            if solution:
                raw["solution"] = ctx.clean(solution, ERROR_CHARS)
            raw.update(_provenance(session, call.timestamp))
            files = [rel[p] for p in call.paths if p in rel]
            program = main_program(call.command) if call.command else ""
            learning = Learning(
                "failure", "learned_from_failures", raw, f"{raw['issue']} {raw['error']}", files, program,
                gotcha=bool(environment_gotcha(said)),
            )  # fmt: skip
            learning.fix_files = _fix_files(call, later, rel) if solution else []
            extraction.learnings.append(learning)
            learned[signature] = learning
    _killed_every_time(extraction, killed, ctx)
    # Tried again and again and never got past: an open problem the next session should know of, fix or not.
    for signature, (count, thread, start) in tries.items():
        first = first_calls[signature]
        checks = first.command and _program_rank(main_program(first.command)) <= 1  # not polling `gh pr checks`
        if checks and count >= STUCK_TRIES and signature in learned and not learned[signature].raw.get("solution"):
            key = _kind_key(first)
            if not any(_passed(c) and _kind_key(c) == key and _same_target(first, c) for c in thread[start:]):
                learning = learned[signature]
                learning.stuck = True
                said = f", unresolved after {count}{UNRESOLVED}"
                learning.raw["issue"] = ctx.clean(learning.raw["issue"], ISSUE_CHARS - len(said)) + said
                learning.text = f"{learning.raw['issue']} {learning.raw['error']}"


# A compaction summary's "Errors and fixes" section: items that start with "Error" (a bullet or a bold
# heading), each with a "Fix:" line.
_SUMMARY_SECTION = re.compile(
    r"Errors and [Ff]ixes:?\s*\n(?P<body>.*?)(?=\n\s*\d+\.\s+[A-Z][^\n]*:\s*\n|\n#+ |\Z)", re.S
)
_SUMMARY_ITEM = re.compile(r"^\s*(?:[-*]\s*)?(?:\*\*)?Error\b(?:\s*\d+)?\s*:?\s*(?:\*\*)?\s*:?\s*", re.M)
_SUMMARY_FIX = re.compile(r"^\s*[-*]?\s*(?:\*\*)?(?:Fix|Fixed|Solution|Resolution)(?:\*\*)?\s*:\s*(?P<fix>.+)$",
                          re.M | re.I)  # fmt: skip
# The other shape Claude Code writes: a bullet with a bold title, what went wrong, and a sentence with the fix
# ("- **Quoted heredoc**: `'EOF'` kept `$NAME` literal. Fixed by switching to unquoted `EOF`.").
_SUMMARY_BOLD = re.compile(r"^[ \t]{0,6}(?:[-*]|\d+\.)\s+\*\*(?P<title>[^*\n]{3,120})\*\*:?\s*(?P<rest>.*)$", re.M)
# Items about the conversation, not the project: a refused write, an interrupted call; and a typo the agent
# made and fixed (`build.clangd` for `build.clang`): a slip, not a lesson.
_CONVERSATION = re.compile(r"rejected|refused|denied|interrupt|permission|\btypos?\b", re.I)
_FIX_SENTENCE = re.compile(
    r"(?:^|(?<=[.!]\s))[^.\n]*\b(?:fix(?:ed)?|solution|resolved|resolution|workaround)\b.*?(?:[.!](?=\s|$)|$)",
    re.I | re.M,
)


_ERROR_WORD = re.compile(r"[A-Za-z][\w.-]{3,}")
# An error code or class name: one of these in common is enough to say two errors are the same.
_TELLING = re.compile(r"^(?:E[A-Z]{3,}|[A-Z]\w*(?:Error|Exception)|TS\d{4})$")
_COMMON_WORDS = {"error", "errors", "failed", "failure", "with", "from", "that", "this", "when", "file", "found",
                 "cannot", "could", "unable", "while", "command", "npm", "the"}  # fmt: skip


def _error_words(text: str) -> set[str]:
    return {w.strip(".-") for w in _ERROR_WORD.findall(text) if w.lower().strip(".-") not in _COMMON_WORDS}


def _solve_from_summary(extraction: Extraction, error: str, solution: str) -> bool:
    """Give ``solution`` (a summary's fix for ``error``) to the session's own unsolved failure with the same
    error, if there is one: it keeps its command and real error line, and gains the model's own account of the
    fix. Same means an error code or class name in common, or three words."""
    said = _error_words(error)
    for learning in extraction.learnings:
        if learning.section != "learned_from_failures" or learning.raw.get("solution") or not learning.program:
            continue
        shown = _error_words(f"{learning.raw.get('error', '')} {learning.raw.get('issue', '')}")
        common = said & shown
        if any(_TELLING.match(w) for w in common) or len({w.lower() for w in common}) >= 3:
            learning.raw["solution"] = solution
            learning.text = f"{learning.text} {solution}"
            return True
    return False


def _summary_items(body: str) -> list[tuple[str, str, str]]:
    """(its title, what went wrong, its fix) for each item of an "Errors and fixes" section that names a fix:
    items starting with "Error" and a "Fix:" line, else bullets with a bold title and a sentence saying the
    fix. Items about the conversation (a refused write, an interrupted call) are left out."""
    found: list[tuple[str, str, str]] = []
    starts = [m.start() for m in _SUMMARY_ITEM.finditer(body)]
    if starts:
        for begin, end in zip(starts, [*starts[1:], len(body)], strict=True):
            item = body[begin:end]
            head = _SUMMARY_ITEM.sub("", item.splitlines()[0], count=1).strip(" *\"'")
            fix = _SUMMARY_FIX.search(item)
            if head and fix and not _CONVERSATION.search(head):
                found.append((head, head, fix["fix"]))
        return found
    bold = list(_SUMMARY_BOLD.finditer(body))
    for match, after in zip(bold, [*bold[1:], None], strict=False):
        item = body[match.start("rest") : after.start() if after else len(body)]
        said = " ".join(item.split())
        fix = _SUMMARY_FIX.search(item) or _FIX_SENTENCE.search(said)
        if not fix or _CONVERSATION.search(match["title"]):
            continue
        text = fix["fix"] if "fix" in fix.groupdict() else fix.group(0)
        what = said[: fix.start()].strip() if fix.re is _FIX_SENTENCE else said.split(". ")[0]
        head = f"{match['title'].strip()}: {what or said}".strip(" :")
        found.append((match["title"].strip(), head, text.strip()))
    return found


def _summaries(extraction: Extraction, ctx: _Context) -> None:
    """Failure/fix pairs the model itself wrote into compaction summaries."""
    session = extraction.session
    summaries: list[str] = list(getattr(session, "summaries", None) or [])
    seen: set[str] = set()
    for summary in summaries:
        for section_match in _SUMMARY_SECTION.finditer(_unescape(summary)):
            for title, head, fix_text in _summary_items(section_match["body"]):
                error = ctx.clean(redact(head).strip('"'), ERROR_CHARS)
                signature = error_signature(error)
                if signature in seen:
                    continue
                seen.add(signature)
                solution = ctx.clean(redact(fix_text), ERROR_CHARS)
                if _solve_from_summary(extraction, error, solution):
                    continue  # the summary explains a failure the session's own calls show: one lesson
                raw: dict[str, Any] = {
                    "issue": ctx.clean(_cut(redact(title), 80), ISSUE_CHARS),
                    "error": error,
                    "solution": solution,
                    **_provenance(session, session.ended),
                }
                extraction.learnings.append(
                    Learning("failure", "learned_from_failures", raw, f"{raw['error']} {raw['solution']}")
                )


# Files that are no project's key files: scratch and temporary files, examples and sample data, fixtures.
_THROWAWAY = re.compile(
    r"(?:^|/)(?:tmp|temp|\.tmp|scratch|examples?|samples?|fixtures?|testdata|test_data|__fixtures__|__snapshots__|"
    r"mock[-_]?data|demo|sandbox|playground)(?:/|$)|(?:^|/)(?:test_file|scratch|tmp|temp|foo|bar|hello(?:_world)?)"
    r"[^/]*$|(?:^|/)[^/]*(?:example|sample|dummy)[^/]*\.(?:json|csv|txt|ya?ml|xml|md)$|\.(?:bak|orig|tmp|log|swp|rej)$|~$",
    re.I,
)


def _files(extraction: Extraction, ctx: _Context, root: str | None) -> None:
    rel = ctx.rel
    session = extraction.session
    counts: dict[str, int] = {}
    stamps: dict[str, str] = {}
    order: list[str] = []
    for call in session.calls:
        if call.ok is not True:
            continue
        for path in call.modifies:
            if path not in order:
                order.append(path)
            counts[path] = counts.get(path, 0) + 1
            stamps[path] = call.timestamp
        for path in call.deletes:
            counts.pop(path, None)  # a file the session deleted is no core file
            if path not in extraction.deleted_files:
                extraction.deleted_files.append(path)
    # Paths are reported in --json too, and a path can hold a token (`/tmp/ghp_.../x`).
    extraction.modified_files = [redact(p) for p in order]
    extraction.deleted_files = [redact(p) for p in extraction.deleted_files]
    inside = [p for p in order if p in counts and rel.get(p)]
    for path in order:
        if path in counts and not rel.get(path):
            extraction.rejected.append(Rejected("file", _cut(redact(path), PATH_CHARS), "outside the project"))
    throwaway = [p for p in inside if _THROWAWAY.search(rel[p])]
    # Learning in the project the session worked on (some of its files are here): a file that is not here
    # any more was deleted or moved since.
    here = bool(root) and any(os.path.lexists(os.path.join(str(root), rel[p])) for p in inside)
    gone = [p for p in inside if here and p not in throwaway and not os.path.lexists(os.path.join(str(root), rel[p]))]
    for path in throwaway:
        reason = "a scratch, example or fixture file"
        extraction.rejected.append(Rejected("file", ctx.clean(rel[path], PATH_CHARS), reason))
    for path in gone:
        extraction.rejected.append(Rejected("file", ctx.clean(rel[path], PATH_CHARS), "no longer in the project"))
    inside = [p for p in inside if p not in throwaway and p not in gone]
    ranked = sorted(inside, key=lambda p: -counts[p])
    for path in ranked[MAX_FILES_PER_SESSION:]:
        reason = f"more than {MAX_FILES_PER_SESSION} files in one session"
        extraction.rejected.append(Rejected("file", ctx.clean(rel[path], PATH_CHARS), reason))
    for path in [p for p in inside if p in ranked[:MAX_FILES_PER_SESSION]]:
        raw = {"path": ctx.clean(rel[path], PATH_CHARS), **_provenance(session, stamps[path])}
        extraction.learnings.append(Learning("file", "core_files", raw, raw["path"], [rel[path]]))


def _patterns(extraction: Extraction, ctx: _Context) -> None:
    """How this project checks an edit: its test, lint and build commands, as run, seen passing after an edit
    (``Run `PYTHONPATH=. pytest -q` after editing``). At most three a session, one per program.

    Tool orders alone ("Glob -> Read", "Read -> Edit") are true of every project and are not kept.
    """
    session = extraction.session
    found: dict[str, str] = {}
    for calls in session.threads.values():
        edited = False
        for call in calls:
            if not _passed(call):
                continue
            if call.modifies and call.name != "Bash":
                edited = True
            elif call.command and edited and len(found) < 3:
                program = program_of(call.command)
                if program in found or program not in _CHECK_PROGRAMS and not _is_test(call.command):
                    continue
                command = ctx.clean(_check_form(call.command), 100)
                if _is_test(call.command):
                    found[program] = f"Run `{command}` after editing: this project's tests run with it"
                else:
                    found[program] = f"Check edits with `{command}`: it passed after the changes"
                edited = False
    for text in found.values():
        raw = {"text": text, **_provenance(session, session.ended)}
        extraction.learnings.append(Learning("pattern", "effective_patterns", raw, text))


_SELECTORS = frozenset({
    "-k", "--keyword", "-t", "--testNamePattern", "--testPathPattern", "--grep", "-g", "--run", "-run", "--filter",
    "--deselect", "--tests", "--test", "--bin", "--example", "--bench",  # pytest, gradle, cargo's targets
})  # fmt: skip


def _check_form(command: str) -> str:
    """How a check is run here, without what it was run on this time: its settings, program and flags
    (`PYTHONPATH=. pytest -q`, `cargo clippy --all-targets -- -D warnings`), not `tests/test_x.py -k foo`."""
    words = _words_of(command)
    program = main_program(command).split()
    names = [w.rsplit("/", 1)[-1] for w in words]  # `./gradlew`, `.venv/bin/pytest` run as written
    if not program or program[0] not in names:
        return command.split("\n", 1)[0]
    start = names.index(program[0])
    head = [w for w in words[:start] if _ASSIGNMENT.match(w)]  # `PYTHONPATH=.`, not `cd web &&`
    kept = [*head, words[start], *program[1:]]
    rest = words[start + len(program) :]
    for position, word in enumerate(rest):
        if word in ("&&", "||", ";", "|"):
            break
        if word in _SELECTORS or (position and rest[position - 1] in _SELECTORS):
            continue  # what this run picked (`-k test_refund`), not how the project runs it
        if word.startswith("-") and word in kept and word not in ("-D", "-W"):
            continue  # once is how the project runs it: `--verbose --verbose` says nothing more
        if word.startswith("-") or (position and rest[position - 1] in ("-D", "-W", "-p", "--package")):
            kept.append(word)
    while kept and kept[-1] == "--":
        kept.pop()
    return " ".join(shlex.quote(w) if " " in w else w for w in kept)


def _technique(extraction: Extraction, ctx: _Context) -> None:
    rel = ctx.rel
    session = extraction.session
    main = session.threads.get("main", [])
    if not session.ended_well:
        if main:
            extraction.rejected.append(Rejected("technique", extraction.task, "the session did not end well"))
        return
    last_edit = max((i for i, c in enumerate(main) if c.ok and c.modifies), default=-1)
    if last_edit < 0:
        return
    checks = [c for c in main[last_edit + 1 :] if _passed(c) and c.command and program_of(c.command) in _CHECK_PROGRAMS]
    if not checks:
        extraction.rejected.append(
            Rejected("technique", extraction.task, "no passing test or check after the last edit")
        )
        return
    files = list(dict.fromkeys(rel[p] for c in main if c.ok for p in c.modifies if p in rel))
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    task = extraction.task or "the task"
    check = ctx.clean(checks[-1].command, 60)
    text = ctx.clean(f"{_cut(task, 80)}: changed {shown or 'files'}, verified with `{check}`", TEXT_CHARS)
    raw = {"text": text, **_provenance(session, checks[-1].timestamp)}
    extraction.learnings.append(Learning("technique", "successful_techniques", raw, text, files))


def _fix_files(failed: ToolCall, later: list[ToolCall], rel: dict[str, str]) -> list[str]:
    """The project files edited after a failure until its program next succeeded: where its fix lives."""
    key = _kind_key(failed)
    found: list[str] = []
    for call in later[:40]:
        if _passed(call) and _kind_key(call) == key:
            break
        if call.ok is True:
            found += [rel[p] for p in call.modifies if p in rel and rel[p] not in found]
    return found[:5]


def _rules(extraction: Extraction, ctx: _Context) -> None:
    """The user's standing rules and corrections, and what they said of their setup: best practices."""
    session = extraction.session
    for rule in user_rules(session.prompts):
        text = ctx.clean(rule, RULE_CHARS)
        raw = {"text": text, **_provenance(session, session.started or session.ended)}
        extraction.learnings.append(Learning("rule", "best_practices", raw, text))


_USER_SPEECH = re.compile(
    r"\b(?:please|can you|could you|we are|we're|i am|i'm|i get|we get|getting|help me|resolve|why (?:is|does|do))\b",
    re.I,
)
_ASKS_TO_FIX = re.compile(
    r"\b(?:errors?|failing|fails|failed|broken|crash(?:es|ed)?)\b.{0,60}\b(?:fix|resolve|solve|why|help)\b|"
    r"\b(?:fix|resolve|solve)\b.{0,60}\b(?:errors?|failing|fails|failure|crash)",
    re.I | re.S,
)


def _edits_after(session: Session, cause: str, ctx: _Context) -> list[str]:
    """The first edit the agent made after writing ``cause``: what it changed about it."""
    main = session.threads.get("main", [])
    start = next((i for i, c in enumerate(main) if cause[:40] in " ".join(str(c.said or "").split())), None)
    if start is None:
        return []
    for call in main[start:]:
        if call.ok is True and call.modifies:
            shown = ctx.rel.get(call.modifies[0], PurePosixPath(call.modifies[0]).name)
            return [_change_said(shown, call, ctx, 100)]
    return []


def _pasted(extraction: Extraction, ctx: _Context) -> None:
    """Errors the user pasted into a prompt (a traceback, a CI log): failures like any other. Their fix is
    the agent's own diagnosis, when it wrote one that speaks of the error; else none is claimed."""
    session = extraction.session
    said = [str(getattr(c, "said", "") or "") for c in session.threads.get("main", [])]
    known = {error_signature(str(i.raw.get("error", ""))) for i in extraction.learnings if i.kind == "failure"}
    for prompt in session.prompts[:20]:
        # The error is looked for where the user's paste starts; redacted past the cut, so the cut can't leave
        # part of a secret behind.
        scrubbed = redact(prompt[: MAX_TASK_CHARS + 4096])[:MAX_TASK_CHARS]
        lines = [line for line in scrubbed.splitlines() if line.strip()]
        if len(lines) < 2 and len(scrubbed) < 60:
            continue
        if harness_noise(scrubbed):
            continue
        # A pasted line that names no error class still counts when the user says it is an error.
        needed = 1 if _ASKS_TO_FIX.search(scrubbed) else 3
        # A terminal the user pasted: a command typed at a shell's prompt, and what it printed. No fix is
        # claimed: which of the agent's words came after the paste can't be told.
        for command, printed in terminal_runs(scrubbed):
            error = pick_error(printed) or next((x for x in printed.splitlines() if environment_gotcha(x)), "")
            error = web_page_answer(error, printed)
            if _is_pasted_error(error, known, needed):
                issue = f"run by the user: `{ctx.first_line(command, 70)}`"
                _add_pasted(extraction, ctx, issue, error.strip())
        # The user's own sentences ("we get these errors, please fix") are no error line; what they pasted is.
        pasted = "\n".join(line for line in lines if not _USER_SPEECH.search(line))
        error = pick_error(pasted)
        stored = web_page_answer(error, pasted)
        if not _is_pasted_error(stored, known, needed):
            continue
        # What the user said of it: their own line, else the first line that is not the error.
        said_lines = [line for line in lines if _USER_SPEECH.search(line) and line.strip() != error.strip()]
        others = [line for line in lines if line.strip() != error.strip() and _error_score(line.strip()) <= 1]
        asked = ctx.clean((said_lines or others or ["an error"])[0], 70)
        # When the task's first prompt is about this error, any cause the session found is its own.
        issue = f"reported by the user: {asked}"
        _add_pasted(extraction, ctx, issue, stored, said, named=prompt != session.task)


def _is_pasted_error(error: str, known: set[str], needed: int) -> bool:
    """Whether ``error``, a line the user pasted, is a failure to keep (a fact about the setup always is), and
    not one already kept; it is then known."""
    if not error or not (_error_score(error) >= needed or environment_gotcha(error)) or says_nothing(error):
        return False
    signature = error_signature(error)
    if command_typo(error) or network_failure(error) or signature in known:
        return False
    known.add(signature)
    return True


def _add_pasted(
    extraction: Extraction, ctx: _Context, issue: str, error: str, said: list[str] | None = None, *, named: bool = True
) -> None:
    """A failure the user pasted, with the cause the agent found for it in ``said``, if it wrote one (one that
    speaks of the error, when ``named``); with no ``said``, none is looked for."""
    session = extraction.session
    raw: dict[str, Any] = {"issue": ctx.clean(issue, ISSUE_CHARS), "error": ctx.clean(error, ERROR_CHARS)}
    probe = ToolCall(call_id="prompt", name="prompt", error=error)
    cause = _explanation(said or [], probe, ctx, named=named)
    if cause and _CAUSE.search(cause):
        raw["solution"] = _join(cause, *_edits_after(session, cause, ctx)) or cause
    raw.update(_provenance(session, session.started))
    text = f"{raw['issue']} {raw['error']}"
    gotcha = bool(environment_gotcha(error))
    files = _NAMED_FILE.findall(error)
    extraction.learnings.append(Learning("failure", "learned_from_failures", raw, text, files, gotcha=gotcha))


# The agent recording its lessons when asked to reflect (docs/reflect.md): work on our store, not the project's.
_REFLECTION_ANSWER = re.compile(r"(?:^|[\s/'\"])expertise['\"]?\s+add\s.*\s--session[\s=]", re.S)


def extract(session: Session, project_root: str | None) -> Extraction:
    if any(_REFLECTION_ANSWER.search(call.command) for call in session.calls if call.command):
        session = replace(session, calls=[c for c in session.calls if not _REFLECTION_ANSWER.search(c.command)])
    extraction = Extraction(session)
    root = os.path.realpath(project_root) if project_root else None
    rel: dict[str, str] = {}
    for call in session.calls:
        for path in (*call.paths, *call.modifies, *call.deletes):
            if path not in rel:
                relative = relative_path(path, session.cwd, root)
                if relative:
                    rel[path] = relative
    bases = tuple(sorted({b.rstrip("/") for b in (root, session.cwd) if b}, key=len, reverse=True))
    ctx = _Context(rel, bases)
    extraction.task = ctx.first_line(session.task, ISSUE_CHARS)
    _failures(extraction, ctx)
    _summaries(extraction, ctx)
    _pasted(extraction, ctx)
    _rules(extraction, ctx)
    _files(extraction, ctx, root)
    _patterns(extraction, ctx)
    _technique(extraction, ctx)
    return extraction
