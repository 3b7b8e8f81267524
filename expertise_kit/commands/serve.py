from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option("--port", type=click.IntRange(0, 65535), required=True, help="TCP port; 0 picks a free one.")
@click.option(
    "--project",
    "projects",
    multiple=True,
    required=True,
    metavar="NAME=DIR",
    help="A project to serve as /api/projects/NAME; repeat for more.",
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on; beyond loopback needs --token."
)
@click.option(
    "--token",
    envvar="EXPERTISE_SERVE_TOKEN",
    default=None,
    help="Bearer token writes must carry (and reads too, beyond loopback); or set EXPERTISE_SERVE_TOKEN.",
)
@click.option(
    "--lock-wait",
    type=click.FloatRange(0, 600),
    default=10.0,
    show_default=True,
    help="Seconds a write waits for another writer before answering 409.",
)
@click.option(
    "--max-body",
    type=click.IntRange(min=1),
    default=32,
    show_default=True,
    help="Largest transcript POSTed to learn, in MiB (413 above it).",
)
@click.pass_obj
def serve(
    start: Path, port: int, projects: tuple[str, ...], host: str, token: str | None, lock_wait: float, max_body: int
) -> None:
    """Serve projects' expertise over HTTP to an orchestrator, until Ctrl-C.

    GET /api/projects; under /api/projects/NAME: GET expertise, expertise/DOMAIN, expertise/DOMAIN/history,
    render?task=...&file=...; POST expertise/DOMAIN/validate, expertise/DOMAIN/improve, learn (a transcript
    as the body). Each body is what the command's --json prints. The schema is at /openapi.json. Listens on
    127.0.0.1 unless --host says otherwise, which needs --token. See docs/api.md.
    """
    from expertise_kit.errors import UserError
    from expertise_kit.httpapi.projects import Projects, check_exposure, is_loopback

    token = token or None  # EXPERTISE_SERVE_TOKEN set but empty: no token
    check_exposure(host, token)
    served = Projects.open(
        [spec if "=" not in spec else _relative_to(start, spec) for spec in projects],
        token=token,
        guard_reads=not is_loopback(host),
        lock_wait=lock_wait,
        max_body=max_body << 20,
    )
    try:
        from expertise_kit.httpapi.serving import run
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("fastapi", "uvicorn", "starlette"):
            raise
        raise UserError(f"{exc.name} is not installed", hint="pip install 'expertise-kit[server]'") from None
    run(served, host=host, port=port)


def _relative_to(start: Path, spec: str) -> str:
    """NAME=DIR with a relative DIR taken from -C's directory, as every other path is."""
    name, _, directory = spec.partition("=")
    return f"{name}={(start / Path(directory).expanduser())}"
