"""``expertise serve``: the expertise of several projects over HTTP, for an orchestrator (docs/api.md).

``projects.py`` names the projects (``NAME=DIR``) and decides who may call (loopback, bearer token) without
importing any web framework; ``router.py`` is the FastAPI ``APIRouter`` an orchestrator can mount in its own
app, and the app ``expertise serve`` runs. Every body is what ``expertise_kit.api.Expertise`` returns, which
is what the CLI's ``--json`` prints. The pre-task hook imports none of this.
"""
