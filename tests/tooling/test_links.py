"""The links of README.md and docs/ as the repository shows them (GitHub, an editor), not only
as the built site resolves them: every relative link names a file that is committed, and every
`#anchor` into a Markdown page names one of its headings."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CODE = re.compile(r"`[^`]*`")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
ATTR_ID = re.compile(r"\{[^}]*#([\w-]+)[^}]*\}")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def links(text: str) -> list[str]:
    """The link targets of a Markdown text, outside code blocks and code spans."""
    return LINK.findall(CODE.sub("", FENCE.sub("", text)))


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings as GitHub and MkDocs (toc's slugify) spell them."""
    found = set(ATTR_ID.findall(text))
    for heading in HEADING.findall(FENCE.sub("", text)):
        plain = ATTR_ID.sub("", heading).replace("`", "").strip().lower()
        found.add(re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", plain)))
    return found


def dead_links(page: Path) -> list[str]:
    dead = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not a file
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or ROOT not in file.parents:
            dead.append(f"{target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text(encoding="utf-8")):
            dead.append(f"{target} (no such heading)")
    return dead


def test_no_dead_relative_link_in_readme_or_docs():
    dead = {str(page.relative_to(ROOT)): found for page in pages() if (found := dead_links(page))}
    assert dead == {}


def test_the_checker_sees_a_dead_link_a_dead_anchor_and_leaves_code_alone(tmp_path, monkeypatch):
    monkeypatch.setattr("tests.tooling.test_links.ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# A page\n\n## The `sweep` (options)\n")
    page = tmp_path / "docs" / "here.md"
    page.write_text("[ok](there.md#the-sweep-options) [gone](reference/commands.md) [bad](there.md#nope)\n"
                    "`[code](nowhere.md)` and [web](https://example.org/x.md)\n```\n[fenced](nowhere.md)\n```\n")
    assert dead_links(page) == ["reference/commands.md (no such file)", "there.md#nope (no such heading)"]
