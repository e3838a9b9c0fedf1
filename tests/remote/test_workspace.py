"""Finding and forgetting remote-code modules in sys.modules."""

import sys
import types

from auditor.remote.workspace import dynamic_modules_loaded, forget_dynamic_modules

NAME = "transformers_modules.org_dot_Twin.configuration_twin"


def test_a_module_is_found_when_it_comes_forgotten_when_it_goes_and_found_again():
    before = dynamic_modules_loaded()
    assert NAME not in before
    # transformers can put a remote-code module into sys.modules without its package.
    sys.modules[NAME] = types.ModuleType(NAME)
    try:
        assert NAME in dynamic_modules_loaded()
        forget_dynamic_modules("transformers_modules.org_dot_Twin")
        assert NAME not in sys.modules and NAME not in dynamic_modules_loaded()
        sys.modules[NAME] = types.ModuleType(NAME)
        assert NAME in dynamic_modules_loaded()
        del sys.modules[NAME]
        assert dynamic_modules_loaded() == before
    finally:
        sys.modules.pop(NAME, None)


def test_other_packages_are_left_alone():
    sys.modules["transformers_modules_lookalike"] = types.ModuleType("transformers_modules_lookalike")
    try:
        assert "transformers_modules_lookalike" not in dynamic_modules_loaded()
    finally:
        del sys.modules["transformers_modules_lookalike"]
