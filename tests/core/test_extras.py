"""Typed records of what readers take from a row's extras, read from the keys the checks write."""

from __future__ import annotations

from auditor.core.extras import Fingerprint, GraphBreak, ModelFacts


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


def test_a_graph_break_is_one_record_of_its_reason_and_place():
    extras = {"break_reason": "graph_break() called", "break_location": "plugin_models.py:12 in forward"}
    assert GraphBreak.from_extras(extras) == GraphBreak("graph_break() called", "plugin_models.py:12 in forward")
    assert GraphBreak.from_extras({"break_reason": "x"}) == GraphBreak("x", "")
    assert GraphBreak.from_extras({"graphs": 1}) is None
