"""The compatibility atlas: the grid of model types across transformers and engine releases.

Runs in (a run folder added, or a release swept with the sweep's own machinery: this
interpreter's transformers in-process, any other in the upgrade layer's reused venv per release),
one embedded database out (DIR/atlas.duckdb: the runs, their environments, every row, and what the
report layer derives from them: each engine's verdict per type and release, what changed between
consecutive releases, the first release that broke a type and the one that fixed it), and a static
site rendered from that database alone (DIR/site/).

    keys.py    RunKey: what makes two runs the same cell of the grid (a run already in is never swept again)
    plan.py    which runs a call needs: releases resolved, the present ones left out, the rest's steps
    store.py   the database: its schema (the documented `verdicts` view), runs in, runs read back
    derive.py  verdicts and changes per release, by report/serve.py and report/changes.py's one rule
    grid.py    running a plan: sweeps, imports, the derived tables, the site written
    cluster.py with --executor ray: each run one Ray task, its venv made on its node, the run sent back
    site.py    the site's pages from the database, pure (templates/atlas_*.j2)
"""
