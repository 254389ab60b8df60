"""The language server's worker processes come from a forkserver (cudalint.server.start),
which multiprocessing keeps alive until its last worker ends, and whose workers die with
it: a server killed with SIGKILL after its workers exist must leave no process behind."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc; the death signal is Linux's")


def _message(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_killed_server_leaves_no_worker(tmp_path):
    uri = (tmp_path / "a.cu").as_uri()
    server = subprocess.Popen([sys.executable, "-m", "cudalint", "server"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        server.stdin.write(_message({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                     "params": {"capabilities": {},
                                                "rootUri": tmp_path.as_uri()}}))
        server.stdin.write(_message({"jsonrpc": "2.0", "method": "initialized",
                                     "params": {}}))
        server.stdin.write(_message({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                                     "params": {"textDocument": {
                                         "uri": uri, "languageId": "cuda", "version": 1,
                                         "text": "__global__ void k(float* a) "
                                                 "{ a[threadIdx.x * 2] = 0.0f; }\n"}}}))
        server.stdin.flush()
        # the diagnostics of the open file: both workers exist by then (the warm-up jobs)
        read = b""
        deadline = time.monotonic() + 120
        while b"publishDiagnostics" not in read and time.monotonic() < deadline:
            chunk = os.read(server.stdout.fileno(), 65536)
            if not chunk:
                break
            read += chunk
        assert b"publishDiagnostics" in read
        for _ in range(100):
            family = _descendants(server.pid)
            if len(family) >= 3:       # the forkserver and its two workers at least
                break
            time.sleep(0.1)
        assert len(family) >= 3, family
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(p) for p in family):
        time.sleep(0.1)
    assert [p for p in family if _alive(p)] == []


def _started_by(server: int) -> list[int]:
    """Processes whose environment names ``server`` as the forkserver's server: the
    forkserver and every worker forked from it, whoever their parent is now."""
    needle = f"CUDALINT_FORKSERVER={server}".encode()
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if needle in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                    out.append(int(entry))
            except OSError:
                continue
    return out


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.15, 0.3, 0.6, 1.0])
def test_a_server_killed_while_its_workers_start_leaves_none(tmp_path, delay):
    """Killed right after `initialized`, while the forkserver forks the workers: a worker
    whose parent died before it set its death signal must see that and exit (it was
    left behind, re-parented to init, by a test that shut a server down this fast)."""
    server = subprocess.Popen([sys.executable, "-m", "cudalint", "server"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        server.stdin.write(_message({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                     "params": {"capabilities": {}}}))
        server.stdin.flush()
        read = b""
        deadline = time.monotonic() + 120
        while b'"id": 1' not in read and b'"id":1' not in read and \
                time.monotonic() < deadline:
            chunk = os.read(server.stdout.fileno(), 65536)
            if not chunk:
                break
            read += chunk
        server.stdin.write(_message({"jsonrpc": "2.0", "method": "initialized",
                                     "params": {}}))
        server.stdin.flush()
        time.sleep(delay)
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and [p for p in _started_by(server.pid) if _alive(p)]:
        time.sleep(0.1)
    assert [p for p in _started_by(server.pid) if _alive(p)] == []
