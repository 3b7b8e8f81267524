"""Claude Code transcripts: ``~/.claude/projects/<project>/<session>.jsonl`` (CLI 1.0.x to 2.x).

Records are linked by ``uuid``/``parentUuid`` into a tree: a rewind starts a new branch from an earlier
message, and a compaction boundary restarts the chain with ``logicalParentUuid`` pointing back. The
branch that ends with the last message written is the session as it finally went; the others are kept
as threads of their own, so every tool call is counted exactly once and "later" always means later on
the same branch. Subagents live in ``isSidechain`` records or in ``agent-*.jsonl`` files.
"""

from __future__ import annotations

import re
from array import array
from collections import deque
from pathlib import Path
from typing import Any

from expertise_kit.learning.quality import REQUEST_TOO_LARGE
from expertise_kit.learning.transcripts.lines import ODD_CONTENT, LineReport, json_lines
from expertise_kit.learning.transcripts.model import (
    MAX_ERROR_CHARS,
    MAX_PROMPT_CHARS,
    MAX_SAID_CHARS,
    MAX_SUMMARY_CHARS,
    Session,
    ToolCall,
    settle_session_id,
)
from expertise_kit.learning.transcripts.model import record_kind as _kind
from expertise_kit.learning.transcripts.prompts import is_compaction_summary, local_command, task_text
from expertise_kit.learning.transcripts.tools import tool_call

__all__ = ["read_claude", "claude_session_id", "subagent_files"]

# A tool use the user turned down: the CLI's words, at the start of its result.
_REJECTED = ("The user doesn't want to proceed", "The user doesn't want to take this action")
# Claude Code's own words for a call it did not run: they open the result, or end its first sentence.
_OPENS_NOT_RUN = ("[Request interrupted by user", *_REJECTED, "Permission to use")
_ENDS_NOT_RUN = ("but you haven't granted it yet", "was blocked. For security")


# What the user typed when turning down a tool use ("No, and tell Claude what to do differently"): their
# words, as much as a prompt's. Asking the user questions is turned down this way too, with the CLI's own
# words instead of theirs.
_REJECTED_SAYING = "To tell you how to proceed, the user said:"
_CLI_SAYING = ("The user wants to clarify these questions",)


def _rejection_reason(block: dict[str, Any], tool: str, version: Any) -> str:
    """What the user typed when turning down a tool use, or "".

    Only where the CLI's words can't be a tool's own: an MCP server's error text is the server's, and before
    Claude Code 2 a failed command's result was its raw output, which may open with the same words."""
    if block.get("is_error") is not True or not tool or tool.startswith("mcp__"):
        return ""  # a result to no call seen is a tool's we can't tell
    major = version.split(".", 1)[0] if isinstance(version, str) else ""
    if tool == "Bash" and not (major.isdigit() and int(major) >= 2):
        return ""
    text = _text_of(block.get("content"))
    if not text.startswith(_REJECTED):
        return ""  # a command's own output that quotes the CLI's words is no user's
    start = text.find(_REJECTED_SAYING)
    said = task_text(text[start + len(_REJECTED_SAYING) :]) if start >= 0 else ""
    return "" if said.startswith(_CLI_SAYING) else said


_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


# The model's API turned a request down as too large: what the session sent (a pasted file, an image) is over a
# limit the next session meets too. Its other errors (a login, an overload, a rate limit) are the CLI's own
# weather, and none is the agent's words.
_IMAGE = re.compile(r"\bimages?\b", re.I)
_LARGE_PROMPT = 20_000  # characters: a prompt this long was pasted, not typed


