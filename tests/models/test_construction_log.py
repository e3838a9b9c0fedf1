"""The construction log: the plain build's own record of constructor arguments stands in for a
build with the component classes' `__init__` wrapped (real transformers, real torch modules)."""

import pytest
import torch

from auditor.models.components import find_components
from auditor.models.construction_log import constructions, recording
from auditor.models.meta import build_on_meta, make_config, no_init_weights


def _same(a, b) -> bool:
    return a is b or (type(a) is type(b) and a == b)


def _calls(record):
    return {cls: [(type(call.module), call.signature, call.args) for call in calls]
            for cls, calls in record.calls.items()}


@pytest.mark.parametrize("model_type", ["llama", "llava", "whisper", "t5", "qwen2_vl", "blip"])
def test_the_log_of_a_build_gives_the_wrapped_build_s_recording(model_type):
    config = make_config(model_type)
    with constructions() as log:
        model = build_on_meta(config)
    classes = [component.cls for component in find_components(model).items]
    with recording(classes) as wrapped, no_init_weights():
        build_on_meta(config)

    from_log = log.recording(classes)

    assert from_log is not None
    expected, found = _calls(wrapped), _calls(from_log)
    assert expected.keys() == found.keys()
    assert any(expected.values()), "no component was built at all: nothing was compared"
    for cls in expected:
        assert len(found[cls]) == len(expected[cls]), cls
        for (type_a, sig_a, args_a), (type_b, sig_b, args_b) in zip(expected[cls], found[cls], strict=True):
            assert (type_a, sig_a, len(args_a)) == (type_b, sig_b, len(args_b))
            assert all(_same(x, y) for x, y in zip(args_a, args_b, strict=True))


class Block(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width


class Wider(Block):
    def __init__(self) -> None:
        super().__init__(16)  # Block.__init__ gets (16,): arguments that __new__ never saw


class Singleton(torch.nn.Module):
    def __new__(cls, *args):
        return super().__new__(cls)


def test_the_log_declines_where_it_cannot_see_the_arguments():
    with constructions() as log:
        Block(4)
        Wider()
        Singleton()
    # A subclass instance reaches Block.__init__ through super(): only a wrapped build sees that.
    assert log.recording([Block]) is None
    # A class with a __new__ of its own may not hand its arguments on.
    assert log.recording([Singleton]) is None
    wider = log.recording([Wider])
    assert [call.args for call in wider.calls[Wider]] == [()]


def test_logs_nest_and_record_nothing_once_closed():
    with constructions() as outer:
        Block(1)
        with constructions() as inner:
            Block(2)
        Block(3)
    Block(4)
    assert [args for _, args in outer.entries] == [(1,), (3,)]
    assert [args for _, args in inner.entries] == [(2,)]
    # What stays installed is a pass-through: modules build as before, arguments included.
    assert Block(5).width == 5 and torch.nn.Linear(2, 3, bias=False).bias is None
