"""`auditor upgrade-check` for real: two nox venvs with two transformers releases from PyPI.

The base is the oldest release the project declares (pyproject.toml: transformers>=4.57), so
the declared range is swept for real, and the new side the major release after it (5.0.0,
which renamed the rope fields): the config drift between them is checked end to end.

Slow: the first run on a machine installs two venvs from PyPI (about 1.3 GB and 2 minutes each);
later runs reuse them (.nox/upgrade_check-base and -new) and take about a minute. The command starts
in the background as the session begins (tests/upgrade/early.py). Skipped, saying so, where PyPI
cannot be reached.
"""

from __future__ import annotations

import importlib.util
import subprocess
import urllib.request
from pathlib import Path

import pytest

from auditor.core.results import read_run
from auditor.models.tokenization import CORPUS
from tests.checks.tokenizer_files import byte_level_folder, llama_folder
from tests.conftest import run_auditor
from tests.upgrade import early

pytestmark = pytest.mark.slow

BASE, NEW = "4.57.6", "5.0.0"
MODELS = {"bert", "gpt2", "llama"}
MINE = {"my-llama", "my-bpe"}  # --checkpoint folders of real-format tokenizers


def pypi_reachable() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/transformers/", timeout=15):
            return True
    except OSError:
        return False


def need_nox_and_pypi(why: str) -> None:
    """Skip (the calling test or background job) without nox, or where PyPI cannot be reached."""
    if importlib.util.find_spec("nox") is None:
        pytest.skip("needs nox")
    if not pypi_reachable():
        pytest.skip(f"PyPI cannot be reached: {why}")


@early.job("upgrade_run")
def _upgrade(workdir: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """Started as the session begins (tests/upgrade/early.py)."""
    need_nox_and_pypi("the two sides install transformers from it")
    out = workdir / "upgrade"
    # The user's own tokenizers too, in the two real formats (tests/checks/tokenizer_files.py).
    mine = [llama_folder(workdir / "mine" / "my-llama"), byte_level_folder(workdir / "mine" / "my-bpe")]
    # (--models names them too: with --models, a checkpoint is swept where it is named.)
    return run_auditor("upgrade-check", "--from", BASE, "--to", NEW, "--models", ",".join(sorted(MODELS | MINE)),
                       *(arg for folder in mine for arg in ("--checkpoint", str(folder))),
                       "--checks", "build,decorate,weights,tokenizer", "--jobs", "2", "-o", str(out),
                       timeout=1500), out


@pytest.fixture
def upgrade_run() -> tuple[subprocess.CompletedProcess, Path]:
    return early.result("upgrade_run")


def test_upgrade_check_between_two_releases(upgrade_run, tmp_path):
    run, out = upgrade_run
    assert run.returncode in (0, 1), run.stderr[-4000:]
    assert ("0 regressions" in run.stdout) == (run.returncode == 0), run.stdout
    for name in ("diff.md", "diff.html", "report.html", "matrix.csv", "base/report.html", "new/report.html"):
        assert (out / name).is_file(), name
    for side, version in (("base", BASE), ("new", NEW)):
        sweep = read_run(out / side)
        assert sweep.info.transformers == version
        assert sweep.info.label == f"{side}: transformers {version}"
        assert {r.model_type for r in sweep.results} == MODELS | MINE
        assert {r.check for r in sweep.results} == {"build", "decorate", "weights", "tokenizer"}
        ours = [(r.model_type, r.column, r.message) for r in sweep.results if r.status.value == "auditor-error"]
        assert ours == [], f"the auditor's own code failed under transformers {version}: {ours}"
        assert all(r.status.ok for r in sweep.results if r.column in ("build", "decorate/decoder/legacy")), version
    # The weights check across the two: the base side saved each tiny checkpoint (and its round
    # trip under 4.57.6 agrees); the new side loaded those, under 5.0.0, and compared outputs.
    base_rows = {r.model_type: r for r in read_run(out / "base").results if r.check == "weights"
                 and r.model_type in MODELS}
    new_rows = {r.model_type: r for r in read_run(out / "new").results if r.check == "weights"
                and r.model_type in MODELS}
    assert {t: r.status.value for t, r in base_rows.items()} == dict.fromkeys(MODELS, "same")
    assert all(r.extras["saved_by"] == BASE for r in new_rows.values()), new_rows
    assert {(out / "weights" / t / "model.safetensors").is_file() for t in MODELS} == {True}
    drift = (out / "diff.md").read_text()
    # five types (the two --checkpoint folders' configs are a llama's and a gpt2's): too few for
    # changes to count as shared
    assert "## Config drift (5)" in drift
    section = drift[drift.index("## Config drift"):]
    llama = next(line for line in section.splitlines() if line.startswith("| llama |"))
    assert "rope_theta\\` → \\`rope_parameters.rope_theta" in llama, llama
    gated = run_auditor("diff", str(out / "base"), str(out / "new"), "--fail-on-drift", "-o", str(tmp_path / "d"))
    assert gated.returncode == 1 and "--fail-on-drift:" in gated.stderr


def test_tokenizers_across_two_releases(upgrade_run):
    # 4.57.6 saved each type's fast and slow tokenizer on its tiny vocabulary, and recorded the
    # user's two real-format folders; 5.0.0 loaded them all, each compared with 4.57.6's record.
    _, out = upgrade_run
    base, new = ({(r.model_type, r.component): r for r in read_run(out / side).results if r.check == "tokenizer"}
                 for side in ("base", "new"))
    assert set(base) == set(new) == {(t, c) for t in MODELS for c in ("", "slow")} | {(m, "") for m in MINE}
    assert {r.status.value for r in base.values()} == {"same"}, {k: r.message for k, r in base.items()}
    assert {r.extras["saved_by"] for r in new.values()} == {BASE}
    # What 5.0.0 changed, found by the check (the values are the releases', not the test's):
    # LlamaTokenizerFast's padding side (v4's class said left) ...
    assert new[("llama", "")].status.value == "different-ids"
    assert "padding side differ (padding): left -> right" in new[("llama", "")].message
    # ... the slow Llama save read through v5's pipeline gives other pieces for every text ...
    slow = new[("llama", "slow")]
    assert slow.status.value == "different-ids" and slow.extras["texts_differing"] == len(CORPUS), slow.message
    assert slow.extras["text"] == "Hello world" and slow.extras["before"].startswith("<s> ▁Hello ▁world")
    # ... and the slow GPT-2 decodes an added special token without the spaces around it.
    assert new[("gpt2", "slow")].status.value == "different-decode"
    assert new[("gpt2", "slow")].extras["before"] == "'Hello␣␣<|sep|>␣␣world'"
    assert new[("gpt2", "slow")].extras["after"] == "'Hello␣<|sep|>␣world'"
    # The user's own folders: their real files and chat template, recorded under 4.57.6, give the
    # same ids and the same prompt under 5.0.0.
    for name in MINE:
        assert new[(name, "")].status.value == "same", new[(name, "")].message
    assert (out / "weights" / "checkpoints" / "my-llama" / "tokenizer" / "auditor-tokenizer.json").is_file()
