"""The one write transaction: the cap after every writer, commits checked against what was written,
entries git took restored, hand deletions respected, and the error path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, diverging_branches, git, snapshot

from expertise_kit.project import find_project
from expertise_kit.store import Store
from expertise_kit.upkeep import watch as watch_module
from expertise_kit.versioning import commit as commit_module


def _set_cap(project: Path, cap: int) -> None:
    (project / ".expertise" / "config.yaml").write_text(f"line_cap: {cap}\n")
    git(project, "commit", "-q", "-am", "cap")


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_validate_keeps_the_file_under_the_cap(project: Path, run: Cli) -> None:
    """Marking entries stale turns one-line strings into two-line mappings: the cap must still hold."""
    _set_cap(project, 60)
    path = project / ".expertise" / "api.yaml"
    text = path.read_text().replace("patterns: []\n", "patterns:\n")
    rules = "".join(f"  - Call `gone_helper_{n}` before saving\n" for n in range(45))
    path.write_text(text.replace("patterns:\n", "patterns:\n" + rules))
    git(project, "commit", "-q", "-am", "hand-written rules")
    assert _lines(path) > 50
    result = run("validate", "api")
    assert result.exit_code == 0, result.output
    assert _lines(path) <= 60
    rows = json.loads(run("list", "--json").stdout)
    assert next(r for r in rows if r["domain"] == "api")["lines"] <= 60
    assert git(project, "status", "--porcelain", "--", ".expertise") == ""


def test_revert_keeps_the_file_under_the_cap(project: Path, run: Cli) -> None:
    """Reverting a hand edit that dropped 20 rules, after the file filled up again, still fits."""
    _set_cap(project, 60)
    path = project / ".expertise" / "api.yaml"
    empty = path.read_text()
    old_rules = "".join(f"  - old rule number {n} about the api\n" for n in range(20))
    path.write_text(empty.replace("patterns: []\n", "patterns:\n" + old_rules, 1))
    git(project, "commit", "-q", "-am", "twenty rules by hand")
    path.write_text(empty)
    git(project, "commit", "-q", "-am", "drop them by hand")
    drop = git(project, "rev-parse", "HEAD").strip()
    store = Store(find_project(project))
    store.add_items("api", [("best_practices", f"new practice {n} for the handlers") for n in range(40)])
    assert _lines(path) > 45
    result = run("revert", drop)
    assert result.exit_code == 0, result.output
    assert _lines(path) <= 60
    assert "Expertise-Change: reverted" in git(project, "log", "-1", "--format=%B")


def test_an_entry_too_big_for_the_cap_is_refused(project: Path, run: Cli) -> None:
    # Entry text is flattened to one line (as every writer does), so an entry outgrows the cap only where the
    # file's own comments leave it less room than its lines: here 1 line for a 3-line failure.
    config = project / ".expertise" / "config.yaml"
    config.write_text(config.read_text().replace("line_cap: 1000", "line_cap: 50"))
    path = project / ".expertise" / "database.yaml"
    text = path.read_text()
    path.write_text("".join(f"# note {n}\n" for n in range(50 - text.count("\n") - 1)) + text)
    git(project, "commit", "-qam", "notes")
    run("add", "database", "patterns", "Use UUID keys")
    before = snapshot(project)
    head = git(project, "rev-parse", "HEAD")
    result = run("add", "database", "failures", "a deadlock", "--error", "deadlock detected", "--solution", "retry")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "database.yaml" in lines[0] and "50-line cap" in lines[0]
    assert snapshot(project) == before
    assert git(project, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("path", [".", "./", "..", "../outside.py", "/etc/passwd"])
def test_a_core_file_must_be_a_path_in_the_project(project: Path, run: Cli, path: str) -> None:
    before = snapshot(project)
    result = run("add", "database", "core_files", path)
    assert result.exit_code == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "not a file in the project" in result.stderr
    assert snapshot(project) == before


def _stash_before_commit(monkeypatch: pytest.MonkeyPatch, project: Path, times: int) -> list[str]:
    """Run `git stash` between our write and our commit, as an IDE's auto-stash might."""
    real = commit_module.commit_revision
    calls: list[str] = []

    def stashing(project_: object, revision: object) -> object:
        if len(calls) < times:
            calls.append(git(project, "stash", "push", "-q", "-m", "user's autostash"))
        return real(project_, revision)  # type: ignore[arg-type]

    monkeypatch.setattr("expertise_kit.store.transaction.commit_revision", stashing)
    return calls


