"""expertise_kit: per-domain memory for AI coding agents, kept as reviewable YAML in git.

The public surface is small on purpose; everything else is internal and may change.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "ExpertiseError", "UserError", "Store", "find_project", "project_for_init"]

from .errors import ExpertiseError, UserError
from .project import find_project, project_for_init


def __getattr__(name: str) -> object:
    # The store pulls in pydantic and ruamel; keep `import expertise_kit` cheap for the hook path.
    if name == "Store":
        from .store import Store

        return Store
    raise AttributeError(name)
