"""The write with the shared layer's update, side by side with a bare `git commit --only`, in one run.

Each run makes the same kind of change: a line more in one domain file. Alternating, p50 of N runs:

1. bare `git commit --only -m ... -- file` (the baseline);
2. our commit step (`commit_revision`, then the check that the commit holds the bytes written), as in
   bench_versioning.py;
3. that, plus publishing the file to refs/expertise/shared (`versioning.shared.publish`: loose objects, a
   compare-and-swap under the ref's lock; the ledger's origin of the new entry, the retirement check, and
   the read of what the bare commit changed since), when this worktree is the only writer (the shared
   file is what it last published). Budget: <= 2x the bare commit;
4. the same after a plain `git commit` of another domain file (untimed), whose history the publish reads
   for removals (from loose objects);
5. the same when another worktree published to the same file in between (untimed), so the shared file
   has to be merged entry by entry.

Files of two sizes: as `expertise init` writes them (a few lines), and at the 1000-line cap.

With ``--plumbing``: one shared-layer update (a blob of a file at the cap, its two trees, a commit, a
compare-and-swap of the ref) made four ways side by side, alternating: our hand writer (loose objects, the
ref's lock file), git's own plumbing (`hash-object -w`, `mktree` twice, `commit-tree`, `update-ref NEW
OLD`), dulwich and pygit2 (when installed); and what importing each costs a fresh process.

Run: python bench/bench_shared.py [--runs N] [--plumbing]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_env, p50, temp_repo  # noqa: E402


def cap_file(domain: str, tag: str) -> str:
    lines = [f"domain: {domain}", "overview: bench", "patterns:"]
    lines += [f"  - Prefer helper {n} of {tag} in module {n % 17}" for n in range(400)]
    lines.append("learned_from_failures:")
    n = 0
    while len(lines) < 980:
        lines += [
            f"  - issue: '`pytest tests/test_{tag}_{n}.py`'",
            f"    error: 'AssertionError: {n} expected 1 got 2'",
            f"    solution: edited src/{tag}_{n}.py",
            "    source: learned",
            f"    sessions: [s{tag}{n}]",
        ]
        n += 1
    return "\n".join(lines) + "\n"


def add_pattern(path: Path, text: str) -> str:
    """A lesson more in the file's patterns, as text (what a revision would write)."""
    old = path.read_text()
    new = old.replace("patterns: []", f"patterns:\n  - {text}") if "patterns: []" in old else old.replace(
        "patterns:\n", f"patterns:\n  - {text}\n", 1
    )
    path.write_text(new)
    return new


def data_of(text: str, domain: str) -> dict:  # type: ignore[type-arg]
    from expertise_kit.document.domainfile import parse_domain_text

    return parse_domain_text(text, Path(f"{domain}.yaml"), domain).loaded.plain


