"""The HTTP endpoints (the core spec's §5.9, plus render and learn) as a FastAPI ``APIRouter``, and the app.

Each body is what ``Expertise`` returns, which is what the CLI's ``--json`` prints. Errors are JSON,
``{"error": {"status", "message", "lines"}}``: 404 for an unknown project or domain, 400 for bad input, 401
without the token, 403 for a cross-origin write, 409 when another writer held the lock past the wait, 413
for a body too large. Blocking work runs on the threadpool, never on the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from expertise_kit import __version__
from expertise_kit.api import Expertise
from expertise_kit.document.names import validate_domain_name
from expertise_kit.errors import Failures, FileMissing, LockTimeout, NotInitialised, UnknownDomain, UserError
from expertise_kit.fast.render import MAX_PATH_CHARS, MAX_TASK_CHARS, MAX_TASK_FILES
from expertise_kit.httpapi.projects import Projects
from expertise_kit.vocab import format_names

__all__ = ["build_app", "build_router", "install_error_handlers", "ErrorBody"]

_log = logging.getLogger("expertise_kit.httpapi")
_LOOPBACK_NAMES = {"127.0.0.1", "localhost", "::1"}
_CHUNK = 1 << 16


class ErrorDetail(BaseModel):
    status: int
    message: str
    lines: list[str] = []


class ErrorBody(BaseModel):
    error: ErrorDetail


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text}
    for status, text in (
        (400, "Bad input: a malformed domain, a bad revision, an out-of-range parameter"),
        (401, "A token is set and the request did not carry it as `Authorization: Bearer …`"),
        (404, "Unknown project or domain"),
        (409, "Another writer held the store's lock past the wait; retry"),
    )
}


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status_code=status, headers=headers, media_type="application/json")


def error_response(status: int, message: str, lines: list[str] | None = None, **headers: str) -> Response:
    body = {"error": {"status": status, "message": message, "lines": lines or [message]}}
    return _json(body, status, headers={k.replace("_", "-"): v for k, v in headers.items()} or None)


def _from_user_error(exc: UserError) -> Response:
    if isinstance(exc, LockTimeout):
        return error_response(409, exc.one_line(), retry_after="1")
    if isinstance(exc, (UnknownDomain, FileMissing, NotInitialised)):
        return error_response(404, exc.one_line())
    if isinstance(exc, Failures):
        return error_response(400, exc.one_line(), exc.lines())
    return error_response(400, exc.one_line())


def _host_is_loopback(request: Request) -> bool:
    host = request.headers.get("host", "")
    name = host[1:].partition("]")[0] if host.startswith("[") else host.rpartition(":")[0] or host
    return name.lower() in _LOOPBACK_NAMES


class _Gate:
    """Who may call, and the project named: the checks every endpoint makes before any work."""

    def __init__(self, projects: Projects, *, loopback_host_only: bool) -> None:
        self.projects = projects
        self.loopback_host_only = loopback_host_only

    def refuse(self, request: Request, project_id: str, *, write: bool) -> Response | None:
        refused = self.refuse_caller(request, write=write)
        if refused is not None:
            return refused
        if self.projects.get(project_id) is None:
            message = f"unknown project {project_id[:80]!r}"
            return error_response(
                404, message, [message, f"known projects: {', '.join(sorted(self.projects.by_name))}"]
            )
        return None

    def refuse_caller(self, request: Request, *, write: bool) -> Response | None:
        if self.loopback_host_only and not _host_is_loopback(request):
            # A page elsewhere whose name was made to resolve to 127.0.0.1 (DNS rebinding) sends its own name.
            return error_response(400, "the Host header does not name this machine")
        if not self.projects.authorised(request.headers.get("authorization"), write=write):
            return error_response(401, "missing or wrong bearer token", www_authenticate="Bearer")
        if write and self.projects.token is None and request.headers.get("origin"):
            # A browser page may POST to a loopback port without asking first: no token, no cross-origin write.
            return error_response(403, "a write from a web page is refused; call from a program, or set a token")
        return None

    def expertise(self, project_id: str) -> Expertise:
        found = self.projects.get(project_id)
        assert found is not None
        return found


def _run(work: Callable[[], Any]) -> Response:
    try:
        return _json(work())
    except UserError as exc:
        return _from_user_error(exc)


def _revision(rev: str | None) -> str | None:
    """A revision as git would take it, but never an option: ``--output=/tmp/x`` is not a commit."""
    if rev is not None and (rev.startswith("-") or any(ord(ch) < 32 for ch in rev)):
        raise UserError(f"{rev[:80]!r} is not a revision", hint="give a commit, a branch or A..B")
    return rev


def _known_domain(expertise: Expertise, domain: str) -> None:
    expertise.store().path_for(domain)


def build_router(projects: Projects, *, loopback_host_only: bool = False) -> APIRouter:
    """The endpoints under ``/api``, for ``app.include_router(router)`` in an orchestrator's own app.

    ``loopback_host_only``: refuse a Host header that does not name this machine (set when serving on
    loopback). Bad query parameters raise FastAPI's ``RequestValidationError``; ``install_error_handlers``
    makes those 400s in this API's error shape.
    """
    gate = _Gate(projects, loopback_host_only=loopback_host_only)
    router = APIRouter(prefix="/api", tags=["expertise"], responses=_ERRORS)

    @router.get("/projects", summary="The projects served")
    def list_projects(request: Request) -> Response:
        refused = gate.refuse_caller(request, write=False)
        if refused is not None:
            return refused

        rows: list[dict[str, Any]] = []
        for name, found in projects.by_name.items():
            row: dict[str, Any] = {"id": name, "root": str(found.root), "domains": None, "error": None}
            try:
                row["domains"] = list(found.store().config.domain_names)
            except UserError as exc:  # one project's broken config does not hide the others
                row["error"] = exc.one_line()
            rows.append(row)
        return _json(rows)

    @router.get("/projects/{project_id}/expertise", summary="Every domain: `expertise list --json`")
    def list_expertise(project_id: str, request: Request) -> Response:
        return gate.refuse(request, project_id, write=False) or _run(gate.expertise(project_id).list)

    @router.get("/projects/{project_id}/expertise/{domain}", summary="One domain: `expertise show DOMAIN --json`")
    def get_expertise(project_id: str, domain: str, request: Request) -> Response:
        refused = gate.refuse(request, project_id, write=False)
        return refused or _run(lambda: gate.expertise(project_id).show(domain))

    @router.post(
        "/projects/{project_id}/expertise/{domain}/validate",
        summary="Check against the code and correct, one commit: `expertise validate DOMAIN --json`",
    )
    def validate_expertise(
        project_id: str, domain: str, request: Request, check: Annotated[bool, Query()] = False
    ) -> Response:
        refused = gate.refuse(request, project_id, write=not check)
        return refused or _run(lambda: gate.expertise(project_id).validate(domain, check=check))

    @router.post(
        "/projects/{project_id}/expertise/{domain}/improve",
        summary="Add the files that matter to core_files: `expertise improve DOMAIN --json`",
    )
    def improve_expertise(
        project_id: str,
        domain: str,
        request: Request,
        limit: Annotated[int, Query(ge=1, le=200)] = 20,
        dry_run: Annotated[bool, Query()] = False,
    ) -> Response:
        refused = gate.refuse(request, project_id, write=not dry_run)
        return refused or _run(lambda: gate.expertise(project_id).improve(domain, limit=limit, dry_run=dry_run))

    @router.get(
        "/projects/{project_id}/expertise/{domain}/history",
        summary="Revisions newest first: `expertise history DOMAIN --json`",
    )
    def get_expertise_history(
        project_id: str, domain: str, request: Request, limit: Annotated[int | None, Query(ge=1)] = None
    ) -> Response:
        refused = gate.refuse(request, project_id, write=False)

        def work() -> Any:
            expertise = gate.expertise(project_id)
            _known_domain(expertise, domain)
            return expertise.history(domain, limit)

        return refused or _run(work)

    @router.get("/projects/{project_id}/diff", summary="Entry changes of a revision: `expertise diff [REV] --json`")
    def diff(
        project_id: str, request: Request, rev: Annotated[str | None, Query(min_length=1, max_length=200)] = None
    ) -> Response:
        refused = gate.refuse(request, project_id, write=False)
        return refused or _run(lambda: gate.expertise(project_id).diff(_revision(rev)))

    @router.post("/projects/{project_id}/revert", summary="Undo one revision as a new one: `expertise revert REV`")
    def revert(project_id: str, request: Request, rev: Annotated[str, Query(min_length=1, max_length=200)]) -> Response:
        refused = gate.refuse(request, project_id, write=True)
        return refused or _run(lambda: gate.expertise(project_id).revert(_revision(rev) or ""))

    @router.api_route("/projects/{project_id}/expertise/{rest:path}", methods=["GET", "POST"], include_in_schema=False)
    def not_a_domain(project_id: str, rest: str, request: Request) -> Response:
        # A path the routes above don't take: a name with a slash in it (`..%2F..%2Fetc`) is bad input.
        refused = gate.refuse(request, project_id, write=request.method == "POST")
        if refused is not None:
            return refused
        head, _, _tail = rest.partition("/")
        try:
            validate_domain_name(head)
        except UserError as exc:
            return error_response(400, exc.one_line())
        return error_response(404, f"no endpoint {request.url.path[:200]!r}")

    @router.get(
        "/projects/{project_id}/render",
        summary="What an agent should read before a task: `expertise render --json`",
        responses={200: {"content": {"text/markdown": {}}, "description": "JSON, or the markdown with format=text"}},
    )
    def render(
        project_id: str,
        request: Request,
        task: Annotated[str, Query(max_length=MAX_TASK_CHARS)] = "",
        file: Annotated[list[str] | None, Query(max_length=MAX_TASK_FILES)] = None,
        domain: Annotated[list[str] | None, Query(max_length=MAX_TASK_FILES)] = None,
        max_chars: Annotated[int | None, Query(ge=200, le=100_000)] = None,
        format: Annotated[Literal["json", "text"], Query()] = "json",
    ) -> Response:
        refused = gate.refuse(request, project_id, write=False)
        if refused is not None:
            return refused
        files = file or []
        if any(not name.strip() or len(name) > MAX_PATH_CHARS for name in files):
            return error_response(400, f"a file path is empty or longer than {MAX_PATH_CHARS:,} characters")
        try:
            data = gate.expertise(project_id).render(task, files, domains=domain or [], max_chars=max_chars)
        except UserError as exc:
            return _from_user_error(exc)
        if format == "text":
            return Response(data["text"], media_type="text/markdown; charset=utf-8")
        return _json(data)

    @router.post(
        "/projects/{project_id}/learn",
        summary="Learn from one transcript (the body): `expertise learn FILE --json`",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                "description": "The transcript's bytes, as the agent wrote it (JSON lines, or an Aider history)",
            }
        },
        responses={413: {"model": ErrorBody, "description": "The body is over the server's limit"}},
    )
    async def learn(
        project_id: str,
        request: Request,
        name: Annotated[str, Query(max_length=255)] = "transcript.jsonl",
        format: Annotated[str, Query()] = "auto",
        dry_run: Annotated[bool, Query()] = False,
    ) -> Response:
        refused = gate.refuse(request, project_id, write=not dry_run)
        if refused is not None:
            return refused
        if format not in ("auto", *format_names()):
            return error_response(400, f"unknown format {format[:40]!r}; use auto, {', '.join(format_names())}")
        body = await _bounded_body(request, projects.max_body)
        if isinstance(body, Response):
            return body
        expertise = gate.expertise(project_id)
        try:
            data = await run_in_threadpool(expertise.learn_text, body, name=name, fmt=format, dry_run=dry_run)
        except UserError as exc:
            return _from_user_error(exc)
        if data["errors"]:
            return error_response(400, data["errors"][0], data["errors"])
        return _json(data)

    return router


async def _bounded_body(request: Request, limit: int) -> bytes | Response:
    """The body, or a 413 as soon as it passes ``limit`` (said by Content-Length, or counted as it streams)."""
    too_big = error_response(413, f"the body is over the {limit:,}-byte limit", retry_after="0")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return too_big
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            return too_big
        chunks.append(chunk)
    if not total:
        return error_response(400, "the body is empty; send the transcript's bytes")
    return b"".join(chunks)


def install_error_handlers(app: FastAPI) -> None:
    """Bad query parameters as 400s in this API's error shape (FastAPI says 422); no such route (404) and a
    wrong method (405) in that shape too; bugs as JSON 500s, logged with their traceback."""

    async def bad_request(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        lines = [
            f"{'.'.join(str(part) for part in error.get('loc', ())[1:]) or 'request'}: {error.get('msg', 'invalid')}"
            for error in exc.errors()
        ]
        return error_response(400, lines[0] if lines else "bad request", lines)

    async def http_error(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        response = error_response(exc.status_code, str(exc.detail))
        response.headers.update(exc.headers or {})  # 405's Allow
        return response

    async def bug(_request: Request, exc: Exception) -> Response:
        _log.error("internal error", exc_info=exc)
        return error_response(500, "internal error in expertise_kit; the server log has the traceback")

    app.add_exception_handler(RequestValidationError, bad_request)
    app.add_exception_handler(StarletteHTTPException, http_error)  # no route, wrong method: the same shape
    app.add_exception_handler(Exception, bug)


def build_app(projects: Projects, *, loopback_host_only: bool = False) -> FastAPI:
    """The app ``expertise serve`` runs: the router, the 400 handler, ``/openapi.json``; no docs page (it
    would load scripts from a CDN)."""
    app = FastAPI(
        title="expertise_kit",
        version=__version__,
        summary="Each project's expertise: list, read, render, learn, validate, improve, history.",
        docs_url=None,
        redoc_url=None,
    )
    app.include_router(build_router(projects, loopback_host_only=loopback_host_only))
    install_error_handlers(app)
    return app
