"""The far side: a real process started with spawn, real pickles, real meta builds."""

import os
import pickle
import signal
import time

import pytest

from auditor.core.status import Status
from auditor.remote.byvalue import Parcel, dumps_by_reference, dumps_by_value
from auditor.remote.receiver import FarSideError, _forget_modules_caches
from tests.remote.conftest import builtin_config, twin_of

POLICIES = ("legacy", "fixed", "fixed-no-config-skip")


class _Exits:
    def __reduce__(self):
        return os._exit, (3,)


class _Hangs:
    def __reduce__(self):
        return time.sleep, (60,)


def test_a_builtin_config_round_trips_by_reference(receiver):
    config = builtin_config("llama")
    facts = receiver.load(dumps_by_reference(config))
    assert facts["class"] == "transformers.models.llama.configuration_llama.LlamaConfig"
    from auditor.remote.receiver import canonical_dict

    assert facts["dict"] == canonical_dict(config) and facts["dynamic_modules"] == []


def test_remote_code_by_reference_fails_for_want_of_transformers_modules(receiver):
    with pytest.raises(FarSideError) as caught:
        receiver.load(dumps_by_reference(twin_of("llama")))
    assert caught.value.message == "ModuleNotFoundError: No module named 'transformers_modules'"
    assert caught.value.signature == "ModuleNotFoundError: No module named 'transformers_modules.?'"


def test_remote_code_by_value_round_trips_without_importing_transformers_modules(receiver):
    twin = twin_of("qwen2_vl")
    facts = receiver.load(dumps_by_value(Parcel(twin)))
    assert facts["class"].startswith("transformers_modules.qwen2_vl_hyphen_3_dot_5_hyphen_Twin.")
    from auditor.remote.receiver import canonical_dict

    assert facts["dict"] == canonical_dict(twin)
    assert facts["dynamic_modules"] == []


def _verdicts(facts):
    return {(v["component"], v["policy"]): v["status"] for v in facts["verdicts"]}


def test_far_build_of_llama_refuses_only_without_the_config_exemption(receiver):
    facts = receiver.far_build(dumps_by_value(Parcel(twin_of("llama"))), POLICIES)
    assert _verdicts(facts) == {("decoder", "legacy"): "build", ("decoder", "fixed"): "build",
                                ("decoder", "fixed-no-config-skip"): "refused"}
    assert facts["dynamic_modules"] == []


def test_far_build_of_a_multimodal_type_covers_its_encoder(receiver):
    verdicts = _verdicts(receiver.far_build(dumps_by_value(Parcel(twin_of("qwen2_vl"))), POLICIES))
    assert {component for component, _ in verdicts} == {"decoder", "decoder+encoders"}
    assert verdicts[("decoder", "fixed")] == verdicts[("decoder+encoders", "fixed")] == "build"
    assert verdicts[("decoder", "fixed-no-config-skip")] == "refused"


def test_a_receiver_killed_while_idle_is_started_again(receiver, monkeypatch):
    config = builtin_config("gpt2")
    receiver.load(dumps_by_reference(config))
    # Count the real starts (the method runs unchanged): exactly one more must happen.
    calls = []
    start = receiver._start
    monkeypatch.setattr(receiver, "_start", lambda: (calls.append(1), start())[1])
    first, starts = receiver.pid, len(calls)
    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while receiver.alive and time.monotonic() < deadline:
        time.sleep(0.05)
    facts = receiver.load(dumps_by_reference(config))
    assert facts["class"].endswith("GPT2Config")
    assert receiver.pid != first and len(calls) == starts + 1


def test_a_receiver_that_dies_on_a_message_is_a_crash_and_the_next_message_works(receiver):
    with pytest.raises(FarSideError) as caught:
        receiver.load(pickle.dumps(_Exits()))
    assert caught.value.status is Status.CRASH
    assert caught.value.message == "Crash: receiver process exited with code 3"
    assert receiver.load(dumps_by_reference(builtin_config("gpt2")))["class"].endswith("GPT2Config")


def test_a_hung_receiver_is_a_timeout_not_a_hung_worker(receiver):
    saved, receiver.timeout = receiver.timeout, 1.0
    try:
        start = time.monotonic()
        with pytest.raises(FarSideError) as caught:
            receiver.load(pickle.dumps(_Hangs()))
        assert caught.value.status is Status.TIMEOUT and time.monotonic() - start < 20
    finally:
        receiver.timeout = saved
    assert receiver.load(dumps_by_reference(builtin_config("gpt2")))["class"].endswith("GPT2Config")


def test_the_far_side_drops_every_modules_cache_from_sys_path(tmp_path, monkeypatch):
    cache = tmp_path / "modules"
    (cache / "transformers_modules").mkdir(parents=True)
    monkeypatch.setattr("sys.path", ["/usr/lib/python3", str(cache), str(tmp_path)])
    _forget_modules_caches()
    import sys

    assert sys.path == ["/usr/lib/python3", str(tmp_path)]

