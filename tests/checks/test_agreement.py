"""`auditor agree`: two policies compared cell by cell, on crafted runs."""

import json

from auditor.cli import main


def write_run(path, rows):
    header = {"kind": "header", "format_version": 1, "run": {
        "python": "3.11.7", "torch": "2.13.0", "transformers": "5.24.0", "accelerate": "1", "cloudpickle": "3",
        "platform": "x", "device": "meta", "auditor": "0.1.0", "git_revision": "x", "command": "x",
        "started": "2026-11-30T00:00:00+00:00"}}
    lines = [header] + [{"kind": "result", "check": "decorate", "component": "decoder", "message": "", **row}
                        for row in rows]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")


REFUSAL = "TypeError: 'XModel.__init__' received a positional argument of type 'int', but no parameter"


def test_agreeing_policies_exit_0(tmp_path, capsys):
    write_run(tmp_path / "results.jsonl", [
        {"model_type": "a", "policy": "legacy", "status": "build"},
        {"model_type": "a", "policy": "vllm", "status": "build"},
        {"model_type": "b", "policy": "legacy", "status": "refused", "message": REFUSAL},
        {"model_type": "b", "policy": "vllm", "status": "refused", "message": REFUSAL},
    ])
    assert main(["agree", str(tmp_path)]) == 0
    assert "2 cells compared, 0 disagree" in capsys.readouterr().out


def test_a_different_status_or_refusal_message_is_a_disagreement(tmp_path, capsys):
    write_run(tmp_path / "results.jsonl", [
        {"model_type": "a", "policy": "legacy", "status": "build"},
        {"model_type": "a", "policy": "vllm", "status": "check-error"},
        {"model_type": "b", "policy": "legacy", "status": "refused", "message": REFUSAL},
        {"model_type": "b", "policy": "vllm", "status": "refused", "message": REFUSAL + " other"},
    ])
    assert main(["agree", str(tmp_path)]) == 1
    text = (tmp_path / "agreement-legacy-vllm.md").read_text()
    assert "build vs check-error" in text and "same status, different message" in text


def test_a_missing_policy_is_bad_input(tmp_path, capsys):
    write_run(tmp_path / "results.jsonl", [{"model_type": "a", "policy": "legacy", "status": "build"}])
    assert main(["agree", str(tmp_path)]) == 2
    assert "no rows for policy vllm" in capsys.readouterr().err


def test_the_emulations_policy_less_gates_stand_for_the_first_policy(tmp_path, capsys):
    # A run of the backend check alone (no decorate check, so no `legacy` rows): its gates
    # without a policy are the emulation, compared with vLLM's own rows.
    write_run(tmp_path / "results.jsonl", [
        {"model_type": "a", "policy": "", "check": "backend", "component": "registry", "status": "build"},
        {"model_type": "a", "policy": "vllm", "check": "backend", "component": "registry", "status": "build"},
        {"model_type": "b", "policy": "", "check": "backend", "component": "registry", "status": "unsupported"},
        {"model_type": "b", "policy": "vllm", "check": "backend", "component": "registry", "status": "build"},
    ])
    assert main(["agree", str(tmp_path)]) == 1
    assert "2 cells compared, 1 disagree" in capsys.readouterr().out


def test_a_run_without_either_policy_is_refused(tmp_path, capsys):
    write_run(tmp_path / "results.jsonl", [{"model_type": "a", "policy": "", "check": "build", "status": "build"}])
    assert main(["agree", str(tmp_path)]) == 2
    assert "has no rows for policy legacy, vllm" in capsys.readouterr().err


def test_a_side_that_could_not_answer_is_listed_apart_not_agreed(tmp_path, capsys):
    # The reference ran out of memory on one type (a full-size config under the engine's own
    # constructor): neither an agreement nor a disagreement, counted and listed apart. A crash
    # is the engine's own doing and is still compared.
    write_run(tmp_path / "results.jsonl", [
        {"model_type": "a", "policy": "legacy", "status": "build"},
        {"model_type": "a", "policy": "vllm", "status": "oom", "message": "OutOfMemory: worker went over"},
        {"model_type": "b", "policy": "legacy", "status": "build"},
        {"model_type": "b", "policy": "vllm", "status": "build"},
        {"model_type": "c", "policy": "legacy", "status": "build"},
        {"model_type": "c", "policy": "vllm", "status": "crash", "message": "Crash: worker process died"},
    ])
    assert main(["agree", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "2 cells compared, 1 disagree" in out
    assert "1 cell of 1 model type not compared: one side did not answer" in out and ": a." in out
    disagreements, apart = out.split("## Not compared")
    assert "| c | decorate/decoder | build | crash" in disagreements and "| a |" not in disagreements
    assert "| a | decorate/decoder | build | oom" in apart
