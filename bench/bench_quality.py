"""Replay a project's real sessions in time order and measure what learning keeps and what the hooks give back.

For each series: a fresh git repo with ``expertise init --agent <agent>``, so the hooks are the installed
ones. Before learning session k, the pre-task hook commands from the written settings file run as the
agent runs them (the event's JSON on stdin, the repo as cwd): once at session start, once with the
session's first prompt. Their ``additionalContext`` is scored against what session k then did (see
``quality_metrics``); then the installed post-session hook learns session k and credits the entries it
was given (helpful, harmful, ended well), as at the end of a real session. After the series, the store is read back
with ``expertise show --json`` and its entries are checked.

Run: python bench/bench_quality.py [--series NAME]... [DIR]... [--json] [--keep]
DIR is a held-out series: a directory of one project's session files (Claude Code or Codex .jsonl).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_env, expertise_argv, temp_repo  # noqa: E402
from quality_metrics import (  # noqa: E402
    Ratio,
    StoreFigures,
    edited_files,
    failing_programs,
    names_file,
    names_program,
    precision,
    programs_run,
    prompt_problem,
    recall,
    store_figures,
    touched_files,
)

from expertise_kit.learning.background import log_path, wait_idle  # noqa: E402
from expertise_kit.learning.transcripts import Session, read_transcript  # noqa: E402
from expertise_kit.vocab import agent as agent_spec  # noqa: E402

TRANSCRIPTS = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "transcripts"
SERIES = {
    "codex-test-framework": "codex/EdouardZemb+test-framework",
    "claude-cat-vent": "claude/maxnoobineating+UbuntuDevcontainer_Dotfiles/projects/"
    "-root-nand2tetris-volumn-projects-esp32-cat-vent",
}
_ROLLOUT_STAMP = re.compile(r"rollout-(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d)")
# Events whose text is scored: what the agent holds before it does anything. Issue 11 adds later prompts.
BEFORE_WORK = ("start", "prompt1")


# -- the series --------------------------------------------------------------------------------------


def _order_key(path: Path, session: Session) -> str:
    """Codex names a rollout by when it began; otherwise the session's first timestamp says."""
    found = _ROLLOUT_STAMP.search(path.name)
    if found:
        day, clock = found.group(1).split("T")
        return f"{day}T{clock.replace('-', ':')}"
    return session.started


def series_sessions(directory: Path) -> tuple[list[tuple[Path, Session]], list[str]]:
    """One project's sessions in time order, and notes on what was left out.

    Only single-session files are replayed: subagent files are read with their main session, and a
    chat-history file that holds many sessions (Aider) can't be learned one session at a time.
    """
    notes = [f"skipped {p.name}: one file holds many sessions" for p in sorted(directory.rglob("*.history.md"))]
    found: list[tuple[str, Path, Session]] = []
    for path in sorted(directory.rglob("*.jsonl")):
        if path.name.startswith("agent-") or "subagents" in path.parts:
            continue
        try:
            session = read_transcript(path)
        except Exception as exc:  # noqa: BLE001 - a reader failure is a finding, not a crash of the bench
            notes.append(f"skipped {path.name}: {exc}")
            continue
        found.append((_order_key(path, session), path, session))
    found.sort(key=lambda item: (item[0], item[1].name))
    return [(path, session) for _, path, session in found], notes


# -- the replay --------------------------------------------------------------------------------------


@dataclass
class Injection:
    text: str = ""
    notes: list[str] = field(default_factory=list)  # the hook's stderr lines, a non-zero exit


def _context_of(stdout: str) -> str:
    """``additionalContext`` from a hook's stdout, in either shape agents read."""
    texts = []
    for line in stdout.splitlines():
        if not line.strip():
            continue
        payload = json.loads(line)
        nested = payload.get("hookSpecificOutput") or {}
        texts.append(str(nested.get("additionalContext") or payload.get("additional_context") or ""))
    return "\n".join(text for text in texts if text)


