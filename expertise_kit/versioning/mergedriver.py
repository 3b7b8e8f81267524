"""``expertise merge-driver %O %A %B %P``: git's merge driver for ``.expertise/`` files, and its registration.

Git runs the driver for every path ``.expertise/.gitattributes`` marks ``merge=expertise`` when both
sides changed it, in a merge, a rebase, a cherry-pick or ``pull``. It reads the common base ``%O``, ours
``%A`` and theirs ``%B`` (temp files git made), writes the result over ``%A`` and exits 0 when the merge
is clean, non-zero when git must record a conflict. A domain file is merged entry by entry
(``versioning.merge``); a side that is not a valid domain file gets git's own line merge, with its
markers, so such a file merges no worse than without us. This module decides what ``%A`` holds and names
what the cap pruned (``mergerecord`` keeps it for ``expertise history``); writing ``%A`` is above the
store, in ``gitmerge.py`` (git makes the merge commit). Nothing here imports the store, pydantic or ruamel
at module level: the full merge loads them when it runs.

The registration lives in two places. ``.expertise/.gitattributes`` is committed, so it travels; git
config does not, so each clone runs ``expertise init`` once (or sets ``merge.expertise.driver`` by
hand). The command named there is this interpreter's, which is fine because git config stays on
this machine; the committed attributes name only the driver, never a path.
"""

from __future__ import annotations

import os
import sys

from expertise_kit.document.names import validate_domain_name
from expertise_kit.document.textfile import read_text_file
from expertise_kit.errors import UserError
from expertise_kit.lightdata import dataclass, field
from expertise_kit.locate import EXPERTISE_DIR
from expertise_kit.versioning.merge import DomainMerge, LineMerge, line_merge_text, merge_domain_texts

TYPE_CHECKING = False  # typing costs milliseconds of the merge driver's start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from expertise_kit.locate import GitDirs
    from expertise_kit.project import Project

__all__ = [
    "ATTRIBUTES_NAME",
    "ATTRIBUTES_TEXT",
    "DRIVER_NAME",
    "DriverMerge",
    "DriverOutcome",
    "driver_command",
    "merge_sides",
    "read_side",
    "register_driver",
    "report_prunes",
    "CLONE_SETUP_LINE",
]

DRIVER_NAME = "expertise"
CONFIG_FILE = "config.yaml"  # config.CONFIG_NAME, named here so the quick path need not import config (pydantic)
ATTRIBUTES_NAME = ".gitattributes"
ATTRIBUTES_LINE = f"*.yaml merge={DRIVER_NAME}"
ATTRIBUTES_TEXT = (
    "# expertise_kit: git merges the domain files entry by entry (`expertise merge-driver`).\n"
    "# git config does not travel with a clone: run `expertise init` once in each clone to register it.\n"
    f"{ATTRIBUTES_LINE}\n"
    "config.yaml merge=text\n"
)
CLONE_SETUP_LINE = f"git config merge.{DRIVER_NAME}.driver 'expertise merge-driver %O %A %B %P'"
# Git holds the index lock while the driver runs; one of our writers holding our lock may be waiting
# for that index lock (up to a few seconds) to commit. Waiting longer than that only stalls both.
DRIVER_LOCK_WAIT = 3.0


DRIVER_CODE = "from expertise_kit.gitmerge import run; run()"


def driver_command(python: str | None = None) -> str:
    """The command git config names: this interpreter, so it works whether or not `expertise` is on PATH,
    isolated (``-I``: no environment variables, user site or current directory on the path), with ``-c``
    rather than ``-m`` (whose ``runpy`` costs each start ~7 ms). ``python -I -m expertise_kit merge-driver``,
    which older clones name, runs the same code."""
    import shlex

    return f"{shlex.quote(python or sys.executable)} -I -c {shlex.quote(DRIVER_CODE)} %O %A %B %P"


def register_driver(project: Project) -> bool:
    """Point this repo's git config at the driver; True when it changed. Outside git, nothing to do."""
    if project.git is None:
        return False
    from expertise_kit.versioning.git import open_repo, run_git

    wanted = {
        f"merge.{DRIVER_NAME}.name": "expertise_kit: merge .expertise/ files entry by entry",
        f"merge.{DRIVER_NAME}.driver": driver_command(),
    }
    changed = False
    with open_repo(project.git.toplevel) as repo:
        for key, value in wanted.items():
            current = run_git(repo, ["config", "--local", "--get", key], check=False).stdout.rstrip("\n")
            if current != value:
                run_git(repo, ["config", "--local", key, value])
                changed = True
    return changed


@dataclass
class DriverOutcome:
    clean: bool
    message: str = ""  # the one line for stderr: the conflict, or why the file was merged line by line
    notes: list[str] = field(default_factory=list)  # more lines for stderr: what the cap pruned