def run(runs: int, at_cap: bool) -> None:
    env = bench_env()
    os.environ.update({k: v for k, v in env.items() if k.startswith("GIT_") or k == "HOME"})
    from expertise_kit.project import find_project, project_for_init
    from expertise_kit.store import Store
    from expertise_kit.store.scaffold import initialise
    from expertise_kit.store.transaction import committed_holds
    from expertise_kit.versioning.commit import Revision, commit_revision
    from expertise_kit.versioning.shared import publish

    root = temp_repo(env)
    initialise(project_for_init(root))
    if at_cap:
        for domain in ("database", "api", "testing"):
            (root / ".expertise" / f"{domain}.yaml").write_text(cap_file(domain, "main"))
        subprocess.run(["git", "commit", "-q", "-am", "at the cap"], cwd=root, env=env, check=True)
    other = Path(str(root) + "-other")
    subprocess.run(["git", "worktree", "add", "-q", str(other), "-b", "other"], cwd=root, env=env, check=True)
    project, other_project = find_project(root), find_project(other)
    store = Store(project)
    # The baseline commits a file of the same size outside .expertise/: a commit in between that changes
    # no domain file (the common case: code). The "hand" case below commits a domain file by plain git.
    bare_file = root / "notes.yaml"
    bare_file.write_text((root / ".expertise" / "api.yaml").read_text())
    subprocess.run(["git", "add", "notes.yaml"], cwd=root, env=env, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "notes"], cwd=root, env=env, check=True)
    hand_file = root / ".expertise" / "api.yaml"
    # One file only this worktree writes, one the other worktree writes too.
    mine = {"commit": "testing", "alone": "testing", "hand": "testing", "merged": "database"}
    for domain in set(mine.values()):
        path = root / ".expertise" / f"{domain}.yaml"
        publish(project, {path: (domain, path.read_text())}, message="bench: start", line_cap=100_000)
    git_argv = ["git", "-c", "commit.gpgsign=false", "commit", "--only", "--no-verify", "--quiet", "-m"]
    times: dict[str, list[float]] = {"bare": [], "commit": [], "alone": [], "hand": [], "merged": []}
    for n in range(runs):
        for case in ("bare", "commit", "alone", "hand", "merged"):
            if case == "bare":
                with open(bare_file, "a") as handle:
                    handle.write(f"# bare change {n}\n")
                start = time.perf_counter()
                subprocess.run([*git_argv, f"bare change {n}", "--", str(bare_file)], cwd=root, env=env, check=True)
                times[case].append(time.perf_counter() - start)
                continue
            if case == "hand":  # a person edits another domain file and commits it with plain git (untimed)
                with open(hand_file, "a") as handle:
                    handle.write(f"# hand change {n}\n")
                subprocess.run([*git_argv, f"hand change {n}", "--", str(hand_file)], cwd=root, env=env, check=True)
            if case == "merged":  # another worktree publishes a lesson to the same file first (untimed)
                theirs = other / ".expertise" / "database.yaml"
                text = add_pattern(theirs, f"Lesson {n} from the other worktree")
                publish(other_project, {theirs: ("database", text)}, message=f"other {n}", line_cap=100_000,
                        plains={theirs: data_of(text, "database")})  # fmt: skip
            domain = mine[case]
            ours_file = root / ".expertise" / f"{domain}.yaml"
            add_pattern(ours_file, f"Lesson {n} of the {case} case")
            revision = Revision(
                domains=[domain], change="learned", subject=f"expertise({domain}): learn from s{n}",
                paths=[f".expertise/{domain}.yaml"], sessions=[f"s{n}"], added=[f"0000{n:04d} patterns: entry {n}"],
            )  # fmt: skip
            data = ours_file.read_bytes()
            plain = data_of(data.decode(), domain)  # what the transaction has at hand (untimed)
            start = time.perf_counter()
            outcome = commit_revision(project, revision)
            assert outcome.sha and committed_holds(store, outcome.sha, ours_file, data)
            if case != "commit":
                done = publish(project, {ours_file: (domain, data.decode())}, message=f"x {n}", line_cap=100_000,
                               plains={ours_file: plain}, learned={ours_file: [f"{n:08x}"]},
                               retire_days=3)  # fmt: skip
                assert done.commit is not None and bool(done.merged) == (case == "merged"), (case, done)
            times[case].append(time.perf_counter() - start)
    bare = p50(times["bare"])
    size = len((root / ".expertise" / "database.yaml").read_text().splitlines())
    print(f"files of ~{size} lines, p50 of {runs} alternating runs:")
    print(f"  {'bare `git commit --only` of one file':<52} {bare * 1000:8.1f} ms")
    for case, label in (
        ("commit", "commit step + blob check"),
        ("alone", "... + shared-ref update, one writer"),
        ("hand", "... the same after a plain commit to a domain file"),
        ("merged", "... + shared-ref update, merged by lines"),
    ):
        budget = "   (budget <= 2)" if case == "alone" else ""
        print(f"  {label:<52} {p50(times[case]) * 1000:8.1f} ms  {p50(times[case]) / bare:6.2f}x{budget}")


def _git_out(root: Path, env: dict[str, str], args: list[str], data: bytes | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=root, env=env, input=data, capture_output=True, check=True)
    return done.stdout.decode().strip()


def _by_git(root: Path, env: dict[str, str], ref: str, text: bytes, n: int) -> None:
    old = _git_out(root, env, ["rev-parse", "--verify", "--quiet", ref])
    blob = _git_out(root, env, ["hash-object", "-w", "--stdin"], text)
    sub = _git_out(root, env, ["mktree"], f"100644 blob {blob}\tdatabase.yaml\n".encode())
    tree = _git_out(root, env, ["mktree"], f"040000 tree {sub}\t.expertise\n".encode())
    commit = _git_out(root, env, ["commit-tree", tree, "-p", old, "-m", f"git {n}"])
    _git_out(root, env, ["update-ref", ref, commit, old])


def _by_hand(git: object, ref: str, text: bytes, n: int) -> None:
    from expertise_kit.versioning.shared import read_ref, update_ref, write_commit, write_object, write_tree_of

    old = read_ref(git)  # type: ignore[arg-type]
    blob = write_object(git, b"blob", text)  # type: ignore[arg-type]
    tree = write_tree_of(git, {".expertise/database.yaml": blob})  # type: ignore[arg-type]
    commit = write_commit(git, tree, [old] if old else [], f"hand {n}")  # type: ignore[arg-type]
    assert update_ref(git, commit, old)  # type: ignore[arg-type]


