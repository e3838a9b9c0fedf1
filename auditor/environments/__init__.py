"""Other environments: a venv of a given transformers (and torch, and serving engine) release,
made, locked, reused and run, and the one sweep that runs here or in such venvs.

    steps.py        what a venv installs (Transformers), its side, its two nox steps (Step)
    venvs.py        one release's steps in a venv reused per release (versions, atlas, bisect)
    runner.py       the steps run, one nox process each, under a lock per venv home; what they
                    wrote read back; SideSetup (nox, the installer, this auditor, the engines)
    selfdist.py     which auditor a venv installs (a checkout editable, or a wheel rebuilt from
                    the installed RECORD) and where the venvs live (the venv home)
    installer.py    uv or pip
    engines.py      --engine NAME==VERSION and the transformers an engine release takes
    releases.py     the package index's transformers releases (the one place that asks it)
    sides/          the packaged nox sessions (noxfile.py) and prune.py, run in nox's own interpreter
    engine_sweeps.py  `run_sweep`: one sweep, here, or with its --engine releases in venvs too

The layers above (upgrade/, atlas/, api/) make and run venvs only through here. The noxfile at
the repository's root and sides/noxfile.py import `releases` and `sides.noxfile` in nox's own
interpreter: those need only `nox` and `packaging`, never the rest of the package, so this
__init__ imports nothing.
"""
