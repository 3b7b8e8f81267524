"""What a shell command does to files: `git mv` and `git rm`, found without running anything."""

from __future__ import annotations

import shlex
from functools import lru_cache

__all__ = ["file_effects", "program_of"]

_SEPARATORS = {"&&", "||", ";", "|", "&", "\n"}


def _segments(command: str) -> list[list[str]]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: fall back to plain whitespace
        tokens = command.split()
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token in _SEPARATORS or set(token) <= set(";&|"):
            segments.append([])
        else:
            segments[-1].append(token)
    return [segment for segment in segments if segment]


def file_effects(command: str) -> tuple[list[str], list[str]]:
    """(modified, deleted) paths named by `git mv SRC DST` and `git rm PATH...` in a shell command."""
    if "git" not in command or not (" mv" in command or " rm" in command):
        return [], []  # the common case, without tokenising: most commands are no git file moves
    modified: list[str] = []
    deleted: list[str] = []
    for words in _segments(command):
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]  # leading VAR=value assignments
        if len(words) < 3 or words[0] != "git":
            continue
        # Skip git's own options before the subcommand (git -C dir mv ...).
        index = 1
        while index < len(words) and words[index].startswith("-"):
            index += 2 if words[index] in ("-C", "-c") else 1
        if index >= len(words):
            continue
        sub, args = words[index], [w for w in words[index + 1 :] if not w.startswith("-")]
        if sub == "mv" and len(args) >= 2:
            deleted.extend(args[:-1])
            modified.append(args[-1])
        elif sub == "rm":
            deleted.extend(args)
    return modified, deleted


_PREFIXES = ("sudo", "time", "env", "nice", "timeout", "npx", "bunx", "pnpx")
_RUNNERS = ("uv", "poetry", "pipenv", "pdm", "hatch", "rye")  # `uv run X` runs X; `uv sync` is uv's own
_WITH_SUBCOMMAND = (
    "npm", "pnpm", "yarn", "bun", "go", "cargo", "make", "git", "docker", "dotnet", "mvn", "gradle", "gradlew",
    "mvnw", "mix", "gh", "bundle", "rails", "rake", "kubectl", "helm", "terraform", "pip", "pip3", "uv", "poetry",
    "deno", "composer", "flutter", "dart", "swift", "nx", "turbo",
)  # fmt: skip


@lru_cache(maxsize=4096)
def program_of(command: str) -> str:
    """The program a command runs, with a subcommand where that is what matters (`npm test`, `mix test`).

    Wrappers are seen through: `cd dir && X`, `npx X`, `uv run X`, `poetry run X`, `bundle exec X`.
    """
    for words in _segments(command):
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]
        while words:
            if words[0] in _PREFIXES:
                words = words[1:]
            elif words[0] in _RUNNERS and words[1:2] == ["run"] or words[0] == "bundle" and words[1:2] == ["exec"]:
                words = words[2:]
            else:
                break
        if not words or words[0] in ("cd", "export", "source", ".", "set", "pushd"):
            continue
        name = words[0].rsplit("/", 1)[-1]
        if name in ("python", "python3") and len(words) >= 3 and words[1] == "-m":
            return f"python -m {words[2]}"
        if name in _WITH_SUBCOMMAND:
            rest: list[str] = []
            skip = False
            for word in words[1:]:
                if skip:
                    skip = False
                elif word in ("-C", "-c", "-p", "--prefix", "--filter", "-F", "--cwd"):
                    skip = True  # an option's value is not the subcommand (`git -C dir push`)
                elif not word.startswith("-"):
                    rest.append(word)
            if name in ("npm", "pnpm", "yarn", "bun") and rest[:1] in (["exec"], ["dlx"]):
                return program_of(" ".join(words[words.index(rest[0]) + 1 :]))  # `pnpm exec vitest` runs vitest
            if name in ("npm", "pnpm", "yarn", "bun") and rest[:1] == ["run"]:
                rest = rest[1:]
            return f"{name} {rest[0]}" if rest else name
        return name
    return ""