def _by_dulwich(root: Path, ref: str, text: bytes, n: int) -> None:
    from dulwich.objects import Blob, Commit, Tree
    from dulwich.repo import Repo

    repo = Repo(str(root))
    old = repo.refs[ref.encode()]
    blob = Blob.from_string(text)
    sub = Tree()
    sub.add(b"database.yaml", 0o100644, blob.id)
    tree = Tree()
    tree.add(b".expertise", 0o040000, sub.id)
    commit = Commit()
    commit.tree, commit.parents, commit.message = tree.id, [old], f"dulwich {n}".encode()
    commit.author = commit.committer = b"Bench <bench@example.test>"
    commit.commit_time = commit.author_time = int(time.time())
    commit.commit_timezone = commit.author_timezone = 0
    for obj in (blob, sub, tree, commit):
        repo.object_store.add_object(obj)
    assert repo.refs.set_if_equals(ref.encode(), old, commit.id)


def _by_pygit2(root: Path, ref: str, text: bytes, n: int) -> None:
    import pygit2

    repo = pygit2.Repository(str(root))
    old = repo.references[ref].target
    blob = repo.create_blob(text)
    sub = repo.TreeBuilder()
    sub.insert("database.yaml", blob, pygit2.enums.FileMode.BLOB)
    top = repo.TreeBuilder()
    top.insert(".expertise", sub.write(), pygit2.enums.FileMode.TREE)
    who = pygit2.Signature("Bench", "bench@example.test")
    commit = repo.create_commit(None, who, who, f"pygit2 {n}", top.write(), [old])
    if repo.references[ref].target != old:  # libgit2's compare-and-swap is not exposed: checked, then moved
        raise RuntimeError("moved")
    repo.references.create(ref, commit, force=True)


def plumbing(runs: int) -> None:
    """The same layer update four ways, alternating, in one run; ratios to our hand writer."""
    import importlib.util

    env = bench_env()
    os.environ.update({k: v for k, v in env.items() if k.startswith("GIT_") or k == "HOME"})
    from expertise_kit.project import find_git

    root = temp_repo(env)
    git = find_git(root)
    ref = "refs/expertise/shared"
    seed = _git_out(root, env, ["commit-tree", _git_out(root, env, ["mktree"], b""), "-m", "seed"])
    _git_out(root, env, ["update-ref", ref, seed])
    text = cap_file("database", "plumbing").encode()
    ways: dict[str, object] = {
        "hand writer (loose objects, ref lock)": lambda n: _by_hand(git, ref, text + b"# %d\n" % n, n),
        "git plumbing (5 processes)": lambda n: _by_git(root, env, ref, text + b"# %d\n" % n, n),
    }
    if importlib.util.find_spec("dulwich"):
        ways["dulwich"] = lambda n: _by_dulwich(root, ref, text + b"# %d\n" % n, n)
    if importlib.util.find_spec("pygit2"):
        ways["pygit2"] = lambda n: _by_pygit2(root, ref, text + b"# %d\n" % n, n)
    times: dict[str, list[float]] = {name: [] for name in ways}
    for n in range(runs):
        for name, way in ways.items():
            start = time.perf_counter()
            way(n * 10 + len(times[name]) + hash(name) % 7)  # type: ignore[operator]
            times[name].append(time.perf_counter() - start)
    assert _git_out(root, env, ["fsck", "--no-dangling", "--strict"]) == ""
    hand = p50(times["hand writer (loose objects, ref lock)"])
    print(f"one shared-layer update (a {len(text) // 1024} KiB file at the cap), p50 of {runs} alternating runs:")
    for name in ways:
        value = p50(times[name])
        print(f"  {name:<40} {value * 1000:8.2f} ms  {value / hand:6.2f}x the hand writer")
    base = p50([_import_time(env, "pass") for _ in range(5)])
    for module in ("dulwich.repo", "pygit2"):
        if importlib.util.find_spec(module.split(".")[0]):
            cost = p50([_import_time(env, f"import {module}") for _ in range(5)]) - base
            print(f"  importing {module:<31} {cost * 1000:8.2f} ms  (once per process)")


def _import_time(env: dict[str, str], code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--plumbing", action="store_true", help="Only the plumbing comparison.")
    args = parser.parse_args()
    if args.plumbing:
        plumbing(args.runs)
        return
    run(args.runs, at_cap=False)
    run(max(5, args.runs // 3), at_cap=True)


if __name__ == "__main__":
    main()
