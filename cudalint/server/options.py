"""The language server's options: ``initializationOptions`` and
``workspace/didChangeConfiguration`` parsed into ``ServerOptions`` (the server's own
options, and ``[tool.cudalint]`` settings laid over each file's configuration)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from cudalint.config import OPTIONS, ConfigError
from cudalint.server.worker import DEFAULT_TIMEOUT_S

DEFAULT_DEBOUNCE_MS = 50
DEFAULT_FULL_DELAY_MS = 400


# ---------------------------------------------------------------------------------------
# Options from initializationOptions / workspace/didChangeConfiguration.

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _option_key(key: str) -> str:
    return _CAMEL.sub(r"-\1", key).lower().replace("_", "-")


@dataclass
class ServerOptions:
    overrides: dict[str, Any] = field(default_factory=dict)   # Settings fields
    configuration: str | None = None         # use only this config file
    unsafe_fixes: bool = False               # source.fixAll applies unsafe fixes too
    debounce_ms: int = DEFAULT_DEBOUNCE_MS
    full_delay_ms: int = DEFAULT_FULL_DELAY_MS   # whole-file analysis after an edit
    timeout_s: float = DEFAULT_TIMEOUT_S
    diagnostic_mode: str = "auto"            # "auto" | "push" | "pull"


SERVER_KEYS = {"configuration", "unsafe-fixes", "debounce", "full-delay", "timeout",
               "diagnostic-mode", "settings"}


def parse_options(raw: Any) -> ServerOptions:
    """``{"settings": {<[tool.cudalint] keys>}, "unsafeFixes": ..., ...}``; the settings
    may also sit at the top level or under ``"cudalint"``. Raises ConfigError."""
    where = "initializationOptions"
    if raw is None:
        return ServerOptions()
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be an object, got {type(raw).__name__}")
    if isinstance(raw.get("cudalint"), dict):
        raw = raw["cudalint"]
    opts = ServerOptions()
    table: dict[str, Any] = {}
    for key, value in raw.items():
        norm = _option_key(key)
        if norm == "settings":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: `settings` must be an object")
            table.update({_option_key(k): v for k, v in value.items()})
        elif norm == "configuration":
            if value is not None and not isinstance(value, str):
                raise ConfigError(f"{where}: `configuration` must be a path")
            opts.configuration = value or None
        elif norm == "unsafe-fixes":
            opts.unsafe_fixes = bool(value)
        elif norm in ("debounce", "full-delay"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not 0 <= value <= 600_000:            # NaN and infinity fail too
                raise ConfigError(f"{where}: `{key}` must be milliseconds (0 to 600000)")
            if norm == "debounce":
                opts.debounce_ms = int(value)
            else:
                opts.full_delay_ms = int(value)
        elif norm == "timeout":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not 0 < value <= 86_400:
                raise ConfigError(f"{where}: `timeout` must be seconds (up to 86400)")
            opts.timeout_s = float(value)
        elif norm == "diagnostic-mode":
            if value not in ("auto", "push", "pull"):
                raise ConfigError(f"{where}: `diagnosticMode` must be auto, push or pull")
            opts.diagnostic_mode = value
        elif norm in OPTIONS:
            table[norm] = value
        else:
            raise ConfigError(f"{where}: unknown option `{key}` (known: "
                              f"{', '.join(sorted(SERVER_KEYS | set(OPTIONS)))})")
    for key, value in table.items():
        option = OPTIONS.get(key)
        if option is None:
            raise ConfigError(f"{where}: unknown setting `{key}` (known: "
                              f"{', '.join(sorted(OPTIONS))})")
        name, convert = option
        opts.overrides[name] = convert(key, value, where)
    return opts
