"""``expertise serve``: the expertise of several projects over HTTP, for an orchestrator (docs/api.md).

``projects.py`` names the projects (``NAME=DIR``) and decides who may call (loopback, bearer token) without
importing any web framework; ``router.py`` is the FastAPI ``APIRouter`` an orchestrator can mount in its own
app, and the app ``expertise serve`` runs. Every body is what ``expertise_kit.api.Expertise`` returns, which
is what the CLI's ``--json`` prints. The pre-task hook imports none of this.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from expertise_kit.httpapi.projects import Projects as Projects
    from expertise_kit.httpapi.router import build_app as build_app
    from expertise_kit.httpapi.router import build_router as build_router
    from expertise_kit.httpapi.router import install_error_handlers as install_error_handlers

__all__ = ["Projects", "build_router", "build_app", "install_error_handlers"]

_LAZY = {
    "Projects": "projects",
    "build_router": "router",
    "build_app": "router",
    "install_error_handlers": "router",
}


def __getattr__(name: str) -> Any:
    # `expertise serve` checks its options through `projects` before FastAPI is imported (or found missing).
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(name)