def _api_limit(record: dict[str, Any], content: list[Any], prompt: int, thread: str, stamp: str) -> ToolCall | None:
    """A failed call of ``claude`` for an API error that says the request was too large, else None; ``prompt``
    is the length of the prompt before it."""
    text = " ".join(str(b.get("text") or "") for b in content if isinstance(b, dict)).strip()
    details = record.get("errorDetails")
    detail = re.search(r'"message"\s*:\s*"([^"]+)"', details) if isinstance(details, str) else None
    error = text
    if detail:  # "prompt is too long: 202340 tokens > 200000 maximum", where the text says only the first part
        error = detail.group(1) if text.lower() in detail.group(1).lower() else f"{text}: {detail.group(1)}"
    if not REQUEST_TOO_LARGE.search(error) or not _IMAGE.search(error) and prompt < _LARGE_PROMPT:
        return None  # a context that filled up over a session: the CLI compacts it, nothing to remember
    if prompt >= _LARGE_PROMPT:
        error += f" (after a prompt of {prompt:,} characters)"
    call = tool_call(f"api-error-{record.get('uuid')}", "Bash", {"command": "claude"}, thread, stamp)
    call.ok, call.error = False, error[:MAX_ERROR_CHARS]
    return call


def _call_from(block: dict[str, Any], thread: str, timestamp: str) -> ToolCall:
    params = block.get("input")
    return tool_call(str(block.get("id") or ""), str(block.get("name") or "?"), params, thread, timestamp)


def _exit_code(text: str, extra: Any) -> int | None:
    if isinstance(extra, dict):
        for key in ("exitCode", "exit_code", "returnCode"):
            if isinstance(extra.get(key), int):
                return int(extra[key])
    head = text.lstrip()[:40]
    if head.startswith("Exit code "):
        number = head[len("Exit code ") :].split(maxsplit=1)[0] if len(head) > 10 else ""
        if number.lstrip("-").isdigit():
            return int(number)
    return None


# Claude Code's own words (a refusal, an interrupt) are the first line of the result they make up (in the
# fixtures, all 17: 16 open it, one ends its first sentence), so only that line, and at most this much of it,
# is looked at. Further on they are the command's or the file's words: a test failing with "Permission to use
# the admin API was not granted" failed, and a Read's result is a whole file.
_MARKER_HEAD = 1000


def _not_run(text: str) -> bool:
    """Whether a result is Claude Code saying it did not run the call (interrupted, refused, not allowed)."""
    first = text[:_MARKER_HEAD].lstrip().split("\n", 1)[0]
    return first.startswith(_OPENS_NOT_RUN) or any(words in first for words in _ENDS_NOT_RUN)


def _apply_result(block: dict[str, Any], call: ToolCall, extra: Any) -> None:
    text = _text_of(block.get("content"))
    if "tool_use_error>" in text:
        text = text.replace("<tool_use_error>", "").replace("</tool_use_error>", "")
    call.exit_code = _exit_code(text, extra)
    failed = bool(block.get("is_error")) or (call.exit_code not in (None, 0))
    if isinstance(extra, dict) and extra.get("interrupted") is True:
        call.interrupted = True
    if _not_run(text):
        call.interrupted = True
    call.ok = not failed
    if failed:
        if isinstance(extra, dict) and isinstance(extra.get("stderr"), str) and extra["stderr"].strip():
            text = extra["stderr"] + "\n" + text
        call.error = text[:MAX_ERROR_CHARS]
    elif "|" in call.command:
        call.output = text[:MAX_ERROR_CHARS]


_SIDECHAIN, _MESSAGE, _ASSISTANT, _ANSWER, _INTERRUPT, _ASIDE, _CONTINUES = 1, 2, 4, 8, 16, 32, 64
# uuids remembered for parent lookups. Parents are nearly always recent (the previous record, a rewind
# target, a compaction's last message); bounding the map keeps memory flat on endless transcripts.
UUID_WINDOW = 100_000


