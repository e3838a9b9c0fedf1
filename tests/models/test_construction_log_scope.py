"""The construction log's hook on `torch.nn.Module.__new__` changes nothing but the log.

It stays installed for the life of a worker, so whatever it could change would differ between a
worker and any other process, and between Python versions: Python 3.10's `inspect.signature`
prefers an inherited `__new__` to an inherited `__init__`, 3.11 and later do not. These tests
run in fresh interpreters (the hook cannot be uninstalled): on this Python with real torch and
transformers modules, and on every other supported Python that is installed here (pyenv) with
a plain base class standing in for torch.nn.Module, since those interpreters have no torch.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

REAL = textwrap.dedent("""
    import copy, importlib, inspect, json
    import torch

    classes = []
    for name in ("llama", "gpt2", "bert", "mistral", "t5", "whisper", "qwen2_vl"):
        module = importlib.import_module(f"transformers.models.{name}.modeling_{name}")
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, torch.nn.Module) and value.__module__ == module.__name__
                    and "__init__" not in value.__dict__):
                classes.append(value)
    before = {c.__qualname__: str(inspect.signature(c)) for c in classes}
    from auditor.models.construction_log import constructions
    with constructions() as log:
        layer = torch.nn.Linear(3, 4)
        copies = [copy.deepcopy(layer), copy.copy(layer)]
    after = {c.__qualname__: str(inspect.signature(c)) for c in classes}
    print(json.dumps({"before": before, "after": after, "logged": [[type(m).__name__, list(a)] for m, a in log.entries],
                      "copies_work": all(isinstance(c, torch.nn.Linear) for c in copies)}))
""")

# The same promises on a plain class hierarchy: what the other Pythons can run without torch.
PLAIN = textwrap.dedent("""
    import copy, inspect, json, sys
    from auditor.models import construction_log

    class Base:
        def __init__(self, *args, **kwargs):
            pass

    class Layer(Base):
        def __init__(self, width: int, act: str = "gelu"):
            self.width, self.act = width, act

    class Inherits(Layer):  # the case 3.10 gets wrong with a plain __new__
        pass

    def signatures():
        return {c.__name__: str(inspect.signature(c)) for c in (Layer, Inherits)}

    before = signatures()
    if sys.argv[1] == "plain-hook":  # what the hook used to be: shows that the test can fail
        Base.__new__ = staticmethod(lambda cls, *args, **kwargs: object.__new__(cls))
    else:
        construction_log._install(Base)
    entries = construction_log._active = []  # a log open, as constructions() opens one
    layer = Inherits(8, "relu")
    copies = [copy.deepcopy(layer), copy.copy(layer)]
    construction_log._active = None
    print(json.dumps({"before": before, "after": signatures(), "logged": [[type(m).__name__, list(a)] for m, a in entries],
                      "copies_work": all(c.width == 8 for c in copies)}))
""")


def _run(python: str, script: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([python, "-c", script, *args], capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _other_pythons() -> list:
    """The supported Pythons (3.10-3.14) other than this one that pyenv or PATH has."""
    found = {}
    for minor in range(10, 15):
        if minor == sys.version_info.minor:
            continue
        root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
        candidates = [*sorted(glob.glob(f"{root}/versions/3.{minor}.*/bin/python3.{minor}")),
                      shutil.which(f"python3.{minor}")]
        # pyenv's shims run only the versions `pyenv global` selects: not an interpreter of their own.
        path = next((c for c in candidates if c and "/shims/" not in c and os.access(c, os.X_OK)), None)
        if path:
            found[f"3.{minor}"] = path
    return [pytest.param(path, id=version) for version, path in found.items()] or [
        pytest.param("", marks=pytest.mark.skip(reason="no other Python 3.10-3.14 on this machine"))]


def test_real_modules_keep_their_signatures_and_copies_are_not_constructions():
    found = _run(sys.executable, REAL)
    assert len(found["before"]) >= 5, "too few modules that inherit __init__: nothing was compared"
    assert found["after"] == found["before"]
    assert found["logged"] == [["Linear", [3, 4]]]  # the construction, not its two copies
    assert found["copies_work"]


@pytest.mark.parametrize("python", _other_pythons())
def test_the_hook_changes_no_signature_and_logs_no_copy_on_other_pythons(python):
    found = _run(python, PLAIN, "hook")
    assert found["before"]["Inherits"] == "(width: int, act: str = 'gelu')"
    assert found["after"] == found["before"]
    assert found["logged"] == [["Inherits", [8, "relu"]]]
    assert found["copies_work"]


@pytest.mark.parametrize("python", [p for p in _other_pythons() if "3.10" in str(p.id)] or [
    pytest.param("", marks=pytest.mark.skip(reason="no Python 3.10 on this machine"))])
def test_a_plain_new_would_change_signatures_on_python_3_10(python):
    """The hazard is real: the test above would fail with the hook the auditor used to have."""
    found = _run(python, PLAIN, "plain-hook")
    assert found["after"]["Inherits"] == "(*args, **kwargs)" != found["before"]["Inherits"]
