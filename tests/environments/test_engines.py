"""`--engine vllm==0.33.0` and the installer choice, without installing anything.

The engine's transformers requirement is read for real: from PyPI's JSON for vLLM 0.33.0 (skipped,
saying so, where PyPI cannot be reached) into a cache of the test's own (an installed vLLM's
METADATA is read in the vLLM venv: tests/engines/test_vllm_releases.py). The nox steps are the fake noxfile's, so
that "before any install" is checked by its log staying empty.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.cli import main
from auditor.environments import releases
from auditor.environments.engines import EngineSpec
from auditor.environments.installer import parse_pip_config, uv_settings
from tests.upgrade.fakes import RECORDED_RELEASES, use_fake_noxfile
from tests.upgrade.test_upgrade_real import pypi_reachable


@pytest.fixture(scope="module")
def vllm_cache(tmp_path_factory) -> Path:
    """A venv home whose engines/ cache the first test fills from PyPI, for the others."""
    if not pypi_reachable():
        pytest.skip("PyPI cannot be reached: vLLM's requirements come from it")
    return tmp_path_factory.mktemp("venvs")


@pytest.fixture
def fake(tmp_path, monkeypatch, vllm_cache):
    monkeypatch.setenv("AUDITOR_VENVS", str(vllm_cache))
    monkeypatch.setattr(releases, "index_releases", lambda: RECORDED_RELEASES)
    return use_fake_noxfile(tmp_path, monkeypatch)


def test_a_side_outside_the_engines_range_exits_2_before_any_install(fake, vllm_cache, capsys):
    assert main(["upgrade-check", "--from", "5.18.0", "--to", "5.22.0", "--engine", "vllm==0.33.0"]) == 2
    err = capsys.readouterr().err
    assert ("transformers 5.22.0 (--to) is outside what vllm 0.33.0 accepts: it requires "
            "transformers<5.21.0,>=5.16.1 (its Requires-Dist)") in err
    assert not (fake / "log.txt").exists() and not (fake / "reports").exists()
    assert '"transformers": "<5.21.0,>=5.16.1"' in (vllm_cache / "engines" / "vllm-0.33.0.json").read_text()
    assert main(["versions", "5.20.0,5.21.0", "--engine", "vllm==0.33.0", "--dry-run"]) == 2
    assert "transformers 5.21.0 is outside what vllm 0.33.0 accepts" in capsys.readouterr().err


def test_dry_run_shows_the_engine_on_every_side_and_its_own_policy(fake, capsys):
    assert main(["upgrade-check", "--from", "5.18.0", "--to", "5.20.2", "--engine", "vllm==0.33.0",
                 "--checks", "build,backend", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# base: installs -e ")  # no torch pin: vLLM pins its own
    assert lines[0].endswith(", vllm==0.33.0, transformers==5.18.0 (with pip)")
    assert lines[2].endswith(", vllm==0.33.0, transformers==5.20.2 (with pip)")
    sweep = lines[-1]
    assert "--label 'new: transformers 5.20.2, vllm 0.33.0'" in sweep
    assert "--policies legacy,fixed,fixed-no-config-skip,vllm" in sweep
    assert not (fake / "log.txt").exists()


@pytest.mark.parametrize(("engine", "message"), [
    ("vllm>=0.30", "name one version"),
    ("sglong==1.0", "unknown engine"),
    ("vllm==", "expected NAME==VERSION"),
])
def test_a_bad_engine_exits_2(fake, capsys, engine, message):
    assert main(["upgrade-check", "--from", "5.18.0", "--to", "5.20.2", "--engine", engine]) == 2
    assert message in capsys.readouterr().err


def test_uv_gets_pips_indexes_and_its_choice_of_version():
    config = parse_pip_config("global.extra-index-url='file:///a file:///b'\n"
                              ":env:.find-links='/opt/wheels'\nglobal.constraint='/c.txt'\n")
    assert uv_settings(config) == {"UV_INDEX_STRATEGY": "unsafe-best-match", "UV_COMPILE_BYTECODE": "1",
                                   "UV_INDEX": "file:///a file:///b", "UV_FIND_LINKS": "/opt/wheels",
                                   "UV_CONSTRAINT": "/c.txt"}


def test_each_engine_of_a_side_adds_its_own_policy_sglang_without_a_decorator_too():
    """SGLang has no compile decorator: its own-code rows are selected by `own_policy` (Engine.policy),
    which the side's sweep gets beside the asked policies (it raised AttributeError before)."""
    from pathlib import Path

    from auditor.environments.runner import SideSetup, engine_policies

    setup = SideSetup(nox=("nox",), home=Path("/tmp"), installer="pip",
                      engines=(EngineSpec("sglang", "0.5.23", "==5.19.0"), EngineSpec("vllm", "0.33.0", "")))
    assert engine_policies(setup, ("legacy",)) == ("legacy", "sglang", "vllm")


def test_an_engine_upgrade_gives_each_side_its_release_and_one_transformers(fake, capsys):
    """`--engine vllm==0.33.0 --to-engine vllm==0.34.0`: both sides on the --from transformers,
    each with its own vLLM (the installs are not run: a dry run); each release's own requirement
    judges its side, and a --to-engine of an engine the base side lacks is refused."""
    assert main(["upgrade-check", "--from", "5.18.0", "--engine", "vllm==0.33.0", "--to-engine", "vllm==0.34.0",
                 "--checks", "backend,serves", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(", vllm==0.33.0, transformers==5.18.0 (with pip)")
    assert lines[2].endswith(", vllm==0.34.0, transformers==5.18.0 (with pip)")
    assert "upgrade-5.18.0-vllm-0.33.0-to-5.18.0-vllm-0.34.0/new --label 'new: transformers 5.18.0, vllm 0.34.0'" in lines[-1]
    assert not (fake / "log.txt").exists()
    # 5.22.0 is in 0.34.0's range (<5.23.0), not in 0.33.0's: the new side may take it, the base side not
    assert main(["upgrade-check", "--from", "5.18.0", "--to", "5.22.0", "--engine", "vllm==0.33.0",
                 "--to-engine", "vllm==0.34.0", "--dry-run"]) == 0
    capsys.readouterr()
    assert main(["upgrade-check", "--from", "5.22.0", "--engine", "vllm==0.33.0", "--to-engine", "vllm==0.34.0",
                 "--dry-run"]) == 2
    assert "transformers 5.22.0 (--from) is outside what vllm 0.33.0 accepts" in capsys.readouterr().err
    assert main(["upgrade-check", "--from", "5.18.0", "--to-engine", "vllm==0.34.0", "--dry-run"]) == 2
    assert "give the engine's release on the base side too (--engine vllm==VERSION)" in capsys.readouterr().err
    assert main(["upgrade-check", "--from", "5.18.0", "--dry-run"]) == 2
    assert "upgrade-check needs --to (or --to-engine" in capsys.readouterr().err
