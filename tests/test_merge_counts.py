"""Issue 25, point 5: counters add up across branches, worktrees and clones.

`helpful`, `harmful` and `recurrence` merge as each side's increase over the base, including when both
sides made the same change (`feedback ID --helpful` on each of two branches is two verdicts, not one).
A session learned on both sides still counts once: that change carries the session it came from.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, clone_with_driver, git

from expertise_kit import clock
from expertise_kit.document.domainfile import load_domain_file, parse_domain_text
from expertise_kit.document.splice import Append, Replace, apply_edits
from expertise_kit.document.yamlio import parse_yaml_text
from expertise_kit.store.scaffold import domain_template
from expertise_kit.versioning.merge import merge_domain_texts
from expertise_kit.versioning.quickmerge import merge_for_driver

DB = Path(".expertise/database.yaml")


def _merge(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _entry(root: Path, text: str) -> dict[str, Any]:
    doc = load_domain_file(root / DB, "database")
    for name in ("patterns", "learned_from_failures"):
        for raw in doc.loaded.plain[name] or []:
            if isinstance(raw, dict) and text in (raw.get("text"), raw.get("issue")):
                return dict(raw)
    raise AssertionError(f"no entry {text!r}")


def _dated(monkeypatch: pytest.MonkeyPatch, day: int) -> None:
    """Commits dated apart: two branches making the same change in the same second make one commit (same
    parent, tree, author and time), which git merges as a fast-forward without the driver."""
    for key in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(key, f"2026-11-{day:02d}T12:00:00Z")
    monkeypatch.setattr(clock, "now", lambda: datetime(2026, 11, day, 12, tzinfo=timezone.utc))


def _add(run: Cli, text: str) -> str:
    result = run("add", "database", "patterns", text, "--json")
    assert result.exit_code == 0, result.output
    return str(json.loads(result.stdout)["id"])


@pytest.mark.parametrize("verdict", ["--helpful", "--harmful"])
def test_feedback_on_two_branches_counts_twice(
    project: Path, run: Cli, verdict: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = _add(run, "Use a connection pool")
    git(project, "checkout", "-q", "-b", "other")
    _dated(monkeypatch, 2)
    assert run("feedback", entry, verdict).exit_code == 0
    git(project, "checkout", "-q", "main")
    _dated(monkeypatch, 3)
    assert run("feedback", entry, verdict).exit_code == 0  # the very same change on both sides
    _merge(project, "merge", "--no-edit", "other")
    assert _entry(project, "Use a connection pool")[verdict.removeprefix("--")] == 2
    assert git(project, "status", "--porcelain") == ""


def test_feedback_in_a_worktree_and_in_main_adds_up(project: Path, run: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = _add(run, "Use a connection pool")
    assert run("feedback", entry, "--helpful").exit_code == 0  # base: helpful 1
    tree = project.parent / "tree"
    git(project, "worktree", "add", "-q", "-b", "agent", str(tree))
    _dated(monkeypatch, 2)
    assert Cli(tree)("feedback", entry, "--helpful").exit_code == 0
    _dated(monkeypatch, 3)
    assert run("feedback", entry, "--helpful").exit_code == 0  # the same change in the main worktree
    _merge(project, "merge", "--no-edit", "agent")
    assert _entry(project, "Use a connection pool")["helpful"] == 1 + 1 + 1
    _dated(monkeypatch, 4)
    for _ in range(2):
        assert Cli(tree)("feedback", entry, "--harmful").exit_code == 0
    _merge(tree, "merge", "--no-edit", "main")  # and back: agent takes main's verdicts, nothing twice
    merged = _entry(tree, "Use a connection pool")
    assert (merged["helpful"], merged["harmful"]) == (3, 2)


@pytest.mark.parametrize("pull", [["pull", "-q", "--rebase"], ["pull", "-q", "--no-rebase", "--no-edit"]])
def test_feedback_in_two_clones_of_a_bare_remote_adds_up(
    project: Path, run: Cli, pull: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = _add(run, "Use a connection pool")
    remote = project.parent / "remote.git"
    git(project.parent, "init", "-q", "--bare", "-b", "main", str(remote))
    git(project, "push", "-q", str(remote), "main")
    first, second = (clone_with_driver(remote, project.parent / name) for name in ("one", "two"))
    for day, clone in enumerate((first, second), start=2):
        _dated(monkeypatch, day)
        assert Cli(clone)("feedback", entry, "--helpful").exit_code == 0
        assert Cli(clone)("feedback", entry, "--harmful").exit_code == 0
    git(first, "push", "-q", "origin", "main")
    _merge(second, *pull)
    git(second, "push", "-q", "origin", "main")
    _merge(first, *pull)
    for clone in (first, second):
        merged = _entry(clone, "Use a connection pool")
        assert (merged["helpful"], merged["harmful"]) == (2, 2)
    assert (first / DB).read_bytes() == (second / DB).read_bytes()


def _bump_recurrence(root: Path, to: int, *also: Append) -> None:
    path = root / DB
    loaded = parse_yaml_text(path.read_text(), path)
    raw = dict(loaded.plain["learned_from_failures"][0])
    edits = [Replace("learned_from_failures", 0, {**raw, "recurrence": to}), *also]
    path.write_text(apply_edits(loaded, edits))
    git(root, "commit", "-q", "-am", f"seen {to} times")


def test_recurrence_raised_by_hand_on_both_branches_adds_up(
    project: Path, run: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run("add", "database", "learned_from_failures", "deadlock", "--error", "deadlock detected")
    assert result.exit_code == 0, result.output
    _bump_recurrence(project, 3)  # base: 3
    git(project, "checkout", "-q", "-b", "other")
    _dated(monkeypatch, 2)
    _bump_recurrence(project, 4, Append("patterns", "Theirs"))
    git(project, "checkout", "-q", "main")
    _dated(monkeypatch, 3)
    _bump_recurrence(project, 4, Append("patterns", "Ours"))  # the same change to the entry: +1 each
    _merge(project, "merge", "--no-edit", "other")
    assert _entry(project, "deadlock")["recurrence"] == 5
    assert load_domain_file(project / DB, "database").loaded.plain["patterns"] == ["Ours", "Theirs"]


# -- the rule on both merge paths, without git ------------------------------------------------------------

PATH = Path(".expertise/database.yaml")


def _learned(text: str, *sessions: str, **extra: Any) -> dict[str, Any]:
    stamp = "2026-11-01T10:00:00Z"
    return {"text": text, "source": "learned", "sessions": list(sessions), "first_seen": stamp, "last_seen": stamp,
            **extra}  # fmt: skip


def _edited(text: str, *edits: Any) -> str:
    return apply_edits(parse_yaml_text(text, PATH), list(edits))


def _both_paths(base: str, ours: str, theirs: str) -> list[dict[str, Any]]:
    full = merge_domain_texts(base, ours, theirs, path=PATH, domain="database", line_cap=1000)
    quick = merge_for_driver((base, ours, theirs), domain="database", line_cap=1000)
    assert quick is not None and quick.text == full.text  # the quick path took it, with the same bytes
    return [parse_domain_text(full.text, PATH, "database").loaded.plain["patterns"][0]]


@pytest.mark.parametrize(
    ("before", "after", "want"),
    [
        ({"helpful": 1}, {"helpful": 2}, {"helpful": 3}),
        ({"harmful": 0}, {"harmful": 1}, {"harmful": 2}),
        ({"recurrence": 2}, {"recurrence": 3}, {"recurrence": 4}),
        ({"helpful": 1, "harmful": 1}, {"helpful": 2, "harmful": 2}, {"helpful": 3, "harmful": 3}),
    ],
)
def test_the_same_change_on_both_sides_counts_twice_on_both_paths(
    before: dict[str, int], after: dict[str, int], want: dict[str, int]
) -> None:
    base = _edited(domain_template("database"), Append("patterns", _learned("Pool connections", "s1", **before)))
    side = _edited(base, Replace("patterns", 0, _learned("Pool connections", "s1", **after)))
    (merged,) = _both_paths(base, side, side)
    assert {key: merged[key] for key in want} == want


def test_the_same_session_learned_on_both_sides_still_counts_once() -> None:
    base = _edited(domain_template("database"), Append("patterns", _learned("Pool connections", "s1")))
    side = _edited(base, Replace("patterns", 0, _learned("Pool connections", "s1", "s2", recurrence=2)))
    (merged,) = _both_paths(base, side, side)
    assert (merged["recurrence"], merged["sessions"]) == (2, ["s1", "s2"])
    ours = _edited(base, Replace("patterns", 0, _learned("Pool connections", "s1", "s2", recurrence=2, helpful=1)))
    (merged,) = _both_paths(base, ours, side)  # one session on both sides, feedback on one
    assert (merged["recurrence"], merged["helpful"]) == (2, 1)


def test_the_shared_layer_applies_a_change_it_may_hold_already_once() -> None:
    """``prefer="theirs"`` is the shared layer applying one worktree's change to the shared file, which may
    hold that change already (a publish tried again): the same change there counts once."""
    base = _edited(domain_template("database"), Append("patterns", _learned("Pool connections", "s1", helpful=1)))
    side = _edited(base, Replace("patterns", 0, _learned("Pool connections", "s1", helpful=2)))
    merged = merge_domain_texts(base, side, side, path=PATH, domain="database", line_cap=1000, prefer="theirs")
    assert parse_domain_text(merged.text, PATH, "database").loaded.plain["patterns"][0]["helpful"] == 2
