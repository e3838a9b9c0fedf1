"""The Python API: the docs' example (docs/examples/api_example.py, included in docs/python-api.md), run as it stands, in a fresh
interpreter (a real sweep of real model types), and what `import auditor` costs."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT, auditor_env

EXAMPLE = ROOT / "docs" / "examples" / "api_example.py"


def test_the_docs_include_the_example():
    page = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    assert '--8<-- "examples/api_example.py:example"' in page
    assert re.search(r"# --8<-- \[start:example\]\n.*# --8<-- \[end:example\]", EXAMPLE.read_text(), flags=re.S)


def test_the_docs_example_runs(tmp_path):
    # As `-c` text, as a reader pastes it: a script file would be re-run by every spawned worker.
    proc = subprocess.run([sys.executable, "-c", EXAMPLE.read_text(encoding="utf-8")], cwd=tmp_path, env=auditor_env(),
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
