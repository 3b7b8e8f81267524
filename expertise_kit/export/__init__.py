"""``expertise export``: the project's expertise written into each agent's own instructions file.

``targets`` (which files, what size), ``content`` (what goes in, ranked as the hooks rank it, made inert),
``documents`` (the markdown section and Cursor's rule files), ``markers`` (our section inside someone
else's file), ``files`` (where an export may write) and ``run`` (plan, write, commit: ``run.export``).

Only ``targets`` is imported here: the CLI reads the target names when it starts, and the rest pulls in
the store (pydantic, ruamel), which only an export itself should pay for.
"""

from __future__ import annotations

from expertise_kit.export.targets import TARGET_NAMES, TARGETS, Target

__all__ = ["TARGETS", "TARGET_NAMES", "Target"]
