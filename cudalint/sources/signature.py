"""A regular file's stat signature: what stands for its content while it is old enough.

Shared by the result cache (cudalint.cache) and the project index (cudalint.project), which
records the headers a file's facts came from.
"""
from __future__ import annotations

import os
import stat as _stat

Sig = tuple  # (mtime_ns, size, inode, ctime_ns)


def stat_sig(st: os.stat_result) -> Sig:
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)


def file_sig(path: str | os.PathLike) -> Sig | None:
    """The signature of a regular file, None if there is none (missing, a folder)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return stat_sig(st) if _stat.S_ISREG(st.st_mode) else None
