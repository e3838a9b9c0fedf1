"""An engine release is one record (issue 41): adding vLLM's next release is adding its record to
auditor/engines/vllm/releases.py, and everything that names a release follows it: the emulation,
the examples in help texts and messages, the docs' reference pages, the nox sessions, and the
release CI installs (scripts/engine_release.py, read by scripts/install_vllm.sh and .ci/run).

The test adds a fake record, 0.99.0, to a copy of the package and asks each of them, each in a
process of its own as a user or CI would; the fake is a copy of the newest record with another
version, so every gate it cites is real."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, auditor_env

FAKE = "0.99.0"
RECORD = f'''

# A fake release added by tests/engines/test_release_records.py (in a copy of the package).
import dataclasses as _dataclasses  # noqa: E402

V_FAKE = _dataclasses.replace(V0_34_0, version="{FAKE}", tested_transformers="5.25.0",
                              changes=("a fake release record",))
RELEASES = (*RELEASES, V_FAKE)
'''

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is not None,
                                reason="with vLLM installed the emulation follows the installed release")


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """The project's code, docs and scripts, with one more vLLM release record."""
    to = tmp_path_factory.mktemp("with-a-new-record")
    for name in ("auditor", "docs", "scripts", ".ci", "tests", "noxfile.py", "mkdocs.yml", "pyproject.toml"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, to / name, ignore=shutil.ignore_patterns("__pycache__", "fixtures"))
        else:
            shutil.copy2(source, to / name)
    releases = to / "auditor" / "engines" / "vllm" / "releases.py"
    releases.write_text(releases.read_text(encoding="utf-8") + RECORD, encoding="utf-8")
    return to


def _run(copy: Path, *args: str) -> str:
    env = {**auditor_env(), "PYTHONPATH": str(copy)}
    done = subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_emulation_follows_the_new_record(copy):
    out = _run(copy, "-c", "import auditor.engines as e; v = e.get('vllm'); print(v.follows, v.record().follows)")
    assert out.split() == [FAKE, FAKE]


def test_help_texts_and_messages_give_the_new_release(copy):
    help_text = " ".join(_run(copy, "-m", "auditor", "upgrade-check", "--help").split())
    assert f"e.g. vllm=={FAKE}" in help_text
    assert f"--engine vllm==0.34.0 --to-engine vllm=={FAKE}" in help_text
    env = {**auditor_env(), "PYTHONPATH": str(copy)}
    refused = subprocess.run([sys.executable, "-m", "auditor", "upgrade-check", "--from", "5.24.0", "--to", "5.25.0",
                              "--engine", "vllm=="],
                             cwd=copy, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and f"such as vllm=={FAKE}" in refused.stderr


def test_the_docs_reference_lists_the_new_record(copy):
    code = ("import sys; sys.path.insert(0, 'docs/hooks'); import reference; "
            "pages = reference.pages(); print(pages['reference/engines.md']); print(pages['reference/nox.md'])")
    out = _run(copy, "-c", code)
    assert re.search(rf"records: 0\.33\.0, 0\.34\.0, {re.escape(FAKE)}\.", out)
    assert f"| {FAKE} | " in out and "a fake release record" in out
    assert f"where, in vLLM {FAKE}" in out  # the gates' places are the newest record's
    assert f"vllm(release='{FAKE}')" in out  # a nox session per record


def test_ci_installs_the_release_the_records_name(copy):
    assert _run(copy, "scripts/engine_release.py", "vllm").split() == [FAKE, "5.25.0"]
    # .ci/run and the install script name no release: they ask the records
    versions = {"0.33.0", "0.34.0", "0.5.23"}
    for script in (ROOT / ".ci" / "run", ROOT / "scripts" / "install_vllm.sh", ROOT / "scripts" / "install_sglang.sh"):
        code = [line for line in script.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("#")]
        assert not [line for line in code if any(v in line for v in versions)], script
