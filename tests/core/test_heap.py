"""heap.settle(): a model type's garbage is collected, what is still alive is frozen.

Run in a fresh interpreter each, so the test process's own heap is never frozen.
"""

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_garbage_is_collected_before_the_survivors_are_frozen():
    out = _run("""
        import gc, weakref
        from auditor.core import heap

        class Node:
            pass

        garbage = Node(); garbage.me = garbage        # a cycle: only the collector frees it
        dead = weakref.ref(garbage)
        del garbage
        kept = Node(); kept.me = kept
        before = gc.get_freeze_count()
        heap.settle()
        print(dead() is None, gc.get_freeze_count() > before, kept not in gc.get_objects())
    """)
    assert out == "True True True"


def test_frozen_objects_are_not_scanned_by_later_collections():
    # The point of it: after settle(), a full collection visits only what was made since.
    out = _run("""
        import gc
        from auditor.core import heap

        long_lived = [[i] for i in range(200_000)]
        heap.settle()
        gc.collect()
        print(len(gc.get_objects()) < 50_000)
    """)
    assert out == "True"
