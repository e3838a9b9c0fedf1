"""Remote-code twins and by-value pickling, in this process: real transformers, real cloudpickle."""

import pickle
import sys

import cloudpickle
import pytest

from auditor.remote.byvalue import Parcel, dumps_by_value, remote_classes
from auditor.remote.twin import TwinError, as_remote_code, make_twin, write_twin
from auditor.remote.workspace import private_modules_cache
from tests.remote.conftest import builtin_config, twin_of


def test_relative_imports_become_absolute_and_the_rest_is_untouched():
    source = (
        '"""from . import not_an_import"""\n'
        "from ...configuration_utils import PreTrainedConfig\n"
        "from ..llama.configuration_llama import LlamaConfig\n"
        "from . import sibling\n"
        "if True:\n"
        "    from ...utils import (\n        logging,\n    )\n"
    )
    rewritten = as_remote_code(source, "transformers.models.llava")
    assert rewritten.splitlines() == [
        '"""from . import not_an_import"""',
        "from transformers.configuration_utils import PreTrainedConfig",
        "from transformers.models.llama.configuration_llama import LlamaConfig",
        "from transformers.models.llava import sibling",
        "if True:",
        "    from transformers.utils import (",
        "        logging,",
        "    )",
    ]


def test_a_twin_loads_as_remote_code_from_a_dotted_directory_name():
    twin = twin_of("llama")
    module = type(twin).__module__
    # org/llama-3.5-Twin: transformers turns the dots and hyphens into _dot_ and _hyphen_.
    assert module.startswith("transformers_modules.llama_hyphen_3_dot_5_hyphen_Twin.")
    assert module.endswith(".configuration_llama") and module in sys.modules
    assert type(twin).__name__ == "LlamaConfig" and type(twin) is not type(builtin_config("llama"))
    assert twin.to_dict()["hidden_size"] == builtin_config("llama").hidden_size


def test_the_twin_directory_is_gone_once_loaded(tmp_path):
    directory = write_twin(builtin_config("gpt2"), "gpt2", root=tmp_path)
    assert directory.name == "gpt2-3.5-Twin" and (directory / "config.json").is_file()
    make_twin(builtin_config("gpt2"), "gpt2")
    assert not any((private_modules_cache().parent / "twins" / "org").glob("gpt2*"))


def test_composite_configs_round_trip_by_value_with_their_sub_configs():
    twin = twin_of("blip")
    classes = {cls.__name__ for cls in remote_classes(twin)}
    assert classes == {"BlipConfig", "BlipTextConfig", "BlipVisionConfig"}
    again = pickle.loads(dumps_by_value(Parcel(twin)))
    assert again.config.to_dict() == twin.to_dict()
    assert type(again.config.text_config).__module__.startswith("transformers_modules.")


def test_by_value_registration_leaves_multiprocessing_as_it_was():
    from multiprocessing.reduction import ForkingPickler

    before = dict(ForkingPickler._extra_reducers)
    dumps_by_value(Parcel(twin_of("llama")))
    assert ForkingPickler._extra_reducers == before
    assert "transformers_modules" in cloudpickle.list_registry_pickle_by_value()


def test_a_config_outside_transformers_models_has_no_twin():
    from transformers import PreTrainedConfig

    class Elsewhere(PreTrainedConfig):
        model_type = "elsewhere"

    with pytest.raises(TwinError, match="not in a transformers model package"):
        make_twin(Elsewhere(), "elsewhere")
