"""The end-of-sweep line for types left `missing-dependency`: the package read off real
transformers messages (its own `requires_backends`, for packages this venv lacks), and the line."""

import importlib.util

import pytest
from transformers.utils import requires_backends

from auditor.core.messages import message_of
from auditor.core.results import Result
from auditor.core.status import Status
from auditor.report.dependencies import missing, package_of


def _real_message(backend: str, module: str) -> str:
    """transformers' own message for a class needing `backend`, as the sweep records it."""
    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed here: transformers raises nothing for it")

    class TimmBackbone:
        pass

    with pytest.raises(ImportError) as raised:
        requires_backends(TimmBackbone, [backend])
    return message_of(raised.value)


@pytest.mark.parametrize("backend,module,package", [
    ("timm", "timm", "timm"), ("vision", "PIL", "pillow"), ("torchaudio", "torchaudio", "torchaudio")])
def test_the_package_is_read_off_transformers_own_message(backend, module, package):
    assert package_of(_real_message(backend, module)) == package


def test_a_plain_import_error_names_the_package_pip_knows():
    assert package_of("ModuleNotFoundError: No module named 'PIL'") == "pillow"
    assert package_of("ModuleNotFoundError: No module named 'natten.functional'") == "natten"
    assert package_of("RuntimeError: something else") is None


def test_one_line_names_each_package_its_types_and_the_commands():
    def row(model_type, message, status=Status.MISSING_DEPENDENCY):
        return Result(model_type, "build", status, message=message)

    timm = "ImportError: TimmBackbone requires the timm library ... `pip install timm`."
    found = missing([row("detr", timm), row("conditional_detr", timm), row("detr", timm),
                     row("clap", "ModuleNotFoundError: No module named 'torchaudio'"),
                     row("broken", "AttributeError: x [raised importing foo: an installed package that does not import]"),
                     row("llama", "", Status.BUILD)])
    assert found.by_package == (("timm", ("conditional_detr", "detr")), ("torchaudio", ("clap",)),
                                ("", ("broken",)))
    line = found.text()
    assert line.startswith("Not audited for want of a package: 4 model types (timm (conditional_detr, detr); ")
    assert "`pip install timm torchaudio`" in line
    assert "`auditor sweep --models broken,clap,conditional_detr,detr`" in line
    assert missing([row("llama", "", Status.BUILD)]) is None
