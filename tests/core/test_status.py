"""Mapping exceptions to statuses and signatures, on real exceptions from real code."""

import pytest

from auditor.core.classifier import classify
from auditor.core.messages import signature_of
from auditor.core.status import Status


def describe(exc):
    failure = classify(exc)
    return failure.status, failure.message, failure.signature


def _raise(exc):
    try:
        raise exc
    except BaseException as caught:
        return caught


def test_import_error_is_missing_dependency():
    status, message, _ = describe(_raise(ImportError("FooModel requires the timm library but it was not found")))
    assert status is Status.MISSING_DEPENDENCY
    assert message.startswith("ImportError: FooModel requires")


def test_offline_hub_error_is_needs_hub(monkeypatch):
    import huggingface_hub.constants
    from huggingface_hub import hf_hub_download

    # Offline, as the sweep's workers run (HF_HUB_OFFLINE=1): the test process may not be, and
    # online the same call waits for the hub's connection timeouts where it cannot be reached.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)

    with pytest.raises(Exception) as info:
        hf_hub_download("auditor-test/not-a-repo", "config.json")
    assert describe(info.value)[0] is Status.NEEDS_HUB


def test_memory_error_is_oom():
    assert describe(_raise(MemoryError()))[0] is Status.OOM


def test_other_errors_are_error():
    assert describe(_raise(KeyError("full_attention")))[0] is Status.ERROR


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("ValueError: embed_dim must be divisible by num_heads (got `embed_dim`: 1152 and `num_heads`: 14).",
         "ValueError: embed_dim must be divisible by num_heads (got `embed_dim`: 768 and `num_heads`: 7)."),
        ("ImportError: DinatModel requires the natten library", "ImportError: NatModel requires the natten library"),
        ("OSError: cannot open /root/.cache/a/b.json at 0x7f00aa", "OSError: cannot open /tmp/x/y.json at 0x55bb"),
    ],
)
def test_same_failure_in_two_models_has_one_signature(first, second):
    assert signature_of(first) == signature_of(second)


def test_signature_keeps_what_tells_failures_apart():
    assert signature_of("KeyError: 'full_attention'") != signature_of("KeyError: 'sliding_attention'")
    assert signature_of("TypeError: 'NoneType' object is not iterable").endswith("'NoneType' object is not iterable")


def test_a_connection_that_fails_in_a_round_trip_is_the_executors_not_the_hubs():
    # Ray's own error when a worker cannot join the sweep's cluster: a round trip fetches nothing
    # from the hub, so it is the executor's failure, not `needs-hub` (which it is at build time).
    from auditor.core.classifier import Phase

    exc = _raise(ConnectionError("Failed to connect to Ray cluster at 127.0.0.1:35055"))
    assert classify(exc, Phase.TRANSPORT).status is Status.AUDITOR_ERROR
    assert classify(exc).status is Status.NEEDS_HUB
