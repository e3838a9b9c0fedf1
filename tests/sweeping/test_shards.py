"""`--shard I/N`: disjoint, complete slices whose merged report equals the unsharded one."""

import pytest

from auditor.core.results import read_run
from auditor.models import cases
from auditor.report.matrix import build_matrix
from auditor.report.page import render_report
from auditor.report.shards import shard_coverage
from auditor.report.tables import matrix_frame
from tests.conftest import run_auditors

MODELS = "bert,gpt2,llama,t5,whisper,llava,mixtral,vit,clip,autoformer"


def test_shards_are_disjoint_and_complete():
    known = cases.discover()
    for count in (1, 2, 3, 7):
        slices = [cases.shard(known, index, count) for index in range(1, count + 1)]
        names = [case.model_type for part in slices for case in part]
        assert sorted(names) == sorted(case.model_type for case in known)
        assert len(names) == len(set(names))
        assert max(map(len, slices)) - min(map(len, slices)) <= 1
    assert cases.shard(known, 2, 3) == cases.shard(list(reversed(known)), 2, 3)


@pytest.mark.parametrize("text", ["0/3", "4/3", "a/b", "3", "1/0"])
def test_bad_shard_is_refused(text):
    with pytest.raises(cases.SelectionError, match="--shard"):
        cases.parse_shard(text)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("shards")
    common = ["sweep", "--checks", "build,decorate", "--models", MODELS, "--label", "shard-test"]
    # The four sweeps at once, as a CI matrix runs its shards: one worker per shard (--jobs is
    # no part of the experiment), the unsharded run with the default.
    procs = run_auditors([[*common, "-o", str(root / "whole")],
                          *([*common, "--shard", f"{index}/3", "--jobs", "1", "-o", str(root / f"shard{index}")]
                            for index in (1, 2, 3))])
    for proc in procs:
        assert proc.returncode == 0, proc.stderr
    return read_run(root / "whole"), [read_run(root / f"shard{i}") for i in (1, 2, 3)]


def test_merged_shards_equal_the_unsharded_run(runs):
    whole, shards = runs
    assert [run.info.shard for run in shards] == ["1/3", "2/3", "3/3"]
    assert matrix_frame(shards).equals(matrix_frame([whole]))
    merged, single = build_matrix(shards), build_matrix([whole])
    assert [r.model_type for r in merged.rows] == [r.model_type for r in single.rows]
    assert [[c.status if c else None for c in r.cells] for r in merged.rows] == \
           [[c.status if c else None for c in r.cells] for r in single.rows]


def test_a_missing_shard_is_visible_in_the_report(runs):
    _, shards = runs
    assert all(not c.missing for c in shard_coverage(shards))
    partial = shard_coverage([shards[0], shards[2]])
    assert [c.missing for c in partial] == [(2,)]
    html = render_report([shards[0], shards[2]])
    assert 'id="missing-shards"' in html and "missing shard 2" in html
    assert 'id="missing-shards"' not in render_report(shards)