def prune_notes(shown: str, merged: DomainMerge, cap: int) -> list[str]:
    """The stderr lines naming what a merge pruned at the cap, in the order it pruned them (learned first)."""
    notes = []
    if merged.pruned:
        count = len(merged.pruned)
        notes.append(
            f"{shown}: the merge came to more than the {cap}-line cap, so it pruned {count} "
            f"entr{'y' if count == 1 else 'ies'}, learned ones first; `expertise history` lists them:"
        )
        notes += [
            f"  pruned {'learned' if p.learned else 'hand-written'} {p.section} entry {p.id}: {p.text[:80]}"
            for p in merged.pruned
        ]
    if merged.over_by:
        notes.append(f"{shown}: still {merged.over_by} lines over the {cap}-line cap")
    return notes


def _record_prune(git: GitDirs | None, shown: str, domain: str, merged: DomainMerge, cap: int) -> list[str]:
    """Keep what was pruned for ``expertise history`` (``mergerecord``); a line for stderr if that failed."""
    if git is None or not merged.pruned:
        return []
    from expertise_kit.versioning.mergerecord import record_merge_prune

    try:
        record_merge_prune(
            git, path=shown, domain=domain, cap=cap, pruned=merged.pruned, text=merged.text,
            over_by=merged.over_by,
        )  # fmt: skip
    except OSError as exc:
        return [f"{shown}: could not keep this list for `expertise history`: {exc.strerror or exc}"]
    return []


def _domain_of(name: str | None) -> str | None:
    if not name:
        return None
    directory, filename = os.path.split(name)  # git's %P, relative to the work tree's top
    stem, suffix = os.path.splitext(filename)
    if suffix != ".yaml" or os.path.basename(directory) != EXPERTISE_DIR or filename == CONFIG_FILE:
        return None
    try:
        validate_domain_name(stem)
    except UserError:
        return None
    return stem


def _where(error: UserError) -> str:
    """Why a side could not be merged entry by entry, without the hint meant for a file on disk."""
    place = f"{error.path}:{error.line}: " if error.path and error.line else f"{error.path}: " if error.path else ""
    return place + error.message


def _git_line_merge(paths: tuple[str, str, str], texts: list[str], *, early: bool = True) -> LineMerge:
    """The plain line merge of the driver's three files by ``git merge-file``: git's own diff3, in C, where
    ours takes 60 ms at the cap. When the merges will ask for it (``early``: a domain file, and theirs
    changed it, not as ours did) it is started at once, so it runs while the files are read and planned;
    its answer is kept for a second ask. The texts are the files' (read before anything is written), so
    they are not passed again; without git, or if it fails, the Python merge does it."""
    base, ours, theirs = paths
    command = ["git", "merge-file", "-p", "-q", str(ours), str(base), str(theirs)]
    wanted = early and bool(texts[0].strip()) and texts[2] != texts[0] and texts[2] != texts[1]
    running = [_start(command)] if wanted else []
    answers: list[str | None] = []

    def merge(base_text: str, ours_text: str, theirs_text: str) -> str | None:
        if not answers:
            answers.append(_answer((running or [_start(command)])[0](60), base_text, ours_text, theirs_text))
        return answers[0]

    return merge


def _answer(done: tuple[int, bytes] | None, base_text: str, ours_text: str, theirs_text: str) -> str | None:
    if done is None:
        return line_merge_text(base_text, ours_text, theirs_text)
    status, out = done
    if 0 < status < 128:
        return None  # the number of conflicts
    if status != 0:
        return line_merge_text(base_text, ours_text, theirs_text)
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _start(command: list[str]) -> Callable[[float], tuple[int, bytes] | None]:
    """Start ``command`` (its stderr dropped); what is returned waits, at most the seconds it is given,
    for its exit status and output: None when it can't run or overruns. Spawned with ``posix_spawnp``
    where there is one: importing subprocess costs the quick path's start-up about 10 ms."""
    import os

    if not hasattr(os, "posix_spawnp"):
        import subprocess

        def run(timeout: float) -> tuple[int, bytes] | None:
            try:
                ran = subprocess.run(command, capture_output=True, check=False, timeout=timeout)  # noqa: S603
            except (OSError, subprocess.SubprocessError):
                return None
            return ran.returncode, ran.stdout

        return run
    read_end, write_end = os.pipe()
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return lambda timeout: None
    actions = [(os.POSIX_SPAWN_DUP2, write_end, 1), (os.POSIX_SPAWN_DUP2, devnull, 2), (os.POSIX_SPAWN_CLOSE, read_end)]
    try:
        pid = os.posix_spawnp(command[0], command, os.environ, file_actions=actions)
    except OSError:
        os.close(read_end)
        return lambda timeout: None
    finally:
        os.close(write_end)
        os.close(devnull)
    return lambda timeout: _collect(pid, read_end, timeout)


