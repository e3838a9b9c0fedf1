"""`--executor ray` and its options are checked before any work, Ray installed or not."""

import importlib.util
import sys

import pytest

from auditor.cli import main
from auditor.core.hints import install_hint
from tests.conftest import run_auditor


def _sweep(tmp_path, *args: str) -> int:
    return main(["sweep", "--models", "bert", "-o", str(tmp_path / "out"), *args])


def test_without_ray_the_error_names_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # find_spec("ray") is None: as if not installed
    assert importlib.util.find_spec("ray") is None
    assert _sweep(tmp_path, "--executor", "ray") == 2
    assert install_hint("ray") in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--ray-address", "127.0.0.1:6379"], "need --executor ray"),
        (["--gpus-per-task", "1"], "need --executor ray"),
        (["--executor", "ray", "--gpus-per-task", "1", "--checks", "build,decorate"],
         "--gpus-per-task applies to the checks that run models"),
        (["--executor", "ray", "--gpus-per-task", "-1"], "cannot be negative"),
    ],
)
def test_inconsistent_executor_options_exit_2(tmp_path, capsys, args, expected):
    if "--executor" in args and importlib.util.find_spec("ray") is None:
        pytest.skip("Ray is not installed (the optional extra 'ray'); the missing-Ray error comes first")
    assert _sweep(tmp_path, *args) == 2
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_an_address_where_nothing_listens_exits_2_before_any_row(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (the optional extra 'ray')")
    proc = run_auditor("sweep", "--executor", "ray", "--ray-address", "127.0.0.1:1", "--models", "bert",
                       "-o", str(tmp_path), timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "cannot reach a Ray cluster at 127.0.0.1:1" in proc.stderr
    assert not (tmp_path / "results.jsonl").exists()
