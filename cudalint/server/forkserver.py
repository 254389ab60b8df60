"""Where the language server's worker processes come from: forked from a forkserver that
imported the engine and the rules and compiled the queries first
(``cudalint.server.preload``), so each worker, a replacement after a time-out included,
starts ready; a fresh interpreter each (spawn) where there is no forkserver. Imports
nothing of cudalint's: ``prestart`` runs before the server's own imports."""
from __future__ import annotations

import logging
import multiprocessing
import os

log = logging.getLogger("cudalint.server")

_PRELOAD = "cudalint.server.preload"


def _context():
    """forkserver with the preload where it exists; a fresh interpreter each (spawn)
    elsewhere. The forkserver is multiprocessing's one per process: started by
    ``prestart`` or by the first worker."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([_PRELOAD])
        # the preload acts only where this is set: in the forkserver, which inherits it
        # (it is harmless in the workers and what they start); the pid is the server's,
        # which the forkserver dies with
        os.environ["CUDALINT_FORKSERVER"] = str(os.getpid())
        return ctx
    return multiprocessing.get_context("spawn")


def prestart() -> None:
    """Start the forkserver now; nothing waits for it here."""
    if _context().get_start_method() != "forkserver":
        return
    try:
        from multiprocessing import forkserver
        forkserver.ensure_running()
    except Exception as exc:                   # the first worker starts it, or spawns
        log.warning("cudalint: forkserver not started early (%s)", exc)


def _parent_of_workers(ctx) -> int | None:
    """The pid the workers' parent will have: the forkserver's (started now if it is
    not running), or this process's when workers are spawned; None if unknown."""
    if ctx.get_start_method() != "forkserver":
        return os.getpid()
    try:
        from multiprocessing import forkserver
        forkserver.ensure_running()
        return forkserver._forkserver._forkserver_pid     # multiprocessing's one server
    except Exception:
        return None
