"""The docs site: its reference pages are generated from the code (docs/hooks/reference.py), so
these tests read the parsers, core and the registries, and check the generated pages carry them."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys

import pytest

from auditor import engines
from auditor.core.fault import Fault
from auditor.core.status import Status
from tests.conftest import ROOT

_SPEC = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs" / "hooks" / "reference.py")
reference = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(reference)


def _section(page: str, command: str) -> str:
    return page.split(f"\n## auditor {command}\n", 1)[1].split("\n## auditor ", 1)[0]


def test_the_reference_lists_every_option_of_every_command():
    page = reference.commands_page()
    commands = reference.subcommands()
    assert {"sweep", "report", "diff", "gate", "upgrade-check", "bisect", "versions"} <= set(commands)
    for name, parser in commands.items():
        rows = [line for line in _section(page, name).splitlines() if line.startswith("| `")]
        for action in reference.options(parser):
            names = ", ".join(f"`{s}`" for s in reference.spellings(action).split(", "))
            row = next((r for r in rows if r.startswith(f"| {names}")), None)
            assert row is not None, f"auditor {name}: {names} missing from the reference"
            assert reference._cell(reference._escape_text(reference._help(parser, action))) in row, (name, names)


def test_an_option_added_to_a_parser_appears_in_the_reference(monkeypatch):
    real = reference.subcommands

    def with_one_more():
        parsers = real()
        parsers["sweep"].add_argument("--brand-new-flag", metavar="X", help="a flag added after the docs were written")
        return parsers

    monkeypatch.setattr(reference, "subcommands", with_one_more)
    section = _section(reference.commands_page(), "sweep")
    assert "| `--brand-new-flag` `X` |  | a flag added after the docs were written |" in section


def test_the_statuses_page_is_the_vocabulary():
    page = reference.statuses_page()
    rows = dict(re.findall(r"^\| `([a-z-]+)` \| (.+?) \| `", page.split("## Faults")[0], flags=re.M))
    assert rows == {s.value: reference._cell(reference._escape_text(s.description)) for s in Status}
    faults = page.split("## Faults")[1].split("## Outcomes")[0]
    assert all(f"| `{f.value or '(empty)'}` |" in faults for f in Fault)


def test_each_engine_page_lists_its_gates_in_order_with_the_newest_records_lines():
    for engine in engines.all():
        table = reference.gates_table(engine.name)
        columns = re.findall(r"^\| \d+\. `backend/([^`]+)`", table, flags=re.M)
        assert columns == [engine.component(g) for g in engine.gate_names]
        record = reference.newest(engine)
        assert record.version == engine.releases[-1].version or len(engine.releases) == 1
        for gate in engine.gates:
            if gate.cites in record.citations:
                assert f"{record.package}/{record.citations[gate.cites]}" in table
        page = (ROOT / "docs" / "engines" / f"{engine.name}.md").read_text(encoding="utf-8")
        assert f"<!-- generated: gates {engine.name} -->" in page


def test_a_hand_page_marker_becomes_the_generated_table():
    text = reference.on_page_markdown("before\n<!-- generated: releases sglang -->\nafter", None, None, None)
    assert reference.releases_table("sglang") in text and "<!-- generated" not in text


def test_the_checks_page_names_every_registered_check():
    from auditor import checks

    page = reference.checks_page()
    assert all(f"| `{name}` |" in page for name in checks.available())


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="needs the [docs] extra (mkdocs)")
def test_the_site_builds_strict(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    commands = (tmp_path / "site" / "reference" / "commands" / "index.html").read_text(encoding="utf-8")
    assert "--run-id" in commands and "--fail-on" in commands
    shutil.rmtree(tmp_path / "site")


def test_the_readme_names_the_releases_the_tests_are_locked_to():
    """The README says which transformers and torch the test command installs: the lock file's own."""
    locked = dict(line.split("==", 1) for line in (ROOT / "constraints/test.txt").read_text().splitlines()
                  if "==" in line and not line.startswith("#"))
    readme = (ROOT / "README.md").read_text()
    assert f"(transformers {locked['transformers']}, torch {locked['torch']})" in readme


def test_the_committed_reference_pages_are_what_the_code_says():
    """docs/reference/ is committed so that its links work on GitHub; it must not drift from the code."""
    assert reference.stale() == [], f"run `{reference.REGENERATE}` and commit docs/reference/"


def test_a_stale_reference_page_is_seen(tmp_path):
    reference.write(tmp_path)
    assert reference.stale(tmp_path) == []
    page = tmp_path / reference.COMMANDS_PAGE
    page.write_text(page.read_text().replace("--run-id", "--run-name"))
    assert reference.stale(tmp_path) == [reference.COMMANDS_PAGE]


def test_the_reference_takes_a_default_from_the_help_text_or_the_parser():
    assert reference.stated_default("worker processes (default: the number of cores)") == "the number of cores"
    assert reference.stated_default("memory, e.g. 4G (default auto: 80% of RAM (shared))") == "auto: 80% of RAM (shared)"
    assert reference.stated_default("an earlier run; default: the newest run") == "the newest run"
    assert reference.stated_default("default: reports/x") == "reports/x"
    assert reference.stated_default("by default such a cell is skipped") is None
    sweep = _section(reference.commands_page(), "sweep")
    assert "| `--jobs`, `-j` | the number of cores |" in sweep
    assert "| `--reports` | `reports` |" in sweep
    assert "| ``" not in reference.commands_page()


def test_no_two_commands_share_a_description():
    described = [p.description for p in reference.subcommands().values() if p.description]
    assert len(described) == len(set(described))


def test_the_verdict_pages_commands_are_ones_auditor_takes():
    """docs/verdict.md is followed to the letter: each `auditor ...` line of its shell blocks parses."""
    import shlex

    from auditor.cli import build_parser

    page = (ROOT / "docs" / "verdict.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```bash\n(.*?)^```", page, flags=re.M | re.S)
    commands = [line for block in blocks for line in block.splitlines() if line.startswith("auditor ")]
    assert len(commands) >= 2
    for command in commands:
        args = build_parser().parse_args(shlex.split(command)[1:])
        assert args.handler is not None, command


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="needs the [docs] extra (mkdocs)")
def test_code_in_the_sites_tables_is_never_broken_inside_a_word(tmp_path, page):
    """docs/stylesheets/extra.css: on a narrow screen a code span of a table cell (`backend/registry`)
    moves whole to the next line or widens its column (the table scrolls), never splits inside a
    word (`backend/registr` `y`); a break after a hyphen is a line's ordinary place to break."""
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--no-strict", "--site-dir", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    page.set_viewport_size({"width": 700, "height": 900})
    broken, checked = {}, 0
    for name in ("reference/checks", "reference/commands", "checks/compile", "outputs/csv"):
        page.goto((site / name / "index.html").as_uri())
        broken[name] = page.eval_on_selector_all(
            "td code, th code",
            "codes => codes.filter(c => !/[\\s-]/.test(c.textContent) && c.getClientRects().length > 1)"
            ".map(c => c.textContent)")
        checked += page.eval_on_selector_all("td code", "codes => codes.length")
    assert checked > 100
    assert broken == {name: [] for name in broken}
