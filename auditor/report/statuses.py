"""How each status looks in a report: color, short label, description, order.

Data-driven so that a status added later (compile outcomes and the like) renders without
touching a template: a status missing from STYLES gets a stable color derived from its name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from auditor.core.status import Status


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
    """The passes of Status.ok (`build`, `compiled`, `same`, `loaded`); anything else, known or not, is a finding."""
    try:
        return Status(status).ok
    except ValueError:
        return False


# Color and cell text per status; what a status means is Status.description (auditor.core.status).
# The legend follows this order. A test holds these keys to the Status vocabulary.
_LOOKS: dict[Status, tuple[str, str]] = {
    Status.BUILD: ("#4caf50", "build"),
    Status.COMPILED: ("#81c784", "compiled"),
    Status.GRAPH_BREAK: ("#fff176", "g-break"),
    Status.RECOMPILED: ("#ffb74d", "recomp"),
    Status.SPECIALIZED: ("#f57c00", "special"),
    Status.MISMATCH: ("#e040fb", "mismatch"),
    Status.EAGER_ERROR: ("#8d6e63", "eager-err"),
    Status.COMPILE_ERROR: ("#ff7043", "cmp-err"),
    Status.SAME: ("#66bb6a", "same"),
    Status.LOADED: ("#a5d6a7", "loaded"),
    Status.DIFFERENT_OUTPUTS: ("#d81b60", "diff-out"),
    Status.KEYS: ("#ffa726", "keys"),
    Status.CONFIG_REFUSED: ("#f48fb1", "cfg-ref"),
    Status.TYPE_REMOVED: ("#9e9e9e", "removed"),
    Status.LOAD_ERROR: ("#c62828", "load-err"),
    Status.FORWARD_ERROR: ("#6d4c41", "fwd-err"),
    Status.DIFFERENT_IDS: ("#ad1457", "diff-ids"),
    Status.DIFFERENT_DECODE: ("#f06292", "diff-dec"),
    Status.DIFFERENT_TEMPLATE: ("#ce93d8", "diff-tpl"),
    Status.CLASS_REMOVED: ("#bdbdbd", "cls-gone"),
    Status.NEEDS_PACKAGE: ("#80cbc4", "needs-pkg"),
    Status.REFUSED: ("#ff9800", "refused"),
    Status.CHECK_ERROR: ("#ffc107", "chk-err"),
    Status.DECORATE_ERROR: ("#ab47bc", "dec-err"),
    Status.UNSUPPORTED: ("#5c6bc0", "unsupp"),
    Status.ERROR: ("#e53935", "error"),
    Status.CONFIG_ERROR: ("#f06292", "cfg-err"),
    Status.MISSING_DEPENDENCY: ("#90a4ae", "no-dep"),
    Status.NEEDS_HUB: ("#4fc3f7", "hub"),
    Status.TIMEOUT: ("#795548", "timeout"),
    Status.CRASH: ("#b71c1c", "crash"),
    Status.OOM: ("#880e4f", "oom"),
    Status.DEVICE_ERROR: ("#4a148c", "device"),
    Status.UNDECIDED: ("#b0bec5", "undecided"),
    Status.SKIPPED: ("#e0e0e0", "skipped"),
    Status.AUDITOR_ERROR: ("#212121", "ours"),
}
_KNOWN = tuple(StatusStyle(status.value, color, short, status.description) for status, (color, short) in _LOOKS.items())
STYLES: dict[str, StatusStyle] = {s.name: s for s in _KNOWN}
# Not a status: the label a report shows, with `--expected`, for a failure the expected baseline
# lists (Cell.shown); the failure's own status stays in the cell's title. The grey of the history
# page's expected marks; it sorts just before `skipped`, the other cells that are not findings.
EXPECTED = StatusStyle("expected", "#aab3bf", "expected",
                       "a failure the expected baseline (--expected) lists: its own status is in the cell's title")
_ORDER = list(STYLES)
_ORDER.insert(_ORDER.index(Status.SKIPPED.value), EXPECTED.name)
_RANK = {name: i for i, name in enumerate(_ORDER)}


def style(status: str) -> StatusStyle:
    if status == EXPECTED.name:
        return EXPECTED
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
