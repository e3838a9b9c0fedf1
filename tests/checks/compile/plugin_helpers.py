"""A module of helpers that a plugin model type calls: a graph break here is in another file than
the model's (tests/checks/compile/plugin_models.py imports it by path, as plugins are loaded by path)."""

import torch


def break_again(hidden):
    torch._dynamo.graph_break()  # right after the model's own break: no tensor operation between them
    return hidden
