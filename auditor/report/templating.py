"""The jinja2 environment of the HTML pages, with autoescaping always on.

The templates live in the top-level `templates/` folder of the checkout; the wheel ships that
folder as `auditor/templates/` (see [tool.setuptools.package-dir] in pyproject.toml). Both places
are searched, the installed one first, and a folder only counts when it holds our marker template,
so an unrelated `templates/` beside an installed package is never picked up.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jinja2

MARKER = "report.html.j2"


class TemplatesNotFound(RuntimeError):
    """Neither an installed nor a checkout templates folder exists: a broken installation."""


def template_dirs() -> list[Path]:
    package = Path(__file__).resolve().parent.parent  # .../auditor
    candidates = [package / "templates", package.parent / "templates"]
    return [d for d in candidates if (d / MARKER).is_file()]


@functools.cache
def environment() -> jinja2.Environment:
    dirs = template_dirs()
    if not dirs:
        raise TemplatesNotFound("the report templates are missing from this installation of auditor")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in dirs[:1]]),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["pct"] = lambda value: f"{value:.1f}%"
    return env


def render(template: str, **context: object) -> str:
    return environment().get_template(template).render(**context)
