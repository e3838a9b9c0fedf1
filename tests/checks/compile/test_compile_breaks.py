"""Every graph break of a component, with its user frame and owner: `component_breaks` on the real
tiny models of the plugin types (tests/checks/compile/plugin_models.py), and the owner rule on the real
files of the installed packages."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch
import transformers

import auditor
import auditor.engines.vllm.decorators.support  # named below by its module object
from auditor.checks.compile_breaks import _explained, break_record, component_breaks, shown_path
from auditor.core.extras import BreakOwner, GraphBreak

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def plugin():
    from tests.checks.compile import plugin_models  # registers the types, once per process

    return plugin_models


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _breaks(model_type: str, decorate: bool = True):
    """component_breaks on `model_type`'s tiny model, built as the compile check builds it: the
    decoder's class decorated in compile mode, fed at the engine's first length."""
    from auditor.checks.compile_trial import CountingBackend
    from auditor.engines.vllm.decorators import OwnDecorator, decorated
    from auditor.models.components import find_components
    from auditor.models.inputs import decoder_feeds
    from auditor.models.meta import make_config
    from auditor.models.tiny import build_tiny, tiny_model

    tiny = tiny_model(make_config(model_type), "cpu")
    component = find_components(tiny.model).items[0]
    with decorated(component.cls, OwnDecorator("fixed", "compile", CountingBackend("eager")),
                   component.dynamic_arg_dims):
        model = build_tiny(tiny.config, "cpu")
        instances = [m for m in model.modules() if isinstance(m, component.cls)]
        feed = decoder_feeds(model, (7,))[0][0]
        with torch.no_grad():
            found = component_breaks(instances, lambda: model(**feed))
        assert all(m.do_not_compile is False and "forward" not in m.__dict__ for m in instances)
    return found


def _line(function, text: str) -> int:
    """The line of `function`'s source that holds `text`."""
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_the_first_break_is_listed_at_the_models_own_line(plugin):
    (only,) = _breaks("auditor_compile_break")
    assert (only.file, only.line, only.function, only.owner) == (
        str(HERE / "plugin_models.py"), _line(plugin._Break.finish, "graph_break()"), "finish", BreakOwner.MODEL)
    assert only.reason.startswith("Call to `torch._dynamo.graph_break()`")


def test_every_break_is_listed_with_its_file_line_and_owner(plugin):
    """Two breaks with no tensor operation between them: torch._dynamo.explain lists the first only."""
    found = _breaks("auditor_compile_break_twice")
    assert [(b.file, b.line, b.function, b.owner) for b in found] == [
        (str(HERE / "plugin_models.py"), _line(plugin._Break.finish, "graph_break()"), "finish", BreakOwner.MODEL),
        (str(HERE / "plugin_helpers.py"), _line(plugin._helpers.break_again, "graph_break()"), "break_again",
         BreakOwner.MODEL),
    ]
    assert GraphBreak(**{**found[1].as_extras(), "owner": None}) == found[1]  # the owner is the file's


def test_explain_the_fallback_misses_a_break_with_nothing_before_it(plugin):
    """Why dynamo's log is read rather than torch._dynamo.explain, which is only the fallback for a
    torch without it: explain reads breaks off the graphs, and the empty one before the second
    break never reaches a backend."""
    from auditor.models.meta import make_config
    from auditor.models.tiny import tiny_model

    model = tiny_model(make_config("auditor_compile_break_twice"), "cpu").model
    with torch.no_grad():
        found = _explained(model.forward, (torch.arange(7)[None],), {})
    assert [(Path(b.file).name, b.line) for b in found] == [("plugin_models.py", _line(plugin._Break.finish,
                                                                                       "graph_break()"))]


def test_a_model_that_compiles_whole_has_no_breaks(plugin):
    assert _breaks("auditor_compile_ok") == ()


class _Unpad(torch.nn.Module):
    """Calls a shared transformers helper that breaks twice (a data-dependent `nonzero`, then `.item()`)."""

    def forward(self, mask):
        from transformers.modeling_flash_attention_utils import _get_unpad_data

        return _get_unpad_data(mask * 1)


class _Outer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = _Unpad()

    def forward(self, mask):
        return self.inner(mask)


