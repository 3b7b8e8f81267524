"""A failure seen once with no fix is held back, and stored once it recurs in another session or is fixed."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from builders import ClaudeSession
from conftest import Cli, git

from expertise_kit import clock
from expertise_kit.learning import held as held_module
from expertise_kit.learning.held import held_path
from expertise_kit.project import find_project

ERROR = "KeyError: 'month'"


def _session(number: int, *, fixed: bool = False, error: str = ERROR) -> ClaudeSession:
    s = ClaudeSession(f"5e55104e-1d2c-4b1a-9f00-{number:012d}")
    s.prompt("Build the monthly PDF report")
    s.bash("python scripts/report.py", error, exit_code=1)
    if fixed:
        s.bash("pip install reportlab", "Successfully installed reportlab-4.2.0")
        s.bash("python scripts/report.py", "wrote report.pdf")
    s.say("done")
    return s


def _failures(project: Path) -> list[dict[str, Any]]:
    from ruamel.yaml import YAML

    found = []
    for path in (project / ".expertise").glob("*.yaml"):
        if path.name == "config.yaml":
            continue
        data = YAML(typ="safe").load(path.read_text())
        found += data.get("learned_from_failures") or []
    return found


def _learn(run: Cli, *paths: Path) -> dict[str, Any]:
    result = run("learn", *map(str, paths), "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _held_file(project: Path) -> dict[str, Any]:
    path = held_path(find_project(project))
    return json.loads(path.read_text())["entries"] if path.exists() else {}


def test_a_one_off_unfixed_failure_is_held_not_stored(project: Path, run: Cli, tmp_path: Path) -> None:
    before = git(project, "rev-list", "--count", "HEAD")
    data = _learn(run, _session(1).write(tmp_path / "a.jsonl"))
    assert [h["text"] for h in data["held"]] == [f"`python scripts/report.py` {ERROR}"]
    assert _failures(project) == []
    assert len(_held_file(project)) == 1
    # Nothing about it reached git: the hold is local bookkeeping, not reviewed expertise.
    log = git(project, "log", "--format=%s", f"HEAD~{int(git(project, 'rev-list', '--count', 'HEAD')) - int(before)}..")
    assert "failure" not in log
    human = run("learn", str(_session(2, error="ImportError: cannot import name 'Canvas'").write(tmp_path / "x.jsonl")))
    assert human.exit_code == 0 and "held 1 failure seen once with no fix" in human.stdout


def test_it_is_stored_when_it_recurs_in_another_session(project: Path, run: Cli, tmp_path: Path) -> None:
    _learn(run, _session(1).write(tmp_path / "a.jsonl"))
    data = _learn(run, _session(2).write(tmp_path / "b.jsonl"))
    assert data["held"] == []
    [failure] = _failures(project)
    assert failure["recurrence"] == 2
    assert [s[-1] for s in failure["sessions"]] == ["1", "2"]
    assert _held_file(project) == {}
    # A third sighting counts as any stored failure's does: never held again.
    _learn(run, _session(3).write(tmp_path / "c.jsonl"))
    assert _failures(project)[0]["recurrence"] == 3


def test_it_is_stored_with_its_fix_when_a_later_session_fixes_it(project: Path, run: Cli, tmp_path: Path) -> None:
    _learn(run, _session(1).write(tmp_path / "a.jsonl"))
    _learn(run, _session(2, fixed=True).write(tmp_path / "b.jsonl"))
    [failure] = _failures(project)
    assert "pip install reportlab" in failure["solution"]
    assert failure["recurrence"] == 2


def test_a_fixed_failure_is_stored_at_once(project: Path, run: Cli, tmp_path: Path) -> None:
    data = _learn(run, _session(1, fixed=True).write(tmp_path / "a.jsonl"))
    assert data["held"] == []
    assert [f.get("recurrence", 1) for f in _failures(project)] == [1]


def test_the_same_session_twice_stays_held_and_counts_once(project: Path, run: Cli, tmp_path: Path) -> None:
    path = _session(1).write(tmp_path / "a.jsonl")
    _learn(run, path)
    data = _learn(run, path)
    assert len(data["held"]) == 1 and _failures(project) == []
    # The session grew and found the fix: stored, seen in one session.
    _learn(run, _session(1, fixed=True).write(tmp_path / "a.jsonl"))
    [failure] = _failures(project)
    assert failure.get("recurrence", 1) == 1 and "pip install reportlab" in failure["solution"]


def test_two_sessions_in_one_batch_store_it(project: Path, run: Cli, tmp_path: Path) -> None:
    data = _learn(run, _session(1).write(tmp_path / "a.jsonl"), _session(2).write(tmp_path / "b.jsonl"))
    assert data["held"] == []
    assert _failures(project)[0]["recurrence"] == 2


def test_dry_run_holds_nothing(project: Path, run: Cli, tmp_path: Path) -> None:
    result = run("learn", "--dry-run", "--json", str(_session(1).write(tmp_path / "a.jsonl")))
    assert result.exit_code == 0 and len(json.loads(result.stdout)["held"]) == 1
    assert not held_path(find_project(project)).exists()


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b'{"version": 99, "entries": {}}', b"[]",
                                     b'{"version": 1, "entries": {"x": 3}}'])  # fmt: skip
def test_a_corrupt_held_file_only_costs_the_hold(project: Path, run: Cli, tmp_path: Path, content: bytes) -> None:
    path = held_path(find_project(project))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    data = _learn(run, _session(1).write(tmp_path / "a.jsonl"))
    assert len(data["held"]) == 1
    assert len(_held_file(project)) == 1  # rewritten whole
    _learn(run, _session(2).write(tmp_path / "b.jsonl"))
    assert _failures(project)[0]["recurrence"] == 2


def test_held_entries_expire_and_are_bounded(
    project: Path, run: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    monkeypatch.setattr(clock, "now", lambda: start)
    _learn(run, _session(1).write(tmp_path / "a.jsonl"))
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(days=held_module.EXPIRE_DAYS + 1))
    _learn(run, _session(2, error="ImportError: cannot import name 'Canvas'").write(tmp_path / "b.jsonl"))
    entries = _held_file(project)
    assert [e["raw"]["error"] for e in entries.values()] == ["ImportError: cannot import name 'Canvas'"]
    # The first one expired: its recurrence starts again instead of being stored.
    _learn(run, _session(3).write(tmp_path / "c.jsonl"))
    assert _failures(project) == []
    monkeypatch.setattr(held_module, "MAX_HELD", 2)
    for number, name in enumerate(("alpha", "beta", "gamma"), start=4):
        error = f"ModuleNotFoundError: No module named '{name}'"
        _learn(run, _session(number, error=error).write(tmp_path / "d.jsonl"))
    assert len(_held_file(project)) == 2


def test_worktrees_of_one_clone_share_the_hold(project: Path, run: Cli, tmp_path: Path) -> None:
    git(project, "add", "-A")
    git(project, "commit", "-qm", "setup", check=False)
    other = tmp_path / "wt"
    git(project, "worktree", "add", "-q", "-b", "feature", str(other))
    assert held_path(find_project(other)) == held_path(find_project(project))
    assert str(held_path(find_project(project))).startswith(str(project / ".git"))
