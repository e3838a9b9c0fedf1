"""Whose fault a failure is: a programming error raised by the auditor's own code is
`auditor-error`, never the model's `error` or `missing-dependency`; the same exception types
raised by transformers or by model code stay the model's. Real auditor functions and real
transformers classes fail here; nothing is faked."""

from __future__ import annotations

import pytest

from auditor.core.status import Phase, Status, auditor_bug_at, classify


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
