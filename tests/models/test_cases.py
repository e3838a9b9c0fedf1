"""Discovery and selection of model types, against the installed transformers."""

import pytest

from auditor.models import cases
from tests.conftest import TROUBLEMAKERS


@pytest.fixture(scope="module")
def known():
    return cases.discover()


def test_discovers_every_type_in_model_mapping(known):
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    names = {case.model_type for case in known}
    assert set(MODEL_MAPPING_NAMES) <= names
    assert [c.model_type for c in known] == sorted(names)


def test_plugin_registrations_are_discovered():
    cases.load_plugins([TROUBLEMAKERS])
    found = {c.model_type: c.source for c in cases.discover()}
    assert found["auditor_hang"] == "plugin"
    assert found["bert"] == "transformers"


def test_select_by_names_and_regex(known):
    chosen = cases.select(known, ["bert", "llama"])
    assert [c.model_type for c in chosen] == ["bert", "llama"]
    gpt = {c.model_type for c in cases.select(known, ["gpt.*"])}
    assert {"gpt2", "gpt_neox"} <= gpt and all(name.startswith("gpt") for name in gpt)


def test_exclude_by_regex(known):
    chosen = cases.select(known, ["bert", "llama", "gpt2"], exclude=["l.*"])
    assert [c.model_type for c in chosen] == ["bert", "gpt2"]


def test_unknown_name_names_the_closest_types(known):
    with pytest.raises(cases.SelectionError, match=r"unknown model type 'lama'.*llama"):
        cases.select(known, ["lama"])


def test_unknown_exclude_is_an_error_too(known):
    with pytest.raises(cases.SelectionError, match="bertt"):
        cases.select(known, exclude=["bertt"])


def test_broken_plugin_is_a_selection_error():
    with pytest.raises(cases.SelectionError, match="failed to import.*broken on purpose"):
        cases.load_plugins([TROUBLEMAKERS.replace("troublemakers", "broken")])


def test_missing_plugin_file_is_a_selection_error():
    with pytest.raises(cases.SelectionError, match="does not exist"):
        cases.load_plugins(["tests/plugins/nope.py"])


def test_a_named_type_this_release_lacks_is_absent_with_allow_absent(known):
    """upgrade-check's and versions' sides (--allow-absent): a type only another release has is
    left out and named, not refused; a pattern that matches nothing is still an error."""
    absent: list[str] = []
    chosen = cases.select(known, ["llama", "ergo_of_another_release"], absent=absent)
    assert [c.model_type for c in chosen] == ["llama"] and absent == ["ergo_of_another_release"]
    with pytest.raises(cases.SelectionError, match="unknown model type"):
        cases.select(known, ["llama", "ergo_of_another_release"])
    with pytest.raises(cases.SelectionError):
        cases.select(known, ["^nothing_matches_.*$"], absent=[])
    assert cases.select(known, ["ergo_of_another_release"], absent=[]) == []
