"""Parallel writers: no lost update, one commit each, no index.lock error reaching anyone."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import git

from expertise_kit.project import find_project

WRITER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from expertise_kit.project import find_project
    from expertise_kit.store import Store
    root, label, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    errors, deferred = [], []
    for n in range(count):
        try:
            result = Store(find_project(root)).add_items("testing", [("patterns", f"writer {label} entry {n}")])
            if result.commit is None or result.commit.sha is None:
                deferred.append(result.commit.deferred if result.commit else "no commit")
        except Exception as exc:
            errors.append(repr(exc))
    print(json.dumps({"errors": errors, "deferred": deferred}))
    """
)


def _start(root: Path, label: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), label, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str]) -> dict[str, list[str]]:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    report: dict[str, list[str]] = json.loads(out.strip().splitlines()[-1])
    return report


USER_LOOP = textwrap.dedent(
    """
    import os, subprocess, sys, time
    root = sys.argv[1]
    deadline = time.monotonic() + 600
    n = 0
    # A developer's git, busy with the index while the agents write: it takes index.lock each time.
    while time.monotonic() < deadline:
        n += 1
        open(f"{root}/user.txt", "w").write(f"edit {n}\\n")
        subprocess.run(["git", "add", "user.txt"], cwd=root, capture_output=True)
        subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True)
        if os.path.exists(f"{root}/.stop"):
            break
    """
)


def test_eight_processes_times_25_writes(project: Path) -> None:
    start = int(git(project, "rev-list", "--count", "HEAD"))
    user = subprocess.Popen([sys.executable, "-c", USER_LOOP, str(project)])
    processes = [_start(project, str(p), 25) for p in range(8)]
    reports = [_finish(p) for p in processes]
    (project / ".stop").write_text("stop")
    user.wait(timeout=60)
    (project / ".stop").unlink()
    assert [r["errors"] for r in reports] == [[]] * 8
    assert [r["deferred"] for r in reports] == [[]] * 8
    text = (project / ".expertise" / "testing.yaml").read_text()
    expected = {f"writer {p} entry {n}" for p in range(8) for n in range(25)}
    assert all(f"- {line}\n" in text for line in expected)
    assert int(git(project, "rev-list", "--count", "HEAD")) - start == 200
    subjects = git(project, "log", f"-{200}", "--format=%s").splitlines()
    assert set(subjects) == {"expertise(testing): add 1 entry by hand"}
    committed = git(project, "show", "HEAD:.expertise/testing.yaml")
    assert all(f"- {line}\n" in committed for line in expected)
    assert "user.txt" not in git(project, "log", "-200", "--name-only", "--format=")
    assert git(project, "status", "--porcelain") == "A  user.txt\n"  # the user's staged file, still staged


def test_two_worktrees_writing_at_once(project: Path) -> None:
    other = project.parent / "worktree"
    git(project, "worktree", "add", "-q", "-b", "feature", str(other))
    assert find_project(project).lock_path == find_project(other).lock_path  # one lock for both
    main_before = int(git(project, "rev-list", "--count", "main"))
    feature_before = int(git(project, "rev-list", "--count", "feature"))
    processes = [_start(project, "main", 20), _start(other, "feature", 20)]
    reports = [_finish(p) for p in processes]
    assert [r["errors"] for r in reports] == [[], []]
    assert [r["deferred"] for r in reports] == [[], []]
    assert int(git(project, "rev-list", "--count", "main")) - main_before == 20
    assert int(git(project, "rev-list", "--count", "feature")) - feature_before == 20
    main_text = git(project, "show", "main:.expertise/testing.yaml")
    feature_text = git(project, "show", "feature:.expertise/testing.yaml")
    assert main_text.count("writer main entry") == 20 and "writer feature" not in main_text
    assert feature_text.count("writer feature entry") == 20 and "writer main" not in feature_text
    assert git(project, "status", "--porcelain") == "" and git(other, "status", "--porcelain") == ""
