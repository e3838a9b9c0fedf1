"""The package's layout: one layer per folder, dependencies pointing one way, no import cycles.

Read from the source with `ast`, so lazy imports inside functions count as much as those at the
top of a module: a cycle hidden in a function still ties two layers together.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "auditor"

# Lowest first: a layer may import the layers before it, never one after it. `report` stands
# beside the sweep's stack and may use `core` only; `sweeping` (the steps of a sweep, which write
# the tables), `environments` (other environments: venvs of a release made, locked, reused and
# run, and the one sweep that runs here or in them: it renders the report of every run),
# `upgrade` (the runners of upgrade-check, bisect and versions: they spell their sides' sweep
# options with the sweep's declarations and render reports), `atlas` (the grid across releases:
# it sweeps with the layers below it and derives with `report`), `api` (the Python API) and `cli`
# (a thin layer over them) use it.
LAYERS = ("core", "models", "engines", "remote", "checks", "executors", "sweeping", "environments",
          "upgrade", "atlas", "api", "cli")
BESIDE = {"report": {"core"}}
FACADES = {"sweeping", "environments", "upgrade", "atlas", "api", "cli"}  # the layers that may use `report`
# The package's own __init__ holds __version__, which every layer may read, and hands out the
# names of `auditor.api` on first use (a module __getattr__), never at import time.
ROOT = "auditor"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, top_level_only: bool) -> set[str]:
    """The auditor modules `path` imports (`from auditor.x import y` counts auditor.x and,
    when it is a module, auditor.x.y)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else ast.walk(tree)
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(ROOT) and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith(ROOT))
    return found


def _graph(top_level_only: bool = False) -> dict[str, set[str]]:
    """Module -> the auditor modules it imports. A module's own parent packages are left out:
    Python imports them before the module anyway (`from auditor.report import templating` in
    auditor.report.page needs auditor.report.templating, not a second run of the package)."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in _imports(path, top_level_only)
                   if m in paths and m != name and not name.startswith(m + ".")}
            for name, path in paths.items()}


def _layer(module: str) -> str:
    """`core`, `executors`, ...; `auditor` for the package's own __init__; `__main__` for
    `python -m auditor`, which only calls the CLI."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_folder_is_a_known_layer():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(LAYERS) | set(BESIDE)


def test_layers_depend_only_on_the_layers_below_them():
    wrong = []
    for module, targets in _graph().items():
        source = _layer(module)
        if source in (ROOT, "__main__"):
            continue
        allowed = BESIDE[source] if source in BESIDE else set(LAYERS[:LAYERS.index(source)]) | set(BESIDE)
        if source not in FACADES:
            allowed -= set(BESIDE) - BESIDE.get(source, set())
        for target in targets:
            layer = _layer(target)
            if layer not in (source, ROOT) and layer not in allowed:
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports against the layering:\n" + "\n".join(sorted(wrong))


def test_no_import_cycle_between_layers():
    # The root's lazy hand-out of API names is left out: reading `auditor.__version__` (what
    # the layers import the root for) never runs it; the next test holds it to that.
    layers: dict[str, set[str]] = defaultdict(set)
    for module, targets in _graph().items():
        if module != ROOT:
            layers[_layer(module)].update(_layer(t) for t in targets if _layer(t) != _layer(module))
    assert _cycles(dict(layers)) == []


def test_the_package_root_imports_only_the_api_and_only_on_first_use():
    root = PACKAGE / "__init__.py"
    assert _imports(root, top_level_only=True) == set()
    assert _imports(root, top_level_only=False) <= {"auditor", "auditor.api"}


def test_no_import_cycle_between_modules_at_import_time():
    # Within a layer, a registry may import its plug-ins lazily (checks.get loads them); what
    # runs when a module is imported must still never go round in a circle.
    assert _cycles(_graph(top_level_only=True)) == []


def test_the_checker_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


ENGINES = PACKAGE / "engines"
# The engine packages themselves (the real vllm, sglang) and their folders here.
ENGINE_FOLDERS = tuple(sorted(p.name for p in ENGINES.iterdir() if (p / "__init__.py").is_file()))


def _engine_names(source: str) -> list[str]:
    """What a module outside engines/ names of an engine: an import of an engine folder
    (`auditor.engines.vllm...`) or of the engine itself (`vllm`, `sglang`), lazy ones included, and
    any string (not a docstring) that spells such a module (`importlib.import_module("...")`); a
    bare engine name in a string ("vllm", a policy's or a default's) names no module."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    folders = "|".join(ENGINE_FOLDERS)
    engine_module = re.compile(rf"^(auditor\.engines\.({folders})|({folders}))(\.|:|$)")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            names = [node.value] if node.value not in ENGINE_FOLDERS else []
        else:
            continue
        found += [f"line {node.lineno}: {name}" for name in names if engine_module.match(name)]
    return found


def test_nothing_outside_engines_names_an_engines_modules():
    # engines/ is an engine's only home: its decorator and policies, its attention, its config
    # classes; the layers above ask auditor.engines (get, decorating, common) for them.
    assert ENGINE_FOLDERS == ("sglang", "vllm")
    wrong = [f"{path.relative_to(PACKAGE.parent)} {name}"
             for path in sorted(PACKAGE.rglob("*.py")) if ENGINES not in path.parents
             for name in _engine_names(path.read_text(encoding="utf-8"))]
    assert not wrong, "an engine's modules named outside engines/:\n" + "\n".join(wrong)


def test_the_engine_name_checker_finds_each_way_of_naming():
    source = ('"""Docs may say auditor.engines.vllm.native."""\n'
              "from auditor.engines.vllm.decorators import verdicts\n"
              "def f():\n    import vllm.config\n    return importlib.import_module('auditor.engines.sglang.own')\n"
              "from auditor.engines import decorating\n")
    assert _engine_names(source) == ["line 2: auditor.engines.vllm.decorators",
                                     "line 2: auditor.engines.vllm.decorators.verdicts",
                                     "line 4: vllm.config", "line 5: auditor.engines.sglang.own"]


def _engine_words() -> tuple[set[str], set[str]]:
    """Every engine's name and package, and every release the records know, from the registry."""
    from auditor import engines

    names = {word for engine in engines.all() for word in (engine.name, engine.package)}
    return names, {release.version for engine in engines.all() for release in engine.releases}


