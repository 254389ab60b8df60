"""libclang in a helper process, so that an abort inside it costs one unit's FP facts and
not the run.

libclang is C++ that ends the process on some inputs: "LLVM ERROR: out of memory" (exit
134) on a doubling macro chain, a segfault on a stack it cannot grow. Python cannot catch
either, and every other file's findings of the run would be lost with it. So the parse
and the walk of :mod:`fptypes` run in a small long-lived helper, forked from the process
that analyses the file the first time a unit reaches libclang (only those units pay the
round trip: plain bytes in, plain :class:`~cudalint.analysis.fp.facts.FpFacts` out). The
helper runs under the file's memory budget (an address-space limit) and the parent waits
at most the file's time budget; a helper that dies or runs out of time is reaped, the
unit gets a CL000 that says why, and the next unit starts a fresh helper.

The budgets are :class:`~cudalint.config.Settings` ``memory_limit_mb`` and
``time_limit_s`` (``memory-limit-mb``, ``time-limit-s`` in ``[tool.cudalint]``).
"""
from __future__ import annotations

import os
import signal
from functools import lru_cache

# the memory a helper may add to what it inherits (MB), and how long one unit may take
MEMORY_MB = 2048
TIMEOUT_S = 60.0


class HelperDied(RuntimeError):
    """The helper ended (a signal, an abort, its memory budget) or ran out of time while
    analysing a unit; the message says which, in words for a CL000."""


class _Helper:
    def __init__(self, memory_mb: int):
        from multiprocessing import Pipe
        self.owner = os.getpid()
        self.memory_mb = memory_mb
        self.conn, child = Pipe()
        import threading
        # the death signal follows the forking thread: only the main thread's lives as
        # long as the process (a server's pool thread may end before its helper should)
        main = threading.current_thread() is threading.main_thread()
        pid = os.fork()
        if pid == 0:                            # the helper: never returns
            try:
                if main:
                    die_with_parent(self.owner)
                self.conn.close()
                _serve(child, memory_mb)
            finally:
                os._exit(0)
        child.close()
        self.pid = pid
        self.retired = False

    def call(self, fn, args: tuple, timeout: float):
        try:
            self.conn.send((fn, args))
            ready = self.conn.poll(timeout)
        except (OSError, EOFError):
            ready = True                        # dead already: recv says so
        if not ready:
            self.close(kill=True)
            raise HelperDied(f"libclang took more than {timeout:g} s (time-limit-s); "
                             "the unit's floating-point types were not analysed")
        try:
            ok, value, retired = self.conn.recv()
        except (OSError, EOFError):
            why = self.close(kill=True)
            raise HelperDied(f"libclang ended its process ({why}); the unit's "
                             "floating-point types were not analysed") from None
        if retired:
            self.close()
            self.retired = True
        if not ok:
            raise value
        return value

    def close(self, kill: bool = False) -> str:
        """Ends the helper; how it ended, in words."""
        try:
            self.conn.close()
        except OSError:
            pass
        if kill:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            _, status = os.waitpid(self.pid, 0)
        except OSError:
            return "status unknown"
        return _ending(status)


def die_with_parent(parent: int) -> None:
    """This forked process gets SIGKILL when ``parent`` (the process, on its forking
    thread) ends, however it ends: a killed ``cudalint`` must not leave its workers and
    helpers running, re-parented, forever (Linux prctl(PR_SET_PDEATHSIG)). If the parent
    is already gone, exit now."""
    import sys
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)        # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError, TypeError):
            pass
    if os.getppid() != parent:
        os._exit(1)


def _ending(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        what = {"SIGABRT": "an abort, e.g. LLVM ERROR: out of memory",
                "SIGSEGV": "a segmentation fault", "SIGKILL": "killed"}.get(name)
        return f"{name}: {what}" if what else name
    return f"exit status {code}"


def _serve(conn, memory_mb: int) -> None:
    """The helper's loop: (function, arguments) in, (True, value) or (False, exception)
    out, until the parent closes its end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the parent decides when to stop
    keep = conn.fileno()
    # the pipes of the process it was forked from stay theirs: whoever waits on them sees
    # the end of the process that owns them, not of this helper
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 16)
    limit_memory(memory_mb)
    start = _resident()
    while True:
        try:
            fn, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            ok, value = True, fn(*args)
        except MemoryError:
            ok, value = False, HelperDied(f"libclang needed more than memory-limit-mb "
                                          f"({memory_mb} MB); the unit's floating-point "
                                          "types were not analysed")
        except Exception as exc:                # noqa: BLE001 (re-raised in the parent)
            ok, value = False, exc
        retire = _swollen(start)
        try:
            conn.send((ok, value, retire))
        except (EOFError, OSError):
            return
        except Exception as exc:                # noqa: BLE001 (an exception pickle refuses)
            conn.send((False, RuntimeError(str(exc)), retire))
        if retire:
            return


# a helper that holds this much more than when it started, after a unit, hands its
# memory back by ending (the allocator keeps what a large parse freed)
RETIRE_MB = 256


def _resident() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _swollen(start: int) -> bool:
    if _resident() - start <= RETIRE_MB << 20:
        return False
    try:                                        # give back what was freed, if it can be
        import ctypes
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    return _resident() - start > RETIRE_MB << 20


def limit_memory(memory_mb: int) -> None:
    """An address-space limit of what the process holds now plus ``memory_mb``: beyond it
    an allocation fails (MemoryError in Python, an abort in C++) in this process only."""
    if memory_mb <= 0:
        return
    import resource
    try:
        with open("/proc/self/statm", "rb") as f:
            held = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        held = 0
    want = held + (memory_mb << 20)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    if soft != resource.RLIM_INFINITY and soft <= want:
        return
    try:
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    except (ValueError, OSError):
        pass


_helper: _Helper | None = None


def call(fn, args: tuple, memory_mb: int | None = None, timeout: float | None = None):
    """``fn(*args)`` in the helper (``fn`` a module-level function: it is pickled by
    name): its value, or its exception re-raised here, or :class:`HelperDied`. Where no
    process can be forked, ``fn`` runs here."""
    global _helper
    memory_mb = MEMORY_MB if memory_mb is None else memory_mb
    timeout = TIMEOUT_S if timeout is None else timeout
    helper = _helper
    if helper is not None and (helper.owner != os.getpid() or helper.memory_mb != memory_mb):
        if helper.owner == os.getpid():
            helper.close(kill=True)
        else:                                   # inherited through a fork: not ours
            try:
                helper.conn.close()
            except OSError:
                pass
        helper = _helper = None
    if helper is None:
        try:
            helper = _helper = _Helper(memory_mb)
        except OSError:
            return fn(*args)
        _stop_at_exit()
    try:
        return helper.call(fn, args, timeout)
    except HelperDied:
        _helper = None
        raise
    finally:
        if helper.retired:
            _helper = None


@lru_cache(maxsize=1)
def _stop_at_exit() -> None:
    import atexit
    atexit.register(stop, False)


def helper_pid() -> int | None:
    """The running helper's process id (the fuzz campaign reads its peak memory)."""
    return _helper.pid if _helper is not None and _helper.owner == os.getpid() else None


def stop(kill: bool = True) -> None:
    """Ends this process's helper (``kill=False``: it finishes and exits on its own) and
    reaps it, so that its CPU time counts in the parent's children."""
    global _helper
    if _helper is not None and _helper.owner == os.getpid():
        _helper.close(kill=kill)
    _helper = None
