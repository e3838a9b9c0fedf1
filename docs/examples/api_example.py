"""The example of docs/python-api.md (included there); tests/api/test_api.py runs it as it stands."""

# --8<-- [start:example]
import auditor

outcome = auditor.sweep("reports/example", models=["llama", "gpt2", "t5gemma2"],
                        checks=["build", "decorate"], jobs=2, fail_on=["decorate/*/legacy=refused"])
print(f"{outcome.done} model types; wrote {', '.join(p.name for p in outcome.files)}")
for finding in auditor.findings([outcome.run]):
    print(finding.text())
for hit in outcome.gate_hits:  # what `auditor sweep --fail-on` would exit 1 for
    print("gate:", hit.model_type, hit.column, hit.status)

again = auditor.read_run("reports/example")  # a run directory or a results.jsonl
changes = auditor.diff(again, outcome.run)  # a RunDiff: regressions, fixes, blocking, ...
assert not changes.blocking and not changes.fixes
print(auditor.render_summary([again]).splitlines()[0])

try:
    auditor.sweep("reports/example", models=["llama"])  # that directory holds a run already
except auditor.InputError as exc:
    print("refused:", exc)
# --8<-- [end:example]
