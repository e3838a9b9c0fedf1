"""Planning `auditor upgrade-check`: what a --from/--to means, the nox command lines, where results go."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.environments.steps import (
    Side,
    TransformersSpecError,
    allowing_absent,
    archive_version,
    installed_mismatch,
    parse_transformers,
)
from auditor.sweeping.sides import SideSweep, side_sweep
from auditor.upgrade.plan import default_outdir, plan_upgrade

NOXFILE = Path("/src/noxfile.py")
NOX = ("/venv/bin/python", "-m", "nox")


def plan(base="5.17.0", new="5.18.0", tmp=Path("/tmp"), **kwargs):
    return plan_upgrade(parse_transformers(base, tmp), parse_transformers(new, tmp),
                        outdir=Path("/out"), noxfile=NOXFILE, nox=NOX, **kwargs)


@pytest.mark.parametrize(("text", "requirement", "slug"), [
    ("5.18.0", "transformers==5.18.0", "5.18.0"),
    (" 5.18 ", "transformers==5.18", "5.18"),
    ("v5.18.0rc1", "transformers==5.18.0rc1", "5.18.0rc1"),
    ("5.18.0.dev0", "transformers==5.18.0.dev0", "5.18.0.dev0"),
])
def test_a_version_is_a_release_from_the_index(tmp_path, text, requirement, slug):
    spec = parse_transformers(text, tmp_path)
    assert (spec.requirement, spec.slug, spec.version, spec.is_path) == (requirement, slug, slug, False)


def test_a_wheel_is_installed_from_its_absolute_path(tmp_path):
    wheel = tmp_path / "dist" / "transformers-5.19.0.dev0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"")
    spec = parse_transformers("dist/transformers-5.19.0.dev0-py3-none-any.whl", tmp_path)
    assert spec.requirement == str(wheel)
    assert (spec.version, spec.slug, spec.is_path) == ("5.19.0.dev0", "5.19.0.dev0", True)


def test_a_source_tree_has_no_version_and_is_named_by_its_directory(tmp_path):
    checkout = tmp_path / "my transformers"
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text("[project]\nname = 'transformers'\n")
    spec = parse_transformers(str(checkout), Path("/elsewhere"))
    assert (spec.requirement, spec.version, spec.slug) == (str(checkout), "", "my_transformers")


@pytest.mark.parametrize(("make", "text", "message"), [
    (None, "5.x", "neither a transformers version"),
    (None, "latest", "neither a transformers version"),
    (None, "", "neither a transformers version"),
    (None, "dist/transformers-5.19.0-py3-none-any.whl", "neither a transformers version"),
    ("dir", "empty", "without pyproject.toml or setup.py"),
    ("file", "notes.txt", "not a wheel or sdist"),
])
def test_anything_else_is_refused(tmp_path, make, text, message):
    if make == "dir":
        (tmp_path / text).mkdir()
    elif make == "file":
        (tmp_path / text).write_text("")
    with pytest.raises(TransformersSpecError, match=message):
        parse_transformers(text, tmp_path)


@pytest.mark.parametrize(("filename", "version"), [
    ("transformers-5.18.0-py3-none-any.whl", "5.18.0"),
    ("transformers-5.18.0.dev0-1-py3-none-any.whl", "5.18.0.dev0"),
    ("transformers-5.18.0.tar.gz", "5.18.0"),
    ("transformers-main.zip", ""),
    ("transformers.whl", ""),
])
def test_archive_version(filename, version):
    assert archive_version(filename) == version


def test_default_outdir_names_both_sides(tmp_path):
    base, new = parse_transformers("5.17.0", tmp_path), parse_transformers("5.18.0", tmp_path)
    assert default_outdir(base, new) == Path("reports/upgrade-5.17.0-to-5.18.0")
    assert default_outdir(base, new, Path("/r")) == Path("/r/upgrade-5.17.0-to-5.18.0")


def test_the_sides_sweep_passes_only_what_was_given():
    assert allowing_absent(SideSweep()).flags() == []
    assert allowing_absent(side_sweep(models=["bert,gpt2", "llama"], exclude=["gpt2"], checks="build",
                                      policies="legacy", jobs=2, timeout=60.0)).flags() == [
        "--models", "bert,gpt2", "--models", "llama", "--exclude", "gpt2", "--checks", "build",
        "--policies", "legacy", "--jobs", "2", "--timeout", "60",
        "--allow-absent"]  # a type one side's release lacks is absent there, not refused
    assert allowing_absent(side_sweep(timeout=2.5)).flags() == ["--timeout", "2.5"]


def test_both_sides_install_before_either_sweeps():
    steps = plan().steps
    assert [(s.action, s.side.name) for s in steps] == [
        ("install", "base"), ("install", "new"), ("sweep", "base"), ("sweep", "new")]
    assert [s.env for s in steps] == [{"AUDITOR_TRANSFORMERS": r} for r in (
        "transformers==5.17.0", "transformers==5.18.0", "transformers==5.17.0", "transformers==5.18.0")]


def test_the_nox_command_lines():
    install_base, _, sweep_base, sweep_new = plan(sweep=side_sweep(models=["bert"])).steps
    assert install_base.argv == (*NOX, "--noxfile", "/src/noxfile.py", "--session", "upgrade_check(base)",
                                 "--install-only")
    assert sweep_base.argv == (*NOX, "--noxfile", "/src/noxfile.py", "--session", "upgrade_check(base)",
                               "--no-install", "--", "--output", "/out/base",
                               "--label", "base: transformers 5.17.0", "--overwrite", "--models", "bert")
    assert sweep_new.argv[5:7] == ("--session", "upgrade_check(new)")
    assert sweep_new.argv[-6:] == ("/out/new", "--label", "new: transformers 5.18.0", "--overwrite",
                                   "--models", "bert")
    assert sweep_base.shell().startswith(
        "AUDITOR_TRANSFORMERS=transformers==5.17.0 /venv/bin/python -m nox --noxfile /src/noxfile.py "
        "--session 'upgrade_check(base)' --no-install -- --output /out/base --label 'base: transformers 5.17.0'")


def test_resume_continues_both_sweeps():
    sweeps = [s for s in plan(sweep=side_sweep(resume=True)).steps if s.action == "sweep"]
    assert all("--resume" in s.argv and "--overwrite" not in s.argv for s in sweeps)


def test_output_paths():
    p = plan()
    assert (p.outdir, p.base.outdir, p.new.outdir) == (Path("/out"), Path("/out/base"), Path("/out/new"))


def test_the_same_transformers_twice_is_refused():
    with pytest.raises(TransformersSpecError, match="nothing to compare"):
        plan("5.18.0", "5.18")


def test_relative_paths_are_refused():
    spec = parse_transformers("5.17.0", Path("/"))
    with pytest.raises(ValueError, match="absolute"):
        plan_upgrade(spec, parse_transformers("5.18.0", Path("/")), outdir=Path("out"), noxfile=NOXFILE, nox=NOX)


def test_installed_mismatch(tmp_path):
    side = Side("new", parse_transformers("5.18", tmp_path), Path("/out/new"))
    assert installed_mismatch(side, "5.18.0") is None
    assert installed_mismatch(side, "5.17.0") == "the new side ran transformers 5.17.0, not 5.18"
    checkout = tmp_path / "tf"
    checkout.mkdir()
    (checkout / "setup.py").write_text("")
    assert installed_mismatch(Side("new", parse_transformers(str(checkout), tmp_path), Path("/o")), "9") is None
