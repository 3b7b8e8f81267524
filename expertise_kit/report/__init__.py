"""``expertise report --html``: one self-contained page about the expertise, for people.

``collect`` gathers the figures once (one ``git log``, each domain file parsed once, the numbers from
``upkeep.stats``); ``charts`` draws them as inline SVG; ``page`` writes the HTML, every piece of text
from the store escaped, with the CSS inline and a policy that forbids scripts and anything fetched.
"""

from __future__ import annotations

from expertise_kit.report.collect import LAST_REVISIONS, ReportData, collect_report
from expertise_kit.report.page import render_page, write_report

__all__ = ["LAST_REVISIONS", "ReportData", "collect_report", "render_page", "write_report"]
