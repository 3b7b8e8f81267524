"""The shared layer (refs/expertise/shared): a lesson learned in one worktree reaches every other worktree
and branch at once, and every clone through `expertise sync`, while each branch keeps its own commits.
Real git throughout: worktrees, clones and a bare remote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, git, settle

from expertise_kit.document.domainfile import parse_domain_text
from expertise_kit.document.entries import item_id, parse_item
from expertise_kit.project import find_project
from expertise_kit.store import Store
from expertise_kit.versioning.merge import CONFLICT_KEY
from expertise_kit.versioning.shared import SHARED_REF, read_ref, shared_files

LESSON = "git push on a new branch fails without an upstream"
FIX = "git push --set-upstream origin HEAD"


def shared_doc(root: Path, domain: str) -> dict[str, Any]:
    text = git(root, "show", f"{SHARED_REF}:.expertise/{domain}.yaml")
    return parse_domain_text(text, Path(f"{domain}.yaml"), domain).loaded.plain


def ids_of(plain: dict[str, Any], section: str) -> set[str]:
    return {item_id(section, parse_item(section, raw)) for raw in plain.get(section) or []}


def texts(plain: dict[str, Any], section: str) -> list[str]:
    return [raw if isinstance(raw, str) else raw.get("text") or raw.get("issue") for raw in plain.get(section) or []]


def pre_hook(cwd: Path, prompt: str, *, note_ok: bool = False) -> str:
    payload = {"prompt": prompt, "cwd": str(cwd), "session_id": f"s-{abs(hash(prompt)) % 10**8}"}
    done = subprocess.run(
        [sys.executable, "-I", "-m", "expertise_kit.hook", "pre", "--agent", "claude-code"],
        input=json.dumps(payload), capture_output=True, text=True, cwd=cwd, env=dict(os.environ), timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0 and (note_ok or not done.stderr), done.stderr
    return done.stdout


def learn_fix(root: Path, session: str = "sess-a-1") -> str:
    store = Store(find_project(root))
    raw = {
        "issue": LESSON, "error": "fatal: The current branch branch-a has no upstream branch", "solution": FIX,
        "source": "learned", "sessions": [session], "first_seen": "2026-11-20T10:00:00Z",
        "last_seen": "2026-11-20T10:00:00Z",
    }  # fmt: skip
    result = store.merge_learned("general", [("learned_from_failures", raw)], sessions=[session])
    assert result.commit is not None and result.commit.sha
    return result.commit.sha


def test_a_lesson_learned_in_one_worktree_reaches_the_other_before_any_merge(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    sha = learn_fix(a)
    # The branch that learned it has the commit; the other branch and main do not.
    assert LESSON in git(a, "show", f"{sha}:.expertise/general.yaml")
    assert LESSON not in git(b, "show", "HEAD:.expertise/general.yaml")
    assert LESSON not in git(b, "show", "main:.expertise/general.yaml")
    assert LESSON not in (b / ".expertise" / "general.yaml").read_text()
    # The shared layer has it, with where it came from.
    assert texts(shared_doc(a, "general"), "learned_from_failures") == [LESSON]
    message = git(a, "log", "-1", "--format=%B", SHARED_REF)
    assert "[branch-a]" in message and "Expertise-Branch: branch-a" in message and f"Expertise-Commit: {sha}" in message
    # Worktree B reads it: through the hook, as its agent would, and through render.
    injected = pre_hook(b, "push my new branch to origin with git")
    assert FIX in injected
    assert FIX in Cli(b)("render", "--domain", "general").output
    # B's own branch and files are untouched by reading it.
    assert git(b, "status", "--porcelain") == ""


def test_both_worktrees_learn_and_the_shared_layer_holds_the_union(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    Cli(a)("add", "database", "patterns", "Use a migration for every schema change")
    Cli(b)("add", "database", "patterns", "Index every foreign key")
    Cli(b)("add", "testing", "patterns", "Run the suite with -x first")
    shared = shared_doc(a, "database")
    assert sorted(texts(shared, "patterns")) == ["Index every foreign key", "Use a migration for every schema change"]
    assert texts(shared_doc(a, "testing"), "patterns") == ["Run the suite with -x first"]
    # Each branch holds only its own.
    assert "Index every foreign key" not in git(a, "show", "HEAD:.expertise/database.yaml")
    assert "Use a migration" not in git(b, "show", "HEAD:.expertise/database.yaml")
    # Each worktree reads both.
    for root in (a, b):
        out = Cli(root)("render", "--domain", "database").output
        assert "Index every foreign key" in out and "Use a migration for every schema change" in out


def test_the_working_tree_wins_an_edited_or_deleted_lesson_is_not_brought_back(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    Cli(b)("add", "database", "patterns", "Prefer UUID keys")
    Cli(a)("add", "database", "patterns", "Vacuum nightly")
    assert "Prefer UUID keys" in Cli(a)("render", "--domain", "database").output
    # B deletes its lesson by hand, not committed yet: B no longer reads it, A still does (the shared
    # layer is updated with B's next revision).
    path = b / ".expertise" / "database.yaml"
    path.write_text(path.read_text().replace("  - Prefer UUID keys\n", ""))
    out = Cli(b)("render", "--domain", "database").output
    assert "Prefer UUID keys" not in out and "Vacuum nightly" in out
    assert "Prefer UUID keys" not in pre_hook(b, "database keys and schema")
    # B commits the deletion with plain git; its next revision publishes it: gone from the shared layer.
    git(b, "commit", "-q", "-am", "drop a lesson")
    assert "Prefer UUID keys" not in Cli(b)("render", "--domain", "database").output
    Cli(b)("add", "testing", "patterns", "Keep tests hermetic")
    assert "Prefer UUID keys" not in texts(shared_doc(a, "database"), "patterns")
    assert "Prefer UUID keys" not in Cli(a)("render", "--domain", "database").output


def test_an_entry_both_worktrees_hold_is_read_as_the_working_tree_has_it(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    learn_fix(a, "sess-a-1")
    learn_fix(b, "sess-b-1")  # B meets the same failure: one entry, two sessions, in the shared layer
    shared = shared_doc(a, "general")["learned_from_failures"]
    assert len(shared) == 1 and sorted(shared[0]["sessions"]) == ["sess-a-1", "sess-b-1"]
    assert shared[0].get("recurrence", 1) == 2
    # A's own file says one session; A reads its own version, not the shared one.
    out = json.loads(Cli(a)("render", "--domain", "general", "--json").output)
    assert out["text"].count(LESSON) == 1


def test_a_revert_on_the_branch_is_reverted_in_the_shared_layer(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    sha = learn_fix(a)
    Cli(b)("add", "general", "patterns", "Read CONTRIBUTING first")
    assert FIX in pre_hook(b, "push my branch with git")
    result = Cli(a)("revert", sha[:12])
    assert result.exit_code == 0, result.output
    shared = shared_doc(a, "general")
    assert texts(shared, "learned_from_failures") == []
    assert texts(shared, "patterns") == ["Read CONTRIBUTING first"]  # B's lesson stays
    settle(b)  # B's next prompt may read its last good state once, while the rebuild runs detached
    assert FIX not in pre_hook(b, "push my branch with git again")
    assert FIX not in Cli(b)("render", "--domain", "general").output


def test_history_shared_lists_the_shared_revisions_with_their_branches(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    Cli(a)("add", "api", "patterns", "Version every endpoint")
    Cli(b)("add", "api", "patterns", "Return problem+json errors")
    rows = json.loads(Cli(a)("history", "--shared", "--json").output)
    assert [r["branch"] for r in rows[:2]] == ["branch-b", "branch-a"]
    assert rows[0]["source"] == git(b, "rev-parse", "HEAD").strip()
    assert all(r["commit"] for r in rows)
    # The branch's own history is unchanged: only its own revision on top of init.
    own = json.loads(Cli(a)("history", "--json").output)
    assert [r["subject"] for r in own][0].startswith("expertise(api)") and len(own) == 2
    assert "branch" not in own[0]
    text = Cli(a)("history", "--shared").output
    assert "[branch-b]" in text and "[branch-a]" in text


def test_history_shared_before_anything_was_shared(repo: Path) -> None:
    result = Cli(repo)("history", "--shared")
    assert result.exit_code != 0  # not an expertise project yet
    Cli(repo)("init")
    git(repo, "update-ref", "-d", SHARED_REF)
    result = Cli(repo)("history", "--shared")
    assert result.exit_code == 0 and "no revisions yet" in result.output


def test_the_shared_layer_can_be_turned_off(repo: Path) -> None:
    Cli(repo)("init")
    config = repo / ".expertise" / "config.yaml"
    config.write_text(config.read_text() + "shared_layer: false\n")  # the key before `shared: off`
    git(repo, "commit", "-q", "-am", "no shared layer")
    before = read_ref(find_project(repo).git)  # type: ignore[arg-type]
    Cli(repo)("add", "general", "patterns", "Stay local")
    assert read_ref(find_project(repo).git) == before  # type: ignore[arg-type]


def test_a_shared_ref_that_is_not_ours_is_started_over_on_top_of(worktrees: tuple[Path, Path]) -> None:
    a, _ = worktrees
    # Point the ref at a commit whose tree has a broken domain file: the next write replaces that file.
    broken = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=b"domain: [\n", cwd=a, capture_output=True,
                            check=True).stdout.decode().strip()  # fmt: skip
    tree_in = f"100644 blob {broken}\tgeneral.yaml\n"
    sub = subprocess.run(["git", "mktree"], input=tree_in.encode(), cwd=a, capture_output=True, check=True)
    root = subprocess.run(["git", "mktree"], input=f"040000 tree {sub.stdout.decode().strip()}\t.expertise\n".encode(),
                          cwd=a, capture_output=True, check=True).stdout.decode().strip()  # fmt: skip
    commit = git(a, "commit-tree", root, "-m", "not ours").strip()
    git(a, "update-ref", SHARED_REF, commit)
    learn_fix(a)
    assert texts(shared_doc(a, "general"), "learned_from_failures") == [LESSON]
    assert git(a, "rev-parse", f"{SHARED_REF}^").strip() == commit


# -- across clones --------------------------------------------------------------------------------------


def sessions_lessons(session: str) -> list[tuple[str, str, dict[str, Any]]]:
    number = int(session.rsplit("-", 1)[1])
    stamp = f"2026-11-{1 + number % 28:02d}T09:{number % 60:02d}:00Z"
    provenance = {"source": "learned", "sessions": [session], "first_seen": stamp, "last_seen": stamp}
    return [
        ("database", "patterns", {"text": f"Common database lesson {number % 3}", **provenance}),
        ("database", "patterns", {"text": f"Database lesson of session {number}", **provenance}),
        ("testing", "effective_patterns", {"text": f"Testing lesson of session {number}", **provenance}),
    ]


def learn_session(clone: Path, session: str) -> None:
    store = Store(find_project(clone))
    for domain in ("database", "testing"):
        items = [(section, raw) for d, section, raw in sessions_lessons(session) if d == domain]
        store.merge_learned(domain, items, sessions=[session])


def test_three_clones_sync_in_rounds_to_one_identical_shared_layer(clones: list[Path]) -> None:
    sessions = {
        clones[0]: ["s-1", "s-2", "s-10"],
        clones[1]: ["s-3", "s-4", "s-10", "s-11"],
        clones[2]: ["s-5", "s-11", "s-10", "s-6"],
    }
    remote_branches = git(clones[0], "ls-remote", "origin", "refs/heads/*")
    for round_number in range(3):
        for clone in clones:
            mine = sessions[clone][round_number::3] if round_number < 2 else sessions[clone][2:]
            for session in mine:
                learn_session(clone, session)
            result = Cli(clone)("sync")
            assert result.exit_code == 0, result.output
    for clone in clones:  # a last pass, so every clone has the last push
        assert Cli(clone)("sync").exit_code == 0
    heads = {git(c, "rev-parse", SHARED_REF).strip() for c in clones}
    assert len(heads) == 1
    shared = {c: [git(c, "show", f"{SHARED_REF}:.expertise/{d}.yaml") for d in ("database", "testing")] for c in clones}
    assert len({json.dumps(v, sort_keys=True) for v in shared.values()}) == 1
    everyone = sorted({s for ss in sessions.values() for s in ss})
    plain = shared_doc(clones[0], "database")
    assert CONFLICT_KEY not in json.dumps(plain)
    by_text = {raw["text"]: raw for raw in plain["patterns"]}
    for session in everyone:  # no lesson lost
        assert f"Database lesson of session {session.rsplit('-', 1)[1]}" in by_text
    for common in range(3):  # no session counted twice
        raw = by_text[f"Common database lesson {common}"]
        taught = sorted(s for s in everyone if int(s.rsplit("-", 1)[1]) % 3 == common)
        assert sorted(raw["sessions"]) == taught
        assert raw.get("recurrence", 1) == len(taught)
    # Every clone reads the others' lessons, without any branch merged.
    out = Cli(clones[2])("render", "--domain", "database", "--max-chars", "20000").output
    assert "Database lesson of session 1" in out and "Database lesson of session 4" in out
    # No branch moved on the remote: sync shares the shared ref only.
    assert git(clones[0], "ls-remote", "origin", "refs/heads/*") == remote_branches


def test_sync_retries_when_another_clone_pushed_first(clones: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import expertise_kit.versioning.sharesync as sharesync

    first, second = clones[0], clones[1]
    learn_session(first, "s-1")
    learn_session(second, "s-2")
    real_fetch = sharesync.fetch
    calls = []

    def fetch_then_race(g: Any, remote: str) -> str | None:
        value = real_fetch(g, remote)
        if not calls:  # between our fetch and our push, the other clone pushes: git refuses ours
            done = subprocess.run([sys.executable, "-m", "expertise_kit", "-C", str(first), "sync"],
                                  capture_output=True, text=True, check=False)  # fmt: skip
            assert done.returncode == 0, done.stderr
        calls.append(value)
        return value

    monkeypatch.setattr(sharesync, "fetch", fetch_then_race)
    result = Cli(second)("sync")
    assert result.exit_code == 0, result.output
    assert len(calls) == 2  # refused once, fetched again, merged, pushed
    assert Cli(first)("sync").exit_code == 0
    assert git(first, "rev-parse", SHARED_REF) == git(second, "rev-parse", SHARED_REF)
    out = texts(shared_doc(first, "database"), "patterns")
    assert "Database lesson of session 1" in out and "Database lesson of session 2" in out


@pytest.mark.parametrize("remote", ["nope", "--upload-pack=touch /tmp/x", "a b"])
def test_sync_refuses_a_bad_remote_in_one_line(clones: list[Path], remote: str) -> None:
    result = Cli(clones[0])("sync", "--remote", remote)
    assert result.exit_code != 0
    assert "remote" in result.output and len(result.output.strip().splitlines()) <= 2


def test_sync_without_any_remote_says_what_to_do(repo: Path) -> None:
    Cli(repo)("init")
    result = Cli(repo)("sync")
    assert result.exit_code != 0 and "git remote add" in result.output


def test_sync_with_an_unreachable_remote_fails_cleanly(clones: list[Path], tmp_path: Path) -> None:
    git(clones[0], "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    before = git(clones[0], "rev-parse", SHARED_REF)
    result = Cli(clones[0])("sync")
    assert result.exit_code != 0 and "git fetch from origin failed" in result.output
    assert git(clones[0], "rev-parse", SHARED_REF) == before


def test_sync_no_push_only_takes_in(clones: list[Path]) -> None:
    learn_session(clones[0], "s-7")
    assert Cli(clones[0])("sync").exit_code == 0
    remote_before = git(clones[0], "ls-remote", "origin", SHARED_REF)
    learn_session(clones[1], "s-8")
    result = Cli(clones[1])("sync", "--no-push")
    assert result.exit_code == 0 and "pushed" not in result.output
    assert git(clones[0], "ls-remote", "origin", SHARED_REF) == remote_before
    assert "Database lesson of session 7" in Cli(clones[1])("render", "--domain", "database").output


# -- many writers ----------------------------------------------------------------------------------------

WRITER = """
import sys
from pathlib import Path
from expertise_kit.project import find_project
from expertise_kit.store import Store

