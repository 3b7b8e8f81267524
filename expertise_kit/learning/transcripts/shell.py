"""What a shell command does to files: `git mv` and `git rm`, found without running anything."""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["file_effects", "program_of", "programs_in"]

_SEPARATOR_CHARS = frozenset(";&|\n")  # `&&`, `||`, `;`, `|`, `&` and line ends, outside quotes
# `2>&1`, `>&2`, `&>log`: redirections, whose `&` is no command separator.
_REDIRECT = re.compile(r"\d*[<>]&(?:\d+|-)?|&>>?")
# `<<EOF`, `<<-'EOF'`, `<< "JS"`: the lines after it, up to the tag alone on a line, are data, not commands.
_HEREDOC = re.compile(r"<<-?(?!<)\s*(['\"]?)([A-Za-z_][\w-]*)\1")


def _segments(command: str) -> list[list[str]]:
    """The simple commands of a shell line, as unquoted words: split at `&&`, `||`, `;`, `|`, `&` and line
    ends outside quotes, with heredoc bodies left out. Quotes may sit inside a word (`-c user.name="A B"`)."""
    text = command.replace("\\\n", " ")
    segments: list[list[str]] = [[]]
    word: list[str] = []
    in_word = False  # a word was started, even an empty quoted one ('')
    quote = ""
    heredocs: list[str] = []  # tags whose bodies start at the next line end
    index = 0

    def end_word() -> None:
        nonlocal word, in_word
        if in_word:
            segments[-1].append("".join(word))
            word, in_word = [], False

    while index < len(text):
        char = text[index]
        if quote:
            index += 1
            if char == quote:
                quote = ""
            elif char == "\\" and quote == '"' and index < len(text) and text[index] in '"\\$`':
                word.append(text[index])
                index += 1
            else:
                word.append(char)
            continue
        redirect = _REDIRECT.match(text, index) if char in "<>&0123456789" else None
        heredoc = _HEREDOC.match(text, index) if text.startswith("<<", index) else None
        if heredoc and not text.startswith("<<<", index):
            end_word()
            heredocs.append(heredoc.group(2))
            index = heredoc.end()
        elif redirect and (char != "&" or redirect.group() != "&") and not (char.isdigit() and in_word):
            end_word()
            if redirect.group().startswith("&"):
                segments[-1].append(">")  # `&>log`: the file that follows is no subcommand
            index = redirect.end()
        elif char in "'\"":
            quote, in_word = char, True
            index += 1
        elif char == "\\" and index + 1 < len(text):
            word.append(text[index + 1])
            in_word = True
            index += 2
        elif char in " \t\r" or char in _SEPARATOR_CHARS:
            end_word()
            if char in _SEPARATOR_CHARS and segments[-1]:
                segments.append([])
            index += 1
            if char == "\n" and heredocs:
                index = _skip_bodies(text, index, heredocs)
                heredocs = []
        else:
            word.append(char)
            in_word = True
            index += 1
    end_word()  # an unclosed quote keeps what it held
    return [segment for segment in segments if segment]


def _skip_bodies(text: str, index: int, tags: list[str]) -> int:
    """Where the text resumes after the heredoc bodies that start at ``index``, one per tag in order."""
    for tag in tags:
        while index < len(text):
            end = text.find("\n", index)
            line = text[index:] if end < 0 else text[index:end]
            index = len(text) if end < 0 else end + 1
            if line.strip() == tag:
                break
    return index


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
_VALUED = ("-u", "-g", "-n", "-s", "-k", "--signal", "--kill-after", "--user", "--group", "--adjustment")
_DURATION = re.compile(r"\d+(?:\.\d+)?[smhd]?")
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
    programs = programs_in(command)
    return programs[0] if programs else ""


@lru_cache(maxsize=4096)
def programs_in(command: str) -> tuple[str, ...]:
    """The program of each simple command in ``command``, in order (`cd`, `export` and the like left out)."""
    found = (_program_words(words) for words in _segments(command))
    return tuple(program for program in found if program)


def _program_words(words: list[str]) -> str:
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]
    while words:
        if words[0] in _PREFIXES:
            words = words[1:]
            # its own options and values: `timeout -s KILL 60 X`, `nice -n 10 X`, `sudo -u app X`, `env A=1 X`
            while words and (words[0].startswith("-") or "=" in words[0] or _DURATION.fullmatch(words[0])):
                words = words[2:] if words[0] in _VALUED and len(words) > 1 else words[1:]
        elif words[0] in _RUNNERS and words[1:2] == ["run"] or words[0] == "bundle" and words[1:2] == ["exec"]:
            words = words[2:]
        else:
            break
    if not words or words[0] in ("cd", "export", "source", ".", "set", "pushd"):
        return ""
    name = words[0].rsplit("/", 1)[-1]
    if name in ("python", "python3") and len(words) >= 3 and words[1] == "-m":
        return f"python -m {words[2]}"
    if name in _WITH_SUBCOMMAND:
        rest: list[str] = []
        skip = False
        for word in words[1:]:
            if skip:
                skip = False
            elif word in ("-C", "-c", "-p", "--prefix", "--filter", "-F", "--cwd") or word in (">", ">>", "<", "2>"):
                skip = True  # an option's value, a redirect's file: not the subcommand (`git -C dir push`)
            elif not word.startswith(("-", ">", "<", "2>")):
                rest.append(word)
        if name in ("npm", "pnpm", "yarn", "bun") and rest[:1] in (["exec"], ["dlx"]):
            return _program_words(words[words.index(rest[0]) + 1 :])  # `pnpm exec vitest` runs vitest
        if name in ("npm", "pnpm", "yarn", "bun") and rest[:1] == ["run"]:
            rest = rest[1:]
        return f"{name} {rest[0]}" if rest else name
    return name
