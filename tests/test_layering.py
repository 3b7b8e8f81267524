"""Issue 25, point 8: the packages import downwards only.

``versioning/`` (git, commits, the log, merges) sits below ``store/``: revert, blame and the merge
driver's write are operations above the store (``store/revert.py``, ``store/blame.py``,
``gitmerge.py``). And the hook and ``learning/`` don't import each other both ways: what both need from
an agent's hook input is ``fast/hookinput.py``. Checked on the source (every import, at module level or
inside a function), so a lazy import can't hide a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "expertise_kit"

def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in ``path``, ``from X import Y`` giving both X and X.Y."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _modules(directory: str) -> list[Path]:
    return sorted((PACKAGE / directory).glob("*.py"))


@pytest.mark.parametrize("path", _modules("versioning"), ids=lambda p: p.name)
def test_versioning_does_not_import_the_store(path: Path) -> None:
    name = path.relative_to(PACKAGE).as_posix()
    found = [f"{name}:{line}: {module}" for line, module in _imports(path) if _under(module, "expertise_kit.store")]
    assert not found, "versioning/ sits below store/; move the operation above it:\n" + "\n".join(found)


def _importers(directory: str, target: str) -> list[str]:
    paths = _modules(directory) if directory.endswith("/") or (PACKAGE / directory).is_dir() else [PACKAGE / directory]
    return [
        f"{path.relative_to(PACKAGE).as_posix()}:{line}: {module}"
        for path in paths
        for line, module in _imports(path)
        if _under(module, target)
    ]


def test_no_import_cycle_between_the_hook_and_learning() -> None:
    hook_to_learning = _importers("hook.py", "expertise_kit.learning")
    learning_to_hook = _importers("learning", "expertise_kit.hook")
    assert not (hook_to_learning and learning_to_hook), "\n".join(hook_to_learning + learning_to_hook)
    assert not learning_to_hook  # the hook starts the learner; the learner never reaches back into the hook


def test_the_merge_driver_module_and_the_quick_path_import_no_heavy_package_at_module_level() -> None:
    """What ``python -m expertise_kit merge-driver`` loads before it knows whether the quick path will do:
    no click, pydantic, ruamel or GitPython at the top of these modules (test_driver_light.py runs it)."""
    modules = [
        "gitmerge.py", "versioning/mergedriver.py", "versioning/merge.py", "versioning/quickmerge.py",
        "versioning/mergerecord.py", "versioning/textmerge.py", "document/edits.py", "document/prune.py",
        "document/plainentry.py", "document/plainrender.py", "document/textfile.py", "document/ids.py",
    ]  # fmt: skip
    heavy = ("click", "pydantic", "ruamel", "git", "expertise_kit.config", "expertise_kit.store", "expertise_kit.cli")
    for name in modules:
        tree = ast.parse((PACKAGE / name).read_text(encoding="utf-8"))
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        for node in top:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            assert not any(_under(m, h) for m in names for h in heavy), f"{name}:{node.lineno}: {names}"
