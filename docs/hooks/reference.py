"""The reference pages of the docs, generated from the code: nothing a parser, a registry or a
release record can say is typed by hand.

* `pages()` -> {path under docs/: Markdown}: the commands' options (auditor.cli's parsers), the
  statuses, faults and outcomes (auditor.core), the checks and table columns (auditor.checks,
  auditor.report), and each engine's gates from its release records (auditor.engines).
* The pages are committed under docs/reference/ so that links to them work where the repository
  is read (GitHub, an editor), not only in the built site. `python docs/hooks/reference.py` writes
  them again; as an MkDocs hook (mkdocs.yml `hooks:`) this module warns, so that a strict build
  fails, when a committed page is not what the code says now, and tests/tooling/test_docs.py
  fails the same way.
* A hand-written page may hold `<!-- generated: gates ENGINE -->` (or `releases ENGINE`): the
  hook puts the generated table there, so an engine's page keeps its prose and its gates come
  from the records.

tests/tooling/test_docs.py reads these functions against the parsers and registries.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import re
import sys
from pathlib import Path

COMMANDS_PAGE = "reference/commands.md"
MARKER = re.compile(r"<!-- generated: (gates|releases) ([a-z0-9_-]+) -->")
DOCS = Path(__file__).resolve().parents[1]
REGENERATE = "python docs/hooks/reference.py"
USAGE_WIDTH = 100  # the usage lines wrap here, whatever the terminal that writes the pages
_log = logging.getLogger("mkdocs.hooks.reference")


# --- mkdocs hook events -------------------------------------------------------------------------

def on_files(files, config):
    for path in stale():
        _log.warning("docs/%s is not what the code says now: run `%s`", path, REGENERATE)
    return files


def on_page_markdown(markdown, page, config, files):
    return MARKER.sub(lambda m: _SECTIONS[m.group(1)](m.group(2)), markdown)


def pages() -> dict[str, str]:
    return {COMMANDS_PAGE: commands_page(), "reference/statuses.md": statuses_page(),
            "reference/checks.md": checks_page(), "reference/engines.md": engines_page(),
            "reference/nox.md": nox_page()}


def stale(docs: Path = DOCS) -> list[str]:
    """The reference pages whose committed file under `docs` differs from what the code says."""
    return [path for path, text in pages().items()
            if not (docs / path).is_file() or (docs / path).read_text(encoding="utf-8") != text]


def write(docs: Path = DOCS) -> list[str]:
    """Write every reference page under `docs`; the paths written."""
    generated = pages()
    for path, text in generated.items():
        (docs / path).parent.mkdir(parents=True, exist_ok=True)
        (docs / path).write_text(text, encoding="utf-8")
    return list(generated)


# --- commands -----------------------------------------------------------------------------------

def subcommands() -> dict[str, argparse.ArgumentParser]:
    """auditor's subcommand parsers by name, in the order `auditor --help` lists them."""
    from auditor.cli import build_parser

    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for sub in action.choices.values():
        sub.formatter_class = _fixed_width(sub.formatter_class)
    return dict(action.choices)


def _fixed_width(formatter_class):
    return lambda prog: formatter_class(prog, width=USAGE_WIDTH)


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments a reader types: every action but help."""
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS]


def commands_page() -> str:
    out = ["# Commands", "",
           "Generated from the argument parsers of `auditor/cli/` when the docs are built: every option of "
           "every command, with its help text and default. `auditor COMMAND --help` prints the same.", ""]
    out += [f"- [`auditor {name}`](#{_anchor(name)})" for name in subcommands()]
    for name, parser in subcommands().items():
        out += ["", f"## auditor {name}", "", _escape_text(parser.description or ""), "",
                "```text", parser.format_usage().strip(), "```", ""]
        for group in parser._action_groups:
            actions = [a for a in group._group_actions if a in options(parser)]
            if not actions:
                continue
            out += [f"**{group.title}**", "", "| option | default | meaning |", "|---|---|---|"]
            out += [_option_row(parser, a) for a in actions]
            out.append("")
        if name == "sweep":
            out += sweep_keys()
    return "\n".join(out).rstrip() + "\n"


def sweep_keys() -> list[str]:
    """What the option declarations (auditor/sweeping/options.py) say beyond the parser."""
    from auditor.sweeping.options import EXPERIMENT, OPTIONS

    def flags(chosen):
        return ", ".join(f"`{o.flags[0]}`" for o in chosen if o.flags)

    return ["**Experiment keys.** A run's header records these; `--resume` refuses a command that changes one "
            f"(with the Python, torch and transformers versions): {flags(EXPERIMENT)}.", "",
            "**Passed to the sides** of `upgrade-check`, `bisect` and `versions`: "
            f"{flags(o for o in OPTIONS if o.sides)}.", ""]


def spellings(action: argparse.Action) -> str:
    """How the reference writes an argument: its flags, or its positional name."""
    return ", ".join(action.option_strings) if action.option_strings else action.metavar or action.dest


def _option_row(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    names = ", ".join(f"`{s}`" for s in spellings(action).split(", "))
    if action.choices is not None and not isinstance(action.choices, dict):
        names += " `{" + ",".join(str(c) for c in action.choices) + "}`"
    elif action.option_strings and action.nargs != 0 and action.metavar:
        names += f" `{action.metavar}`"
    return f"| {names} | {_cell(default_shown(parser, action))} | {_cell(_escape_text(_help(parser, action)))} |"


_STATED = re.compile(r"(?:\(|; |^)default:? ")


def stated_default(help_text: str) -> str | None:
    """The default a help text states: "(default: X)", "(default X)", "; default: X", "default: X"
    (to the closing parenthesis that matches, or the end); None when it states none."""
    match = _STATED.search(help_text)
    if match is None:
        return None
    depth, rest = 0, help_text[match.end():]
    for i, char in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0 and match.group(0).startswith("("):
            return rest[:i].strip()
    return rest.strip()


def default_shown(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The default cell: what the help text states (it is machine-independent, "the number of
    cores"), else the parser's default; empty for a flag and for a positional."""
    if not action.option_strings:
        return ""
    stated = stated_default(_help(parser, action))
    if stated:
        return f"`{stated}`" if " " not in stated and "`" not in stated else _escape_text(stated)
    default = action.default
    if action.nargs == 0 or default in (None, argparse.SUPPRESS, [], (), ""):
        return ""
    return f"`{default}`"


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help:
        return ""
    return parser._get_formatter()._expand_help(action)


