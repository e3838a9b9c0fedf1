"""Whose fault a failure is: a programming error raised by the auditor's own code is
`auditor-error`, never the model's `error` or `missing-dependency`; the same exception types
raised by transformers or by model code stay the model's. Real auditor functions and real
transformers classes fail here; nothing is faked."""

from __future__ import annotations

import pytest

from auditor.core.classifier import Phase, auditor_bug_at, classify
from auditor.core.status import Status


def _raised(function, *args):
    with pytest.raises(Exception) as info:
        function(*args)
    return info.value


def test_an_auditor_function_that_breaks_is_an_auditor_error():
    from auditor.models.fingerprint import config_fingerprint

    exc = _raised(config_fingerprint, object())  # no to_dict: an AttributeError in our code
    assert isinstance(exc, AttributeError)
    failure = classify(exc, Phase.BUILD)
    assert failure.status is Status.AUDITOR_ERROR
    assert "[auditor bug at auditor/models/fingerprint.py:" in failure.message
    assert classify(exc, Phase.CONFIG).status is Status.AUDITOR_ERROR  # not a config-error either


def test_the_missing_attribute_torch_raises_for_our_lookup_is_ours():
    """The component lookup asking a module for `get_decoder` it lacks (as 4.x base models
    lacked `get_encoder`): torch's Module.__getattr__ raises, on behalf of the auditor's line."""
    import torch

    from auditor.models.components import find_components

    exc = _raised(find_components, torch.nn.Linear(1, 1))
    assert isinstance(exc, AttributeError)
    assert auditor_bug_at(exc).startswith("auditor/models/components.py:")
    assert classify(exc).status is Status.AUDITOR_ERROR


def test_errors_inside_transformers_stay_the_models():
    from transformers import LlamaModel

    exc = _raised(LlamaModel, None)  # transformers' own TypeError, raised in modeling_utils
    assert isinstance(exc, TypeError) and auditor_bug_at(exc) == ""
    assert classify(exc).status is Status.ERROR


def test_a_missing_package_of_a_model_stays_missing_dependency():
    def needs_timm():
        import timm_that_is_not_installed  # noqa: F401

    exc = _raised(needs_timm)
    assert classify(exc).status is Status.MISSING_DEPENDENCY


def _import_fresh(site, name):
    import importlib
    import sys

    sys.path.insert(0, str(site))
    try:
        importlib.import_module(name)
    except Exception as exc:
        return exc
    finally:
        sys.path.remove(str(site))
        sys.modules.pop(name, None)
    raise AssertionError(f"{name} imported")


@pytest.mark.parametrize("engine_package", ["", "vllm"])
def test_a_package_that_does_not_import_here_is_this_machines_not_the_models(tmp_path, engine_package):
    """A real package on disk (site-packages/cutlasslike) whose top level fails as
    nvidia_cutlass_dsl's did in a venv of cuda-python 12 beside cuda-bindings 13: an
    AttributeError at import, raised in that package. Not the model's, nor the engine's."""
    site = tmp_path / "site-packages"
    (site / "cutlasslike").mkdir(parents=True)
    (site / "cutlasslike" / "__init__.py").write_text("from cutlasslike import runtime\n")
    (site / "cutlasslike" / "runtime.py").write_text("import os\nLIBRARY = os.cudaLibrary_t\n")
    exc = _import_fresh(site, "cutlasslike")
    failure = classify(exc, Phase.ENGINE, engine_package=engine_package)
    assert failure.status is Status.MISSING_DEPENDENCY and failure.fault.value == "environment"
    assert failure.message.endswith("[raised importing cutlasslike: an installed package that does not import here]")
    assert failure.extras["broken_import"] == "cutlasslike"


def test_an_engine_module_that_does_not_import_under_this_transformers_is_the_engines(tmp_path):
    """The same failure at the top level of the engine's own package (a name transformers renamed,
    read by an engine module at import) is the engine's, and a plain function's is as before."""
    site = tmp_path / "site-packages"  # an engine of its own name: a real vLLM may be imported already
    (site / "someengine").mkdir(parents=True)
    (site / "someengine" / "__init__.py").write_text("import os\nRENAMED = os.renamed_in_transformers\n")
    exc = _import_fresh(site, "someengine")
    failure = classify(exc, Phase.ENGINE, engine_package="someengine")
    assert failure.status is Status.UNSUPPORTED and failure.fault.value == "engine"
    try:
        {}["key"]
    except KeyError as plain:
        assert classify(plain).status is Status.ERROR
