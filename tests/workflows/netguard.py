"""A ``sitecustomize`` for a child process that must not reach the network: every connection or
name lookup to anything but loopback is refused at once and written down (to the file
``WIKISUM_NETWORK_LOG`` names), so a test can say what was attempted. Put the folder
:func:`write_guard` returns first on the child's ``PYTHONPATH``."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

LOG_ENV = "WIKISUM_NETWORK_LOG"

SITECUSTOMIZE = textwrap.dedent("""
    import os, socket
    _LOG = os.environ["WIKISUM_NETWORK_LOG"]
    _LOCAL = ("127.", "::1", "localhost")

    def _refuse(what):
        with open(_LOG, "a") as f:
            f.write(f"{what}\\n")
        raise OSError(f"network access refused: {what}")

    _connect, _getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def connect(self, address):
        host = address[0] if isinstance(address, tuple) else str(address)
        if self.family == socket.AF_UNIX or str(host).startswith(_LOCAL):
            return _connect(self, address)
        _refuse(f"connect {address}")

    def getaddrinfo(host, *args, **kwargs):
        if host is None or str(host).startswith(_LOCAL):
            return _getaddrinfo(host, *args, **kwargs)
        _refuse(f"lookup {host}")

    socket.socket.connect = connect
    socket.getaddrinfo = getaddrinfo
""")


def write_guard(folder: Path) -> Path:
    """``folder`` with the guard's sitecustomize.py in it."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return folder


def guarded_env(guard: Path, log: Path, home: Path) -> dict[str, str]:
    """The environment of a guarded child: no cloud credentials of the user's either."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "CLOUDSDK_"))}
    # The guard first; a PYTHONPATH given to the suite (a checkout under test) after it.
    path = os.pathsep.join(filter(None, [str(guard), os.environ.get("PYTHONPATH")]))
    env.update(PYTHONPATH=path, NO_GCE_CHECK="True", HOME=str(home))
    env[LOG_ENV] = str(log)
    return env
