"""One module per command. ``COMMANDS`` is what ``cli`` registers."""

from __future__ import annotations

from .add import add
from .blame import blame
from .classify import classify
from .diff import diff
from .history import history
from .hooks import hooks
from .improve import improve
from .init import init
from .learn import learn
from .list import list_domains
from .render import render
from .revert import revert
from .schema import schema
from .show import show
from .validate import validate
from .watch import watch

__all__ = ["COMMANDS"]

COMMANDS = [
    init,
    list_domains,
    show,
    add,
    learn,
    classify,
    render,
    validate,
    improve,
    history,
    diff,
    revert,
    blame,
    watch,
    hooks,
    schema,
]