def test_breaks_in_a_shared_transformers_module_are_transformers():
    """A plain module works as a component too: its `nn.Module.__call__` calls `self.forward`."""
    utils = pytest.importorskip("transformers.modeling_flash_attention_utils")
    if not hasattr(utils, "_get_unpad_data"):
        pytest.skip("this transformers has no _get_unpad_data")
    outer = _Outer()
    found = component_breaks([outer.inner], lambda: outer(torch.ones(2, 5, dtype=torch.int32)))
    expected = [("transformers/modeling_flash_attention_utils.py", _line(utils._get_unpad_data, text),
                 "_get_unpad_data", BreakOwner.TRANSFORMERS) for text in ("torch.nonzero(", ".max().item()")]
    assert [(b.file, b.line, b.function, b.owner) for b in found] == expected
    assert "nonzero" in found[0].reason and "item()" in found[1].reason


def test_a_component_never_called_or_a_failing_run_gives_no_breaks():
    module = torch.nn.Linear(2, 2)
    assert component_breaks([module], lambda: None) == ()

    def failing():
        module(torch.ones(3, 3))  # the shapes do not fit: a run that fails lists nothing, raises nothing

    assert component_breaks([module], failing) == ()
    assert "forward" not in module.__dict__ and "do_not_compile" not in module.__dict__


# -- the owner rule, on the real files of the installed packages -----------------------------------

def _file(module) -> str:
    return shown_path(inspect.getfile(module))


@pytest.mark.parametrize("module, shown, owner", [
    (transformers.masking_utils, "transformers/masking_utils.py", BreakOwner.TRANSFORMERS),
    (transformers.modeling_utils, "transformers/modeling_utils.py", BreakOwner.TRANSFORMERS),
    (transformers.cache_utils, "transformers/cache_utils.py", BreakOwner.TRANSFORMERS),
    (transformers.integrations.sdpa_attention, "transformers/integrations/sdpa_attention.py",
     BreakOwner.TRANSFORMERS),
    (transformers.utils.generic, "transformers/utils/generic.py", BreakOwner.TRANSFORMERS),
    (transformers.models.auto.modeling_auto, "transformers/models/auto/modeling_auto.py", BreakOwner.TRANSFORMERS),
    (transformers.models.llama.modeling_llama, "transformers/models/llama/modeling_llama.py", BreakOwner.MODEL),
    (torch.nn.functional, "torch/nn/functional.py", BreakOwner.TORCH),
    (torch._dynamo.decorators, "torch/_dynamo/decorators.py", BreakOwner.TORCH),
    (auditor.engines.vllm.decorators.support, "auditor/engines/vllm/decorators/support.py", BreakOwner.AUDITOR),
])
def test_each_installed_file_has_its_owner(module, shown, owner):
    assert _file(module) == shown and BreakOwner.of(shown) is owner


def test_remote_code_and_plugin_files_are_the_models():
    remote = "/home/u/.cache/huggingface/modules/transformers_modules/my_model/modeling_my.py"
    assert shown_path(remote) == "transformers_modules/my_model/modeling_my.py"
    assert BreakOwner.of(shown_path(remote)) is BreakOwner.MODEL
    assert BreakOwner.of(str(HERE / "plugin_models.py")) is BreakOwner.MODEL
    assert BreakOwner.of("einops/einops.py") is BreakOwner.MODEL  # a library the model chose to call
    assert BreakOwner.of("") is None


class _Frame:
    def __init__(self, filename: str, lineno: int, name: str) -> None:
        self.filename, self.lineno, self.name = filename, lineno, name


def test_the_user_frame_is_the_innermost_outside_torch():
    model = inspect.getfile(transformers.models.llama.modeling_llama)
    masking = inspect.getfile(transformers.masking_utils)
    functional = inspect.getfile(torch.nn.functional)
    found = break_record("Unsupported thing\n  Explanation: why\n  Hint: how",
                        [_Frame(model, 10, "forward"), _Frame(masking, 20, "torch_dynamo_resume_in_mask_at_15"),
                         _Frame(functional, 30, "softmax")])
    assert found == GraphBreak("Unsupported thing | Explanation: why", "transformers/masking_utils.py", 20, "mask",
                               BreakOwner.TRANSFORMERS)
    inside = break_record("x", [_Frame(functional, 30, "softmax")])
    assert (inside.file, inside.owner) == ("torch/nn/functional.py", BreakOwner.TORCH)
    assert break_record("x", []) == GraphBreak("x")
