"""Install hints that work where the auditor came from (auditor.core.hints): from a checkout
(an editable install, as the README installs it) `pip install -e '/checkout[EXTRA]'`, from the
index its name. Real installs: this test environment's own record, and a wheel built and
installed into a fresh venv (pip, no index needed: the wheel's own dependencies are not installed)."""

import json
import subprocess
import sys
from pathlib import Path

from auditor.core import hints
from tests.conftest import ROOT


def test_from_this_checkout_the_hint_installs_the_checkouts_extra():
    assert hints.checkout() == str(ROOT)  # the tests run from an editable install of this checkout
    assert hints.install_hint("vllm") == f"pip install -e '{ROOT}[vllm]'"
    assert hints.nox_hint().startswith(f"pip install -e '{ROOT}[upgrade]'")
    # The spelling vLLM's decorator adapter's error has always carried stays byte for byte.
    assert hints.install_hint("vllm", quoted=False) == "pip install model-sweep-auditor[vllm]"


def test_installed_from_a_wheel_the_hint_is_the_index_spelling(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(ROOT),
                    "-w", str(tmp_path / "whl")], check=True, capture_output=True)
    (wheel,) = (tmp_path / "whl").glob("*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp_path / "site"),
                    str(wheel)], check=True, capture_output=True)
    (record,) = (tmp_path / "site").glob("model_sweep_auditor-*.dist-info/direct_url.json")
    assert hints.editable_source(json.loads(record.read_text())) == ""
    assert hints.extra_install("ray", "") == "pip install 'model-sweep-auditor[ray]'"
    editable = {"url": Path(ROOT).as_uri(), "dir_info": {"editable": True}}
    assert hints.extra_install("ray", hints.editable_source(editable)) == f"pip install -e '{ROOT}[ray]'"