root, name, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
domains = ["database", "api", "frontend", "testing", "security", "deployment", "general"]
store = Store(find_project(root))
for n in range(count):
    domain = domains[(n + len(name)) % len(domains)]
    store.add_items(domain, [("patterns", f"Lesson {n} of {name}")])
"""


def test_eight_worktrees_times_25_learnings_in_parallel(repo: Path, tmp_path: Path) -> None:
    Cli(repo)("init")
    names = [f"w{n}" for n in range(8)]
    roots = []
    for name in names:
        root = tmp_path / name
        git(repo, "worktree", "add", "-q", str(root), "-b", name)
        roots.append(root)
    before = int(git(repo, "rev-list", "--count", SHARED_REF))
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(root), name, "25"], stderr=subprocess.PIPE, text=True)
        for root, name in zip(roots, names, strict=True)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
    project = find_project(repo)
    assert project.git is not None
    files = shared_files(project.git, read_ref(project.git))
    everything: list[str] = []
    for path in files:
        if not path.startswith(".expertise/"):
            continue  # the layer's ledger (tombstones, origins): docs/sharing.md, "Lifecycle"
        domain = path.rsplit("/", 1)[-1].removesuffix(".yaml")
        everything += texts(shared_doc(repo, domain), "patterns")
    assert sorted(everything) == sorted(f"Lesson {n} of {name}" for name in names for n in range(25))
    # 0 lost ref updates: one shared revision per learning, each on top of the one before.
    assert int(git(repo, "rev-list", "--count", SHARED_REF)) == before + 200
    assert git(repo, "rev-list", "--merges", SHARED_REF) == ""
    for root, name in zip(roots, names, strict=True):  # each branch holds exactly its own 25
        own: list[str] = []
        for domain in ("database", "api", "frontend", "testing", "security", "deployment", "general"):
            own += texts(parse_domain_text(git(root, "show", f"HEAD:.expertise/{domain}.yaml"), Path("x"), domain)
                         .loaded.plain, "patterns")  # fmt: skip
        assert sorted(own) == sorted(f"Lesson {n} of {name}" for n in range(25))
        assert git(root, "status", "--porcelain") == ""


# -- refusing a bad shared layer at the remote -------------------------------------------------------------

HOOK = Path(__file__).resolve().parents[1] / "hooks" / "pre-receive-shared"


def test_the_remote_refuses_a_shared_layer_that_fails_validate_check(clones: list[Path], tmp_path: Path) -> None:
    import shutil
    import stat

    remote = tmp_path / "remote.git"
    target = remote / "hooks" / "pre-receive"
    shutil.copy(HOOK, target)
    target.chmod(target.stat().st_mode | stat.S_IXUSR)
    git(remote, "symbolic-ref", "HEAD", "refs/heads/main")  # the remote's default branch: the code checked against
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    clone = clones[0]

    def push(spec: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "push", "origin", spec], cwd=clone, env=env, capture_output=True, text=True,
                              check=False)  # fmt: skip

    # A good layer goes through, by `expertise sync` as a team uses it.
    learn_session(clone, "s-1")
    done = subprocess.run([sys.executable, "-m", "expertise_kit", "sync"], cwd=clone, env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    good = git(clone, "rev-parse", SHARED_REF).strip()
    assert git(clone, "ls-remote", "origin", SHARED_REF).split()[0] == good
    # A core file the code doesn't have: `validate --check` wants it corrected, so the remote refuses it.
    Cli(clone)("add", "database", "core_files", "src/db/missing_module.py")
    result = push(f"{SHARED_REF}:{SHARED_REF}")
    assert result.returncode != 0
    assert "refs/expertise/shared refused" in result.stderr and "validate --check" in result.stderr
    assert git(clone, "ls-remote", "origin", SHARED_REF).split()[0] == good
    # A file that isn't even YAML: refused too.
    broken = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=b"domain: [\n", cwd=clone,
                            capture_output=True, check=True).stdout.decode().strip()  # fmt: skip
    files = shared_files(find_project(clone).git, good)  # type: ignore[arg-type]
    files[".expertise/testing.yaml"] = broken
    from expertise_kit.versioning.shared import write_commit, write_tree_of

    project_git = find_project(clone).git
    assert project_git is not None
    bad = write_commit(project_git, write_tree_of(project_git, files), [good], "broken")
    result = push(f"{bad}:{SHARED_REF}")
    assert result.returncode != 0 and "refused" in result.stderr
    # Deleting it is refused; other refs pass as before.
    assert push(f":{SHARED_REF}").returncode != 0
    git(clone, "checkout", "-q", "-b", "topic")
    assert push("topic").returncode == 0


def test_a_deleted_shared_layer_is_filled_again_by_the_next_revision(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    Cli(a)("add", "database", "patterns", "Lesson one")
    Cli(a)("add", "testing", "patterns", "Lesson two")
    git(a, "update-ref", "-d", SHARED_REF)  # to start over
    Cli(a)("add", "api", "patterns", "Lesson three")
    assert texts(shared_doc(a, "database"), "patterns") == ["Lesson one"]
    assert texts(shared_doc(a, "testing"), "patterns") == ["Lesson two"]
    assert texts(shared_doc(a, "api"), "patterns") == ["Lesson three"]
    assert "Lesson one" in Cli(b)("render", "--domain", "database").output


def test_a_huge_file_in_the_shared_layer_is_refused_unread(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    huge = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=b"# x\n" * (3 << 20), cwd=a,
                          capture_output=True, check=True).stdout.decode().strip()  # fmt: skip
    project = find_project(a)
    assert project.git is not None
    files = shared_files(project.git, read_ref(project.git))
    files[".expertise/general.yaml"] = huge
    from expertise_kit.versioning.shared import write_commit, write_tree_of

    git(a, "update-ref", SHARED_REF, write_commit(project.git, write_tree_of(project.git, files), [], "huge"))
    assert Cli(b)("add", "general", "patterns", "Stay calm").exit_code == 0
    out = Cli(b)("render", "--domain", "general")
    assert out.exit_code == 0 and "Stay calm" in out.output
    assert "Stay calm" in pre_hook(b, "stay calm in general")
    assert texts(shared_doc(a, "general"), "patterns") == ["Stay calm"]  # the next write replaced it


# -- what a review found -------------------------------------------------------------------------------------


def test_a_checkout_of_another_branch_deletes_nothing_from_the_shared_layer(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    Cli(a)("add", "database", "patterns", "Feature lesson one")
    Cli(a)("add", "database", "patterns", "Feature lesson two")
    git(a, "checkout", "-q", "-b", "fix", "main")  # the base is per branch: `fix` has published nothing
    Cli(a)("add", "database", "patterns", "Unrelated lesson on fix")
    shared = texts(shared_doc(a, "database"), "patterns")
    assert sorted(shared) == ["Feature lesson one", "Feature lesson two", "Unrelated lesson on fix"]
    for root in (a, b):
        out = Cli(root)("render", "--domain", "database").output
        assert "Feature lesson one" in out and "Unrelated lesson on fix" in out
    # Back on the first branch, a deletion there is still published as one.
    git(a, "checkout", "-q", "branch-a")
    path = a / ".expertise" / "database.yaml"
    path.write_text(path.read_text().replace("  - Feature lesson two\n", ""))
    git(a, "commit", "-q", "-am", "drop one")
    Cli(a)("add", "testing", "patterns", "Anything")
    assert "Feature lesson two" not in texts(shared_doc(a, "database"), "patterns")


def test_nothing_is_published_mid_rebase(worktrees: tuple[Path, Path]) -> None:
    a, _ = worktrees
    Cli(a)("add", "database", "patterns", "Before the rebase")
    before = git(a, "rev-parse", SHARED_REF)
    head = git(a, "rev-parse", "HEAD").strip()
    git(a, "checkout", "-q", "--detach", head)  # as a rebase leaves it
    Cli(a)("add", "database", "patterns", "While detached")
    assert git(a, "rev-parse", SHARED_REF) == before


@pytest.mark.parametrize("kind", ["tag", "blob"])
def test_a_shared_ref_naming_a_tag_or_blob_never_becomes_a_parent(worktrees: tuple[Path, Path], kind: str) -> None:
    a, _ = worktrees
    if kind == "tag":
        git(a, "tag", "-a", "-m", "a tag", "v1")
        target = git(a, "rev-parse", "v1").strip()
    else:
        target = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=b"not a commit\n", cwd=a,
                                capture_output=True, check=True).stdout.decode().strip()  # fmt: skip
    git(a, "update-ref", SHARED_REF, target)
    learn_fix(a)
    assert git(a, "cat-file", "-t", SHARED_REF).strip() == "commit"
    assert git(a, "rev-list", "--parents", "-n1", SHARED_REF).split()[1:] == []  # a new root
    assert texts(shared_doc(a, "general"), "learned_from_failures") == [LESSON]
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=a, check=True, capture_output=True)


def test_sync_refuses_a_remote_shared_ref_that_is_not_a_commit(clones: list[Path]) -> None:
    first, second = clones[0], clones[1]
    git(first, "tag", "-a", "-m", "a tag", "v9")
    git(first, "push", "-q", "origin", f"{git(first, 'rev-parse', 'v9').strip()}:{SHARED_REF}")
    result = Cli(second)("sync")
    assert result.exit_code != 0
    assert "not a commit" in result.output and len(result.output.strip().splitlines()) <= 2


def test_the_ref_lock_taken_by_git_right_after_our_rename_is_left_alone(
    worktrees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from expertise_kit.versioning import shared as shared_module

    a, _ = worktrees
    project = find_project(a)
    assert project.git is not None
    lock = project.git.common_dir / "refs" / "expertise" / "shared.lock"
    real_replace = os.replace

    def replace_then_git_locks(src: Any, dst: Any) -> None:
        real_replace(src, dst)
        if str(dst).endswith("shared"):
            lock.write_text("git's own\n")  # git takes the ref's lock in the window after our rename

    monkeypatch.setattr(shared_module.os, "replace", replace_then_git_locks)
    old = read_ref(project.git)
    assert old is not None
    assert shared_module.update_ref(project.git, git(a, "rev-parse", "HEAD").strip(), old)
    assert lock.read_text() == "git's own\n"


def test_a_fifo_in_place_of_a_domain_file_never_blocks_a_write(worktrees: tuple[Path, Path]) -> None:
    a, _ = worktrees
    Cli(a)("add", "api", "patterns", "Published once")
    api = a / ".expertise" / "api.yaml"
    api.unlink()
    os.mkfifo(api)
    done = subprocess.run([sys.executable, "-m", "expertise_kit", "add", "database", "patterns", "Still written"],
                          cwd=a, capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Still written" in texts(shared_doc(a, "database"), "patterns")


def test_a_committer_name_with_angle_brackets_makes_a_clean_commit(
    worktrees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _ = worktrees
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Ann <ann")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "ann@example.test>")
    learn_fix(a)
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=a, check=True, capture_output=True)
    assert "on behalf of Ann ann" in git(a, "log", "-1", "--format=%an", SHARED_REF)


def test_a_group_shared_repository_gets_group_writable_object_dirs(repo: Path) -> None:
    git(repo, "config", "core.sharedRepository", "group")
    Cli(repo)("init")
    Cli(repo)("add", "general", "patterns", "Group lesson")
    objects = repo / ".git" / "objects"
    sha = git(repo, "rev-parse", SHARED_REF).strip()
    assert (objects / sha[:2]).stat().st_mode & 0o020  # group-writable, as git makes it
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=repo, check=True, capture_output=True)


def test_a_broken_file_is_not_rebuilt_on_every_prompt_when_the_shared_layer_moves(
    worktrees: tuple[Path, Path],
) -> None:
    from expertise_kit.fast.cache import read_index, shared_stale

    a, b = worktrees
    (b / ".expertise" / "api.yaml").write_text("domain: [\n")
    pre_hook(b, "anything about the api", note_ok=True)  # builds b's cache, api recorded with its error
    Cli(a)("add", "api", "patterns", "A lesson for the api")  # the shared layer moves
    pre_hook(b, "anything about the api again", note_ok=True)
    index = read_index(b / ".expertise")
    assert index is not None and (index["domains"].get("api") or {}).get("error")
    assert "api" not in shared_stale(b / ".expertise", index, ["api"])


def test_a_packed_shared_ref_is_still_read(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    learn_fix(a)
    git(a, "pack-refs", "--all")
    assert not (find_project(a).git.common_dir / SHARED_REF).exists()  # type: ignore[union-attr]
    assert FIX in pre_hook(b, "push my branch with git")
    Cli(a)("add", "general", "patterns", "After the pack")
    assert "After the pack" in Cli(b)("render", "--domain", "general").output
    assert "After the pack" in pre_hook(b, "anything after the pack")


@pytest.mark.parametrize("who", ["the clone that pushed it", "a clone that fetched it"])
def test_sync_after_the_remote_layer_was_reset_drops_what_it_dropped_and_keeps_the_rest(
    clones: list[Path], who: str
) -> None:
    first, second = clones[0], clones[1]
    learn_session(first, "s-1")
    assert Cli(first)("sync").exit_code == 0
    good = git(first, "rev-parse", SHARED_REF).strip()
    learn_session(first, "s-2")  # a lesson CI will refuse, say
    assert Cli(first)("sync").exit_code == 0
    assert Cli(second)("sync").exit_code == 0  # the second clone has the bad one too
    git(first, "push", "-q", "--force", "origin", f"{good}:{SHARED_REF}")  # CI resets the remote
    clone = first if who.startswith("the clone that pushed") else second
    learn_session(clone, "s-7")  # learned here since, not synced yet
    result = Cli(clone)("sync")
    assert result.exit_code == 0 and "was reset" in result.output, result.output
    remote = git(clone, "ls-remote", "origin", SHARED_REF).split()[0]
    assert git(clone, "rev-parse", SHARED_REF).strip() == remote
    assert git(clone, "merge-base", "--is-ancestor", good, remote) == ""  # on top of the reset, not over it
    on_remote = texts(parse_domain_text(git(clone, "show", f"{remote}:.expertise/database.yaml"), Path("x"),
                                        "database").loaded.plain, "patterns")  # fmt: skip
    assert "Database lesson of session 2" not in on_remote  # what the reset dropped stays dropped
    assert "Database lesson of session 1" in on_remote and "Database lesson of session 7" in on_remote
    again = Cli(clone)("sync")  # and a second sync changes nothing
    assert again.exit_code == 0 and git(clone, "ls-remote", "origin", SHARED_REF).split()[0] == remote


def delete_by_hand_and_publish(root: Path, lesson: str) -> None:
    """Delete a database pattern by hand, commit it with plain git; the next revision publishes it."""
    path = root / ".expertise" / "database.yaml"
    path.write_text(path.read_text().replace(f"  - {lesson}\n", ""))
    git(root, "commit", "-q", "-am", f"drop {lesson}")
    Cli(root)("add", "testing", "patterns", "Anything")


def test_a_branch_made_again_under_the_same_name_deletes_nothing(worktrees: tuple[Path, Path]) -> None:
    a, _ = worktrees
    Cli(a)("add", "database", "patterns", "Old task lesson")
    git(a, "checkout", "-q", "-B", "branch-a", "main")  # a new task in the same worktree, same branch name
    Cli(a)("add", "database", "patterns", "New task lesson")
    assert sorted(texts(shared_doc(a, "database"), "patterns")) == ["New task lesson", "Old task lesson"]
    delete_by_hand_and_publish(a, "New task lesson")  # from here the new branch's deletions count again
    assert texts(shared_doc(a, "database"), "patterns") == ["Old task lesson"]


def test_a_branch_with_a_very_long_name_publishes_its_deletions(worktrees: tuple[Path, Path]) -> None:
    a, _ = worktrees
    git(a, "checkout", "-q", "-b", "/".join(["x" * 100] * 3))
    Cli(a)("add", "database", "patterns", "Keep")
    Cli(a)("add", "database", "patterns", "Drop")
    delete_by_hand_and_publish(a, "Drop")
    assert texts(shared_doc(a, "database"), "patterns") == ["Keep"]


def test_a_new_root_after_a_tag_holds_every_file_of_the_worktree(worktrees: tuple[Path, Path]) -> None:
    a, _ = worktrees
    Cli(a)("add", "database", "patterns", "Database lesson")
    git(a, "tag", "-a", "-m", "a tag", "v2")
    git(a, "update-ref", SHARED_REF, git(a, "rev-parse", "v2").strip())
    Cli(a)("add", "testing", "patterns", "Testing lesson")
    assert texts(shared_doc(a, "database"), "patterns") == ["Database lesson"]
    assert texts(shared_doc(a, "testing"), "patterns") == ["Testing lesson"]


def test_sync_with_a_local_ref_that_is_no_layer_and_none_on_the_remote(clones: list[Path]) -> None:
    first = clones[0]
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=b"x", cwd=first, capture_output=True,
                          check=True).stdout.decode().strip()  # fmt: skip
    git(first, "update-ref", SHARED_REF, blob)
    result = Cli(first)("sync")
    assert result.exit_code == 0, result.output  # nothing to take in, nothing worth pushing: no crash
    assert git(first, "rev-parse", SHARED_REF).strip() == blob
