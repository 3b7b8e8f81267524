"""Issue 25, point 4: a merge that must prune at the line cap says what it pruned.

Git shows the driver's stderr; the driver also records what it pruned in the repository's git dir, and
`expertise history` shows it on the commit that finished the merge (or, while the merge is still open,
as a row of its own). Learned entries go before hand-written ones, as on every write.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, clone_with_driver, git

from expertise_kit.document.domainfile import load_domain_file, parse_domain_text
from expertise_kit.document.entries import item_id, item_text

DB = Path(".expertise/database.yaml")


def _learned(text: str, session: str) -> str:
    stamp = "2026-11-01T10:00:00Z"
    return (
        f"  - text: {text}\n    source: learned\n    sessions: [{session}]\n"
        f"    first_seen: '{stamp}'\n    last_seen: '{stamp}'\n"
    )


def _write_entries(root: Path, tag: str, count: int, learned: int = 0) -> None:
    """What a person does with an editor: many hand-written patterns (and a few learned ones) at once."""
    path = root / DB
    lines = "".join(f"  - {tag} rule {n} keeps module {n} free of import cycles\n" for n in range(count))
    lines += "".join(_learned(f"{tag} lesson {n} about pools", f"{tag}-s{n}") for n in range(learned))
    path.write_text(path.read_text().replace("\npatterns: []\n", "\npatterns:\n" + lines))
    git(root, "commit", "-q", "-am", f"{tag}: {count} rules by hand")


def _entries(text: str) -> dict[str, tuple[str, bool]]:
    """id -> (text, learned) of every entry."""
    doc = parse_domain_text(text, DB, "database")
    found = {}
    for name, index, item in doc.entries():
        raw = doc.loaded.plain[name][index]
        found[item_id(name, item)] = (item_text(item), isinstance(raw, dict) and raw.get("source") == "learned")
    return found


def _run_git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def _named(stderr: str, gone: dict[str, tuple[str, bool]]) -> list[str]:
    """The ids of ``gone`` in the order the driver's stderr names them, each with the start of its text."""
    lines = [line for line in stderr.splitlines() if line.startswith("expertise:")]
    order = []
    for entry, (text, _) in gone.items():
        at = [n for n, line in enumerate(lines) if entry in line and text[:30] in line]
        assert at, f"{entry} ({text}) not named on stderr"
        order.append((at[0], entry))
    return [entry for _, entry in sorted(order)]


def _history(root: Path) -> list[dict[str, Any]]:
    result = Cli(root)("history", "--json")
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def test_two_branches_of_600_hand_written_entries_merge_naming_every_pruned_one(project: Path, run: Cli) -> None:
    git(project, "checkout", "-q", "-b", "other")
    _write_entries(project, "Theirs", 600)
    theirs = (project / DB).read_text()
    git(project, "checkout", "-q", "main")
    _write_entries(project, "Ours", 600, learned=4)
    ours = (project / DB).read_text()
    done = _run_git(project, "merge", "--no-edit", "other")
    assert done.returncode == 0, done.stderr
    merged = (project / DB).read_text()
    assert merged.count("\n") <= 1000
    kept = _entries(merged)
    gone = {k: v for k, v in {**_entries(ours), **_entries(theirs)}.items() if k not in kept}
    assert len(gone) > 200  # the cap took them
    order = _named(done.stderr, gone)  # every one named, id and text
    learned = [entry for entry in order if gone[entry][1]]
    assert len(learned) == 4 and order[:4] == learned  # learned entries go first, then hand-written ones
    assert f"{len(gone)} entries" in done.stderr and "expertise history" in done.stderr
    # `expertise history` shows the prune on the merge commit.
    head = git(project, "rev-parse", "HEAD").strip()
    row = _history(project)[0]
    assert row["commit"] == head and "pruned" in row["change"]
    assert {p["id"] for p in row["pruned"]} == set(gone)
    assert all(p["text"] == gone[p["id"]][0] and p["learned"] == gone[p["id"]][1] for p in row["pruned"])
    listing = run("history").output
    assert "pruned" in listing.splitlines()[0] and gone[order[-1]][0][:40] in listing


@pytest.mark.parametrize("pull", [["pull", "--rebase"], ["pull", "--no-rebase", "--no-edit"]])
def test_a_pull_between_clones_that_prunes_says_so_and_history_keeps_it(project: Path, pull: list[str]) -> None:
    config = project / ".expertise" / "config.yaml"
    config.write_text(config.read_text().replace("line_cap: 1000", "line_cap: 100"))
    git(project, "commit", "-q", "-am", "a small cap")
    remote = project.parent / "remote.git"
    git(project.parent, "init", "-q", "--bare", "-b", "main", str(remote))
    git(project, "push", "-q", str(remote), "main")
    first, second = (clone_with_driver(remote, project.parent / name) for name in ("one", "two"))
    _write_entries(first, "First", 60, learned=2)
    git(first, "push", "-q", "origin", "main")
    _write_entries(second, "Second", 60)
    before = {**_entries((first / DB).read_text()), **_entries((second / DB).read_text())}
    done = _run_git(second, *pull)
    assert done.returncode == 0, done.stderr
    kept = _entries((second / DB).read_text())
    gone = {k: v for k, v in before.items() if k not in kept}
    assert gone and (second / DB).read_text().count("\n") <= 100
    order = _named(done.stderr, gone)
    assert [gone[entry][1] for entry in order][:2] == [True, True]  # the two learned ones first
    row = _history(second)[0]
    assert row["commit"] == git(second, "rev-parse", "HEAD").strip()  # the merge commit, or the replayed one
    assert "pruned" in row["change"] and {p["id"] for p in row["pruned"]} == set(gone)
    git(second, "push", "-q", "origin", "main")
    assert _run_git(first, "pull", "-q").returncode == 0  # a fast-forward: nothing pruned here
    assert "pruned" not in _history(first)[0]


