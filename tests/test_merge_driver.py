"""`expertise merge-driver %O %A %B %P` as git runs it, and as a person might by hand with bad input."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import Cli, git, snapshot

from expertise_kit.document.domainfile import load_domain_file
from expertise_kit.document.splice import Append, Replace, apply_edits
from expertise_kit.document.yamlio import MAX_FILE_BYTES, parse_yaml_text
from expertise_kit.versioning.merge import CONFLICT_KEY

DB = Path(".expertise/database.yaml")


def _edit(root: Path, *edits: Append | Replace) -> None:
    path = root / DB
    path.write_text(apply_edits(parse_yaml_text(path.read_text(), path), list(edits)))


def _commit(root: Path, message: str) -> None:
    git(root, "commit", "-q", "-am", message)


def _conflicting_branches(root: Path) -> None:
    _edit(root, Append("learned_from_failures", {"error": "deadlock detected", "solution": "retry"}))
    _commit(root, "base")
    git(root, "checkout", "-q", "-b", "theirs")
    _edit(root, Replace("learned_from_failures", 0, {"error": "deadlock detected", "solution": "SKIP LOCKED"}))
    _edit(root, Append("patterns", "Their new pattern"))
    _commit(root, "theirs")
    git(root, "checkout", "-q", "main")
    _edit(root, Replace("learned_from_failures", 0, {"error": "deadlock detected", "solution": "lock in id order"}))
    _commit(root, "ours")


def test_a_true_conflict_stays_parseable_names_the_entry_and_fails_validate_check(project: Path, run: Cli) -> None:
    _conflicting_branches(project)
    done = subprocess.run(["git", "merge", "--no-edit", "theirs"], cwd=project, capture_output=True, text=True)
    assert done.returncode != 0  # git recorded a conflict
    ours_lines = [line for line in done.stderr.splitlines() if line.startswith("expertise:")]
    assert len(ours_lines) == 1 and "learned_from_failures" in ours_lines[0] and "deadlock" in ours_lines[0]
    assert git(project, "status", "--porcelain", "--", str(DB)).startswith("UU")
    text = (project / DB).read_text()
    assert "<<<<<<<" not in text
    doc = load_domain_file(project / DB, "database")  # every command can still read it
    (entry,) = doc.loaded.plain["learned_from_failures"]
    assert entry[CONFLICT_KEY] == {
        "ours": {"error": "deadlock detected", "solution": "lock in id order"},
        "theirs": {"error": "deadlock detected", "solution": "SKIP LOCKED"},
    }
    assert "Their new pattern" in doc.loaded.plain["patterns"]  # the rest merged
    check = run("validate", "--check")
    assert check.exit_code == 1 and "conflict" in check.output
    # Resolving: keep one version, drop `conflict:`, and the gate opens.
    (project / DB).write_text(_without_conflict(text))
    assert run("validate", "--check").exit_code == 0
    git(project, "add", str(DB))
    git(project, "commit", "-q", "--no-edit")


def _without_conflict(text: str) -> str:
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.strip() == f"{CONFLICT_KEY}:")
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and len(lines[end]) - len(lines[end].lstrip()) > indent:
        end += 1
    return "".join(lines[:start] + lines[end:])


def _three(project: Path, base: str, ours: str, theirs: str) -> tuple[Path, Path, Path]:
    scratch = project / "scratch"
    scratch.mkdir(exist_ok=True)
    paths = (scratch / "O", scratch / "A", scratch / "B")
    for path, text in zip(paths, (base, ours, theirs), strict=True):
        path.write_text(text)
    return paths


def _driver(run: Cli, paths: tuple[Path, ...], name: str = str(DB)) -> tuple[int, list[str]]:
    result = run("merge-driver", *map(str, paths), name)
    return result.exit_code, [line for line in result.stderr.splitlines() if line]


def test_driver_by_hand_merges_into_ours_and_exits_zero(project: Path, run: Cli) -> None:
    base = (project / DB).read_text()
    ours = base.replace("\npatterns: []", "\npatterns:\n  - Ours")
    theirs = base.replace("\npatterns: []", "\npatterns:\n  - Theirs")
    paths = _three(project, base, ours, theirs)
    status, stderr = _driver(run, paths)
    assert (status, stderr) == (0, [])
    assert "  - Ours\n  - Theirs\n" in paths[1].read_text()
    assert paths[0].read_text() == base and paths[2].read_text() == theirs
    assert git(project, "status", "--porcelain", "--", ".expertise") == ""  # the driver never commits or writes there


def test_a_missing_file_is_one_line_and_ours_is_untouched(project: Path, run: Cli) -> None:
    base = (project / DB).read_text()
    paths = _three(project, base, base, base)
    paths[2].unlink()
    before = snapshot(project)
    status, stderr = _driver(run, paths)
    assert status == 1 and len(stderr) == 1 and "not found" in stderr[0]
    assert stderr[0].startswith(f"expertise: error: {DB}: theirs side") and "scratch" not in stderr[0]
    assert snapshot(project) == before


def test_malformed_yaml_on_one_side_falls_back_to_a_line_merge(project: Path, run: Cli) -> None:
    base = (project / DB).read_text()
    broken = base.replace("\npatterns: []", "\npatterns: [unclosed")
    ours = base.replace("overview:", "# a note\noverview:")
    paths = _three(project, base, ours, broken)
    status, stderr = _driver(run, paths)
    # What git's own merge would give: clean here, so ours gets both changes; one note says why.
    assert status == 0 and len(stderr) == 1 and "merged line by line" in stderr[0] and ":" in stderr[0]
    assert paths[1].read_text() == broken.replace("overview:", "# a note\noverview:")
    clash = base.replace("\npatterns: []", "\npatterns: [also, unclosed")
    paths = _three(project, base, broken, clash)
    status, stderr = _driver(run, paths)
    assert status == 1 and len(stderr) == 1 and "1 conflict " in stderr[0]
    assert "<<<<<<< ours\n" in paths[1].read_text() and ">>>>>>> theirs\n" in paths[1].read_text()


def test_a_file_that_is_not_a_domain_file_gets_a_plain_line_merge(project: Path, run: Cli) -> None:
    base = "line_cap: 1000\n# keep\nretention: 90\n"
    paths = _three(project, base, "line_cap: 900\n# keep\nretention: 90\n", "line_cap: 1000\n# keep\nretention: 30\n")
    status, stderr = _driver(run, paths, ".expertise/config.yaml")
    assert (status, stderr) == (0, [])
    assert paths[1].read_text() == "line_cap: 900\n# keep\nretention: 30\n"
    domain_base = (project / DB).read_text()
    other = domain_base.replace("domain: database", "domain: api")  # a side that says it is another domain
    paths = _three(project, domain_base, domain_base.replace("\npatterns: []", "\npatterns: [x]"), other)
    status, stderr = _driver(run, paths)
    assert status == 0 and len(stderr) == 1 and "domain: api" in stderr[0]


def test_a_huge_side_is_refused_in_one_line_and_ours_is_untouched(project: Path, run: Cli) -> None:
    base = (project / DB).read_text()
    paths = _three(project, base, base, base + "# " + "x" * MAX_FILE_BYTES + "\n")
    before = snapshot(project)
    status, stderr = _driver(run, paths)
    assert status == 1 and len(stderr) == 1 and "limit" in stderr[0]
    assert stderr[0].startswith(f"expertise: error: {DB}: theirs side") and "scratch" not in stderr[0]
    assert snapshot(project) == before


def test_a_file_added_on_both_branches_merges_against_no_base(project: Path) -> None:
    config = project / ".expertise" / "config.yaml"
    config.write_text(config.read_text().replace("domains: {}", "domains:\n  billing:\n    keywords: [invoice]"))
    _commit(project, "a billing domain")
    git(project, "checkout", "-q", "-b", "other")
    for branch, lesson in (("other", "Invoices are immutable"), ("main", "Round money half even")):
        git(project, "checkout", "-q", branch)
        created = Cli(project)("init")  # creates and commits billing.yaml on this branch
        assert created.exit_code == 0, created.output
        assert Cli(project)("add", "billing", "patterns", lesson).exit_code == 0
    done = subprocess.run(["git", "merge", "--no-edit", "other"], cwd=project, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    patterns = load_domain_file(project / ".expertise" / "billing.yaml", "billing").loaded.plain["patterns"]
    assert sorted(patterns) == ["Invoices are immutable", "Round money half even"]


def test_an_unreadable_side_in_a_real_merge_names_the_path_not_git_s_temp_file(project: Path) -> None:
    """Git runs the driver on temp files (`.merge_file_0EjNA1`) that are gone once it returns: the error
    names the domain file being merged, its side and line."""
    path = project / DB
    base = path.read_text()
    git(project, "checkout", "-q", "-b", "theirs")
    path.write_bytes(b"\xff\xfe" + base.encode("utf-16-le"))  # saved as UTF-16 by an editor
    _commit(project, "theirs")
    git(project, "checkout", "-q", "main")
    path.write_text(base.replace("\npatterns: []", "\npatterns:\n  - Ours"))
    _commit(project, "ours")
    merged = subprocess.run(["git", "merge", "-q", "theirs"], cwd=project, capture_output=True, text=True)
    assert merged.returncode != 0
    [line] = [ln for ln in merged.stderr.splitlines() if ln.startswith("expertise: error:")]
    assert line.startswith(f"expertise: error: {DB}:1: theirs side") and "byte-order mark" in line
    assert ".merge_file" not in merged.stderr
