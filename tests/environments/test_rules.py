"""Each rule of the options in one place (issue 54): the sweep's own (sweeping/validate.py,
sweeping/options.py) for every command that passes options on to a sweep in a venv (upgrade-check,
bisect, versions, the atlas), and one way to tell a venv's step that failed (environments/runner.py).

Read from the source: the text of each rule's message is written in exactly one module of the
package; then asked of each command: the same input gets the same message from every one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import auditor
from auditor import upgrade
from auditor.atlas.plan import plan_atlas
from auditor.core.errors import InputError

PACKAGE = Path(__file__).resolve().parents[2] / "auditor"

# The message of each rule -> the one module that writes it.
RULES = {
    "--jobs must be at least 1": "sweeping/validate.py",
    "--timeout must be a positive number of seconds": "sweeping/validate.py",
    "--reruns must be 0 (no reruns) or more": "sweeping/validate.py",
    "--resume and --overwrite contradict each other": "sweeping/validate.py",
    "unknown check(s) ": "sweeping/validate.py",
    "names nothing: give at least one name": "sweeping/options.py",
    "exists; pass --resume to continue it or --overwrite to replace it": "sweeping/validate.py",
    " --executor ray\")": "sweeping/validate.py",  # "--ray-address needs --executor ray", from the records
    "nox exited ": "environments/runner.py",
}


def _writers(text: str) -> list[str]:
    return sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                  if text in path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("text", sorted(RULES))
def test_each_rule_is_written_in_one_module(text):
    assert _writers(text) == [RULES[text]]


def test_no_module_spells_an_executor_rule_by_hand():
    """`--ray-address needs --executor ray` is made from the option's record (Option.executor)."""
    spelled = [str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
               if re.search(r"--[a-z-]+ needs? --executor ray", path.read_text(encoding="utf-8"))]
    assert spelled == []


def _commands(tmp_path, **options):
    """Each command that passes options on to a sweep, planned with `options` (nothing is installed:
    the rules refuse first)."""
    return {
        "sweep": lambda: auditor.sweep(tmp_path / "sweep", models=["gpt2"], **options),
        "upgrade-check": lambda: upgrade.plan_check("5.20.0", "5.24.0", output=str(tmp_path / "u"), **options),
        "versions": lambda: upgrade.plan_versions("5.20.0,5.24.0", output=str(tmp_path / "v"), **options),
        "bisect": lambda: upgrade.bisect_probe("gpt2", "build", outdir=tmp_path / "b", **options),
        "atlas": lambda: plan_atlas(tmp_path / "atlas", transformers="5.20.0,5.24.0", **options),
    }


@pytest.mark.parametrize(("options", "message"), [
    ({"jobs": 0}, "--jobs must be at least 1"),
    ({"timeout": -1.0}, "--timeout must be a positive number of seconds"),
    ({"checks": "build,nosuch"}, "unknown check(s) nosuch; available: "),
])
def test_every_command_refuses_the_same_input_with_the_same_message(tmp_path, options, message):
    for name, plan in _commands(tmp_path, **options).items():
        if name == "bisect" and "checks" in options:
            continue  # bisect's checks come from its cell
        with pytest.raises(InputError) as caught:
            plan()
        assert message in str(caught.value), name


def test_ray_address_without_the_ray_executor_is_refused_alike(tmp_path):
    for plan in (lambda: upgrade.plan_versions("5.20.0", ray_address="10.0.0.1:6379"),
                 lambda: plan_atlas(tmp_path / "atlas", transformers="5.20.0", ray_address="10.0.0.1:6379")):
        with pytest.raises(InputError, match="^--ray-address needs --executor ray$"):
            plan()
    with pytest.raises(InputError, match="--ray-address .*need --executor ray"):
        auditor.sweep(tmp_path / "sweep", models=["gpt2"], ray_address="10.0.0.1:6379")
