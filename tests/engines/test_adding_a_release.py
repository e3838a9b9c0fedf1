"""docs/engines/adding.md's steps for a new engine release, run as written on a fake release.

In a copy of the repository, the release is named (0.98.0 here; the page's example is 0.35.0), the
page's record snippet goes into auditor/engines/vllm/releases.py, and every shell command of the
page runs in bash as a maintainer would paste it, but the two marked `# downloads` (the wheel and
the engine's venv: GBs, and a release that does not exist). The engine's venv of step 4 is this
test's own venv, so that its lock command runs for real. A step that fails fails the test, and the
end state is checked: the record is the newest, CI would install it with its tested transformers,
its nox session exists, the reference pages name it and the lock file is there."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, auditor_env

PAGE = ROOT / "docs" / "engines" / "adding.md"
EXAMPLE, FAKE = "0.35.0", "0.98.0"  # the page's example release, and the fake one this test adds
DOWNLOADS = "# downloads"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is not None,
                                reason="with vLLM installed the emulation follows the installed release")


def steps() -> tuple[str, list[str]]:
    """The page's release section: its Python record snippet and its shell lines, in order."""
    section = PAGE.read_text(encoding="utf-8").split("## A release of an engine", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^ *```(bash|python)\n(.*?)^ *```", section, flags=re.M | re.S)
    (snippet,) = [_dedent(code) for lang, code in blocks if lang == "python"]
    lines = [line.strip() for lang, code in blocks if lang == "bash" for line in code.splitlines() if line.strip()]
    return snippet, lines


def _dedent(code: str) -> str:
    import textwrap

    return textwrap.dedent(code)


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    to = tmp_path_factory.mktemp("adding-a-release")
    for name in ("auditor", "docs", "scripts", "constraints", "tests", "templates", "noxfile.py", "mkdocs.yml",
                 "pyproject.toml", "README.md"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, to / name, ignore=shutil.ignore_patterns("__pycache__", "fixtures", ".pytest_cache"))
        else:
            shutil.copy2(source, to / name)
    return to


def test_the_page_has_the_steps_a_maintainer_needs():
    snippet, lines = steps()
    assert "tested_transformers=" in snippet and "RELEASES = (*RELEASES," in snippet
    assert lines[0] == f"RELEASE={EXAMPLE}"
    assert any(line.startswith("scripts/install_vllm.sh") and line.endswith(DOWNLOADS) for line in lines)
    assert any("constraints/vllm-$RELEASE.txt" in line for line in lines)
    assert any(line.startswith("python -m pytest") for line in lines)
    assert "nox -s \"vllm(release='0.35.0')\"" in PAGE.read_text(encoding="utf-8")


def test_the_steps_run_on_a_fake_release(copy):
    snippet, lines = steps()
    releases = copy / "auditor" / "engines" / "vllm" / "releases.py"
    record = snippet.replace(EXAMPLE, FAKE).replace("V0_35_0", "V0_98_0")
    releases.write_text(releases.read_text(encoding="utf-8") + "\nimport dataclasses  # noqa: E402\n" + record,
                        encoding="utf-8")
    (copy / ".venv-vllm").symlink_to(sys.prefix)  # step 4's venv: this one (the install downloads GBs)
    script = "set -euo pipefail\n" + "\n".join(
        f"RELEASE={FAKE}" if line == f"RELEASE={EXAMPLE}" else line for line in lines if not line.endswith(DOWNLOADS))
    env = {**auditor_env(), "PYTHONPATH": str(copy), "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
           + os.environ.get("PATH", "")}
    done = subprocess.run(["bash", "-c", script], cwd=copy, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    assert f"{FAKE} 5.25.0\n" in done.stdout  # scripts/engine_release.py: what CI installs
    assert f"vllm(release='{FAKE}')" in done.stdout  # its nox session
    engines_page = (copy / "docs" / "reference" / "engines.md").read_text(encoding="utf-8")
    assert re.search(rf"records: 0\.33\.0, 0\.34\.0, {re.escape(FAKE)}\.", engines_page)
    assert f"where, in vLLM {FAKE}" in engines_page
    lock = (copy / "constraints" / f"vllm-{FAKE}.txt").read_text(encoding="utf-8").splitlines()
    assert lock[0].startswith(f"# The locked set scripts/install_vllm.sh installs for vLLM {FAKE}")
    assert any(line.startswith("transformers==") for line in lock)
    assert re.search(r"\d+ passed", done.stdout)  # the tests of step 5, in the copy
