"""Politeness: one gate per host and process, spacing the starts of requests to that host."""

from __future__ import annotations

import threading
import time
import weakref


class HostGate:
    """Spaces the starts of requests to one host, whichever thread sends them."""

    def __init__(self):
        self._lock = threading.Lock()
        self._last = -float("inf")

    def wait(self, delay_s: float) -> None:
        """Return no sooner than ``delay_s`` seconds after the previous request started."""
        with self._lock:  # held while sleeping: the waiters queue up behind it
            now = time.monotonic()
            ready = self._last + delay_s
            if now < ready:
                time.sleep(ready - now)
                now = time.monotonic()
            self._last = now


# One gate per host and process while some crawler uses it, so that a host reached by
# redirects from another group's URLs is spaced too; crawlers hold their gates, and a gate
# nobody holds any more goes away.
_GATES: weakref.WeakValueDictionary[str, HostGate] = weakref.WeakValueDictionary()
_GATES_LOCK = threading.Lock()


def gate_for(host: str) -> HostGate:
    with _GATES_LOCK:
        gate = _GATES.get(host)
        if gate is None:
            gate = _GATES[host] = HostGate()
        return gate
