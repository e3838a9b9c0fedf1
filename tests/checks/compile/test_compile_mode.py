"""The decorator's compile mode: dims marked on the first call, one fullgraph compile, as vLLM does."""

import pytest
import torch
from torch import nn

from auditor.checks.compile_trial import CountingBackend, compare
from auditor.engines.vllm.decorators import OwnDecorator, decorated
from auditor.engines.vllm.decorators.support import COMPILE_MODES, mark_dynamic_inputs


class Tower(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(32, 8)
        self.proj = nn.Linear(8, 8)

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor | None = None) -> torch.Tensor:
        hidden = self.embed(input_ids)
        if position_ids is not None:
            hidden = hidden + position_ids[..., None]
        return torch.tanh(self.proj(hidden))


def _ids(length):
    return torch.arange(length)[None] % 32


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_compile_is_a_known_mode():
    assert COMPILE_MODES == ("none", "compile")


def test_marked_dims_make_one_graph_serve_every_length():
    backend = CountingBackend("eager")
    with decorated(Tower, OwnDecorator("fixed", "compile", backend), {"input_ids": 1}):
        tower = Tower()
        eager = tower.forward(_ids(7))
        first = tower(_ids(7))
        with torch._dynamo.config.patch(error_on_recompile=True):
            second = tower(_ids(13))
    assert backend.graphs == 1
    assert compare(eager, first)[0] == 0.0 and second.shape == (1, 13, 8)


def test_an_unmarked_dim_recompiles_on_the_second_length():
    backend = CountingBackend("eager")
    with decorated(Tower, OwnDecorator("fixed", "compile", backend), {"position_ids": -1}):
        tower = Tower()
        tower(_ids(7))  # position_ids is None: nothing marked, the length is static
        with torch._dynamo.config.patch(error_on_recompile=True), \
                pytest.raises(torch._dynamo.exc.RecompileError, match="input_ids"):
            tower(_ids(13))


def test_compilation_off_calls_forward_and_compiles_nothing():
    backend = CountingBackend("eager")
    with decorated(Tower, OwnDecorator("fixed", "compile", backend), {"input_ids": 1}):
        tower = Tower()
        tower.do_not_compile = True
        tower(_ids(7))
    with decorated(Tower, OwnDecorator("fixed"), {"input_ids": 1}):
        Tower()(_ids(7))  # mode "none"
    assert backend.graphs == 0


def test_negative_dims_count_from_the_end_and_non_tensors_are_refused():
    tower = Tower()
    ids, positions = _ids(5), torch.arange(5)[None]
    mark_dynamic_inputs(tower, {"input_ids": 1, "position_ids": -1}, (ids,), {"position_ids": positions})
    assert ids._dynamo_dynamic_indices == {1} and positions._dynamo_dynamic_indices == {1}
    with pytest.raises(ValueError, match="Unsupported dynamic dimensions"):
        mark_dynamic_inputs(tower, {"input_ids": 1}, ([1, 2],), {})


def test_compare_uses_a_dtype_tolerance_and_flags_different_shapes():
    a = torch.ones(2, 3)
    assert compare(a, a + 1e-6)[0] <= compare(a, a + 1e-6)[1]
    assert compare(a, a + 1e-2)[0] > compare(a, a + 1e-2)[1]
    assert compare((a,), (torch.ones(3, 2),))[0] == float("inf")
    half = a.to(torch.bfloat16)
    assert compare(half, half + 1e-2)[0] <= compare(half, half + 1e-2)[1]
