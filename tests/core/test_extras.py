"""Typed records of what readers take from a row's extras, read from the keys the checks write."""

from __future__ import annotations

import json

from auditor.core.extras import BreakOwner, Fingerprint, GraphBreak, ModelFacts, breaks_of


def test_model_facts_read_the_build_row_and_say_none_where_it_does_not():
    facts = ModelFacts.from_extras({"model_class": "LlamaModel", "parameters": 10, "parameter_bytes": 40,
                                    "escaped": 0, "escaped_names": []})
    assert facts == ModelFacts("LlamaModel", 10, 40, 0)
    assert ModelFacts.from_extras({}) == ModelFacts()


def test_a_fingerprint_keeps_its_data_and_names_its_plans():
    data = {"config": {"hidden_size": 8}, "attribute_map": {"a": "b"}, "base_model_tp_plan": {"x": "colwise"},
            "base_model_pp_plan": None, "sub_configs": ["text_config"], "digest": "abc"}
    fp = Fingerprint.from_extras({"fingerprint": data})
    assert fp.digest == "abc" and fp.config == {"hidden_size": 8} and fp.sub_configs == ["text_config"]
    assert fp.plans == (("attribute-map", {"a": "b"}), ("tp-plan", {"x": "colwise"}), ("pp-plan", {}))
    assert Fingerprint.from_extras({}) is None and Fingerprint.from_extras({"fingerprint": {}}) is None


def test_an_old_row_gives_its_one_break_with_the_owner_of_its_file():
    """Rows of an auditor before `breaks` kept only fullgraph's first break."""
    extras = {"break_reason": "graph_break() called",
              "break_location": "transformers/models/llama/modeling_llama.py:12 in forward"}
    first = GraphBreak("graph_break() called", "transformers/models/llama/modeling_llama.py", 12, "forward")
    assert GraphBreak.from_extras(extras) == first and first.owner is BreakOwner.MODEL
    assert first.location == extras["break_location"]
    assert breaks_of(extras) == (first,)
    assert GraphBreak.from_extras({"break_reason": "x"}) == GraphBreak("x") and GraphBreak("x").owner is None
    assert GraphBreak.from_extras({"graphs": 1}) is None and breaks_of({"graphs": 1}) == ()


def test_a_row_lists_every_break_as_plain_data_and_reads_it_back():
    breaks = (GraphBreak("a | b", "transformers/masking_utils.py", 40, "sdpa_mask"),
              GraphBreak("c", "torch/nn/functional.py", 7, "softmax"),
              GraphBreak("d", "auditor/engines/vllm/attention.py", 3, "attend"))
    extras = {"break_reason": "a | b", "break_location": "elsewhere.py:1 in f",
              "breaks": [b.as_extras() for b in breaks]}
    assert json.loads(json.dumps(extras))["breaks"][0] == {
        "reason": "a | b", "file": "transformers/masking_utils.py", "line": 40, "function": "sdpa_mask",
        "owner": "transformers"}
    assert breaks_of(extras) == breaks
    assert [b.owner for b in breaks] == [BreakOwner.TRANSFORMERS, BreakOwner.TORCH, BreakOwner.AUDITOR]
    later = {"breaks": [{**breaks[0].as_extras(), "owner": "someone-new"}]}  # an owner of a later auditor
    assert breaks_of(later) == breaks[:1]