class Replay:
    """A fresh project with the agent's hooks installed, driven as the agent would drive it."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.spec = agent_spec(agent)
        self.env = bench_env()
        self.root = temp_repo(self.env)
        self._cli("init", "--agent", agent)
        self.settings = json.loads((self.root / self.spec.settings).read_text())

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.env["HOME"], ignore_errors=True)

    def _cli(self, *args: str) -> str:
        done = subprocess.run(
            [*expertise_argv(), *args], cwd=self.root, env=self.env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"expertise {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def hook_commands(self, event: str) -> list[str]:
        commands = []
        for group in (self.settings.get("hooks") or {}).get(event) or []:
            for hook in group.get("hooks", [group]) if self.spec.style == "nested" else [group]:
                if hook.get("command"):
                    commands.append(str(hook["command"]))
        return commands

    def inject(self, session: Session, prompt: str | None = None) -> Injection:
        """What the installed pre-task hooks hand the agent at session start (no prompt) or on ``prompt``."""
        event = self.spec.start_event if prompt is None else self.spec.prompt_event
        if event is None:
            return Injection(notes=[f"{self.agent} has no prompt event"])
        payload: dict[str, Any] = {
            "session_id": session.id,
            "transcript_path": str(session.source),
            "cwd": str(self.root),
            "hook_event_name": event,
        }
        if prompt is None:
            payload["source"] = "startup"
        else:
            payload["prompt"] = prompt
        result = Injection()
        for command in self.hook_commands(event):
            done = subprocess.run(
                command, shell=True, cwd=self.root, env=self.env, input=json.dumps(payload),
                capture_output=True, text=True, check=False, timeout=120,
            )  # fmt: skip
            result.notes += [line for line in done.stderr.splitlines() if line.strip()]
            if done.returncode != 0:
                result.notes.append(f"{event} hook exited {done.returncode}")
            result.text = "\n".join(t for t in (result.text, _context_of(done.stdout)) if t)
        return result

    def end(self, session: Session) -> list[str]:
        """Run the installed post-session hooks on the session's end, as the agent would: they learn from
        the transcript and credit the entries this session was given. Returns their stderr lines."""
        event = self.spec.end_events[0] if self.spec.end_events else None
        if event is None:
            return [f"{self.agent} has no session-end event"]
        payload = {
            "session_id": session.id, "transcript_path": str(session.source), "cwd": str(self.root),
            "hook_event_name": event,
        }  # fmt: skip
        notes = []
        log = Path(log_path(str(self.root / ".expertise")))
        seen = log.stat().st_size if log.exists() else 0
        for command in self.hook_commands(event):
            done = subprocess.run(
                command, shell=True, cwd=self.root, env=self.env, input=json.dumps(payload),
                capture_output=True, text=True, check=False, timeout=600,
            )  # fmt: skip
            notes += [line for line in done.stderr.splitlines() if line.strip()]
            if done.returncode != 0:
                notes.append(f"{event} hook exited {done.returncode}")
        # The hook queued the session for its detached learner: its outcome is in the learner's log.
        if not wait_idle(str(self.root / ".expertise"), timeout=600):
            notes.append("the background learner did not finish within 600 s")
        if log.exists():
            with log.open(encoding="utf-8") as handle:
                handle.seek(seen)
                notes += [line.split(" ", 1)[-1] for line in handle.read().splitlines() if line.strip()]
        return notes

    def entries(self) -> list[tuple[str, dict[str, Any]]]:
        found = []
        for row in json.loads(self._cli("list", "--json")):
            domain = str(row.get("domain") or row.get("name"))
            shown = json.loads(self._cli("show", domain, "--json"))
            found += [(domain, record) for record in shown["entries"]]
        return found


@dataclass
class SessionScore:
    index: int
    source: Path
    session_id: str
    task_problem: str | None  # why the session's task is no real prompt, or None
    task_given: bool  # whether any of its prompts is a real one: a session with none has no task to find
    injected: dict[str, str]  # event label ("start", "prompt1", ...) -> the text the agent received
    fail_recall: Ratio  # over failing programs that had failed in an earlier session
    file_recall: Ratio  # over edited files that were edited in an earlier session
    precision: Ratio = field(default_factory=Ratio)  # injected bullets (start, prompt 1) related to the session
    learned: str = ""
    notes: list[str] = field(default_factory=list)

    def chars(self, *labels: str) -> int:
        return sum(len(self.injected.get(label, "")) for label in labels)

    @property
    def prompt_labels(self) -> list[str]:
        return [label for label in self.injected if label.startswith("prompt")]


@dataclass
class SeriesResult:
    name: str
    agent: str
    sessions: list[SessionScore] = field(default_factory=list)
    store: StoreFigures = field(default_factory=StoreFigures)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    root: Path | None = None

    def total(self, metric: Callable[[SessionScore], Ratio]) -> Ratio:
        summed = Ratio()
        for score in self.sessions:
            summed.add(metric(score))
        return summed

    def mean_chars(self, *labels: str) -> float | None:
        """Mean characters injected per session, over sessions after the first (the first meets an empty store)."""
        later = self.sessions[1:]
        return sum(s.chars(*labels) for s in later) / len(later) if later else None

    def mean_prompt_chars(self) -> float | None:
        """Mean characters injected over all the prompts replayed per session, after the first session."""
        later = self.sessions[1:]
        return sum(s.chars(*s.prompt_labels) for s in later) / len(later) if later else None

    def prompts_growth(self) -> float | None:
        """What all the replayed prompts of a session injected, over what its first prompt did: summed over
        the sessions after the first that had more than one prompt and got something at the first."""
        later = [s for s in self.sessions[1:] if len(s.prompt_labels) > 1 and s.chars("prompt1")]
        first = sum(s.chars("prompt1") for s in later)
        return sum(s.chars(*s.prompt_labels) for s in later) / first if first else None

    def real_tasks(self) -> Ratio:
        """Sessions whose task, as read, is a real prompt, over sessions that gave one at all."""
        given = [s for s in self.sessions if s.task_given]
        return Ratio(sum(1 for s in given if s.task_problem is None), len(given))

    def no_task_given(self) -> int:
        return sum(1 for s in self.sessions if not s.task_given)


_LEARNED = re.compile(r"learned (\d+) new, (\d+) seen again")
_CREDITED = re.compile(r"feedback: (\d+) helpful, (\d+) harmful, (\d+) ended well")


def _learned(notes: list[str]) -> tuple[str, list[str]]:
    """The post hook's report, shortened ("+3 =1 h1 x0 w2": added, seen again, helpful, harmful, ended
    well), and the notes that are not that report."""
    summary, rest = "", []
    for note in notes:
        learned, credited = _LEARNED.search(note), _CREDITED.search(note)
        if learned:
            summary = f"+{learned.group(1)} ={learned.group(2)}"
            if credited:
                summary += " h{} x{} w{}".format(*credited.groups())
        else:
            rest.append(note)
    return summary, rest


def replay_series(name: str, directory: Path, keep: bool = False, prompts: int = 1) -> SeriesResult:
    """Replay one series; ``prompts`` is how many of each session's prompts go through the prompt hook
    (scores use the first; the rest show how injection grows over a session)."""
    started = time.perf_counter()
    sessions, notes = series_sessions(directory)
    agent = "codex" if sessions and sessions[0][1].format == "codex" else "claude-code"
    result = SeriesResult(name, agent, notes=notes)
    if not sessions:
        result.notes.append(f"no single-session transcripts under {directory}")
        return result
    replay = Replay(agent)
    result.root = replay.root
    try:
        _replay(replay, sessions, result, prompts)
    finally:
        if not keep:
            replay.close()
    result.seconds = time.perf_counter() - started
    return result


def _replay(replay: Replay, sessions: list[tuple[Path, Session]], result: SeriesResult, prompts: int) -> None:
    failed_before: set[str] = set()
    edited_before: set[str] = set()
    for index, (path, session) in enumerate(sessions, 1):
        start = replay.inject(session)
        said = [replay.inject(session, text) for text in session.prompts[:prompts]]
        first = said[0] if said else Injection()
        before_work = "\n".join((start.text, first.text))
        failing, edited = failing_programs(session), edited_files(session)
        score = SessionScore(
            index=index,
            source=path,
            session_id=session.id,
            task_problem=prompt_problem(session.task or None),
            task_given=any(prompt_problem(text) is None for text in session.prompts),
            injected={"start": start.text} | {f"prompt{n}": i.text for n, i in enumerate(said, 1)},
            fail_recall=recall(before_work, failing & failed_before, names_program),
            file_recall=recall(before_work, edited & edited_before, names_file),
            precision=precision(before_work, touched_files(session), programs_run(session)),
            notes=start.notes + [note for i in said for note in i.notes],
        )
        score.learned, other = _learned(replay.end(session))
        score.notes += other
        result.sessions.append(score)
        failed_before |= failing
        edited_before |= edited
    result.store = store_figures(replay.entries())


# -- printing ----------------------------------------------------------------------------------------


def _chars(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


# (header, width, cell) per column. Issue 11 adds columns here (precision, a 10-prompt session).
SESSION_COLUMNS: list[tuple[str, int, Callable[[SessionScore], str]]] = [
    ("k", 3, lambda s: str(s.index)),
    ("session", 10, lambda s: s.session_id[:8]),
    ("task", 18, lambda s: s.task_problem or "real"),
    ("start", 7, lambda s: f"{s.chars('start'):,}"),
    ("prompt1", 7, lambda s: f"{s.chars('prompt1'):,}"),
    ("fail_recall", 13, lambda s: str(s.fail_recall)),
    ("file_recall", 15, lambda s: str(s.file_recall)),
    ("precision", 13, lambda s: str(s.precision)),
    ("learned", 20, lambda s: s.learned),
]
SERIES_COLUMNS: list[tuple[str, int, Callable[[SeriesResult], str]]] = [
    ("series", 22, lambda r: r.name),
    ("n", 3, lambda r: str(len(r.sessions))),
    ("fail_recall", 13, lambda r: str(r.total(lambda s: s.fail_recall))),
    ("file_recall", 15, lambda r: str(r.total(lambda s: s.file_recall))),
    ("precision", 15, lambda r: str(r.total(lambda s: s.precision))),
    ("start", 6, lambda r: _chars(r.mean_chars("start"))),
    ("prompt1", 7, lambda r: _chars(r.mean_chars("prompt1"))),
    ("both", 6, lambda r: _chars(r.mean_chars(*BEFORE_WORK))),
    ("entries", 7, lambda r: str(r.store.entries)),
    ("noise", 5, lambda r: str(len(r.store.harness_noise))),
    ("empty", 5, lambda r: str(len(r.store.says_nothing))),
    ("fix_action", 13, lambda r: str(r.store.with_action)),
    ("2dom", 4, lambda r: str(len(r.store.paths_in_two_domains))),
    ("near_dup", 12, lambda r: str(r.store.near_duplicates)),
    ("real_task", 12, lambda r: str(r.real_tasks())),
]


# Shown when more than the first prompt of each session is replayed (--prompts N).
PROMPTS_SESSION_COLUMN: tuple[str, int, Callable[[SessionScore], str]] = (
    "prompts",
    8,
    lambda s: f"{s.chars(*s.prompt_labels):,}",
)
PROMPTS_SERIES_COLUMN: tuple[str, int, Callable[[SeriesResult], str]] = (
    "prompts",
    8,
    lambda r: _chars(r.mean_prompt_chars()),
)
GROWTH_SERIES_COLUMN: tuple[str, int, Callable[[SeriesResult], str]] = (
    "all/p1",
    6,
    lambda r: "-" if r.prompts_growth() is None else f"{r.prompts_growth():.2f}",
)


def _table(columns: list[tuple[str, int, Callable[[Any], str]]], rows: list[Any]) -> list[str]:
    lines = ["  ".join(f"{header:<{width}}" for header, width, _ in columns).rstrip()]
    for row in rows:
        lines.append("  ".join(f"{cell(row):<{width}}" for _, width, cell in columns).rstrip())
    return lines


def print_block(result: SeriesResult, out: Callable[[str], None] = print) -> None:
    out(f"== {result.name} ({result.agent}, {len(result.sessions)} sessions, {result.seconds:.1f} s)")
    for line in _table(SESSION_COLUMNS, result.sessions):
        out("  " + line)
    store = result.store
    out(f"  store: {store.entries} entries ({store.failures} failures, {store.files} files)")
    out(f"  harness-noise failures: {len(store.harness_noise)}   errors that say nothing: {len(store.says_nothing)}")
    out(f"  failures whose solution names an action: {store.with_action}")
    out(
        f"  paths in two domains: {len(store.paths_in_two_domains)}   lessons in two domains: "
        f"{len(store.ids_in_two_domains)}   near-duplicates: {store.near_duplicates}"
    )
    out(
        f"  sessions whose task is a real prompt: {result.real_tasks()}   sessions with no prompt to find: "
        f"{result.no_task_given()}"
    )
    for example in (*store.harness_noise[:3], *(f"says nothing: {e}" for e in store.says_nothing[:3])):
        out(f"    e.g. {example}")
    for note in result.notes + [f"k={s.index}: {n}" for s in result.sessions for n in s.notes]:
        out(f"  note: {note}")


def _ratio(ratio: Ratio) -> dict[str, Any]:
    return {"hits": ratio.hits, "total": ratio.total, "share": ratio.share}


def as_json(result: SeriesResult) -> dict[str, Any]:
    """The figures as numbers, for comparing runs (before and after a change) by machine."""
    store = result.store
    return {
        "series": result.name,
        "agent": result.agent,
        "seconds": round(result.seconds, 2),
        "fail_recall": _ratio(result.total(lambda s: s.fail_recall)),
        "file_recall": _ratio(result.total(lambda s: s.file_recall)),
        "precision": _ratio(result.total(lambda s: s.precision)),
        "prompts_growth": result.prompts_growth(),
        "mean_chars": {
            "start": result.mean_chars("start"),
            "prompt1": result.mean_chars("prompt1"),
            "both": result.mean_chars(*BEFORE_WORK),
            "prompts": result.mean_prompt_chars(),
        },
        "store": {
            "entries": store.entries,
            "failures": store.failures,
            "files": store.files,
            "harness_noise": store.harness_noise,
            "says_nothing": store.says_nothing,
            "solution_names_action": _ratio(store.with_action),
            "paths_in_two_domains": store.paths_in_two_domains,
            "ids_in_two_domains": store.ids_in_two_domains,
            "near_duplicates": _ratio(store.near_duplicates),
        },
        "real_tasks": _ratio(result.real_tasks()),
        "no_task_given": result.no_task_given(),
        "sessions": [
            {
                "k": score.index,
                "id": score.session_id,
                "source": str(score.source),
                "task_problem": score.task_problem,
                "chars": {label: len(text) for label, text in score.injected.items()},
                "fail_recall": _ratio(score.fail_recall),
                "file_recall": _ratio(score.file_recall),
                "precision": _ratio(score.precision),
                "learned": score.learned,
                "notes": score.notes,
            }
            for score in result.sessions
        ],
        "notes": result.notes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="*", type=Path, help="held-out series: a directory of one project's sessions")
    parser.add_argument("--series", action="append", choices=sorted(SERIES), help="a built-in series (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per series instead")
    parser.add_argument("--keep", action="store_true", help="keep each replay's repo and print where it is")
    parser.add_argument("--prompts", type=int, default=1, metavar="N", help="replay each session's first N prompts")
    args = parser.parse_args(argv)
    if args.prompts > 1:
        SESSION_COLUMNS.insert(5, PROMPTS_SESSION_COLUMN)
        SERIES_COLUMNS.insert(8, PROMPTS_SERIES_COLUMN)
        SERIES_COLUMNS.insert(9, GROWTH_SERIES_COLUMN)
    chosen = [(name, TRANSCRIPTS / SERIES[name]) for name in (args.series or ([] if args.dirs else sorted(SERIES)))]
    chosen += [(directory.name, directory) for directory in args.dirs]
    results = []
    for name, directory in chosen:
        if not directory.is_dir():
            print(f"bench_quality: {directory} is not a directory", file=sys.stderr)
            return 1
        result = replay_series(name, directory, keep=args.keep, prompts=max(args.prompts, 1))
        results.append(result)
        if args.json:
            print(json.dumps(as_json(result), ensure_ascii=False))
            continue
        print_block(result)
        if args.keep and result.root:
            print(f"  repo kept at {result.root}")
        print()
    if not args.json:
        print("\n".join(_table(SERIES_COLUMNS, results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
