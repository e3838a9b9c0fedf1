"""A sweep as a short pipeline: one declaration per option (options.py), validation into a plan
(validate.py, plan.py), and the steps: select, resume, execute, write, tables and the gate
(run.py puts them in order). `auditor.api` hands out its public names."""
