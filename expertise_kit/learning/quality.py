"""The gate a learning passes before it is stored: nothing empty, trivial or pure noise.

Also the few judgements the audit shares with the gate (what is harness noise, what says nothing, what
names an action), so a stored entry and a counted one are judged alike.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "rejection_reason", "harness_noise", "command_typo", "network_failure", "network_line", "says_nothing",
    "solution_names_action", "generic_pattern", "environment_gotcha", "machine_fact", "OFFLINE_RUN",
    "web_page_answer", "REQUEST_TOO_LARGE",
]  # fmt: skip

_LETTERS = re.compile(r"[^\W\d_]", re.UNICODE)
_SAME_TOOL_TWICE = re.compile(r"\b(\w+)\s*(?:->|→)\s*\1\b")
_SAYS_NOTHING = {
    "error", "failed", "failure", "exception", "unknown", "none", "null", "undefined", "exit code", "failed in sandbox",
}  # fmt: skip

# The agent's own tool protocol tripping, or the user stopping it: true of every project, a lesson of none.
# (marker, reason) pairs; markers are matched case-sensitively as the harnesses print them.
_HARNESS: tuple[tuple[str, str], ...] = (
    ("Sibling tool call errored", "a parallel tool call failed"),
    ("File has not been read yet", "the edit tool wants a read first"),
    ("has been modified since read", "the edit tool wants a fresh read"),
    ("exceeds maximum allowed tokens", "the read tool's size limit"),
    ("File content (", "the read tool's size limit"),
    ("String to replace not found", "the edit tool's old text did not match"),
    ("No changes to make: old_string and new_string are exactly the same", "an edit that changed nothing"),
    ("File does not exist", "the tool was given a wrong path"),
    ("InputValidationError", "the tool was called with bad parameters"),
    ("Invalid tool parameters", "the tool was called with bad parameters"),
    ("EISDIR", "the read tool was given a directory"),
    ("illegal operation on a directory", "the read tool was given a directory"),
    ("Failed to find expected lines", "the patch's context did not match"),
    ("apply_patch verification failed", "the patch's context did not match"),
    ("doesn't want to proceed", "the user refused the call"),
    ("[Request interrupted by user", "the user interrupted"),
    ("haven't granted it yet", "the user has not granted permission"),
    ("was rejected by the user", "the user refused the call"),
    ("aborted by user", "the user interrupted"),
    ("Permission to use", "the user has not granted permission"),
    ("<tool_use_error>", "a tool protocol error"),
    ("sandbox error: command was killed", "the agent's sandbox killed the command"),
    ("with execution error: Denied", "the agent's sandbox denied the call"),
    ("Tool permission stream closed", "the harness's permission prompt went away"),
    ("Tool permission request failed", "the harness's permission prompt went away"),
    ("MCP error -32001: user-cancel", "the user cancelled the call"),
    ("No such tool available", "the agent called a tool its harness does not have"),
    ("Claude Code is unable to fetch from", "a web look-up failed: the site's answer, not the project's"),
    # Gemini CLI's tools: its edit tool's old text not matching, its read tool given a wrong path.
    ("Could not find an exact match for 'old_string'", "the edit tool's old text did not match"),
    ("0 occurrences found for old_string", "the edit tool's old text did not match"),
    ("Expected 1 occurrence but found", "the edit tool's old text matched more than once"),
    ("no file was found at the specified path", "the tool was given a wrong path"),
    ("File not found: ", "the tool was given a wrong path"),
)
# Patterns of the same kind, where a marker alone would be too loose.
_HARNESS_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Found \d+ matches of the string to replace"), "the edit tool's old text matched more than once"),
    (re.compile(r"^command timed out after \d+ milliseconds", re.M), "the harness's time limit for one call"),
    (re.compile(r"\.git/[^\s'\"]*'?:? (?:Operation not permitted|Read-only file system)"),
     "the agent's sandbox keeps .git read-only"),
)
# The network to a remote host failed: a flaky connection or a sandbox without network, not a lesson about
# the project. (A refused connection to a local server is kept: "start the dev server first" is one.)
_TRANSIENT = re.compile(
    r"Could not resolve host|Temporary failure in name resolution|Network is unreachable|"
    r"Recv failure: Connection was reset|Connection reset by peer|getaddrinfo (?:EAI_AGAIN|ENOTFOUND)|"
    r"\bnpm (?:error|ERR!) code (?:EAI_AGAIN|ENOTFOUND|ECONNRESET|ETIMEDOUT)\b|"
    r"Failed to connect to (?!localhost|127\.0\.0\.1|\[?::1)[\w.-]+ port \d+|"
    r"\berror connecting to (?:[\w-]+\.)*github\.com\b|"  # gh's words; another program's may be a bad password
    # A model client that could not reach its provider, as litellm ("litellm.InternalServerError: ...
    # OpenAIException - Connection error.") and the openai client print it: no host named, nothing the next
    # session can act on. Only their own lines: a project's FooException says the same of its own server.
    r"\blitellm\.\w+: [^\n]*?(?:Exception|Error) - (?:Connection error|Request timed out)\.|"
    r"\bopenai\.API(?:Connection|Timeout)Error: (?:Connection error|Request timed out)\.|"
    r"unable to access '[^']+': (?:Operation timed out|Connection timed out|SSL_ERROR_SYSCALL)"
)
# A run that needs no network: how a session gets on with its work on a machine that has none. A failed
# connection fixed by one of these is a fact about the machine, not a passing outage.
OFFLINE_RUN = re.compile(
    r"(?:^|\s)(?:--offline|--no-index|--prefer-offline|--no-network|--network[= ]none)(?=[\s`'\"]|$)|"
    r"\b(?:GOPROXY=off|GOFLAGS=-mod=vendor|PIP_NO_INDEX=\S+|[A-Z_]*_OFFLINE=1)\b"
)
# A solution that runs the command outside the agent's sandbox: then a refused write or no network was the
# sandbox's, a fact about the setup the next session can act on, not noise.
OUTSIDE_SANDBOX = re.compile(
    r"outside (?:the|its|your) sandbox|require_escalated|with_escalated_permissions|dangerouslyDisableSandbox|"
    r"escalated permissions",
    re.I,
)
# A model provider's rate limit, quota or overload: wait and retry, nothing about the project. Spelled as
# the providers and their clients print it, so a project's own rate limiter or a `line 429` is not one.
_PROVIDER_BUSY = re.compile(
    r"\bRateLimitError\b|\b429 Too Many Requests\b|RESOURCE_EXHAUSTED|exceeded your current quota|"
    r"\b(?:OverloadedError|overloaded_error|rate_limit_error)\b|\"code\":\s*429\b"
)
# The shell could not parse the command line the agent typed: its typo, not the project's. Judged on the
# error line picked from the output only: a shell start-up file that fails to parse prints the same words
# above the real error of every command.
_TYPO = re.compile(
    r"^(?:\(eval\):\d*:? ?parse error near|(?:ba|z)?sh: (?:eval|-c): line \d+: (?:syntax error|"
    r"unexpected EOF while looking for matching))"
)
_EXIT_ONLY = re.compile(
    r"^(?:error:?\s*)?(?:command\s+)?(?:exit(?:ed)?(?: with)?(?: code| status)?|returned)\s*:?\s*-?\d+\b", re.I
)
# An action: a command in backticks, the new lines of an edit, or a sentence with a verb of change.
_ACTION = re.compile(
    r"`[^`]{2,}`|\bnew lines?:|\b(?:add(?:ed|ing)?|chang(?:ed|ing)|replac(?:ed|ing)|renam(?:ed|ing)|"
    r"remov(?:ed|ing)|install(?:ed|ing)?|set(?:ting)?|us(?:ed|e|ing)|pass(?:ed|ing)?|wrap(?:ped)?|mov(?:ed|ing)|"
    r"switch(?:ed)?|upgrad(?:ed|ing)|downgrad(?:ed|ing)|pinn?(?:ed)?|creat(?:ed|ing)|fix(?:ed|ing)?|"
    r"import(?:ed|ing)?|defin(?:ed|ing)|escap(?:ed|ing)|quot(?:ed|ing)|ran|run(?:ning)?|migrat(?:ed|ing)|"
    r"reset|restor(?:ed|ing)|configur(?:ed|ing)|export(?:ed|ing)?|convert(?:ed|ing)?|declar(?:ed|ing)|"
    r"return(?:ed|ing)?|call(?:ed|ing)?|guard(?:ed)?|check(?:ed|ing)?|skip(?:ped)?|made|make)\b",
    re.I,
)
_BARE = re.compile(r"^(?:(?:read [^;]+ first|edited [^;]+)(?:;\s*|$))+$", re.I)
# Tool-order habits true of any project: they teach an agent nothing about this one.
_GENERIC = re.compile(r"^(?:Grep|Glob|Search|Find|LS)\s*(?:->|→)\s*Read\b|^Read\s*(?:->|→)\s*(?:Edit|Write)\b", re.I)


# A JSON parser handed a web page: its error alone ("Expecting value: line 1 column 1 (char 0)") hides what the
# output shows. Only a parse error that speaks of JSON: Jest's "Unexpected token '<'" over a component's
# `<html lang="en">` is JSX left untransformed, not a web page.
_JSON_PARSE = re.compile(
    r"JSONDecodeError|Expecting value|not valid JSON|in JSON at position|JSON\.parse|(?:invalid|malformed) JSON|"
    r"(?:pars|decod)(?:e|ing) (?:the )?(?:response )?(?:as )?JSON|JSON (?:parse|decode)|"
    r"invalid character '<' looking for beginning of value", re.I)
_HTML_PAGE = re.compile(r"<!DOCTYPE html|<html[\s>]", re.I)
WEB_PAGE = "an HTML page came back where JSON was expected (a wrong base URL or route, or a login or error page)"


def web_page_answer(error: str, output: str) -> str:
    """``error``, the line picked from ``output``, said as a web page answering where JSON was expected when
    it is a JSON parse error and the output holds an HTML page; else ``error`` as it is."""
    if _JSON_PARSE.search(error) and _HTML_PAGE.search(output):
        return f"{WEB_PAGE}: {error}"
    return error


# A model's API turning a request down as too large (a pasted file, an image): one of its limits.
_TOO_LARGE = r"prompt is too long|request too large|image (?:exceeds|is too large)|too many (?:tokens|images)"
REQUEST_TOO_LARGE = re.compile(_TOO_LARGE, re.I)

# A failure that states a fact about the machine or the project's setup: a tool missing, a branch that is not
# there, a platform's own flags, a terminal needed, a key or a runtime version the machine lacks, a tool's or
# a model's limit. Worth keeping the first time.
_GOTCHAS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a program is missing", re.compile(
        r"command not found|: not found$|is not recognized as an internal or external command|"
        r"not installed|No such file or directory.{0,20}(?:bin/|exec)|executable file not found|"
        r"Unable to locate (?:package|executable)|"
        r"No module named '?(?:pip|venv|ensurepip|setuptools|pytest|distutils)\b|"
        r"could not find (?:a version|executable)|is not installed|not available on this (?:system|platform)|"
        r"\bvirtual ?env(?:ironment)?\b[^\n]{0,120}\bnot found|\bvenv[/\\][^\n]{0,120}\bnot found|"
        r"^No Python at |"  # a virtual environment not set up, or whose interpreter is gone
        r"xcrun: error: invalid active developer path",  # macOS without its command-line tools
        re.I | re.M)),
    ("a file system the setup keeps read-only", re.compile(  # the system's, not a path the project's code got wrong
        r"cannot create temp file for here.?doc|"
        r"(?:^|[\s'\"])/(?:usr|opt|etc|nix|System|tmp|var)/[^\s'\"]*'?:? Read-only file system|"
        r"Read-only file system: '/(?:usr|opt|etc|nix|System|tmp|var)/|"
        r"EACCES: permission denied, \w+ '/(?:usr|opt|Library)/", re.I | re.M)),  # npm's global folder
    ("a script without its executable bit", re.compile(  # `./dev.sh` run, refused: `bash dev.sh` works
        r"\b(?:zsh|bash|sh|fish)(?:: line \d+)?: (?:permission denied: \./[^\s:]+|\./[^\s:]+: Permission denied)",
        re.I)),
    # What the machine lacks for good, not a state one command ends (`gh auth login`, starting Docker).
    ("a key, credential or certificate the machine lacks", re.compile(
        r"Permission denied \(publickey|could not read (?:Username|Password) for 'https?://|"
        r"Host key verification failed|permission denied while trying to connect to the Docker daemon socket|"
        r"CERTIFICATE_VERIFY_FAILED|SELF_SIGNED_CERT_IN_CHAIN|unable to get local issuer certificate", re.I)),
    ("a runtime version the project can't use", re.compile(
        r"requires a different Python|The engine \"[\w.-]+\" is incompatible|\bEBADENGINE\b|"
        r"GLIBC_[\d.]+'? not found|"
        r"requires? (?:Python|node|ruby|go|java)\s*(?:version\s*)?[<>=~^]|unsupported (?:engine|python version)",
        re.I)),
    ("a deleted file git still tracks", re.compile(r"deleted from the file system but still tracked by git", re.I)),
    ("a branch or revision that is not there", re.compile(
        r"unknown revision|ambiguous argument '(?:main|master|origin/\w+|HEAD~?\d*)[.']|couldn't find remote ref|"
        r"src refspec \S+ does not match any|not a valid (?:object name|ref)|"
        r"does not appear to be a git repository", re.I)),
    ("a platform's own flags", re.compile(
        r"invalid command code|illegal option|invalid option -- |unrecognized option '--|"
        r"extra characters at the end of|usage: sed|not supported on (?:this|your) (?:platform|system|os)", re.I)),
    ("a web page answered where JSON was expected", re.compile(r"^" + re.escape(WEB_PAGE))),
    ("a script to be sourced, not run", re.compile(  # an activate or export script run as a program
        r"\b(?:should|must|needs? to|has to|is meant to|can only) be sourced\b(?!\s+(?:from|by|via|through))|"
        r"\bmust source this script\b|"
        r"\bsource (?:it|this script) instead\b", re.I)),
    ("a terminal is needed", re.compile(
        r"not a tty|requires? a (?:tty|terminal)|Inappropriate ioctl for device|input device is not a TTY|"
        r"stdin is not a terminal|Raw mode is not supported|must be run (?:in|from) a terminal|"
        r"could not open a new TTY|no tty present|EOFError: EOF when reading a line", re.I)),  # input() with no stdin
    ("a tool's or a model's limit", re.compile(
        r"context (?:length|window)|maximum context|exceeds the (?:available )?context size|" + _TOO_LARGE + "|"
        r"token limit|Argument list too long|"
        r"No space left on device|ENOSPC|out of memory|JavaScript heap out of memory|file too large|"
        r"LLM Provider NOT provided|model .{0,40}(?:not found|does not exist|not supported)|Unknown model|"
        r"\b(?:tier|plan|account|key|token) does not have access to .{0,80}?"
        r"(?:\bmodels?\b|\b(?:gpt|claude|gemini|qwen|llama|mistral|deepseek|codestral|grok)\b)|"
        r"not (?:allowed|permitted|authorized) to use (?:this|the) model|"
        r"externally-managed-environment|address already in use|EADDRINUSE", re.I)),
)


# What the machine lacks for good: true at any task here. Not a limit met once (a full disk, a port in use) nor
# a flag or URL one task got wrong.
_MACHINE_FACTS = frozenset({
    "a program is missing", "a file system the setup keeps read-only", "a script without its executable bit",
    "a key, credential or certificate the machine lacks", "a runtime version the project can't use",
    "a terminal is needed", "a script to be sourced, not run",
})  # fmt: skip


def machine_fact(error: str) -> bool:
    """Whether ``error`` states what the machine or the setup lacks (a program, a key): worth knowing at any
    task here, fix or not."""
    return environment_gotcha(error) in _MACHINE_FACTS


def environment_gotcha(error: str) -> str | None:
    """What kind of fact about the machine or setup ``error`` states, or None."""
    for kind, pattern in _GOTCHAS:
        if pattern.search(error):
            return kind
    return None


def _letters(text: str) -> int:
    return len(_LETTERS.findall(text))


def harness_noise(text: str) -> str | None:
    """Why ``text`` (an error, or a failure's issue and error) is the harness talking, or None."""
    for pattern, reason in _HARNESS_PATTERNS:
        if pattern.search(text):
            return f"harness noise: {reason}"
    for marker, reason in _HARNESS:
        if marker in text:
            return f"harness noise: {reason}"
    return None


def command_typo(error: str) -> str | None:
    """Why ``error`` (the error line picked from an output) is the agent's own unparsable command line."""
    return "harness noise: the agent's command line did not parse" if _TYPO.match(error.strip()) else None


def network_failure(error: str) -> str | None:
    """Why ``error`` (the error line picked from an output) is a failed connection to a remote host. Judged on
    that line only: a test log that mentions a reset connection may still fail for a reason of the code's."""
    if _PROVIDER_BUSY.search(error):
        return "transient: the model provider's rate limit or quota"
    return "transient: the network to a remote host failed" if _TRANSIENT.search(error) else None


def network_line(output: str) -> str | None:
    """The line of ``output`` that says a remote host could not be reached, stripped, or None."""
    found = _TRANSIENT.search(output)
    if found is None:
        return None
    start = output.rfind("\n", 0, found.start()) + 1
    end = output.find("\n", found.end())
    return output[start : end if end >= 0 else len(output)].strip()


def says_nothing(error: str) -> bool:
    """An error with nothing in it beyond a word like "failed" or an exit code."""
    stripped = error.strip()
    rest = _EXIT_ONLY.sub("", stripped).strip(" .:;,-")
    if rest != stripped and _letters(rest) < 4:
        return True
    return _letters(stripped) < 4 or stripped.lower().strip(" .:!") in _SAYS_NOTHING


def solution_names_action(solution: str) -> bool:
    """The solution says what changed: an edit's new lines, a command, a sentence with a verb of change.

    "edited the failing file" or "read X first" alone says no more than that something was done.
    """
    text = solution.strip()
    if not text or _BARE.match(text):
        return False
    return bool(_ACTION.search(text))


def generic_pattern(text: str) -> bool:
    return bool(_GENERIC.search(text.strip()))


def rejection_reason(kind: str, raw: dict[str, Any]) -> str | None:
    """Why ``raw`` should not be stored, or None when it may be."""
    if kind == "failure":
        error = str(raw.get("error") or "").strip()
        solution = str(raw.get("solution") or "")
        # Worked around: no network here (`--offline`), or the sandbox refused it and it worked outside.
        sandboxed = bool(OUTSIDE_SANDBOX.search(solution))
        offline = sandboxed or bool(OFFLINE_RUN.search(solution))
        noise = harness_noise(f"{error}\n{raw.get('issue') or ''}")
        noise = None if sandboxed and noise and "sandbox" in noise else noise  # only the sandbox's own refusals
        noise = noise or command_typo(error) or (None if offline else network_failure(error))
        if noise:
            return noise
        if says_nothing(error):
            return f"the error says nothing useful ({error!r})"
        if _letters(str(raw.get("issue") or "")) < 2:
            return "no description of what failed"
        return None
    if kind == "file":
        path = str(raw.get("path") or "")
        return "empty path" if not path.strip(" ./") else None
    text = str(raw.get("text") or "").strip()
    if _letters(text) < 8:
        return "too short to teach anything"
    if text.lower().startswith("successful combo") or _SAME_TOOL_TWICE.search(text):
        return "noise: a tool followed by itself"
    if generic_pattern(text):
        return "generic: a tool order true of every project"
    return None