def _engine_mentions(source: str, names: set[str], releases: set[str]) -> list[str]:
    """Where code (not a docstring or a comment) names an engine or an engine release: a string,
    an identifier, a function's or an attribute's name."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and ast.get_docstring(node, clean=False) is not None}
    word = re.compile(r"(?<![A-Za-z])(" + "|".join(map(re.escape, sorted(names))) + r")(?![a-z])", re.I)
    release = re.compile(r"(?<![\d.])(" + "|".join(map(re.escape, sorted(releases))) + r")(?![\d])")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            text = node.name
        else:
            continue
        if word.search(text) or release.search(text):
            found.append((node.lineno, f"line {node.lineno}: {text[:80]!r}"))
    return [mention for _, mention in sorted(found)]


def test_no_engine_name_or_release_in_code_outside_engines():
    """An engine is one folder under engines/ and its releases are its records: the layers above
    (the CLI included) ask the registry for names, defaults and examples (auditor.engines:
    example_requirement, decorator_policies, default_semantics). Docstrings and comments may
    explain with an engine's name."""
    names, releases = _engine_words()
    wrong = [f"{path.relative_to(PACKAGE.parent)} {mention}"
             for path in sorted(PACKAGE.rglob("*.py")) if ENGINES not in path.parents
             for mention in _engine_mentions(path.read_text(encoding="utf-8"), names, releases)]
    assert not wrong, "engine names or releases in code outside engines/:\n" + "\n".join(wrong)


def test_the_engine_mention_checker_finds_each_way_of_naming():
    source = ('"""vLLM 0.34.0 in a docstring is fine."""\n'
              "# so is vllm in a comment\n"
              "x = 'such as vllm==0.33.0'\n"
              "def vllm_encoders():\n    return obj.sglang_gate\n"
              "y = '0.340.1 and 10.33.0 are not releases; ' + DEFAULT\n")
    assert _engine_mentions(source, {"vllm", "sglang"}, {"0.33.0", "0.34.0"}) == [
        "line 3: 'such as vllm==0.33.0'", "line 4: 'vllm_encoders'", "line 5: 'sglang_gate'"]


def test_the_docs_layout_names_every_layer_in_the_order_of_layers():
    page = (PACKAGE.parent / "docs" / "development" / "layout.md").read_text(encoding="utf-8")
    section = page.split("```", 2)[1]
    named = [match.group(1) for match in re.finditer(r"^  ([a-z_]+)/ ", section, flags=re.M)]
    assert named == [*LAYERS, *BESIDE], "docs/development/layout.md lists the layers out of order or misses one"


def _public_classes() -> dict[str, list[str]]:
    """Each public top-level class name of the package -> the modules that define one."""
    defined: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                defined[node.name].append(_module_name(path))
    return defined


def test_one_name_per_concept():
    """A public class name means one thing across the package (issue 41: two `Outcome`s, two
    `Verdict`s, two `Cell`s, `Side`s, `Kind`s and `Progress`es were each two concepts)."""
    twice = {name: modules for name, modules in _public_classes().items() if len(modules) > 1}
    assert not twice, f"public classes defined in more than one module: {twice}"


TESTS = PACKAGE.parent / "tests"
# Folders of tests/ that are no layer: committed inputs, plugin modules the sweeps import, and the
# project's tooling (the noxfile, the docs site, the nightly workflow).
NOT_LAYERS = {"fixtures", "plugins", "tooling", "__pycache__"}


def test_the_tests_mirror_the_package():
    """tests/<layer>/ for auditor/<layer>/ (issue 41: tests beside what they test); a folder below
    a layer's is named after a module or folder of that layer (tests/checks/compile/: checks/compile*.py)."""
    wrong = []
    for folder in sorted(p for p in TESTS.iterdir() if p.is_dir() and p.name not in NOT_LAYERS):
        if folder.name not in set(LAYERS) | set(BESIDE):
            wrong.append(str(folder.relative_to(TESTS)))
            continue
        layer = PACKAGE / folder.name
        names = {p.stem for p in layer.rglob("*") if p.suffix == ".py" or p.is_dir()}
        wrong += [str(sub.relative_to(TESTS)) for sub in folder.iterdir()
                  if sub.is_dir() and sub.name not in NOT_LAYERS and sub.name not in names]
    assert not wrong, f"test folders that are no layer of the package (or module of it): {wrong}"