class _Reader:
    """One pass over the records, keeping only what the analysis needs, in compact form.

    Per record: its index in a uuid map, its parent's index in an array and a byte of flags; the tool
    calls and prompts only where a record has them. A 200 MB transcript is not held in memory.
    """

    def __init__(self) -> None:
        self.said = ""  # the agent's latest words, for the next tool call it makes
        self.index: dict[str, int] = {}
        self.recent: deque[str] = deque()
        self.parent = array("l")
        self.flags = bytearray()
        self.late_parents: dict[int, str] = {}  # parents that appear after their child (rare)
        self.line_of: dict[int, tuple[Path, int]] = {}  # where each of those records is, to name in a warning
        self.loops: list[int] = []  # records whose parentUuid closed a loop: read as branch starts
        self.calls_at: dict[int, list[ToolCall]] = {}
        self.prompt_at: dict[int, str] = {}
        self.rejected_at: dict[int, str] = {}  # what the user typed when turning down a tool use
        self.waiting: dict[str, ToolCall] = {}  # tool_use id -> call, until its result arrives
        self.agent_of: dict[int, str] = {}
        # One API message with parallel tool calls is written as a chain of assistant records, one per
        # block; each tool's result hangs off its own record, so only the first call's result continues
        # the conversation and the others look like dead-end branches. A continuation record is flagged,
        # and one holding calls points at the message's first record here, to share its thread.
        self.same_message: dict[int, int] = {}
        self.message_id = ""
        self.message_start = -1
        self.summaries: list[str] = []
        self.session_id = ""
        self.cwd: str | None = None
        self.first = ""
        self.last = ""
        self.prompt_chars = 0  # the length of the latest prompt, as the user sent it, until the agent works

    def feed(self, record: dict[str, Any], thread_hint: str | None, report: LineReport) -> None:
        uuid = record.get("uuid")
        if not isinstance(uuid, str):
            return  # summary, file-history-snapshot, queue operations, titles: outside the tree
        # Every record with a uuid is a node, whatever its type: CLI 2.1.x hangs the next message off a
        # `progress` or `attachment` record, and dropping those broke one real session into 73 fragments.
        kind = _kind(record)
        position = len(self.flags)
        self.index[uuid] = position
        self.recent.append(uuid)
        if len(self.recent) > UUID_WINDOW:
            self.index.pop(self.recent.popleft(), None)
        parent = record.get("parentUuid") or record.get("logicalParentUuid")
        if isinstance(parent, str):
            found = self.index.get(parent)
            self.parent.append(-1 if found is None or found == position else found)
            if found is None:
                self.late_parents[position] = parent
            if found is None or found == position:
                self.line_of[position] = (report.path, report.lines)
            if found == position:
                self.loops.append(position)  # its own parent
        else:
            self.parent.append(-1)
        flags = (_SIDECHAIN if record.get("isSidechain") else 0) | (_MESSAGE if kind in ("user", "assistant") else 0)
        flags |= _ASSISTANT if kind == "assistant" else 0
        self.flags.append(flags)
        if thread_hint:
            self.agent_of[position] = thread_hint
        self.session_id = self.session_id or str(record.get("sessionId") or "")
        self.cwd = self.cwd or (record.get("cwd") if isinstance(record.get("cwd"), str) else None)
        stamp = str(record.get("timestamp") or "")
        self.first = self.first or stamp
        self.last = stamp or self.last
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if content is not None and not isinstance(content, (list, str)):
            report.skip(report.lines, ODD_CONTENT)
            return  # kept in the tree, for the records that name it as their parent
        if kind == "assistant" and isinstance(message, dict):
            message_id = message.get("id")
            if isinstance(message_id, str) and message_id == self.message_id and thread_hint is None:
                self.flags[position] |= _CONTINUES
            elif isinstance(message_id, str):
                self.message_id, self.message_start = message_id, position
        if kind == "user":
            if isinstance(content, list):
                for block in content:
                    if not isinstance(block, dict):
                        continue
                    if block.get("type") == "tool_result":
                        call = self.waiting.pop(str(block.get("tool_use_id")), None)
                        if call is not None:
                            _apply_result(block, call, record.get("toolUseResult"))
                        said = _rejection_reason(block, call.name if call else "", record.get("version"))
                        if said and self.prompt_at:  # a correction of work asked for: never the task
                            self.rejected_at[position] = said[:MAX_PROMPT_CHARS]
                    elif block.get("type") == "text" and isinstance(block.get("text"), str):
                        self._user_text(position, block["text"], record)
            elif isinstance(content, str):
                self._user_text(position, content, record)
        elif kind == "assistant" and isinstance(content, list) and record.get("isApiErrorMessage"):
            call = _api_limit(record, content, self.prompt_chars, thread_hint or "", stamp)
            if call is not None:
                self.calls_at.setdefault(position, []).append(call)
        elif kind == "assistant" and isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use":
                    self.prompt_chars = 0  # work since the prompt: what fills the context now is not the paste
                    call = _call_from(block, thread_hint or "", stamp)
                    call.said, self.said = self.said, ""
                    self.waiting[call.call_id] = call
                    self.calls_at.setdefault(position, []).append(call)
                    if self.flags[position] & _CONTINUES:
                        self.same_message[position] = self.message_start
                elif block.get("type") == "text" and str(block.get("text", "")).strip():
                    self.flags[position] |= _ANSWER
                    self.said = " ".join(str(block["text"]).split())[:MAX_SAID_CHARS]

    def _user_text(self, position: int, text: str, record: dict[str, Any]) -> None:
        if record.get("isCompactSummary") or is_compaction_summary(text):
            self.summaries.append(text.strip()[:MAX_SUMMARY_CHARS])
            self.flags[position] |= _ASIDE
            return
        if text.lstrip().startswith("[Request interrupted"):
            self.flags[position] |= _INTERRUPT | _ASIDE
            return
        if record.get("isMeta"):
            self.flags[position] |= _ASIDE  # a caveat, or a slash command's expansion: the command said it
            return
        if "<command-name>" in text:
            # A slash command: its name and arguments are the task (`/fix the login bug`), unless it is
            # one of the CLI's own (`/model`, `/clear`).
            name = _COMMAND_NAME.search(text)
            args = _COMMAND_ARGS.search(text)
            if name and not local_command(name.group(1)):
                prompt = " ".join(m.group(1).strip() for m in (name, args) if m and m.group(1).strip())
                self.prompt_at.setdefault(position, prompt[:MAX_PROMPT_CHARS])
                return
            self.flags[position] |= _ASIDE
            return
        task = task_text(text)
        if task:
            self.prompt_chars = len(text)
            self.prompt_at.setdefault(position, task)
        elif position not in self.prompt_at:
            self.flags[position] |= _ASIDE

    def resolve_late_parents(self) -> None:
        for position, parent in self.late_parents.items():
            self.parent[position] = self.index.get(parent, -1)
        self._break_loops()

    def _break_loops(self) -> None:
        """Cut every loop of parentUuid links (a corrupt or hand-edited transcript), so each walk up ends.

        A parent found when its child is read comes earlier in the file, so a loop holds at least one late
        parent: the record naming a later one starts a branch instead. Each record is walked once.
        """
        parents = self.parent
        walk_of: dict[int, int] = {}  # record -> the walk that reached it first
        for start in self.late_parents:
            current = start
            while current >= 0 and current not in walk_of:
                walk_of[current] = start
                current = parents[current]
            if current < 0 or walk_of[current] != start:
                continue  # a root, or a record an earlier walk already took to one
            loop = [current]
            while parents[loop[-1]] != current:
                loop.append(parents[loop[-1]])
            cut = min(position for position in loop if parents[position] >= position)
            parents[cut] = -1
            self.loops.append(cut)

    def loop_warnings(self) -> list[str]:
        """One line per file whose parentUuid links loop, naming the first record that closed one."""
        by_file: dict[Path, list[int]] = {}
        for position in sorted(self.loops):
            path, line = self.line_of[position]
            by_file.setdefault(path, []).append(line)
        said = []
        for path, lines in by_file.items():
            many = len(lines) > 1
            what = f"{len(lines)} parentUuid loops, the first closed here" if many else "a parentUuid loop"
            said.append(f"{path}:{lines[0]}: {what}; the record closing {'each' if many else 'it'} starts a branch")
        return said


