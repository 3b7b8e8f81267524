"""One module per command. ``COMMANDS`` is what ``cli`` registers."""

from __future__ import annotations

from expertise_kit.commands.add import add
from expertise_kit.commands.blame import blame
from expertise_kit.commands.classify import classify
from expertise_kit.commands.diff import diff
from expertise_kit.commands.export import export
from expertise_kit.commands.feedback import feedback
from expertise_kit.commands.history import history
from expertise_kit.commands.hooks import hooks
from expertise_kit.commands.improve import improve
from expertise_kit.commands.init import init
from expertise_kit.commands.learn import learn
from expertise_kit.commands.list import list_domains
from expertise_kit.commands.mcp import mcp
from expertise_kit.commands.merge_driver import merge_driver
from expertise_kit.commands.render import render
from expertise_kit.commands.report import report
from expertise_kit.commands.revert import revert
from expertise_kit.commands.schema import schema
from expertise_kit.commands.serve import serve
from expertise_kit.commands.show import show
from expertise_kit.commands.stats import stats
from expertise_kit.commands.sync import sync
from expertise_kit.commands.validate import validate
from expertise_kit.commands.watch import watch

__all__ = ["COMMANDS"]

COMMANDS = [
    init,
    list_domains,
    show,
    add,
    learn,
    feedback,
    stats,
    report,
    classify,
    render,
    export,
    validate,
    improve,
    history,
    sync,
    diff,
    revert,
    blame,
    watch,
    hooks,
    mcp,
    serve,
    schema,
    merge_driver,
]
