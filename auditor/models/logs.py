"""transformers' own logging while the auditor loads, saves and makes things with it."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def quiet_transformers():
    """transformers' warnings and loading reports (legacy behaviour, unknown language codes, the
    keys it did not load) go to its logger at error level, not to the worker log: the row says
    what matters."""
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(level)
