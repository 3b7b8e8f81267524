"""The projects a server serves, and the rules for who may call it; no web framework imported here."""

from __future__ import annotations

import hmac
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path

from expertise_kit.api import Expertise
from expertise_kit.errors import UserError

__all__ = [
    "DEFAULT_LOCK_WAIT",
    "DEFAULT_MAX_BODY",
    "Projects",
    "check_exposure",
    "is_loopback",
    "parse_project",
]

DEFAULT_LOCK_WAIT = 10.0  # seconds a write waits for another writer, then 409 (the CLI waits a minute)
DEFAULT_MAX_BODY = 32 << 20  # a transcript posted to learn; the largest real session seen was ~12 MiB
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def parse_project(spec: str) -> tuple[str, Path]:
    """``NAME=DIR`` as (NAME, DIR); NAME becomes part of every URL, so it must be plain."""
    name, sep, directory = spec.partition("=")
    if not sep or not directory:
        raise UserError(f"--project {spec[:80]!r} is not NAME=DIR", hint="say --project web=/srv/web")
    if not _NAME.fullmatch(name):
        raise UserError(
            f"project name {name[:80]!r} is not plain", hint="use letters, digits, '.', '_' or '-' (at most 64)"
        )
    return name, Path(directory).expanduser()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def check_exposure(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token: the API writes commits."""
    if not is_loopback(host) and not token:
        raise UserError(
            f"refusing to serve on {host} without --token: anyone who can reach it could write commits",
            hint="give --token (or EXPERTISE_SERVE_TOKEN), or serve on 127.0.0.1",
        )
    if token is not None and len(token) < 16:
        raise UserError("the token is shorter than 16 characters", hint="use a long random one: openssl rand -hex 32")


@dataclass
class Projects:
    """The projects by name, each an ``Expertise``; and the token, if any, that callers must present.

    With a token, writes need it always; reads need it too when ``guard_reads`` (a server reachable from
    other machines). On loopback, reads are open: a local process can read ``.expertise/`` from disk anyway.
    """

    by_name: dict[str, Expertise] = field(default_factory=dict)
    token: str | None = None
    guard_reads: bool = False
    max_body: int = DEFAULT_MAX_BODY

    @classmethod
    def open(
        cls,
        specs: list[str] | dict[str, str | Path],
        *,
        token: str | None = None,
        guard_reads: bool = False,
        lock_wait: float = DEFAULT_LOCK_WAIT,
        max_body: int = DEFAULT_MAX_BODY,
    ) -> Projects:
        """Projects from ``NAME=DIR`` strings (or a name-to-directory mapping), each checked now."""
        pairs = [parse_project(spec) for spec in specs] if isinstance(specs, list) else list(specs.items())
        projects = cls(token=token or None, guard_reads=guard_reads, max_body=max_body)
        for name, directory in pairs:
            parse_project(f"{name}=.")
            if name in projects.by_name:
                raise UserError(f"project {name!r} is named twice", hint="give each --project its own NAME")
            projects.by_name[name] = Expertise(directory, lock_timeout=lock_wait)
        if not projects.by_name:
            raise UserError("no project to serve", hint="give --project NAME=DIR")
        return projects

    def get(self, name: str) -> Expertise | None:
        return self.by_name.get(name)

    def authorised(self, header: str | None, *, write: bool) -> bool:
        if self.token is None or not (write or self.guard_reads):
            return True
        scheme, _, given = (header or "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(given.strip().encode("utf-8", "replace"), self.token.encode("utf-8", "replace"))