def _walk_up(parents: array[int], start: int) -> list[int]:
    chain: list[int] = []
    seen: set[int] = set()
    current = start
    while current >= 0 and current not in seen:
        seen.add(current)
        chain.append(current)
        current = parents[current]
    return chain


def _assign_threads(reader: _Reader, session: Session) -> None:
    reader.resolve_late_parents()
    flags, parents = reader.flags, reader.parent
    leaf = next((i for i in range(len(flags) - 1, -1, -1) if flags[i] & _MESSAGE and not flags[i] & _SIDECHAIN), -1)
    active = set(_walk_up(parents, leaf)) if leaf >= 0 else set()
    active.update([position for position, start in reader.same_message.items() if start in active])
    heads: dict[int, int] = {}

    def head_of(position: int) -> int:
        chain = []
        current = position
        while current >= 0 and current not in active and current not in heads:
            chain.append(current)
            current = parents[current]
        top = heads[current] if current in heads else (chain[-1] if chain else position)
        for member in chain:
            heads[member] = top
        return top

    names: dict[int, str] = {}
    for position in sorted({*reader.calls_at, *reader.prompt_at, *reader.rejected_at}):
        if position in reader.agent_of:
            thread = reader.agent_of[position]
        elif position in active:
            thread = "main"
        else:
            top = head_of(position)
            prefix = "sidechain" if flags[position] & _SIDECHAIN else "branch"
            thread = names.setdefault(top, f"{prefix}-{sum(1 for n in names.values() if n.startswith(prefix)) + 1}")
        for call in reader.calls_at.get(position, []):
            call.thread = thread
            session.calls.append(call)
        if position in active:
            session.prompts += [said[position] for said in (reader.rejected_at, reader.prompt_at) if position in said]
    # Branches: rewinds leave more than one main-line child under a message.
    children: dict[int, int] = {}
    for position, parent in enumerate(parents):
        main_line = flags[position] & _MESSAGE and not flags[position] & (_SIDECHAIN | _ASIDE)
        continues = flags[position] & _CONTINUES  # a parallel call, not a rewind
        if parent >= 0 and main_line and position not in reader.agent_of and not continues:
            children[parent] = children.get(parent, 0) + 1
    session.branches = 1 + sum(count - 1 for count in children.values() if count > 1)
    main_calls = [c for c in session.calls if c.thread == "main"]
    path = sorted(active)
    interrupted_at_end = any(flags[i] & _INTERRUPT for i in path[-2:])
    last_is_answer = bool(path) and bool(flags[path[-1]] & _ANSWER)
    session.ended_well = bool(main_calls) and main_calls[-1].ok is True and last_is_answer and not interrupted_at_end


