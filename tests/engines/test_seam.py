"""The engine seam: outside auditor/engines/<engine>/ nothing imports a serving engine or names
its modules, so that adding an engine is adding a folder.

Read from the source with `ast`, like tests/test_layout.py: an import statement (lazy ones in
functions included) of `vllm` or `vllm.*`, a string in code naming such a module
(`"vllm.config"`), or a call that imports or looks up the package by name
(`find_spec("vllm")`). Docstrings and comments may cite vLLM's source files; the policy name
"vllm" as a plain string is a name, not a module.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "auditor"
ENGINES = {"vllm", "sglang"}  # the engines' own import names
# `vllm.something` as a module path of its own (not `auditor.engines.vllm.decorator`).
_MODULE_PATH = re.compile(r"(?<![\w.])(?:" + "|".join(ENGINES) + r")\.\w")
_IMPORTERS = {"find_spec", "import_module", "__import__"}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _is_engine(module: str) -> bool:
    return module.split(".")[0] in ENGINES


def engine_references(source: str) -> list[str]:
    """`line: what` for each place `source` imports an engine or names one of its modules."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if _is_engine(a.name)]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and _is_engine(node.module):
            found.append(f"{node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in _IMPORTERS and isinstance(node.args[0].value, str) and _is_engine(node.args[0].value):
                found.append(f"{node.lineno}: {name}({node.args[0].value!r})")
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
              and _MODULE_PATH.search(node.value)):
            found.append(f"{node.lineno}: {node.value[:80]!r}")
    return found


def test_only_an_engines_folder_names_its_modules():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "engines" and relative.parts[1] in ENGINES:
            continue
        wrong += [f"{relative}:{hit}" for hit in engine_references(path.read_text(encoding="utf-8"))]
    assert not wrong, "engine modules named outside auditor/engines/<engine>/:\n" + "\n".join(wrong)


def test_the_checker_finds_each_kind_of_reference():
    source = '''
"""Cites vllm/config/model.py and vllm.config in a docstring: fine."""
import vllm
from vllm.config import ModelConfig
def f():
    from vllm import envs
    importlib.util.find_spec("vllm")
    return "vllm.model_executor.models", "vllm", "auditor.engines.vllm.decorator:f"
'''
    hits = engine_references(source)
    assert [hit.split(":")[0] for hit in hits] == ["3", "4", "6", "7", "8"], hits
    # and the engine's own folder does name them
    assert engine_references((PACKAGE / "engines" / "vllm" / "own.py").read_text(encoding="utf-8"))
