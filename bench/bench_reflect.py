"""What reflection (docs/reflect.md) costs, and what it puts in front of the agent.

1. The end-of-turn hook, side by side with `python -I -c pass`, both through `sh -c` as agents run hooks:
   with `reflect: off` (the hook installed, reflection off: every turn pays this), once the session was
   asked (every later turn of that session), and the first look at a real transcript (the dry run of the
   learner that finds the candidates; every turn pays it until the session is asked or ends).
2. On the real Claude Code and Codex series of ../shared: each session replayed in order, as it happens in
   use (the hook looks at each turn's end, the learner learns the session after its last): how many
   sessions would be asked and how often, the characters sent, and how many of the lessons the blind
   readers listed (bench/lessons/) were among the candidates the agent is shown, against how many the
   parser stored (and with the stand-in agent's lessons, where bench/lessons/<series>.reflect.json holds them).

3. ``--asks SERIES --out DIR``: for the stand-in agent (bench/lessons/<series>.reflect.json), each ask the hook
   would make in that series, as it happens in use: every session's transcript cut at each turn's end (before
   each prompt of the user, and at its end), looked at by the hook's own code in order, the learner learning
   each session after its last turn. Each ask is written to DIR as ``<session>-<ask>.txt``: the transcript,
   the line it was cut after, and the reason the agent was sent back with.

    python bench/bench_reflect.py [--runs N] [--asks SERIES --out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import IDENTITY, bench_env, expertise_argv, p50, row, scratch_dir, temp_repo  # noqa: E402
from bench_lessons import LESSONS, TRANSCRIPTS, entry_text, expresses, stand_in_lessons, transcripts_of  # noqa: E402

from expertise_kit import Expertise  # noqa: E402
from expertise_kit.agents.installer import hook_command  # noqa: E402
from expertise_kit.learning.reflect import _FAILURE_KINDS as FAILURE_KINDS  # noqa: E402
from expertise_kit.learning.reflect import _candidates  # noqa: E402


def _stop_payload(root: Path, transcript: Path, session: str) -> str:
    return json.dumps({
        "session_id": session, "transcript_path": str(transcript), "cwd": str(root),
        "hook_event_name": "Stop", "stop_hook_active": False,
    })  # fmt: skip


def _times(argv: list[str], stdin: str, runs: int, env: dict[str, str], root: Path) -> float:
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, cwd=root, check=True)
        samples.append(time.perf_counter() - began)
    return p50(samples)


def timing(runs: int) -> None:
    env = bench_env()
    root = temp_repo(env)
    subprocess.run([*expertise_argv(), "-C", str(root), "init", "--agent", "claude-code", "--reflect"],
                   check=True, env=env, capture_output=True)  # fmt: skip
    sized = sorted(TRANSCRIPTS.glob("claude/**/*.jsonl"), key=lambda p: p.stat().st_size)
    argv = ["sh", "-c", hook_command("reflect", "claude-code")]
    base = _times(["sh", "-c", f"{shlex.quote(sys.executable)} -I -c pass"], "", runs, env, root)
    print(f"{'python -I -c pass (through sh -c)':<44} {base * 1000:9.1f} ms   1.00x")
    if not sized:
        print("real transcripts not found (../shared): only the start-up is measured")
        return
    # The largest real sessions that would be asked and that would not: a look's cost grows with the transcript.
    asks = {p: any(c["kind"] in FAILURE_KINDS for c in _candidates(str(root / ".expertise"), str(p))) for p in sized}
    transcript = next(p for p in reversed(sized) if asks[p])
    quiet = next((p for p in reversed(sized) if not asks[p]), None)
    print(f"transcript: {transcript.relative_to(TRANSCRIPTS)} ({transcript.stat().st_size // 1024} KiB)")
    asked = _stop_payload(root, transcript, "bench-asked")
    done = subprocess.run(argv, input=asked, capture_output=True, text=True, env=env, cwd=root, check=True)
    assert '"decision": "block"' in done.stdout, f"the session was not asked: {done.stderr}"
    print(row("reflect hook, session already asked", _times(argv, asked, runs, env, root), base))
    first = [
        _times(argv, _stop_payload(root, transcript, f"bench-first-{n}"), 1, env, root)
        for n in range(max(3, runs // 4))
    ]  # fmt: skip
    print(row("reflect hook, a look that asks (dry-run learn)", statistics.median(first), base))
    if quiet is not None:
        print(f"transcript with nothing to ask: {quiet.relative_to(TRANSCRIPTS)} ({quiet.stat().st_size // 1024} KiB)")
        looks = [
            _times(argv, _stop_payload(root, quiet, f"bench-quiet-{n}"), 1, env, root) for n in range(max(3, runs // 4))
        ]  # fmt: skip
        print(row("reflect hook, a look with nothing to ask", statistics.median(looks), base))
    config = root / ".expertise" / "config.yaml"
    config.write_text(config.read_text().replace("reflect: failures", "reflect: off"))
    pre = json.dumps({"session_id": "bench-pre", "cwd": str(root), "hook_event_name": "SessionStart"})
    subprocess.run(["sh", "-c", hook_command("pre", "claude-code")], input=pre, text=True, env=env, cwd=root,
                   capture_output=True, check=True)  # the next prompt's hook refreshes the cache's config  # fmt: skip
    off = _stop_payload(root, transcript, "bench-off")
    print(row("reflect hook, `reflect: off`", _times(argv, off, runs, env, root), base))


def _stand_in(name: str) -> list[str]:
    """The lessons a model standing in for the agent wrote when asked (``bench_lessons.stand_in_lessons``)."""
    return [entry_text(lesson) for lessons in stand_in_lessons(name).values() for lesson in lessons]


def series(group: str) -> None:
    found = sorted(LESSONS.glob("*.json"))
    specs = [json.loads(p.read_text()) for p in found if not p.name.endswith((".verdicts.json", ".reflect.json"))]
    totals: dict[bool, dict[str, Any]] = {}
    for spec in specs:
        if not spec["series"].startswith(("claude-", "codex-")):
            continue  # Aider has no end-of-turn hook to send it back
        held = bool(spec.get("held_out"))
        if group != "all" and held != (group == "held-out"):
            continue
        paths = transcripts_of(spec)
        if not paths:
            continue
        root = reflecting_repo()
        sent = list(simulate(spec, root))
        asked = len({a.session for a in sent})
        chars = [len(a.reason) for a in sent]
        shown = [line for a in sent for line in a.reason.splitlines()]
        kit = Expertise(root)
        stored = [entry_text(e) for d in kit.list() for e in kit.show(d["domain"])["entries"]]
        lessons = spec.get("lessons") or []
        in_front = sum(1 for lesson in lessons if any(expresses(t, lesson) for t in shown))
        parsed = sum(1 for lesson in lessons if any(expresses(t, lesson) for t in stored))
        written = _stand_in(spec["series"])  # what a model standing in for the agent wrote when asked, if recorded
        together = sum(1 for lesson in lessons if any(expresses(t, lesson) for t in [*stored, *written]))
        label = "held out" if held else "tuned"
        mean = statistics.mean(chars) if chars else 0
        print(
            f"{spec['series']:<24} {label:<9} sessions {len(paths):>3}, asked {asked:>3} ({len(sent):>2} asks), "
            f"chars {mean:6.0f} mean "
            f"{max(chars, default=0):5d} max; lessons {len(lessons):>3}: among the candidates {in_front:>3}, "
            f"stored by the parser {parsed:>3}"
            + (f", with the stand-in agent's {len(written)} lessons {together:>3}" if written else "")
        )
        total = totals.setdefault(
            held, {"sessions": 0, "asked": 0, "chars": [], "lessons": 0, "front": 0, "parsed": 0, "with": 0, "of": 0}
        )
        if written:
            total["with"] += together
            total["of"] += len(lessons)
        total["sessions"] += len(paths)
        total["asked"] += asked
        total["asks"] = total.get("asks", 0) + len(sent)
        total["chars"] += chars
        total["lessons"] += len(lessons)
        total["front"] += in_front
        total["parsed"] += parsed
    for held, t in sorted(totals.items()):
        label = "held out" if held else "tuned"
        mean = statistics.mean(t["chars"]) if t["chars"] else 0
        print(
            f"{label}: asked in {t['asked']} of {t['sessions']} sessions ({t['asks']} asks), {mean:.0f} characters "
            f"each; of "
            f"{t['lessons']} lessons, {t['front']} among the candidates shown, {t['parsed']} stored by the parser"
            + (f"; series with a stand-in agent's lessons: {t['with']} of {t['of']} with them" if t["of"] else "")
        )


def _turn_ends(path: Path) -> list[int]:
    """The line counts at which a turn ended: before each prompt the user typed (Claude Code: a user record
    whose text is a request; Codex: a ``user_message`` event), and the whole file."""
    from expertise_kit.learning.transcripts.prompts import task_text

    ends, count = [], 0
    with path.open(encoding="utf-8", errors="replace") as handle:
        for count, line in enumerate(handle, 1):  # noqa: B007 - the last count is the file's length
            try:
                record = json.loads(line)
            except ValueError:
                continue
            payload = record.get("payload") if isinstance(record, dict) else None
            if isinstance(payload, dict) and payload.get("type") == "user_message":
                ends.append(count - 1)
            elif isinstance(record, dict) and record.get("type") == "user" and not record.get("isMeta"):
                content = (record.get("message") or {}).get("content")
                texts = [content] if isinstance(content, str) else [
                    c.get("text", "") for c in content or [] if isinstance(c, dict) and c.get("type") == "text"
                ]  # fmt: skip
                if any(task_text(t) for t in texts):
                    ends.append(count - 1)
    return sorted({n for n in [*ends, count] if n > 0})


@dataclass
class Ask:
    session: int  # the session's place in the series
    transcript: Path
    end: int  # the line the transcript was cut after
    lines: int  # the transcript's length
    reason: str


def reflecting_repo(mode: str = "failures") -> Path:
    """A temp project with `--reflect` installed and ``reflect: mode``."""
    env = bench_env()
    os.environ.update(IDENTITY)  # the learner commits in this process
    root = temp_repo(env)
    subprocess.run([*expertise_argv(), "-C", str(root), "init", "--agent", "claude-code", "--reflect"],
                   check=True, env=env, capture_output=True)  # fmt: skip
    if mode != "failures":
        from expertise_kit.config import set_reflect

        set_reflect(root / ".expertise", mode)
    return root


def simulate(spec: dict[str, Any], root: Path) -> Iterator[Ask]:
    """The asks a series' sessions get in use, in project ``root``: each session's transcript cut at each
    turn's end and looked at by the hook's own code, in order; each session learned after its last turn."""
    from expertise_kit.fast.reflectgate import first_look
    from expertise_kit.learning.reflect import reflect_stop

    kit = Expertise(root)
    cut = scratch_dir("expertise-asks-")
    for n, path in enumerate(transcripts_of(spec)):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        for end in _turn_ends(path):
            prefix = cut / path.name
            prefix.write_text("".join(lines[:end]), encoding="utf-8")
            look = first_look("claude-code", {"session_id": f"s-{n}", "transcript_path": str(prefix), "cwd": str(root)})
            sent: list[str] = []
            if look is not None:
                reflect_stop("claude-code", look, sent.append)
            yield from (Ask(n, path, end, len(lines), reason) for reason in sent)
        kit.learn([path])


def asks(name: str, out: Path, mode: str = "failures") -> None:
    """Each ask of a series written to ``out`` for the stand-in agent: ``<session>-<ask>.txt``."""
    spec = json.loads((LESSONS / f"{name}.json").read_text())
    out.mkdir(parents=True, exist_ok=True)
    made: dict[int, int] = {}
    for ask in simulate(spec, reflecting_repo(mode)):
        number = made[ask.session] = made.get(ask.session, -1) + 1
        (out / f"{ask.session}-{number}.txt").write_text(
            f"transcript: {ask.transcript.relative_to(TRANSCRIPTS)}\nlines: 1-{ask.end} of {ask.lines}\n\n"
            f"{ask.reason}\n",
            encoding="utf-8",
        )  # fmt: skip
    print(f"{sum(made.values()) + len(made)} asks in {len(made)} sessions written to {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--only", choices=("timing", "series"), default=None)
    parser.add_argument("--group", choices=("all", "tuned", "held-out"), default="all")
    parser.add_argument("--asks", metavar="SERIES", help="write the asks a series' sessions would get to --out")
    parser.add_argument("--out", type=Path, default=Path("asks"))
    parser.add_argument("--mode", choices=("failures", "always"), default="failures", help="`reflect:` for --asks")
    args = parser.parse_args(argv)
    if args.asks:
        asks(args.asks, args.out / args.asks, args.mode)
        return 0
    if args.only != "series":
        timing(args.runs)
    if args.only != "timing":
        if not TRANSCRIPTS.is_dir():
            print(f"real transcripts not found at {TRANSCRIPTS} (../shared)", file=sys.stderr)
            return 0
        series(args.group)
    return 0


if __name__ == "__main__":
    sys.exit(main())
