"""Code the auditor copies from an engine is the engine's: every copy carries one mark
(`auditor.engines.interface.transcribed`) with its engine, release and file:line from the release
record, and what it raises is the engine's, as if the engine had run it."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from auditor import engines
from auditor.core.classifier import Phase, classify
from auditor.core.fault import Fault, transcription_at
from auditor.core.status import Status
from auditor.engines.interface import cited

REPO = Path(__file__).resolve().parents[2]
ENGINES_DIR = REPO / "auditor" / "engines"
# A docstring citing an engine's source: `transformers.py:71-91`, `vllm/config/utils.py:132`.
_CITATION = re.compile(r"\b[\w/]+\.py:\d+")

# The copies, module -> functions: a copy added or dropped changes this list on purpose.
COPIES = {
    "auditor.engines.sglang.gates": {"text_config", "_as_config", "is_moe", "is_multimodal", "backend_class",
                                     "can_enable_torch_compile", "_derive_head_dim"},
    "auditor.engines.sglang.modules": {"_getattr_first", "tp_plan", "normalize_style", "normalized_plan",
                                       "replace_rms_norm", "_divide"},
    "auditor.engines.vllm.gates": {"getattr_iter", "backend_class", "is_multimodal", "num_experts",
                                   "_iter_rope_parameters"},
    "auditor.engines.vllm.attention": {"_is_interface_lookup", "interface_call", "_keyword", "_resolve", "_scale",
                                       "_sinks"},
    "auditor.engines.vllm.plans": {"vocab_embeddings", "_vocab_sizes", "unsupported_style"},
    "auditor.engines.vllm.dtype": {"config_dtype", "_cuda_supported_dtypes", "_resolve_auto_dtype"},
}
# Functions whose docstrings cite an engine's line without being a copy of it, and why.
_GATE = "a gate: the auditor's answer in the engine's order; its copied lines are engine_line blocks and marked copies"
NOT_COPIES = {
    ("common.py", "architecture"): "what both engines read, cited for each; shared, so under no one release",
    ("common.py", "init_on_device_without_buffers"): "vLLM's and SGLang's alike (two engines, no one record); "
                                                     "it raises nothing of its own",
    ("interface.py", "cited"): "its docstring's example",
    ("sglang/gates.py", "sglang_config"): "the auditor's copy of a config, naming its architecture",
    ("vllm/build.py", "patched_config"): "the auditor's build under the engine's settings",
    ("vllm/build.py", "vllm_attention_registered"): "the auditor's registration of its stand-in attention",
    ("vllm/build.py", "build_like_vllm"): "the auditor's build under the engine's settings",
    ("vllm/constructor.py", "classes_restored"): "calls vLLM's own code (installed), copies none",
    ("vllm/constructor.py", "_throwaway_failure"): "reads what vLLM's own code raised",
    ("vllm/decorators/verdicts.py", "verdicts"): "the decorators package is AUDITED as a whole",
    ("vllm/gates.py", "default_max_model_len"): "a summary of vLLM's length rules, not its code",
    ("vllm/gates.py", "has_video_processor"): "a question the auditor asks of transformers",
    ("vllm/gates.py", "has_mtp"): "a question the auditor asks of the config",
    ("vllm/native.py", "_warm_registry"): "calls vLLM's own registry (installed)",
    ("vllm/native.py", "_before"): "judges what vLLM's own code raised; copies none",
    ("vllm/preparation.py", "model_info_cache"): "calls vLLM's own registry cache (installed)",
    ("vllm/preparation.py", "_worker_module"): "imports vLLM's own worker module (installed); copies none",
    ("vllm/preparation.py", "_in_process"): "calls vLLM's own inspection (installed) in this process",
    ("vllm/own.py", "decorate_gate"): "calls vLLM's own decorator (installed)",
    ("vllm/plans.py", "walk"): "the modules in another order than vLLM's walk: the auditor's",
    ("sglang/modules.py", "moe_replace"): "its copied asserts are `_asserted` refusals and marked copies",
    ("vllm/plans.py", "moe_gate"): _GATE,
    ("sglang/serving.py", "_cited"): "its docstring's example of a record's place",
    ("sglang/serving.py", "registrations_scoped"): "undoes what SGLang's imports register; copies none",
    ("weights.py", "meta_limit"): "reads what an engine's own loading raised (installed); copies none",
}


def _functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _marked(node) -> bool:
    return any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "transcribed" for d in node.decorator_list)


def _returns_verdict(node) -> bool:
    return node.returns is not None and "Verdict" in ast.unparse(node.returns)


def test_each_copy_is_marked_with_its_engine_release_and_line_from_the_release_record():
    titles = {engine.title: engine for engine in engines.all()}
    for module, names in COPIES.items():
        found = importlib.import_module(module)
        for name in names:
            function = getattr(found, name)
            function = getattr(function, "__wrapped__", function)  # functools.cache's
            mark = function.__transcription__
            engine = titles[mark.engine]
            record = next(r for r in engine.releases if r.version == mark.release)
            assert mark.release == engine.follows and mark.where == cited(record, mark.step), (module, name)
            assert mark.where.startswith(engine.package + "/") and _CITATION.search(mark.where)
            line = os.path.basename(mark.where.split(" ")[0])  # "transformers.py:71-91"
            assert line not in (function.__doc__ or ""), (module, name)  # the record holds it: one place


def test_every_function_citing_an_engine_line_is_a_marked_copy_a_gate_or_says_why_not():
    marked, unexplained = set(), []
    for path in sorted(ENGINES_DIR.rglob("*.py")):
        where = str(path.relative_to(ENGINES_DIR))
        for node in _functions(path):
            cites = bool(_CITATION.search(ast.get_docstring(node) or ""))
            if _marked(node):
                marked.add((where, node.name))
            elif cites and not _returns_verdict(node) and (where, node.name) not in NOT_COPIES:
                unexplained.append((where, node.name))
    assert not unexplained, f"cite an engine's line but are neither marked nor explained: {unexplained}"
    expected = {(module.removeprefix("auditor.engines.").replace(".", "/") + ".py", name)
                for module, names in COPIES.items() for name in names}
    assert marked == expected


def _ergo_config():
    transformers = pytest.importorskip("transformers")
    if "ergo" not in transformers.CONFIG_MAPPING:
        pytest.skip(f"transformers {transformers.__version__} has no ergo (5.25.0 does)")
    return transformers.AutoConfig.for_model("ergo")


def _unmarked(code: types.CodeType) -> types.CodeType:
    """The same lines as `code` (its nested functions too), in new code objects: no mark."""
    consts = tuple(_unmarked(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_consts=consts, co_name=f"unmarked {code.co_name}")


def test_what_a_copy_raises_is_the_engines_and_the_same_code_unmarked_is_ours():
    from auditor.engines.sglang import gates

    config = gates.sglang_config(_ergo_config(), "ergo")
    with pytest.raises(AttributeError) as raised:
        gates.can_enable_torch_compile(config)
    failure = classify(raised.value, Phase.ENGINE, engine_package="sglang")
    assert (failure.status, failure.fault) == (Status.UNSUPPORTED, Fault.ENGINE)
    assert "[raised in the engine's code at sglang/srt/models/transformers.py:71-91 (SGLang 0.5.23, " \
           "can_enable_torch_compile; transcribed at auditor/engines/sglang/gates.py:" in failure.message
    assert failure.signature == "AttributeError: 'NoneType' object has no attribute 'get'"

    unmarked = types.FunctionType(_unmarked(gates.can_enable_torch_compile.__code__), gates.__dict__)
    assert transcription_at(types.SimpleNamespace(f_code=unmarked.__code__)) is None
    with pytest.raises(AttributeError) as ours:
        unmarked(config)
    failure = classify(ours.value, Phase.ENGINE, engine_package="sglang")
    assert (failure.status, failure.fault) == (Status.AUDITOR_ERROR, Fault.AUDITOR)


def test_ergo_s_sglang_compile_row_is_sglangs_fault_naming_its_line(tmp_path):
    _ergo_config()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "auditor", "sweep", "--models", "ergo,llama", "--checks", "backend",
                           "--jobs", "1", "--output", str(tmp_path)], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    rows = [row for row in rows if row.get("kind") == "result"]
    assert not [row for row in rows if row["status"] == "auditor-error"]
    compile_rows = {row["model_type"]: row for row in rows if row["component"] == "sglang/compile-compatible"}
    ergo = compile_rows["ergo"]
    assert (ergo["status"], ergo["fault"]) == ("unsupported", "engine")
    assert "sglang/srt/models/transformers.py:71-91" in ergo["message"]
    assert ergo["extras"]["transcribed"]["release"] == "0.5.23"
    assert compile_rows["llama"]["status"] == "build"


def test_each_copied_line_takes_its_place_from_the_release_record():
    """`engine_line(engine, at)` blocks (single lines copied into a gate): `at` is `cited(record, step)`."""
    literal = []
    for path in sorted(ENGINES_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "engine_line" and len(node.args) > 1:
                at = node.args[1]
                if not (isinstance(at, ast.Name) or (isinstance(at, ast.Call) and getattr(at.func, "id", "") == "cited")):
                    literal.append(f"{path.relative_to(ENGINES_DIR)}:{node.lineno}")
    assert not literal
