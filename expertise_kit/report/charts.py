"""The report's charts as inline SVG: bars only, no text inside them.

Each chart stretches to its box (``preserveAspectRatio="none"``) and its labels are HTML around it, so
words stay at the page's own size on a phone and on a desktop alike. Colours come from CSS classes, so
dark mode recolours them. ``label`` must already be escaped: it becomes the chart's accessible name.
"""

from __future__ import annotations

__all__ = ["stacked_bar", "diverging_bar", "columns", "WIDTH"]

WIDTH = 1000  # viewBox units across every bar
_HEIGHT = 16


def _open(label: str, width: int, height: int, css: str) -> str:
    return (
        f'<svg class="{css}" viewBox="0 0 {width} {height}" preserveAspectRatio="none" role="img" '
        f'aria-label="{label}"><title>{label}</title>'
    )


def _x(value: float, scale: float) -> float:
    return round(WIDTH * value / scale, 2) if scale > 0 else 0.0


def stacked_bar(segments: list[tuple[str, int]], scale: int, label: str, marker: int | None = None) -> str:
    """One horizontal bar of ``(css class, value)`` segments, on a track ``scale`` long; ``marker``
    draws a line across (the line cap)."""
    parts = [_open(label, WIDTH, _HEIGHT, "bar"), f'<rect class="track" width="{WIDTH}" height="{_HEIGHT}"/>']
    start = 0
    for css, value in segments:
        if value <= 0:
            continue
        parts.append(f'<rect class="{css}" x="{_x(start, scale)}" width="{_x(value, scale)}" height="{_HEIGHT}"/>')
        start += value
    if marker is not None and scale > 0:
        x = min(_x(marker, scale), WIDTH - 1)
        parts.append(f'<line class="cap" x1="{x}" x2="{x}" y1="0" y2="{_HEIGHT}"/>')
    parts.append("</svg>")
    return "".join(parts)


def diverging_bar(helpful: int, harmful: int, scale: int, label: str) -> str:
    """Harmful to the left of the middle, helpful to the right, both on ``scale``."""
    middle = WIDTH / 2
    harm = _x(harmful, scale) / 2
    helped = _x(helpful, scale) / 2
    return "".join((
        _open(label, WIDTH, _HEIGHT, "bar"),
        f'<rect class="track" width="{WIDTH}" height="{_HEIGHT}"/>',
        f'<rect class="harmful" x="{middle - harm}" width="{harm}" height="{_HEIGHT}"/>' if harmful else "",
        f'<rect class="helpful" x="{middle}" width="{helped}" height="{_HEIGHT}"/>' if helpful else "",
        f'<line class="axis" x1="{middle}" x2="{middle}" y1="0" y2="{_HEIGHT}"/>',
        "</svg>",
    ))  # fmt: skip


def columns(values: list[int], label: str, height: int = 100) -> str:
    """A column per value, left to right, scaled to the largest; a zero is a gap on the baseline."""
    count = max(1, len(values))
    step = WIDTH / count
    gap = step * 0.15 if count <= 120 else 0.0
    top = max(values, default=0) or 1
    parts = [_open(label, WIDTH, height, "columns")]
    for n, value in enumerate(values):
        if value <= 0:
            continue
        tall = round(height * value / top, 2)
        parts.append(
            f'<rect class="learned" x="{round(n * step + gap / 2, 2)}" y="{round(height - tall, 2)}" '
            f'width="{round(step - gap, 2)}" height="{tall}"/>'
        )
    parts.append(f'<line class="axis" x1="0" x2="{WIDTH}" y1="{height}" y2="{height}"/></svg>')
    return "".join(parts)
