"""Running the app with uvicorn on a socket bound first, so ``--port 0`` can say which port it got."""

from __future__ import annotations

import socket

import click
import uvicorn

from expertise_kit.errors import UserError
from expertise_kit.httpapi.projects import Projects, is_loopback
from expertise_kit.httpapi.router import build_app

__all__ = ["bind", "run"]


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; a port in use or an address not here is a one-line error."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UserError(f"can't listen on {host!r}: {exc.strerror}", hint="give an address of this machine") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise UserError(f"can't listen on {host}:{port}: {exc.strerror}", hint="pick another --port") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def run(projects: Projects, *, host: str, port: int) -> None:
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    app = build_app(projects, loopback_host_only=is_loopback(host))
    names = ", ".join(sorted(projects.by_name))
    # The first line says where, so a script that passed --port 0 can read the port from it.
    click.echo(f"serving http://{shown}:{bound}/api/projects ({names})", err=False)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