def _collect(pid: int, read_end: int, timeout: float) -> tuple[int, bytes] | None:
    import os
    import select
    import time

    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                os.kill(pid, 9)  # SIGKILL, as subprocess.run's timeout does
                os.waitpid(pid, 0)
                return None
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks)


def _quick(domain: str | None, texts: list[str], line_cap: int, line_merge: LineMerge) -> DomainMerge | None:
    """The merge on plain data, changed by lines (``versioning.quickmerge``): the same result as the full
    merge, or None when that must run."""
    if domain is None:
        return None
    from expertise_kit.versioning.quickmerge import merge_for_driver

    done = merge_for_driver((texts[0], texts[1], texts[2]), domain=domain, line_cap=line_cap, line_merge=line_merge)
    return done  # type: ignore[no-any-return]


def read_side(path: str | Path, side: str, name: str | None) -> str:
    """One side's text. Git hands the driver temp files (``.merge_file_0EjNA1``) that are gone when it
    returns, so an error names the path being merged (``%P``) and the side, not the temp file."""
    try:
        return read_text_file(path)
    except UserError as exc:
        if not name:
            raise
        message = f"{side} side ({_SIDES[side]}): {exc.message}"
        raise UserError(message, path=name, line=exc.line, hint=exc.hint) from None


_SIDES = {"base": "the common ancestor, %O", "ours": "this branch, %A", "theirs": "the branch merged in, %B"}


@dataclass
class DriverMerge:
    """What the driver decided for ``%A``, before anything is written."""

    outcome: DriverOutcome
    text: str  # what %A is to hold
    merged: DomainMerge | None = None  # the entry merge (None: merged line by line)
    quick: bool = False  # the quick path's result, read back and verified against the planned data


def merge_sides(
    paths: tuple[str, str, str], texts: list[str], name: str | None, line_cap: int
) -> DriverMerge:
    """Merge the texts of git's ``%O %A %B`` (``paths``) entry by entry: the quick path first, else the
    full merge; a side that is not a valid domain file gets a line merge with git's markers. Writes
    nothing (``gitmerge`` writes ``%A``)."""
    shown = name or str(paths[1])
    domain = _domain_of(name)
    outcome: DriverOutcome
    result_text: str
    merged: DomainMerge | None = None
    line_merge = _git_line_merge(paths, texts, early=domain is not None)
    try:
        quick = _quick(domain, texts, line_cap, line_merge)
    except Exception:  # noqa: BLE001 - the full merge below decides
        quick = None
    try:
        if domain is None:
            raise UserError("not a domain file", path=shown)
        merged = quick or merge_domain_texts(
            *texts, path=_path(shown), domain=domain, line_cap=line_cap, line_merge=line_merge
        )
    except UserError as exc:
        from expertise_kit.versioning.textmerge import merge_lines  # a side that is not a domain file: rare

        lines = merge_lines(*(t.splitlines(keepends=True) for t in texts), labels=("ours", "base", "theirs"))
        result_text = lines.text
        reason = exc.message if domain is None else _where(exc)
        if lines.conflicts:
            outcome = DriverOutcome(
                False,
                f"{shown}: merged line by line ({reason}): {lines.conflicts} conflict"
                f"{'s' if lines.conflicts != 1 else ''} marked with <<<<<<<; resolve them, then `git add` it",
            )
        else:
            outcome = DriverOutcome(True, f"note: {shown}: merged line by line ({reason})" if domain else "")
    else:
        result_text = merged.text
        if merged.conflicts:
            named = "; ".join(c.describe() for c in merged.conflicts[:3])
            more = f" and {len(merged.conflicts) - 3} more" if len(merged.conflicts) > 3 else ""
            outcome = DriverOutcome(
                False,
                f"{shown}: merge conflict in {named}{more}: both versions kept under `conflict:`; "
                "edit it, delete `conflict:`, then `git add` it",
            )
        else:
            outcome = DriverOutcome(True)
    return DriverMerge(outcome, result_text, merged, quick=quick is not None and merged is quick)


def _path(name: str) -> Path:
    from pathlib import Path  # the full merge's: the quick path does without pathlib (``locate``)

    return Path(name)


def report_prunes(git: GitDirs | None, name: str | None, done: DriverMerge, line_cap: int) -> None:
    """Once ``%A`` is written: name what the cap pruned on stderr (``notes``) and keep it for history."""
    merged, domain = done.merged, _domain_of(name)
    if merged is None or domain is None or not (merged.pruned or merged.over_by):
        return
    shown = name or ""
    done.outcome.notes = prune_notes(shown, merged, line_cap)
    done.outcome.notes += _record_prune(git, shown, domain, merged, line_cap)