# --- statuses, faults, outcomes -----------------------------------------------------------------

def statuses_page() -> str:
    from auditor.core.fault import Fault
    from auditor.core.outcome import UNCONFIRMED, Outcome
    from auditor.core.status import Status, default_fault

    out = ["# Statuses, faults and outcomes", "",
           "Generated from `auditor/core/` (status.py, classifier.py, fault.py, outcome.py). Every row has one status; "
           "its fault says whose it is; a cell's outcome is what a reader makes of it.", "",
           "## Statuses", "",
           "| status | meaning | fault where nothing more is known | rerun before reported |", "|---|---|---|---|"]
    out += [f"| `{s.value}` | {_cell(_escape_text(s.description))} | `{default_fault(s).value or '(none)'}` | "
            f"{'yes' if s in UNCONFIRMED else ''} |" for s in Status]
    out += ["", "## Faults", "", "| fault | meaning |", "|---|---|"]
    out += [f"| `{f.value or '(empty)'}` | {_cell(_escape_text(f.description))} |" for f in Fault]
    out += ["", "## Outcomes", "", "| outcome | how reports name it |", "|---|---|"]
    out += [f"| `{o.value}` | {_cell(o.label)} |" for o in Outcome]
    return "\n".join(out) + "\n"


# --- checks and columns -------------------------------------------------------------------------

def checks_page() -> str:
    from auditor import checks, engines
    from auditor.report.baseline import COLUMNS as BASELINE
    from auditor.report.ranges import FIELDS as RANGES
    from auditor.report.tables import LONG_COLUMNS, SERVE_FIELDS

    out = ["# Checks and columns", "",
           "Generated from the check registry (`auditor/checks/`) and the report's tables (`auditor/report/`).", "",
           "## Checks", "", "| check | what it answers | needs | builds on |", "|---|---|---|---|"]
    for name in checks.available():
        cls = type(checks.get(name))
        doc = (sys.modules[cls.__module__].__doc__ or cls.__doc__ or "").strip().split("\n\n")[0]
        needs = " or ".join(f"`{r}`" for r in getattr(cls, "requires_one_of", ())) or \
            ", ".join(f"`{r}`" for r in cls.requires)
        out.append(f"| `{name}` | {_cell(_escape_text(doc))} | {needs} | "
                   f"{'`--device`' if cls.runs_models else 'meta'} |")
    out += ["", "## Backend columns", "",
            "One column per gate of each engine, in the order the engine meets a model (its rows of policy "
            "`<policy>` come from the engine's own code).", "", "| engine | columns |", "|---|---|"]
    for engine in engines.all():
        out.append(f"| {engine.title} | " + ", ".join(f"`backend/{engine.component(g)}`" for g in engine.gate_names) + " |")
    out += ["", "## Table columns", "", "| file | columns |", "|---|---|",
            "| results.csv | " + ", ".join(f"`{c}`" for c in LONG_COLUMNS) + " |",
            "| serve.csv | `model_type`, per engine `serve/<engine>`, "
            + ", ".join(f"`serve/<engine>/{f}`" for f in SERVE_FIELDS) + ", `serve/<engine>/compile` |",
            "| expected baseline (`auditor baseline`) | " + ", ".join(f"`{c}`" for c in BASELINE) + " |",
            "| minmax.csv (`auditor versions`) | " + ", ".join(f"`{c}`" for c in RANGES) + " |"]
    return "\n".join(out) + "\n"


# --- engines ------------------------------------------------------------------------------------

