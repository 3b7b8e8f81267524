"""expertise_kit: per-domain memory for AI coding agents, kept as reviewable YAML in git.

The public surface is small on purpose; everything else is internal and may change. Names load lazily
so ``python -m expertise_kit.hook`` (on every agent turn) imports nothing it does not use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~2 ms to import, and the hook runs on every prompt
if TYPE_CHECKING:
    from typing import Any

    # What a type checker sees; at run time each loads on first use (``__getattr__`` below).
    from expertise_kit.api import Expertise as Expertise
    from expertise_kit.errors import ExpertiseError as ExpertiseError
    from expertise_kit.errors import LockTimeout as LockTimeout
    from expertise_kit.errors import UnknownDomain as UnknownDomain
    from expertise_kit.errors import UserError as UserError
    from expertise_kit.project import find_project as find_project
    from expertise_kit.project import project_for_init as project_for_init
    from expertise_kit.store import Store as Store

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "Expertise",
    "ExpertiseError",
    "UserError",
    "UnknownDomain",
    "LockTimeout",
    "Store",
    "find_project",
    "project_for_init",
]

_LAZY = {
    "Expertise": "api",
    "ExpertiseError": "errors",
    "UnknownDomain": "errors",
    "LockTimeout": "errors",
    "UserError": "errors",
    "Store": "store",
    "find_project": "project",
    "project_for_init": "project",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(name)
