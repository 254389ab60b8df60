"""``cudalint server``'s entry: the workers' forkserver (``cudalint.server.forkserver``) is
started first, and the protocol libraries and the server are imported while it imports
the engine and compiles the queries (lsprotocol's types alone are ~0.4 s of CPU), so the
two overlap on a machine with more than one core: the first diagnostics after didOpen
wait for both."""
from __future__ import annotations


def serve(use_process: bool = True) -> None:
    """Run the language server on stdin/stdout until the client says exit."""
    if use_process:
        from cudalint.server.forkserver import prestart
        prestart()
    from cudalint.server.app import serve as run
    run(use_process)
