"""Geometry of the small stacked-bar charts; templates/_charts.html.j2 draws them as inline SVG.

Computed here rather than in the template so that the arithmetic is testable and the template
only places shapes (and autoescapes every label).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from auditor.report.statuses import style
from auditor.report.summary import Counts


@dataclass(frozen=True)
class Segment:
    x: float
    y: float
    width: float
    height: float
    color: str
    title: str


@dataclass(frozen=True)
class Label:
    x: float
    y: float
    text: str
    anchor: str = "start"
    rotate: float = 0.0


@dataclass(frozen=True)
class Chart:
    width: float
    height: float
    segments: tuple[Segment, ...]
    labels: tuple[Label, ...]
    title: str


def horizontal_bars(bars: Sequence[tuple[str, Counts]], title: str, width: float = 720,
                    bar_height: float = 22, label_width: float = 260) -> Chart:
    """One bar per label, each as long as the chart, split by status share."""
    plot = width - label_width - 60
    segments, labels = [], []
    for i, (name, counts) in enumerate(bars):
        y = 8 + i * (bar_height + 10)
        labels.append(Label(label_width - 8, y + bar_height * 0.7, name, anchor="end"))
        x = label_width
        for status, n in counts.items:
            w = plot * n / counts.total if counts.total else 0
            segments.append(Segment(round(x, 2), y, round(w, 2), bar_height, style(status).color,
                                    f"{name}: {n} {status} ({counts.share(n):.1f}%)"))
            x += w
        labels.append(Label(x + 6, y + bar_height * 0.7, str(counts.total)))
    height = 16 + len(bars) * (bar_height + 10)
    return Chart(width, height, tuple(segments), tuple(labels), title)


def vertical_bars(bars: Sequence[tuple[str, Counts]], title: str, height: float = 220,
                  bar_width: float = 18, gap: float = 6) -> Chart:
    """One bar per label, oldest left; heights on a shared scale of cell counts."""
    top, bottom, left = 10, 90, 40
    plot = height - top - bottom
    peak = max((c.total for _, c in bars), default=0) or 1
    segments, labels = [], [Label(left - 6, top + 8, str(peak), anchor="end"),
                            Label(left - 6, top + plot, "0", anchor="end")]
    for i, (name, counts) in enumerate(bars):
        x = left + gap + i * (bar_width + gap)
        y = top + plot
        for status, n in counts.items:
            h = plot * n / peak
            y -= h
            segments.append(Segment(x, round(y, 2), bar_width, round(h, 2), style(status).color,
                                    f"{name}: {n} {status} ({counts.share(n):.1f}%)"))
        labels.append(Label(x + bar_width / 2, top + plot + 12, name, anchor="end", rotate=-60))
    width = left + gap + len(bars) * (bar_width + gap) + 10
    return Chart(max(width, 200), height, tuple(segments), tuple(labels), title)
