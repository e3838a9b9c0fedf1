"""The Python API: the README's "Use from Python" example, run as it stands there, in a fresh
interpreter (a real sweep of real model types), and what `import auditor` costs."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT, auditor_env


def _readme_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use from Python", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the section should hold exactly one Python example"
    return blocks[0]


def test_the_readme_example_runs(tmp_path):
    proc = subprocess.run([sys.executable, "-c", _readme_example()], cwd=tmp_path, env=auditor_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "3 model types; wrote report.html, results.csv, matrix.csv, summary.md" in out
    assert "decorate/decoder/legacy: 2/3 pass · refused 1 (t5gemma2)" in out
    assert "gate: t5gemma2 decorate/decoder/legacy refused" in out
    assert out.count("gate: ") == 2  # the decoder and the joint encoder cell, legacy only
    assert "### auditor: 3 model types" in out
    assert "refused: " in out and "exists; pass --resume" in out
    assert (tmp_path / "reports" / "example" / "summary.md").is_file()


def test_import_auditor_loads_no_heavy_module():
    code = ("import sys, auditor; assert auditor.__version__; "
            "print(sorted(m for m in ('torch', 'transformers', 'pandas', 'auditor.api') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], env=auditor_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_api_errors_are_auditor_errors(tmp_path):
    import pytest

    import auditor

    with pytest.raises(auditor.InputError, match="unknown sweep option"):
        auditor.sweep(tmp_path / "run", modles=["llama"])
    with pytest.raises(auditor.InputError, match="unknown check"):
        auditor.sweep(tmp_path / "run", checks="build,nope")
    with pytest.raises(auditor.ResultsFileError):
        auditor.read_run(tmp_path / "missing")
    assert issubclass(auditor.ResultsFileError, auditor.AuditorError)
    assert not issubclass(auditor.RunInterrupted, Exception) and issubclass(auditor.RunInterrupted, KeyboardInterrupt)
