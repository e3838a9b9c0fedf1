"""A stand-in for the nox steps of `auditor bisect` and `versions`: installing logs, sweeping writes
the rows a truth table gives. The CLIs then run as they do for real, in milliseconds.

$FAKE_RELEASES names a JSON file: {"log": PATH, "truth": {VERSION: {MODEL: {COLUMN: STATUS}}},
"fail": [VERSION, ...]}. A release's VERSION is its number; a source tree's is the text of its
version.txt (the commit checked out). A step of a VERSION in "fail" fails, as nox would.
Run as a script, it is `auditor` with this stand-in: `git bisect run` starts it for each step.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from pathlib import Path

ENV = "FAKE_RELEASES"


def run_step(step, events) -> int:
    from tests.report.helpers import result, write_run

    events.step(step)  # as the real one tells it
    conf = json.loads(Path(os.environ[ENV]).read_text())
    requirement = step.env["AUDITOR_TRANSFORMERS"]
    version = (requirement.split("==", 1)[1] if requirement.startswith("transformers==")
               else (Path(requirement) / "version.txt").read_text().strip())
    with open(conf["log"], "a", encoding="utf-8") as log:
        log.write(f"{step.action} {version}\n")
    if version in conf.get("fail", ()):
        return 1
    if step.action == "install":
        return 0
    args = list(step.argv[step.argv.index("--") + 1:])
    value = {name: args[i + 1] for i, name in enumerate(args) if name.startswith("--") and i + 1 < len(args)}
    models = [args[i + 1] for i, a in enumerate(args) if a == "--models"]
    exclude = [args[i + 1] for i, a in enumerate(args) if a == "--exclude"]
    checks = value.get("--checks", "build,decorate,pickle").split(",")
    rows = []
    for model, columns in conf["truth"].get(version, {}).items():
        if (models and not any(re.fullmatch(m, model) for m in models)) or any(re.fullmatch(x, model) for x in exclude):
            continue
        for column, status in columns.items():
            parts = column.split("/")
            if parts[0] in checks:
                rows.append(result(model, status, check=parts[0], component=parts[1] if len(parts) == 3 else "",
                                   policy=parts[-1] if len(parts) > 1 else "", signature=f"{model} {status}"))
    write_run(Path(value["--output"]), rows, transformers=version if "==" in requirement else "5.99.0.dev0",
              label=value["--label"])
    return 0


def patch(setattr) -> None:
    """The runners' nox steps and venv lock replaced by the stand-in (`setattr`: pytest's
    monkeypatch.setattr, or the builtin in a process of its own)."""
    from auditor.environments import runner

    setattr(runner, "run_step", run_step)
    setattr(runner, "venv_lock", lambda name, events: contextlib.nullcontext())


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import auditor.checks
    from auditor.cli import main

    patch(setattr)
    auditor.checks.available = lambda: ["build", "decorate", "pickle"]  # without importing torch
    sys.exit(main(sys.argv[1:]))
