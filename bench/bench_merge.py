"""Merge budgets, side by side in one run.

1. The budget: the driver as git runs it (`python -I -c "...gitmerge import run; run()"`, as `init`
   registers it), on its quick path, against `python -I -c pass`, alternating, for two domain files at
   the 1000-line cap (each side with new learnings and new sightings of shared entries since the base)
   and for small ones. Budget: ratio <= 4.
   `--before DIR` times an older tree's driver in the same run (`git archive <commit> | tar -x -C DIR`).
   Then, for scale, the same at the cap against `git merge-file` (the retired 3x budget), the start-up
   with the driver's imports, and the quick and the full merge in process.
2. Eight branches learning in parallel, merged one by one into main with `git merge`: end to end.
3. Four clones of one bare remote, in rounds of learn, `git pull --rebase`, `git push`.

Run: python bench/bench_merge.py [--runs N] [--before DIR] [--driver-only]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_env, p50, python_startup, row, scratch_dir, temp_repo, time_call, time_command  # noqa: E402

SECTIONS = ("patterns", "best_practices", "effective_patterns", "successful_techniques")


def _learned(text: str, *sessions: str, day: int = 1) -> dict[str, Any]:
    stamp = f"2026-11-{day:02d}T10:00:00Z"
    return {"text": text, "source": "learned", "sessions": list(sessions), "first_seen": stamp, "last_seen": stamp}


def _files_at_cap(entries: int = 190) -> tuple[str, str, str]:
    from expertise_kit.document.splice import Append, Replace, apply_edits
    from expertise_kit.document.yamlio import parse_yaml_text
    from expertise_kit.store.scaffold import domain_template

    path = Path(".expertise/database.yaml")
    edits = [
        Append(SECTIONS[n % 4], _learned(f"Lesson {n}: keep {n} connections warm in pool", f"s{n}", f"t{n}"))
        for n in range(entries)
    ]
    base = apply_edits(parse_yaml_text(domain_template("database"), path), list(edits))

    def side(tag: str, offset: int) -> str:
        loaded = parse_yaml_text(base, path)
        changes: list[Any] = [
            Append(SECTIONS[n % 4], _learned(f"{tag} lesson {n} about indexes", f"{tag}{n}", day=9))
            for n in range(6)
        ]
        for n in range(offset, offset + 8):  # new sightings of shared entries, some on both sides
            raw = loaded.plain[SECTIONS[n % 4]][n // 4]
            changes.append(Replace(SECTIONS[n % 4], n // 4, {**raw, "sessions": [*raw["sessions"], f"{tag}x{n}"],
                                                              "recurrence": 3, "last_seen": "2026-11-09T00:00:00Z"}))
        return apply_edits(loaded, changes)

    return base, side("ours", 0), side("theirs", 4)


def _driver_argv(paths: dict[str, Path], checkout: str | None) -> list[str]:
    """The driver as git runs it (``merge.expertise.driver``); with ``checkout``, that tree's code instead
    (``--before``: an older commit exported with ``git archive``), started the same way."""
    files = [str(paths["O"]), str(paths["A"]), str(paths["B"]), ".expertise/database.yaml"]
    if checkout is None:
        from expertise_kit.versioning.mergedriver import DRIVER_CODE

        return [sys.executable, "-I", "-c", DRIVER_CODE, *files]  # driver_command(), as init registers it
    probe = (f"import runpy, sys; sys.path.insert(0, {checkout!r}); sys.argv = ['x', 'merge-driver', *sys.argv[1:]]; "
             "runpy.run_module('expertise_kit', run_name='__main__', alter_sys=True)")  # fmt: skip
    return [sys.executable, "-I", "-c", probe, *files]


def _one_driver_run(argv: list[str], paths: dict[str, Path], ours: str, env: dict[str, str], cwd: Path) -> float:
    paths["A"].write_text(ours)
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def driver_against_python(runs: int, entries: int, before: str | None, in_repo: bool = False) -> None:
    """The budget: the driver's quick path, whole process, <= 4x `python -I -c pass`, alternating in one run.
    ``in_repo``: run where git runs it, in an initialised repository (the shared layer's memo of parsed data
    is looked up and written, which imports versioning/shared.py)."""
    base, ours, theirs = _files_at_cap(entries)
    if in_repo:
        from expertise_kit.project import project_for_init
        from expertise_kit.store.scaffold import initialise

        scratch = temp_repo(dict(os.environ))
        initialise(project_for_init(scratch))
    else:
        scratch = scratch_dir("expertise-bench-merge-")
    paths = {name: scratch / name for name in ("O", "A", "B")}
    paths["O"].write_text(base)
    paths["B"].write_text(theirs)
    env = bench_env()
    pass_argv = [sys.executable, "-I", "-c", "pass"]
    argvs = {"now": _driver_argv(paths, None), **({"before": _driver_argv(paths, before)} if before else {})}
    samples: dict[str, list[float]] = {"pass": [], **{k: [] for k in argvs}}
    for _ in range(runs):
        samples["pass"] += time_command(pass_argv, 1, env, cwd=scratch)
        for key, argv in argvs.items():
            samples[key].append(_one_driver_run(argv, paths, ours, env, scratch))
    from expertise_kit.versioning.quickmerge import merge_for_driver

    quick = merge_for_driver((base, ours, theirs), domain="database", line_cap=1000)
    assert quick is not None, "the quick path declined: this measures the full merge"
    floor = p50(samples["pass"])
    where = "in a repository" if in_repo else "outside a repository"
    print(f"\nthe driver's quick path, files of {ours.count(chr(10))} lines ({len(quick.pruned)} pruned by the cap), "
          f"{where}, p50 of {runs}, alternating:")  # fmt: skip
    print(row("python -I -c pass (baseline)", floor, floor))
    print(row("expertise merge-driver, as git runs it", p50(samples["now"]), floor) + "   budget <= 4x")
    if before:
        print(row(f"  the same, code of {Path(before).name}", p50(samples["before"]), floor))
    shutil.rmtree(scratch, ignore_errors=True)


def file_merge(runs: int) -> None:
    base, ours, theirs = _files_at_cap()
    scratch = scratch_dir("expertise-bench-merge-")
    paths = {name: scratch / name for name in ("O", "A", "B", "A.git")}
    paths["O"].write_text(base)
    paths["B"].write_text(theirs)
    print(f"files: base {base.count(chr(10))} lines, ours {ours.count(chr(10))}, theirs {theirs.count(chr(10))}")
    env = bench_env()
    driver = _driver_argv(paths, None)
    git = ["git", "merge-file", str(paths["A.git"]), str(paths["O"]), str(paths["B"])]
    ours_samples: list[float] = []
    git_samples: list[float] = []
    git_conflicts = 0
    for _ in range(runs):
        ours_samples.append(_one_driver_run(driver, paths, ours, env, scratch))
        paths["A.git"].write_text(ours)
        start = time.perf_counter()
        done = subprocess.run(git, env=env, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        git_samples.append(time.perf_counter() - start)
        git_conflicts = done.returncode
    floor = p50(python_startup(runs, env))
    imports = [sys.executable, "-I", "-c", "import expertise_kit.gitmerge"]
    import_floor = p50(time_command(imports, runs, env, cwd=scratch))
    from expertise_kit.versioning.merge import merge_domain_texts
    from expertise_kit.versioning.mergedriver import _git_line_merge
    from expertise_kit.versioning.quickmerge import merge_for_driver

    paths["A"].write_text(ours)
    by_git = _git_line_merge((str(paths["O"]), str(paths["A"]), str(paths["B"])), [base, ours, theirs])

    def full() -> Any:
        return merge_domain_texts(base, ours, theirs, path=Path(".expertise/database.yaml"), domain="database",
                                  line_cap=1000, line_merge=by_git)  # fmt: skip

    def quick() -> Any:
        return merge_for_driver((base, ours, theirs), domain="database", line_cap=1000, line_merge=by_git)

    merged, fast = full(), quick()
    assert fast is not None and fast.text == merged.text, "the quick path declined or differs"
    whole, inside = p50(time_call(full, runs)), p50(time_call(quick, runs))
    baseline = p50(git_samples)
    print(f"git merge-file: {git_conflicts} conflicts; ours: {len(merged.conflicts)} conflicts, "
          f"{merged.lines} lines, {len(merged.pruned)} pruned by the cap")  # fmt: skip
    print(row("git merge-file (for scale; the old 3x budget)", baseline, baseline))
    print(row("expertise merge-driver, as git runs it", p50(ours_samples), baseline))
    print(row("  python -I -c pass (start-up floor)", floor, baseline))
    print(row("  start-up + the driver's imports", import_floor, baseline))
    print(row("  the quick merge in process (libyaml)", inside, baseline))
    print(row("  the full merge in process (ruamel)", whole, baseline))
    shutil.rmtree(scratch, ignore_errors=True)


def by_lines(runs: int) -> None:
    """Below the cap, with the three versions' data remembered (branches of worktrees on one machine), the
    driver merges by lines (versioning.quickmerge) and checks the result with libyaml."""
    from expertise_kit.document.domainfile import parse_domain_text
    from expertise_kit.versioning.merge import merge_domain_texts
    from expertise_kit.versioning.quickmerge import quick_merge

    base, ours, theirs = _files_at_cap(100)
    path = Path(".expertise/database.yaml")
    data = [parse_domain_text(t, path, "database").loaded.plain for t in (base, ours, theirs)]
    scratch = scratch_dir("expertise-bench-merge-")
    for name, text in (("O", base), ("B", theirs)):
        (scratch / name).write_text(text)
    git = ["git", "merge-file", str(scratch / "A"), str(scratch / "O"), str(scratch / "B")]
    git_samples = []
    for _ in range(runs):
        (scratch / "A").write_text(ours)
        start = time.perf_counter()
        subprocess.run(git, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        git_samples.append(time.perf_counter() - start)
    quick = quick_merge(data[0], ours, data[1], data[2], line_cap=1000, prefer=None)
    assert quick is not None, "the merge by lines declined"
    full = merge_domain_texts(base, ours, theirs, path=path, domain="database", line_cap=1000)
    assert quick[1] == full.plain or not full.conflicts
    lines = p50(time_call(lambda: quick_merge(data[0], ours, data[1], data[2], line_cap=1000, prefer=None), runs))
    whole = p50(time_call(lambda: merge_domain_texts(base, ours, theirs, path=path, domain="database",
                                                     line_cap=1000), runs))  # fmt: skip
    baseline = p50(git_samples)
    print(f"\nfiles of {ours.count(chr(10))} lines (below the cap), the three versions' data remembered:")
    print(row("git merge-file (baseline)", baseline, baseline))
    print(row("  the merge by lines in process", lines, baseline))
    print(row("  the full merge in process", whole, baseline))
    shutil.rmtree(scratch, ignore_errors=True)


def _learn(root: Path, session: str, n: int) -> None:
    from expertise_kit.project import find_project
    from expertise_kit.store import Store

    items = [(SECTIONS[k % 4], _learned(f"Lesson {k}", session)) for k in (n, n + 1, 100 + n)]
    Store(find_project(root)).merge_learned("database", items, sessions=[session])


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def eight_branches() -> None:
    from expertise_kit.project import project_for_init
    from expertise_kit.store.scaffold import initialise

    root = temp_repo(dict(os.environ))
    initialise(project_for_init(root))
    for n in range(8):
        _git(root, "checkout", "-q", "-b", f"agent-{n}", "main")
        for k in range(3):
            _learn(root, f"branch{n}-session{k}", n * 3 + k)
    _git(root, "checkout", "-q", "main")
    conflicts = 0
    start = time.perf_counter()
    for n in range(8):
        conflicts += _git(root, "merge", "--no-edit", "-q", f"agent-{n}").returncode != 0
    elapsed = time.perf_counter() - start
    lines = (root / ".expertise" / "database.yaml").read_text().count("\n")
    print(f"8 branches x 3 learnings merged into main: {conflicts} conflicts, {elapsed:.2f} s end to end "
          f"({elapsed / 8 * 1000:.0f} ms per merge), database.yaml {lines} lines")  # fmt: skip
    shutil.rmtree(root, ignore_errors=True)


def four_clones(rounds: int) -> None:
    from expertise_kit.document.domainfile import load_domain_file
    from expertise_kit.project import project_for_init
    from expertise_kit.store.scaffold import initialise

    seed = temp_repo(dict(os.environ))
    initialise(project_for_init(seed))
    remote = seed.parent / (seed.name + "-remote.git")
    _git(seed.parent, "init", "-q", "--bare", "-b", "main", str(remote))
    _git(seed, "push", "-q", str(remote), "main")
    clones = []
    for n in range(4):
        clone = seed.parent / f"{seed.name}-clone{n}"
        _git(seed.parent, "clone", "-q", str(remote), clone.name)
        initialise(project_for_init(clone))  # registers the driver in the clone's git config
        clones.append(clone)
    conflicts = 0
    start = time.perf_counter()
    for r in range(rounds):
        for n, clone in enumerate(clones):
            _learn(clone, f"clone{n}-round{r}", n * 10 + r)
            _learn(clone, f"shared-round{r}", 500 + r)  # learned in every clone: must count once
        for clone in clones:
            conflicts += _git(clone, "pull", "-q", "--rebase").returncode != 0
            conflicts += _git(clone, "push", "-q").returncode != 0
    for clone in clones:
        _git(clone, "pull", "-q", "--rebase")
    elapsed = time.perf_counter() - start
    files = {(c / ".expertise" / "database.yaml").read_bytes() for c in clones}
    doc = load_domain_file(clones[0] / ".expertise" / "database.yaml", "database")
    entries = doc.entry_count
    shared = [raw for s in SECTIONS for raw in doc.loaded.plain[s] or [] if str(raw.get("text")).startswith("Lesson 5")]
    double = sum(1 for raw in shared if raw.get("recurrence", 1) != len(set(raw["sessions"])))
    print(f"4 clones x {rounds} rounds (learn, pull --rebase, push): {conflicts} conflicts, {entries} entries, "
          f"{len(files)} distinct final file(s), {double} entries counted twice, {elapsed:.2f} s")  # fmt: skip
    shutil.rmtree(seed.parent / seed.name, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", metavar="DIR", help="also time the driver of this tree (git archive of a commit)")
    parser.add_argument("--driver-only", action="store_true", help="only the driver against python -I -c pass")
    args = parser.parse_args()
    env = bench_env()
    os.environ.update({k: v for k, v in env.items() if k.startswith("GIT_") or k == "HOME"})
    driver_against_python(args.runs, 190, args.before)  # at the 1000-line cap
    driver_against_python(args.runs, 30, args.before)  # a small file
    driver_against_python(args.runs, 190, None, in_repo=True)
    if args.driver_only:
        return
    file_merge(args.runs)
    eight_branches()
    four_clones(args.rounds)


if __name__ == "__main__":
    main()
