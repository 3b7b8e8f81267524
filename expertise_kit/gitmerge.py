"""The merge driver as git runs it: ``python -I -c '...gitmerge import run; run()' %O %A %B %P``
(``mergedriver.driver_command``), or ``python -I -m expertise_kit merge-driver %O %A %B %P`` as older
clones name it, which ``__main__`` sends here before importing click.

The quick path reads the three files and the line cap from ``config.yaml`` in plain Python when they are
laid out as our writers leave them (``document.plainread``; libyaml otherwise), finds the project and its
git dirs as text (``locate``), and merges on plain data (``versioning.mergedriver``,
``versioning.quickmerge``), importing neither click, pydantic, ruamel, GitPython nor pathlib. Anything it
is unsure of runs the full merge, which imports them then.

Writing ``%A``: the full merge's text is written through ``Store.transaction(commit=False)``. The quick
path's text, already read back and compared with the planned data, is written under the same lock with
the same atomic write (``atomic.brief_lock``, ``atomic.write_atomic``) as the transaction's for a
delivered file, without waiting for the disk: it is git's own temp file, which git reads back at once,
never committed or cached by us. ``expertise merge-driver`` (click, for a person or an old
``merge.expertise.driver``) runs the same ``run_merge_driver``.
"""

from __future__ import annotations

import os
import sys

from expertise_kit.errors import CheckFailed, UserError
from expertise_kit.lightdata import dataclass
from expertise_kit.locate import EXPERTISE_DIR, git_dirs, lock_path, project_root, within
from expertise_kit.plainconfig import SETTINGS, plain_settings
from expertise_kit.versioning.mergedriver import (
    CONFIG_FILE,
    DRIVER_LOCK_WAIT,
    DriverMerge,
    DriverOutcome,
    merge_sides,
    read_side,
    report_prunes,
)

TYPE_CHECKING = False  # typing costs milliseconds of the merge driver's start-up
if TYPE_CHECKING:
    from pathlib import Path

    from expertise_kit.project import Project

__all__ = ["run_merge_driver", "main", "run"]

@dataclass(frozen=True)
class _Git:
    toplevel: str
    git_dir: str
    common_dir: str


@dataclass(frozen=True)
class _Place:
    """Where git runs the driver, as text (``locate``; the quick path does without pathlib): the project's
    root (where ``.expertise/`` is, or the directory git runs it in outside one) and its git dirs."""

    root: str
    git: _Git | None

    @property
    def expertise_dir(self) -> str:
        return os.path.join(self.root, EXPERTISE_DIR)

    @property
    def lock_path(self) -> str:
        return lock_path(self.root, self.git.common_dir if self.git is not None else None)


def _place(start: str) -> _Place:
    """``project.find_project``'s answer as text, or ``start`` and its git dirs outside a project."""
    found = git_dirs(start)
    git = _Git(*found) if found is not None else None
    root = project_root(start, git.toplevel if git is not None else None)
    if root is not None and os.path.islink(os.path.join(root, EXPERTISE_DIR)):
        project = _project(start)  # a linked .expertise/: project.ensure_inside decides where it may lead
        dirs = project.git
        return _Place(str(project.root), None if dirs is None else _Git(str(dirs.toplevel), str(dirs.git_dir),
                                                                        str(dirs.common_dir)))  # fmt: skip
    if root is None:
        return _Place(start, git)
    return _Place(root, git if git is not None and within(root, git.toplevel) else None)


def _project(start: str) -> Project:
    from pathlib import Path

    from expertise_kit.project import Project, find_git, find_project

    try:
        return find_project(Path(start))
    except UserError:
        return Project(Path(start), find_git(Path(start)))


def _plain_line_cap(place: _Place) -> int | None:
    """The line cap from a ``config.yaml`` that surely validates, read in plain Python (or with libyaml);
    None: not sure."""
    path = os.path.join(place.expertise_dir, CONFIG_FILE)
    if not os.path.lexists(path):
        return int(SETTINGS["line_cap"][0])
    from expertise_kit.document.textfile import read_text_file
    from expertise_kit.versioning.quickmerge import strict_plain

    try:
        data = strict_plain(read_text_file(path))
    except UserError:
        return None
    settings = plain_settings(data)
    return None if settings is None else int(settings["line_cap"])


def _line_cap(place: _Place) -> int:
    cap = _plain_line_cap(place)
    if cap is not None:
        return cap
    from pathlib import Path

    from expertise_kit.config import Config, load_config

    try:
        return load_config(Path(place.expertise_dir)).line_cap
    except UserError:
        return Config.default().line_cap  # a config.yaml in conflict itself must not stop the domain files merging


def _write(place: _Place, ours: str, done: DriverMerge, name: str | None) -> None:
    if done.quick:
        from expertise_kit.document.atomic import brief_lock, write_atomic

        with brief_lock(place.lock_path, DRIVER_LOCK_WAIT):
            write_atomic(ours, done.text.encode("utf-8"), durable=False)  # git's temp file: it reads it back now
        return
    from pathlib import Path

    from expertise_kit.config import Config, load_config
    from expertise_kit.store import Store

    project = _project(place.root)
    try:
        config = load_config(project.expertise_dir)
    except UserError:
        config = Config.default()  # a config.yaml in conflict itself must not stop the domain files merging
    store = Store(project, config)
    with store.transaction("merged", commit=False, lock_wait=DRIVER_LOCK_WAIT) as tx:
        tx.deliver(Path(ours), done.text)
        tx.commit(f"merge {name or ours}")


def run_merge_driver(
    base: str | Path, ours: str | Path, theirs: str | Path, name: str | None, *, start: str | Path
) -> DriverOutcome:
    """Merge ``ours`` and ``theirs`` against ``base`` into ``ours``. A file that can't be read at all
    raises its ``UserError`` and leaves ``ours`` as it was (git then records a conflict)."""
    paths = (os.fspath(base), os.fspath(ours), os.fspath(theirs))
    texts = [read_side(path, side, name) for path, side in zip(paths, ("base", "ours", "theirs"), strict=True)]
    place = _place(os.path.realpath(start))
    line_cap = _line_cap(place)
    done = merge_sides(paths, texts, name, line_cap)
    if done.text != texts[1]:
        _write(place, paths[1], done, name)
    report_prunes(place.git, name, done, line_cap)
    return done.outcome


def main(argv: list[str]) -> int | None:
    """``merge-driver %O %A %B [%P]`` without click; None when the arguments need click (an option, a
    wrong count), which then parses them and says what is wrong."""
    if len(argv) not in (3, 4) or any(arg.startswith("-") for arg in argv):
        return None
    try:
        name = argv[3] if len(argv) == 4 else None
        outcome = run_merge_driver(argv[0], argv[1], argv[2], name, start=os.getcwd())
        for note in outcome.notes:
            print(f"expertise: {note}", file=sys.stderr)
        if not outcome.clean:
            raise CheckFailed(outcome.message)
        if outcome.message:
            print(f"expertise: {outcome.message}", file=sys.stderr)
    except UserError as exc:
        print(f"expertise: error: {exc.one_line()}", file=sys.stderr)
        return 1
    except FileNotFoundError:
        print("expertise: error: the current directory no longer exists; cd to your project", file=sys.stderr)
        return 1
    return 0


def run() -> None:
    """What git runs (``driver_command``): the driver without click, or click's for arguments it must parse."""
    code = main(sys.argv[1:])
    if code is None:
        from expertise_kit.cli import main as cli

        sys.argv = ["expertise", "merge-driver", *sys.argv[1:]]
        cli()
    sys.exit(code)