def test_a_stash_between_write_and_commit_is_caught_and_the_entry_reaches_head(
    project: Path, run: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stash_before_commit(monkeypatch, project, times=1)
    result = run("add", "api", "patterns", "Version every endpoint")
    assert result.exit_code == 0, result.output
    assert "committed" in result.stdout
    assert "Version every endpoint" in git(project, "show", "HEAD:.expertise/api.yaml")
    assert git(project, "stash", "list").count("user's autostash") == 1  # the user's stash is theirs
    assert git(project, "status", "--porcelain", "--", ".expertise") == ""


def test_when_the_entry_cannot_reach_head_it_is_reported_deferred_not_done(
    project: Path, run: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stash_before_commit(monkeypatch, project, times=10)
    result = run("add", "api", "patterns", "Version every endpoint")
    assert result.exit_code == 0, result.output
    assert "committed" not in result.stdout
    assert "deferred" in result.stderr and "did not reach HEAD" in result.stderr
    rows = json.loads(run("history", "api", "--json").stdout)
    assert rows[0]["deferred"] is True
    monkeypatch.undo()
    for _ in range(git(project, "stash", "list").count("\n")):
        git(project, "stash", "drop", "-q")
    synced = run("history", "--sync")
    assert synced.exit_code == 0, synced.output
    assert "Version every endpoint" in git(project, "show", "HEAD:.expertise/api.yaml")


def test_parallel_writers_under_a_stash_loop_never_report_a_lost_entry(project: Path) -> None:
    """Every add that says "added ... committed" has its entry in HEAD; none exits 0 having lost it."""
    stop = threading.Event()

    def stash_loop() -> None:
        while not stop.is_set():
            git(project, "stash", "-q", check=False)
            git(project, "stash", "pop", "-q", check=False)

    script = "import sys; from expertise_kit.cli import main; sys.argv[0] = 'expertise'; main()"

    def writer(n: int, out: list[tuple[int, str, str, str]]) -> None:
        for i in range(4):
            text = f"writer {n} rule {i} holds"
            done = subprocess.run(
                [sys.executable, "-c", script, "add", "api", "patterns", text],
                cwd=project, capture_output=True, text=True, env=os.environ.copy(), check=False,
            )  # fmt: skip
            out.append((done.returncode, done.stdout, done.stderr, text))

    results: list[tuple[int, str, str, str]] = []
    looper = threading.Thread(target=stash_loop)
    looper.start()
    threads = [threading.Thread(target=writer, args=(n, results)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    looper.join()
    head = git(project, "show", "HEAD:.expertise/api.yaml")
    for code, out, err, text in results:
        if code == 0 and "committed" in out:
            assert text in head, (out, err)
        elif code == 0:
            assert "deferred" in err, (out, err)


def test_an_entry_deleted_by_hand_while_deferred_stays_deleted(project: Path, run: Cli) -> None:
    lock = project / ".git" / "index.lock"
    lock.write_text("")
    result = run("add", "security", "patterns", "Rotate keys yearly")
    assert "deferred" in result.stderr
    path = project / ".expertise" / "security.yaml"
    path.write_text(path.read_text().replace("  - Rotate keys yearly\n", "").replace("patterns:\n", "patterns: []\n"))
    lock.unlink()
    again = run("add", "security", "patterns", "Pin dependencies")
    assert again.exit_code == 0, again.output
    committed = git(project, "show", "HEAD:.expertise/security.yaml")
    assert "Pin dependencies" in committed
    assert "Rotate keys yearly" not in committed and "Rotate keys yearly" not in path.read_text()


def test_an_entry_wiped_by_a_rebase_abort_comes_back(project: Path, run: Cli) -> None:
    diverging_branches(project)
    git(project, "rebase", "other", check=False)
    assert "deferred" in run("add", "security", "patterns", "Rotate keys yearly").stderr
    git(project, "rebase", "--abort")
    git(project, "checkout", "-q", "--", ".expertise")
    run("add", "security", "patterns", "Pin dependencies")
    committed = git(project, "show", "HEAD:.expertise/security.yaml")
    assert "Rotate keys yearly" in committed and "Pin dependencies" in committed


def test_watch_does_not_commit_an_edit_carried_across_a_checkout(project: Path) -> None:
    path = project / ".expertise" / "api.yaml"
    said: list[str] = []
    watcher = watch_module.Watcher(find_project(project), say=said.append)
    batch = watch_module._Batch(expertise={"api"}, count=1, head=watcher._head_ref())
    path.write_text(path.read_text().replace("patterns: []", "patterns:\n  - Edited on main"))
    git(project, "checkout", "-q", "-b", "feature")
    head = git(project, "rev-parse", "HEAD")
    watcher.process(batch)
    assert git(project, "rev-parse", "HEAD") == head
    assert any("HEAD moved" in line for line in said)


def test_git_refusing_the_repo_is_one_error_line(project: Path) -> None:
    """`detected dubious ownership`: validate --check (the CI gate) and diff give one line, not a traceback."""
    os.chown(project, 65534, 65534)
    env = {**os.environ}
    for args in (["validate", "--check"], ["diff"], ["history"]):
        done = subprocess.run(
            [sys.executable, "-c", "from expertise_kit.cli import main; main()", *args],
            cwd=project, capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "dubious ownership" in lines[0] and "safe.directory" in lines[0], lines
        assert "Traceback" not in done.stderr


def test_a_commit_git_takes_off_the_branch_is_made_again_not_reported_done(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git stash` resets the branch to the HEAD it read before our commit landed: the commit is then off the
    branch and its entry off the disk. The write must notice, put it back and commit again."""
    from expertise_kit.store import transaction as transaction_module

    real = transaction_module.commit_revision
    calls = []

    def commit_then_stash_resets(project_arg, revision):  # type: ignore[no-untyped-def]
        outcome = real(project_arg, revision)
        calls.append(outcome.sha)
        if len(calls) == 1 and outcome.sha:
            git(project, "reset", "-q", "--hard", f"{outcome.sha}~1")  # as the stash's reset does
        return outcome

    monkeypatch.setattr(transaction_module, "commit_revision", commit_then_stash_resets)
    result = Store(find_project(project)).add_items("api", [("patterns", "Survives the reset")])
    assert result.commit is not None and result.commit.sha and len(calls) == 2
    assert result.commit.sha == git(project, "rev-parse", "HEAD").strip()
    assert "Survives the reset" in git(project, "show", "HEAD:.expertise/api.yaml")


def test_a_revision_naming_more_ids_than_one_argument_holds_is_committed_whole(project: Path) -> None:
    """A prune of thousands of hand-pasted entries names each in its `Removed` trailer: over the 128 KiB an
    argument may hold on Linux. The message goes to git on standard input, so the commit is made, not
    deferred as if git were missing."""
    from expertise_kit.project import find_project
    from expertise_kit.versioning.commit import Revision, commit_revision

    domain_file = project / ".expertise" / "api.yaml"
    domain_file.write_text(domain_file.read_text() + "# pruned by hand\n")
    removed = [f"{i:012x} patterns: pasted note {i}" for i in range(12_000)]
    revision = Revision(["api"], "pruned", "expertise(api): prune 12000 entries", [".expertise/api.yaml"],
                        removed=removed)  # fmt: skip
    outcome = commit_revision(find_project(project), revision)
    assert outcome.sha and not outcome.deferred
    message = git(project, "log", "-1", "--format=%B")
    assert len(message.encode()) > 128 * 1024
    assert message.strip().splitlines()[-1] == "Expertise-Removed: " + " ".join(f"{i:012x}" for i in range(12_000))
    assert not (project / ".git" / "expertise-pending.jsonl").exists()


def test_a_save_between_reading_and_writing_is_kept_and_the_write_planned_again(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person's editor (or `git pull`) writes the file after our write read it: writing what was planned
    would undo that. The save is kept and the entry is added on top of it."""
    from expertise_kit.store import transaction as transaction_module

    real = transaction_module.fit_to_cap
    saves: list[int] = []

    def then_a_person_saves(*args: Any, **kwargs: Any) -> Any:
        planned = real(*args, **kwargs)
        if not saves:
            saves.append(1)
            api = project / ".expertise" / "api.yaml"
            api.write_text(api.read_text().replace("patterns: []", "patterns:\n  - Hand rule saved meanwhile"))
        return planned

    monkeypatch.setattr(transaction_module, "fit_to_cap", then_a_person_saves)
    result = Store(find_project(project)).add_items("api", [("patterns", "Added by the tool")])
    assert result.commit is not None and result.commit.sha
    for text in ((project / ".expertise" / "api.yaml").read_text(), git(project, "show", "HEAD:.expertise/api.yaml")):
        assert "Hand rule saved meanwhile" in text and "Added by the tool" in text


def test_a_save_after_our_write_and_before_our_commit_is_committed_not_undone(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The save lands after our bytes are on disk and before git reads them: the commit takes both. Putting
    our bytes back (as after a `git stash`) would undo the person's edit, and commit that undoing."""
    from expertise_kit.store import transaction as transaction_module

    real = transaction_module.commit_revision

    def a_person_saves_first(project_arg, revision):  # type: ignore[no-untyped-def]
        api = project / ".expertise" / "api.yaml"
        api.write_text(api.read_text() + "# kept: a person's note\n")
        return real(project_arg, revision)

    monkeypatch.setattr(transaction_module, "commit_revision", a_person_saves_first)
    head = git(project, "rev-parse", "HEAD").strip()
    result = Store(find_project(project)).add_items("api", [("patterns", "Added by the tool")])
    assert result.commit is not None and result.commit.sha
    assert git(project, "rev-list", "--count", f"{head}..HEAD").strip() == "1"  # one commit, not a revert after it
    for text in ((project / ".expertise" / "api.yaml").read_text(), git(project, "show", "HEAD:.expertise/api.yaml")):
        assert "# kept: a person's note" in text and "Added by the tool" in text


def test_a_users_commit_that_took_our_change_first_is_no_failure(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's `git commit -a` lands between our write and our commit: ours then has nothing to commit,
    and the change is in HEAD all the same. It is not reported as lost."""
    from expertise_kit.store import transaction as transaction_module

    real = transaction_module.commit_revision

    def the_user_commits_first(project_arg, revision):  # type: ignore[no-untyped-def]
        git(project, "commit", "-qam", "my own commit", check=False)
        return real(project_arg, revision)

    monkeypatch.setattr(transaction_module, "commit_revision", the_user_commits_first)
    result = Store(find_project(project)).add_items("api", [("patterns", "Added by the tool")])
    assert result.commit is not None and result.commit.deferred is None
    assert "Added by the tool" in git(project, "show", "HEAD:.expertise/api.yaml")
    assert not (project / ".git" / "expertise-pending.jsonl").exists()


def test_a_learn_over_two_files_writes_neither_when_the_second_changed_and_is_planned_again(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file is checked before any is written: a save to the second file must not leave the first
    written and the revision half made; the whole learn is planned again and reports what it added."""
    from expertise_kit.store.transaction import Transaction

    real = Transaction.commit
    saves: list[int] = []

    def a_save_to_testing_first(self: Transaction, subject: str) -> Any:
        if not saves:
            saves.append(1)
            testing = project / ".expertise" / "testing.yaml"
            testing.write_text(testing.read_text().replace("patterns: []", "patterns:\n  - Hand rule on testing"))
        return real(self, subject)

    monkeypatch.setattr(Transaction, "commit", a_save_to_testing_first)
    item = {"text": "Learned {}", "source": "learned", "sessions": ["s1"], "first_seen": "2026-11-20T10:00:00Z",
            "last_seen": "2026-11-20T10:00:00Z", "recurrence": 1}  # fmt: skip
    batches = {
        domain: ([("patterns", {**item, "text": f"Learned for {domain}"})], ["s1"]) for domain in ("api", "testing")
    }
    results = Store(find_project(project)).merge_learned_all(batches)
    assert [len(results[d].added) for d in ("api", "testing")] == [1, 1]
    head = git(project, "show", "HEAD:.expertise/api.yaml") + git(project, "show", "HEAD:.expertise/testing.yaml")
    assert "Learned for api" in head and "Learned for testing" in head and "Hand rule on testing" in head
    assert "deferred" not in git(project, "log", "-1", "--format=%B")