def test_a_merge_left_open_shows_its_prune_until_it_is_committed_or_aborted(project: Path) -> None:
    config = project / ".expertise" / "config.yaml"
    config.write_text(config.read_text().replace("line_cap: 1000", "line_cap: 100"))
    (project / "c.txt").write_text("base\n")
    git(project, "add", "c.txt")
    git(project, "commit", "-q", "-am", "a small cap")
    tree = project.parent / "tree"
    git(project, "worktree", "add", "-q", "-b", "agent", str(tree))
    _write_entries(tree, "Agent", 60)
    (tree / "c.txt").write_text("agent\n")
    git(tree, "commit", "-q", "-am", "agent's c")
    _write_entries(project, "Main", 60)
    (project / "c.txt").write_text("main\n")
    git(project, "commit", "-q", "-am", "main's c")
    for attempt in ("abort", "commit"):
        done = _run_git(project, "merge", "--no-edit", "agent")
        assert done.returncode != 0 and "CONFLICT (content): Merge conflict in c.txt" in done.stdout
        assert "pruned" in done.stderr
        (pending, *_) = _history(project)
        assert pending["commit"] is None and pending["deferred"] and "pruned" in pending["change"]
        assert pending["pruned"] and all(p["text"].startswith(("Main", "Agent")) for p in pending["pruned"])
        listing = Cli(project)("history").output.splitlines()
        assert listing[0].startswith("(merging)") and "pruned at the cap" in listing[1]
        if attempt == "abort":
            git(project, "merge", "--abort")
            assert all("pruned" not in row for row in _history(project))  # nothing was pruned after all
            continue
        (project / "c.txt").write_text("both\n")
        git(project, "commit", "-q", "-am", "merge agent")
        (row, *_) = _history(project)
        assert row["commit"] == git(project, "rev-parse", "HEAD").strip()
        assert {p["id"] for p in row["pruned"]} == {p["id"] for p in pending["pruned"]}
        assert load_domain_file(project / DB, "database").loaded.text.count("\n") <= 100


def test_a_prune_in_one_worktree_shows_in_the_others_history(project: Path) -> None:
    config = project / ".expertise" / "config.yaml"
    config.write_text(config.read_text().replace("line_cap: 1000", "line_cap: 100"))
    git(project, "commit", "-q", "-am", "a small cap")
    tree = project.parent / "tree"
    git(project, "worktree", "add", "-q", "-b", "agent", str(tree))
    _write_entries(project, "Main", 60)
    _write_entries(tree, "Agent", 60)
    done = _run_git(tree, "merge", "--no-edit", "main")  # merged in the linked worktree
    assert done.returncode == 0 and "pruned" in done.stderr, done.stderr
    assert _history(tree)[0]["pruned"]
    git(project, "merge", "-q", "--ff-only", "agent")  # the main worktree takes that merge commit
    (row, *_) = _history(project)
    assert row["commit"] == git(project, "rev-parse", "HEAD").strip()
    assert {p["id"] for p in row["pruned"]} == {p["id"] for p in _history(tree)[0]["pruned"]}


def test_the_prune_records_are_appended_and_cut_back_to_the_last_ones(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from expertise_kit.project import find_project
    from expertise_kit.versioning import mergerecord

    monkeypatch.setattr(mergerecord, "_KEEP", 3)
    location = find_project(project).git
    assert location is not None
    target = location.common_dir / mergerecord.PRUNED_FILE
    sizes = []
    for n in range(9):
        mergerecord.record_merge_prune(location, path=f".expertise/d{n}.yaml", domain="database", cap=50,
                                       pruned=[], text=f"text {n}\n")  # fmt: skip
        sizes.append(len(target.read_text(encoding="utf-8").splitlines()))
        if n == 4:  # the file has grown past the size it is cut back at
            monkeypatch.setattr(mergerecord, "_CUT_BYTES", target.stat().st_size)
    assert sizes == [1, 2, 3, 4, 5, 3, 4, 5, 3]  # appended while under the size, then cut back to the last 3
    assert [r.path for r in mergerecord.merge_prunes(location)][-1] == ".expertise/d8.yaml"
    target.write_bytes(target.read_bytes() + '{"torn": "\u00e9'.encode()[:-1])  # torn inside a character
    mergerecord.record_merge_prune(location, path=".expertise/d9.yaml", domain="database", cap=50, pruned=[],
                                   text="x\n")  # fmt: skip
    assert [r.path for r in mergerecord.merge_prunes(location)][-2:] == [".expertise/d8.yaml", ".expertise/d9.yaml"]
