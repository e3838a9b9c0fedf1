"""How each status looks in a report: color, short label, description, order.

Data-driven so that a status added later (compile outcomes and the like) renders without
touching a template: a status missing from STYLES gets a stable color derived from its name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from auditor.core.results import Status


@dataclass(frozen=True)
class StatusStyle:
    name: str
    color: str  # cell background
    short: str  # the text inside a matrix cell
    description: str
    known: bool = True

    @property
    def ok(self) -> bool:
        return is_ok(self.name)

    @property
    def text_color(self) -> str:
        return "#000" if _luminance(self.color) > 0.45 else "#fff"


def is_ok(status: str) -> bool:
    """`build` and `compiled` are OK; anything else, known or not, is a finding."""
    try:
        return Status(status).ok
    except ValueError:
        return False


_KNOWN = (
    StatusStyle("build", "#4caf50", "build", "built (or, for a non-build check, passed)"),
    StatusStyle("compiled", "#81c784", "compiled", "compiled to one graph for both lengths, output equal to eager"),
    StatusStyle("graph-break", "#fff176", "g-break", "torch.compile(fullgraph=True) hit a graph break"),
    StatusStyle("recompiled", "#ffb74d", "recomp", "the second sequence length needed another graph"),
    StatusStyle("mismatch", "#e040fb", "mismatch", "compiled output differs from eager"),
    StatusStyle("eager-error", "#8d6e63", "eager-err", "the eager model itself failed"),
    StatusStyle("compile-error", "#ff7043", "cmp-err", "tracing or the compiler backend failed otherwise"),
    StatusStyle("refused", "#ff9800", "refused", "the decorator under audit refused with its own TypeError"),
    StatusStyle("check-error", "#ffc107", "chk-err", "the decorator's own check raised something else"),
    StatusStyle("decorate-error", "#ab47bc", "dec-err", "the class could not even be decorated"),
    StatusStyle("error", "#e53935", "error", "the model itself failed to build"),
    StatusStyle("config-error", "#f06292", "cfg-err", "the default config cannot be made"),
    StatusStyle("missing-dependency", "#90a4ae", "no-dep", "an optional package is not installed"),
    StatusStyle("needs-hub", "#4fc3f7", "hub", "it wanted the Hugging Face hub while offline"),
    StatusStyle("timeout", "#795548", "timeout", "it ran past the time limit"),
    StatusStyle("crash", "#b71c1c", "crash", "the worker process died"),
    StatusStyle("oom", "#880e4f", "oom", "the worker ran out of its memory limit"),
    StatusStyle("skipped", "#e0e0e0", "skipped", "not run"),
)
STYLES: dict[str, StatusStyle] = {s.name: s for s in _KNOWN}
_RANK = {name: i for i, name in enumerate(STYLES)}


def style(status: str) -> StatusStyle:
    known = STYLES.get(status)
    if known is not None:
        return known
    digest = hashlib.sha1(status.encode("utf-8")).digest()
    hue = int.from_bytes(digest[:2], "big") % 360
    return StatusStyle(status, _hsl_to_hex(hue, 0.55, 0.6), status[:9], "a status this report does not know yet",
                       known=False)


def rank(status: str) -> tuple[int, str]:
    """Sort key: the known statuses in STYLES order, then unknown ones by name."""
    return (_RANK.get(status, len(_RANK)), status)


def legend(statuses: Iterable[str]) -> tuple[StatusStyle, ...]:
    """The styles of the statuses present, in legend order."""
    return tuple(style(s) for s in sorted(set(statuses), key=rank))


def _hsl_to_hex(hue: float, saturation: float, lightness: float) -> str:
    import colorsys

    r, g, b = colorsys.hls_to_rgb(hue / 360, lightness, saturation)
    return "#" + "".join(f"{round(c * 255):02x}" for c in (r, g, b))


def _luminance(color: str) -> float:
    r, g, b = (int(color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b
