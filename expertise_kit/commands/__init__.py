"""One module per command. ``COMMANDS`` is what ``cli`` registers."""

from __future__ import annotations

from .add import add
from .blame import blame
from .classify import classify
from .diff import diff
from .history import history
from .hooks import hooks
from .init import init
from .learn import learn
from .list import list_domains
from .render import render
from .revert import revert
from .schema import schema
from .show import show

__all__ = ["COMMANDS"]

COMMANDS = [init, list_domains, show, add, learn, classify, render, history, diff, revert, blame, hooks, schema]