def claude_session_id(path: Path) -> str:
    report = LineReport(path)
    for record in json_lines(path, report):
        if isinstance(record.get("sessionId"), str):
            return str(record["sessionId"])
        if report.lines > 20:
            break
    return ""


def subagent_files(path: Path, session_id: str) -> list[Path]:
    """`agent-*.jsonl` beside the session with its session id, and `<session>/subagents/*.jsonl`."""
    found: list[Path] = []
    nested = path.with_suffix("") / "subagents"
    if nested.is_dir():
        found.extend(sorted(nested.glob("*.jsonl")))
    if session_id and not path.name.startswith("agent-"):
        for candidate in sorted(path.parent.glob("agent-*.jsonl"))[:2000]:
            if candidate not in found and claude_session_id(candidate) == session_id:
                found.append(candidate)
    return found


def read_claude(path: Path, *, include_subagents: bool = True, label: Path | None = None) -> Session:
    """``label`` is the name the user gave when ``path`` is a private copy of it (a pipe read once)."""
    shown = label or path
    reader = _Reader()
    report = LineReport(shown)
    for record in json_lines(path, report):
        reader.feed(record, None, report)
    files = [shown]
    reports = [report]
    if include_subagents:
        for agent in subagent_files(shown, reader.session_id):
            agent_report = LineReport(agent)
            thread = "agent:" + agent.stem.removeprefix("agent-")
            for record in json_lines(agent, agent_report):
                reader.feed(record, thread, agent_report)
            files.append(agent)
            reports.append(agent_report)
    session = Session(
        id=reader.session_id or shown.stem,
        format="claude-code",
        source=shown,
        cwd=reader.cwd,
        started=reader.first,
        ended=reader.last,
        files_read=files,
        records=len(reader.flags),
        skipped_lines=sum(r.skipped for r in reports),
        warnings=[m for r in reports for m in r.messages],
        summaries=reader.summaries,
    )
    _assign_threads(reader, session)
    session.warnings += reader.loop_warnings()
    settle_session_id(session)
    return session
