"""history, diff, revert and blame against real repos."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Cli, git


def _add(run: Cli, domain: str, section: str, text: str) -> str:
    result = run("add", domain, section, text)
    assert result.exit_code == 0, result.output
    return result.stdout.split()[1]


def test_history_lists_revisions_with_entries(project: Path, run: Cli) -> None:
    first = _add(run, "database", "patterns", "Use UUID keys")
    _add(run, "api", "patterns", "Version endpoints")
    rows = json.loads(run("history", "--json").stdout)
    assert [r["subject"] for r in rows][:2] == [
        "expertise(api): add 1 entry by hand",
        "expertise(database): add 1 entry by hand",
    ]
    assert rows[1]["added"] == [first] and rows[1]["removed"] == [] and rows[1]["change"] == "manual"
    assert rows[-1]["subject"].startswith("expertise: set up")
    only_db = json.loads(run("history", "database", "--json").stdout)
    assert all("database" in r["domains"] for r in only_db)
    assert len(json.loads(run("history", "-n", "1", "--json").stdout)) == 1
    human = run("history").stdout.splitlines()
    assert human[0].split()[2:5] == ["manual", "+1", "-0"]


def test_history_works_out_hand_made_commits(project: Path, run: Cli) -> None:
    path = project / ".expertise" / "testing.yaml"
    path.write_text(path.read_text().replace("\npatterns: []", "\npatterns:\n  - Written in an editor"))
    git(project, "commit", "-q", "-am", "my own edit")
    row = json.loads(run("history", "testing", "--json").stdout)[0]
    assert row["by_hand"] is True
    assert row["author"] == "Ada Tester"
    assert row["domains"] == ["testing"]
    assert len(row["added"]) == 1


def test_diff_of_a_revision_and_of_the_work_tree(project: Path, run: Cli) -> None:
    entry = _add(run, "database", "patterns", "Use UUID keys")
    shown = run("diff", "HEAD")
    assert shown.exit_code == 0
    assert f"+ {entry} patterns: Use UUID keys" in shown.stdout
    path = project / ".expertise" / "database.yaml"
    path.write_text(
        path.read_text().replace("Use UUID keys", "Use ULID keys").replace('overview: "', 'overview: "Now: ')
    )
    worktree = json.loads(run("diff", "--json").stdout)
    changes = {(c["change"], c["id"]) for c in worktree[0]["entries"]}
    assert ("removed", entry) in changes
    assert any(kind == "added" for kind, _ in changes)
    assert worktree[0]["keys"]["overview"]["after"].startswith("Now: ")
    ranged = json.loads(run("diff", "HEAD~1..HEAD", "--json").stdout)
    assert ranged[0]["entries"][0]["id"] == entry


def test_diff_reports_changed_fields(project: Path, run: Cli) -> None:
    path = project / ".expertise" / "api.yaml"
    path.write_text(path.read_text().replace("\npatterns: []", "\npatterns:\n  - text: Retry 502s\n    recurrence: 2"))
    git(project, "commit", "-q", "-am", "seed")
    path.write_text(path.read_text().replace("recurrence: 2", "recurrence: 3"))
    shown = run("diff").stdout
    assert "~ " in shown and "recurrence: 2 -> 3" in shown


def test_revert_undoes_one_revision_as_a_new_commit(project: Path, run: Cli) -> None:
    keep = _add(run, "database", "patterns", "Keep me")
    drop = _add(run, "database", "patterns", "Drop me")
    _add(run, "database", "patterns", "Added later")
    target = git(project, "log", "-1", "--format=%H", "--skip=1").strip()
    result = run("revert", target[:10])
    assert result.exit_code == 0, result.output
    assert f"- {drop} patterns: Drop me" in result.stdout
    text = (project / ".expertise" / "database.yaml").read_text()
    assert "Drop me" not in text and "Keep me" in text and "Added later" in text
    trailers = git(project, "log", "-1", "--format=%(trailers:only,unfold)")
    assert "Expertise-Change: reverted" in trailers
    assert f"Expertise-Reverts: {target}" in trailers
    assert f"Expertise-Removed: {drop}" in trailers
    assert git(project, "status", "--porcelain") == ""
    # Reverting the revert brings it back, at the end of the list.
    again = run("revert", "HEAD")
    assert again.exit_code == 0, again.output
    assert "Drop me" in (project / ".expertise" / "database.yaml").read_text()
    assert keep


def test_revert_that_clashes_with_a_later_change_refuses_cleanly(project: Path, run: Cli) -> None:
    path = project / ".expertise" / "api.yaml"
    path.write_text(path.read_text().replace("\npatterns: []", "\npatterns:\n  - text: Retry 502s\n    recurrence: 1"))
    git(project, "commit", "-q", "-am", "seed by hand")
    seeded = git(project, "rev-parse", "HEAD").strip()
    path.write_text(path.read_text().replace("recurrence: 1", "recurrence: 2"))
    git(project, "commit", "-q", "-am", "bump by hand")
    before = path.read_bytes()
    head = git(project, "rev-parse", "HEAD")
    result = run("revert", seeded)
    assert result.exit_code == 1
    assert "cannot revert" in result.stderr and "changed since" in result.stderr
    assert result.stderr.count("\n") == 1
    assert path.read_bytes() == before
    assert git(project, "rev-parse", "HEAD") == head


def test_revert_refuses_unknown_and_file_creating_revisions(project: Path, run: Cli) -> None:
    assert "unknown revision" in run("revert", "nope").stderr
    dashed = run("revert", "--", "--all")
    assert dashed.exit_code == 1 and "bad revision '--all'" in dashed.stderr
    init = git(project, "log", "--format=%H", "--", ".expertise/config.yaml").split()[-1]
    result = run("revert", init)
    assert result.exit_code == 1 and "it created this file" in result.stderr
    readme = git(project, "log", "--format=%H", "--", "README.md").split()[-1]
    assert "changed no domain file" in run("revert", readme).stderr


def test_blame_names_the_revision_and_session(project: Path, run: Cli) -> None:
    entry = _add(run, "security", "best_practices", "Never log tokens")
    _add(run, "security", "patterns", "Something else")
    origin = git(project, "log", "-1", "--skip=1", "--format=%H").strip()
    data = json.loads(run("blame", "security", entry[:6], "--json").stdout)
    assert data["id"] == entry
    assert data["revision"]["commit"] == origin
    human = run("blame", "security", entry).stdout
    assert f"added in {origin[:12]}" in human
    missing = run("blame", "security", "ffffffff")
    assert missing.exit_code == 1 and "no entry 'ffffffff'" in missing.stderr


def test_blame_of_a_hand_made_entry_finds_the_hand_commit(project: Path, run: Cli) -> None:
    path = project / ".expertise" / "frontend.yaml"
    path.write_text(path.read_text().replace("\npatterns: []", "\npatterns:\n  - Hand written"))
    git(project, "commit", "-q", "-am", "by hand")
    sha = git(project, "rev-parse", "HEAD").strip()
    _add(run, "frontend", "patterns", "Later")
    shown = json.loads(run("show", "frontend", "--json").stdout)
    entry = next(e["id"] for e in shown["entries"] if e["text"] == "Hand written")
    data = json.loads(run("blame", "frontend", entry, "--json").stdout)
    assert data["revision"]["commit"] == sha and data["revision"]["by_hand"] is True