def engines_page() -> str:
    from auditor import engines

    out = ["# Engines and their gates", "",
           "Generated from each engine's `Engine` (`auditor/engines/<engine>/__init__.py`) and its release "
           "records (`releases.py`). The emulation follows the installed release's record, else the newest; "
           "the places below are the newest record's.", ""]
    for engine in engines.all():
        out += [f"## {engine.title}", "", f"Package `{engine.package}`, extra `[{engine.extra}]`, own-code policy "
                f"`{engine.policy}`; records: {', '.join(r.version for r in engine.releases)}.", "",
                "### Gates", "", gates_table(engine.name), "", "### Releases", "", releases_table(engine.name), ""]
    return "\n".join(out).rstrip() + "\n"


def newest(engine):
    from auditor.engines.interface import pick_release

    return pick_release(engine.releases, None)


def gates_table(name: str) -> str:
    """The engine's gates in its order, each with the newest record's file:line."""
    from auditor import engines
    from auditor.engines.interface import cited

    engine = engines.get(name)
    record = newest(engine)
    rows = [f"| gate (column) | stops the engine | by its own code too | where, in {engine.title} {record.version} |",
            "|---|---|---|---|"]
    for number, gate in enumerate(engine.gates, 1):
        place = f"`{cited(record, gate.cites)}`" if gate.cites in record.citations else ""
        stops = "yes" if gate.stops else ("when it raises" if gate.raise_stops else "no")
        rows.append(f"| {number}. `backend/{engine.component(gate.name)}` | {stops} | "
                    f"{'yes' if gate.own else ''} | {place} |")
    return "\n".join(rows)


def releases_table(name: str) -> str:
    """Every record of the engine, oldest first: its pins and what changed since the one before."""
    from auditor import engines

    rows = ["| release | transformers | torch | changed since the record before |", "|---|---|---|---|"]
    for record in engines.get(name).releases:
        changes = "<br>".join(_cell(_escape_text(c)) for c in record.changes) or "(the first record)"
        rows.append(f"| {record.version} | `{record.transformers}` | `{record.torch}` | {changes} |")
    return "\n".join(rows)


_SECTIONS = {"gates": gates_table, "releases": releases_table}


# --- nox sessions -------------------------------------------------------------------------------

def nox_sessions():
    """The noxfile's sessions (nox's registry, filled by loading noxfile.py) and its docstring."""
    import importlib.util
    from pathlib import Path

    import nox.registry

    path = Path(__file__).resolve().parents[2] / "noxfile.py"
    spec = importlib.util.spec_from_file_location("noxfile_for_docs", path)
    module = importlib.util.module_from_spec(spec)
    # The sessions as a fresh `nox --list` sees them, in its order, whatever this process loaded
    # before: an empty registry, and the noxfiles the noxfile imports (upgrade-check's sides)
    # imported again; the process's registry and modules are put back after.
    saved = nox.registry.get()
    imported = {name: m for name, m in sys.modules.items() if Path(getattr(m, "__file__", None) or "").name == "noxfile.py"}
    nox.registry.reset()
    for name in imported:
        del sys.modules[name]
    try:
        spec.loader.exec_module(module)
        sessions = nox.registry.get()
    finally:
        nox.registry.reset()
        nox.registry._REGISTRY.update(saved)
        sys.modules.update(imported)
    return sessions, module.__doc__ or ""


def nox_page() -> str:
    sessions, doc = nox_sessions()
    out = ["# nox sessions", "", "Generated from `noxfile.py` (nox's registry of its sessions, and the file's docstring). "
           "`nox --list` prints the same names.", "", "| session | Python | what it does |", "|---|---|---|"]
    for name, func in sessions.items():
        params = [str(p) for p in (getattr(func, "parametrize", None) or [])]
        shown = ", ".join(f"`{name}({p})`" for p in params) if params else f"`{name}`"
        python = func.python if isinstance(func.python, str) else ", ".join(func.python or [])
        what = " ".join((func.__doc__ or "").split())
        out.append(f"| {shown} | {python} | {_cell(_escape_text(what))} |")
    out += ["", "## Environment variables", "", "```text", inspect.cleandoc(doc), "```"]
    return "\n".join(out) + "\n"


# --- Markdown -----------------------------------------------------------------------------------

def _cell(text: str) -> str:
    """One table cell: one line, its pipes escaped outside code spans (inside them the table
    extension leaves pipes alone)."""
    return _outside_code(" ".join(str(text).split()), lambda part: part.replace("|", "\\|"))


def _escape_text(text: str) -> str:
    """Help texts are plain text: keep `<...>` placeholders outside code spans from reading as HTML."""
    return _outside_code(inspect.cleandoc(text), lambda part: part.replace("<", "&lt;").replace(">", "&gt;"))


def _outside_code(text: str, change) -> str:
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(part if part.startswith("`") and part.endswith("`") and len(part) > 1 else change(part)
                   for part in parts)


def _anchor(name: str) -> str:
    return "auditor-" + name


if __name__ == "__main__":
    sys.path.insert(0, str(DOCS.parent))
    for written in write():
        print(f"docs/{written}")
