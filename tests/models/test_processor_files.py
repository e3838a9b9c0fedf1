"""The processor files written offline beside a default config.json: real transformers classes
loading them back as from a checkpoint (mllama: an image processor and a tokenizer that must know
`<|image|>`), and, where vLLM is installed, its own ModelConfig getting past them."""

from __future__ import annotations

import importlib.util
import os

import pytest
from transformers import AutoConfig, AutoProcessor

from auditor.models import processor_files


@pytest.fixture(scope="module")
def mllama_dir(tmp_path_factory):
    pytest.importorskip("PIL", reason="pillow is not installed: mllama's image processor needs it")
    directory = tmp_path_factory.mktemp("mllama")
    config = AutoConfig.for_model("mllama")
    config.architectures = ["MllamaForCausalLM"]
    config.to_json_file(os.path.join(directory, "config.json"))
    return str(directory), processor_files.write("mllama", str(directory))


def test_the_processors_defaults_and_a_tiny_tokenizer_load_back(mllama_dir):
    directory, written = mllama_dir
    assert written.processor == "MllamaProcessor" and written.tokenizer and not written.reason
    assert {"processor_config.json", "tokenizer_config.json"} <= set(written.files)
    assert written.extras() == {"processor_files": "MllamaProcessor defaults, tiny tokenizer (written offline)"}
    processor = AutoProcessor.from_pretrained(directory)
    assert type(processor).__name__ == "MllamaProcessor"
    # the token the processor asks for is the tokenizer's own, not its unknown token
    assert processor.image_token_id != processor.tokenizer.unk_token_id


def test_a_type_without_a_processor_gets_nothing(tmp_path):
    assert processor_files.write("llama", str(tmp_path)) == processor_files.ProcessorFiles()
    assert os.listdir(tmp_path) == [] and processor_files.ProcessorFiles().extras() == {}


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed")
def test_vllms_own_model_config_gets_past_them(mllama_dir):
    # without them: "Can't load image processor" (a lone config.json has no processor files)
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    from vllm.config import ModelConfig

    directory, written = mllama_dir
    config = ModelConfig(model=directory, model_impl="auto", skip_tokenizer_init=not written.tokenizer,
                         dtype="float32")
    assert config.architecture == "TransformersMultiModalForCausalLM"


@pytest.mark.parametrize("model_type,processor,token", [
    ("kosmos-2", "Kosmos2Processor", None),  # no auto-mapping entry: the class of the type's own module
    ("fuyu", "FuyuProcessor", "|SPEAKER|"),  # looked up in the vocabulary (a KeyError without it)
    ("hunyuan_vl", "HunYuanVLProcessor", "image_token"),  # the processor's own check of its tokenizer
])
def test_what_a_processor_asks_of_its_tokenizer_is_learnt(tmp_path, model_type, processor, token):
    pytest.importorskip("PIL", reason="pillow is not installed: the image processors need it")
    if processor not in dir(__import__("transformers")):
        pytest.skip(f"this transformers has no {processor}")
    config = AutoConfig.for_model(model_type)
    config.to_json_file(os.path.join(tmp_path, "config.json"))
    written = processor_files.write(model_type, str(tmp_path))
    assert (written.processor, written.reason) == (processor, "") and written.tokenizer
    loaded = AutoProcessor.from_pretrained(str(tmp_path))
    assert type(loaded).__name__ == processor
    if token == "|SPEAKER|":
        assert token in loaded.tokenizer.get_vocab()
    elif token:
        assert getattr(loaded.tokenizer, token) in loaded.tokenizer.get_vocab()
