"""Teams through git alone: clones of one bare remote, branches and worktrees that learn in parallel
merge with 0 conflicts, no entry lost and no session counted twice. Real git, real merges and rebases:
git itself runs the merge driver `expertise init` registered."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import IDENTITY, Cli, git

from expertise_kit.document.domainfile import load_domain_file
from expertise_kit.document.entries import item_id, parse_item
from expertise_kit.project import find_project
from expertise_kit.store import Store
from expertise_kit.versioning.merge import CONFLICT_KEY, conflicts_in
from expertise_kit.versioning.mergedriver import driver_command

DOMAINS = ("database", "testing")


def lessons(session: str) -> list[tuple[str, str, dict[str, Any]]]:
    """What one session teaches: (domain, section, raw entry). Sessions share some lessons, so the same
    entry is seen again in other sessions, in other clones."""
    number = int(session.rsplit("-", 1)[1])
    stamp = f"2026-11-{1 + number % 28:02d}T09:{number % 60:02d}:00Z"
    provenance = {"source": "learned", "sessions": [session], "first_seen": stamp, "last_seen": stamp}
    taught = [
        ("database", "patterns", {"text": f"Shared database lesson {number % 4}", **provenance}),
        ("database", "patterns", {"text": f"Database lesson of session {number}", **provenance}),
        ("testing", "learned_from_failures", {
            "issue": "run the suite",
            "error": f"AssertionError in test_case_{number % 3}",
            "solution": f"fix from session {number}",
            **provenance,
        }),
        ("testing", "effective_patterns", {"text": f"Testing lesson of session {number}", **provenance}),
    ]  # fmt: skip
    return taught


def learn(clone: Path, session: str) -> None:
    store = Store(find_project(clone))
    for domain in DOMAINS:
        items = [(section, raw) for d, section, raw in lessons(session) if d == domain]
        result = store.merge_learned(domain, items, sessions=[session])
        assert result.commit is None or result.commit.sha, result.commit


def expected_store(sessions: set[str]) -> dict[str, set[str]]:
    """entry id -> the sessions that taught it, as one store would record learning them all."""
    taught: dict[str, set[str]] = {}
    for session in sessions:
        for _domain, section, raw in lessons(session):
            taught.setdefault(item_id(section, parse_item(section, raw)), set()).add(session)
    return taught


def recorded(clone: Path) -> dict[str, dict[str, Any]]:
    project = find_project(clone)
    found: dict[str, dict[str, Any]] = {}
    for domain in DOMAINS:
        doc = load_domain_file(project.domain_path(domain), domain)
        assert not list(conflicts_in(doc))
        for section, index, item in doc.entries():
            raw = doc.loaded.plain[section][index]
            assert item_id(section, item) not in found, "an entry is in the file twice"
            found[item_id(section, item)] = raw
    return found


def new_clone(remote: Path, where: Path) -> Path:
    git(where.parent, "clone", "-q", str(remote), where.name)
    git(where, "config", "user.name", IDENTITY["GIT_COMMITTER_NAME"])
    git(where, "config", "user.email", IDENTITY["GIT_COMMITTER_EMAIL"])
    return where


def team(project: Path, clones: int) -> tuple[Path, list[Path]]:
    remote = project.parent / "remote.git"
    git(project.parent, "init", "-q", "--bare", "-b", "main", str(remote))
    git(project, "remote", "add", "origin", str(remote))
    git(project, "push", "-q", "origin", "main")
    members = []
    for n in range(clones):
        clone = new_clone(remote, project.parent / f"clone{n}")
        assert git(clone, "config", "--get", "merge.expertise.driver", check=False) == ""  # config does not travel
        result = Cli(clone)("init")  # the one step a clone needs
        assert result.exit_code == 0 and "registered the merge driver" in result.output, result.output
        assert git(clone, "status", "--porcelain") == ""  # nothing to commit: the attributes travelled
        members.append(clone)
    return remote, members


def test_a_clone_needs_only_init_to_register_the_driver(project: Path) -> None:
    attributes = (project / ".expertise" / ".gitattributes").read_text()
    assert "*.yaml merge=expertise" in attributes
    assert sys.prefix not in attributes and str(Path.home()) not in attributes  # nothing names this machine
    assert git(project, "config", "--get", "merge.expertise.driver").strip() == driver_command()
    assert git(project, "check-attr", "merge", ".expertise/database.yaml").strip().endswith("expertise")
    assert git(project, "check-attr", "merge", ".expertise/config.yaml").strip().endswith("text")
    assert Cli(project)("init").output.strip().endswith("already set up; nothing to do")


@pytest.mark.parametrize("pull", [["pull", "-q", "--rebase"], ["pull", "-q", "--no-rebase", "--no-edit"]])
def test_four_clones_in_rounds_agree_with_no_conflict_and_no_double_count(project: Path, pull: list[str]) -> None:
    remote, clones = team(project, 4)
    learned_by: dict[int, list[str]] = {n: [] for n in range(4)}
    rounds = 3
    for round_number in range(rounds):
        for n, clone in enumerate(clones):
            own = f"session-{100 + round_number * 10 + n}"
            shared = f"session-{round_number}"  # every clone learns this one too: counted once in the end
            for session in (own, shared) if n % 2 == 0 else (shared, own):
                learn(clone, session)
                learned_by[n].append(session)
        for clone in clones:
            done = subprocess.run(["git", *pull], cwd=clone, capture_output=True, text=True, check=False)
            assert done.returncode == 0, done.stdout + done.stderr  # 0 conflicts, 0 manual steps
            git(clone, "push", "-q", "origin", "main")
    for clone in clones:
        git(clone, *pull)
    heads = {git(clone, "rev-parse", "HEAD") for clone in clones}
    assert len(heads) == 1 and git(remote, "rev-parse", "main") in heads
    for domain in DOMAINS:
        versions = {(clone / ".expertise" / f"{domain}.yaml").read_bytes() for clone in clones}
        assert len(versions) == 1  # byte for byte
        assert b"<<<<<<<" not in versions.pop()
    for clone in clones:
        assert git(clone, "status", "--porcelain") == ""
    expected = expected_store({s for sessions in learned_by.values() for s in sessions})
    found = recorded(clones[0])
    assert set(found) == set(expected)  # no entry lost, none duplicated
    for entry, sessions in expected.items():
        raw = found[entry]
        assert set(raw["sessions"]) == sessions
        assert raw.get("recurrence", 1) == len(sessions)  # each session counted once, never twice


def test_eight_branches_learning_in_parallel_merge_into_main_with_no_conflict(project: Path) -> None:
    for n in range(8):
        git(project, "branch", f"agent-{n}", "main")
    for n in range(8):
        git(project, "checkout", "-q", f"agent-{n}")
        for session in (f"session-{200 + n}", f"session-{n % 3}"):
            learn(project, session)
    git(project, "checkout", "-q", "main")
    for n in range(8):
        done = subprocess.run(
            ["git", "merge", "--no-edit", "-q", f"agent-{n}"], cwd=project, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
    assert git(project, "status", "--porcelain") == ""
    expected = expected_store({f"session-{200 + n}" for n in range(8)} | {f"session-{n}" for n in range(3)})
    found = recorded(project)
    assert set(found) == set(expected)
    assert all(found[e].get("recurrence", 1) == len(s) == len(set(found[e]["sessions"])) for e, s in expected.items())


WORKTREE_AGENT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from expertise_kit.project import find_project
    from expertise_kit.store import Store
    sys.path.insert(0, sys.argv[2])
    from test_team import DOMAINS, lessons
    root = Path(sys.argv[1])
    for session in sys.argv[3:]:
        store = Store(find_project(root))
        for domain in DOMAINS:
            items = [(section, raw) for d, section, raw in lessons(session) if d == domain]
            store.merge_learned(domain, items, sessions=[session])
    """
)


def test_agents_in_worktrees_learn_at_once_and_merge_back_with_no_conflict(project: Path) -> None:
    trees = []
    for n in range(4):
        tree = project.parent / f"agent{n}"
        git(project, "worktree", "add", "-q", "-b", f"agent-{n}", str(tree))
        trees.append(tree)
    here = str(Path(__file__).parent)
    agents = [
        subprocess.Popen(
            [sys.executable, "-c", WORKTREE_AGENT, str(tree), here, f"session-{300 + n}", f"session-{n % 2}"],
            stderr=subprocess.PIPE,
            text=True,
        )
        for n, tree in enumerate(trees)
    ]
    for agent in agents:
        _, err = agent.communicate(timeout=600)
        assert agent.returncode == 0, err
    for n in range(4):
        done = subprocess.run(["git", "merge", "--no-edit", "-q", f"agent-{n}"], cwd=project, capture_output=True,
                              text=True, check=False)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    expected = expected_store({f"session-{300 + n}" for n in range(4)} | {"session-0", "session-1"})
    found = recorded(project)
    assert set(found) == set(expected)
    assert all(found[e].get("recurrence", 1) == len(s) for e, s in expected.items())
    assert all(CONFLICT_KEY not in raw for raw in found.values())
