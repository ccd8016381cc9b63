"""The reaper of a daemon tree (``python -m mlassets.host.reaper HOME TOKEN``, started by ``daemon_tree.Tree``).

It waits. When its parent, the supervisor, dies (the kernel sends SIGUSR1: ``PR_SET_PDEATHSIG``, so a SIGKILL of
the supervisor counts too) it kills every process carrying the tree's token with SIGKILL (no grace: a daemon
shutting down could still launch a run; the runs left in progress are retried by the next daemon's run monitor),
and exits last, releasing the home's lock. SIGTERM (a clean stop, the tree already ended) just exits. Imports
only the standard library and ``daemon_tree``.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from mlassets.host.daemon_tree import kill_tree


def main(home: str, token: str) -> None:
    parent = os.getppid()
    fired = {"reap": False}
    signal.signal(signal.SIGUSR1, lambda *_: fired.update(reap=True))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the supervisor decides
    while not fired["reap"] and os.getppid() == parent:
        time.sleep(0.5)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # while reaping, a signal to the group must not stop it
    kill_tree(home, token, exclude=(os.getpid(),))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
