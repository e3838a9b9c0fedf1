"""The compile statuses in the shared vocabulary, the reports and the diff."""

from auditor.core.results import read_run
from auditor.core.status import Status
from auditor.report.diff import diff_runs
from auditor.report.statuses import STYLES, is_ok
from tests.report.helpers import result, write_run

COMPILE_STATUSES = ("compiled", "graph-break", "recompiled", "mismatch", "eager-error", "compile-error")


def test_compile_statuses_are_shared_and_styled():
    for name in COMPILE_STATUSES:
        assert Status(name).value == name and STYLES[name].known


def test_compiled_is_ok_like_build_and_every_other_outcome_is_a_finding():
    assert is_ok("compiled") and is_ok("build")
    assert not any(is_ok(name) for name in COMPILE_STATUSES[1:])


def test_a_compiled_cell_that_breaks_is_a_regression(tmp_path):
    def run(name, status):
        return read_run(write_run(tmp_path / name, [
            result("llama", status, check="compile", component="decoder", policy="fixed"),
            result("gpt2", "compiled", check="compile", component="decoder", policy="fixed"),
        ], checks=("compile",), device="cpu"))

    diff = diff_runs(run("base", "compiled"), run("new", "graph-break"))
    assert [(c.model_type, c.column, c.before, c.after) for c in diff.regressions] == [
        ("llama", "compile/decoder/fixed", "compiled", "graph-break")]
    assert not diff.fixes and diff.unchanged == 1
