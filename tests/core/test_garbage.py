"""core/garbage: no cyclic collection inside the block, the collector's state after it."""

from __future__ import annotations

import gc
import threading
import weakref

from sessions_app.foundation.core.garbage import collector_paused


def test_no_cycle_is_collected_inside_and_the_collector_runs_again_after():
    class Node:
        pass

    refs = []
    with collector_paused():
        assert not gc.isenabled()
        for n in range(50_000):  # far past the first generation's threshold
            node = Node()
            node.me = node  # a cycle: only the collector frees it
            if n % 1000 == 0:
                refs.append(weakref.ref(node))
        del node
        assert all(ref() is not None for ref in refs)  # no collection ran
    assert gc.isenabled()
    gc.collect()
    assert all(ref() is None for ref in refs)  # the cycles made inside are collected after


def test_nested_and_overlapping_blocks_leave_the_collector_as_the_first_found_it():
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with collector_paused():
            entered.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    with collector_paused():
        thread.start()
        assert entered.wait(5)
        with collector_paused():
            assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread's block still runs
    release.set()
    thread.join(5)
    assert gc.isenabled()

    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        gc.enable()
