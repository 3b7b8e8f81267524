"""``locate.py``: the project and its git dirs found as text, as ``project.py``'s pathlib search finds them."""

from __future__ import annotations

from pathlib import Path

from conftest import git

from expertise_kit.locate import git_dirs, project_root, within
from expertise_kit.project import find_git


def test_a_worktree_named_by_an_absolute_gitdir_with_a_trailing_slash(tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q")
    git(main, "commit", "-q", "--allow-empty", "-m", "start")
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", str(linked))
    dot_git = linked / ".git"
    dot_git.write_text(dot_git.read_text().strip() + "/\n")  # as a hand-made or older gitdir line may be
    found = git_dirs(str(linked.resolve()))
    location = find_git(linked)
    assert found is not None and location is not None
    assert found == (str(location.toplevel), str(location.git_dir), str(location.common_dir))
    assert not found[1].endswith("/")


def test_the_project_root_stops_at_the_work_trees_top(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    (outer / ".expertise").mkdir(parents=True)
    inner = outer / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    top = str(inner.resolve())
    assert project_root(top, top) is None  # .expertise/ above the repository is not its project
    assert project_root(top, None) == str(outer.resolve())
    assert within(top, str(outer.resolve())) and not within(str(outer.resolve()), top)
    assert not within(str(tmp_path / "outer2"), str(outer.resolve()))
