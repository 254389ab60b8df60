"""Command line, with ruff's manners.

    cudalint [check] [PATH ...]      lint (default: the current folder)
    cudalint rule CODE|NAME | --all  print a rule's documentation
    cudalint server                  run the language server (stdio)
    cudalint clean                   remove the caches under the current folder

Exit codes: 0 no findings, 1 findings (or, with --diff, files that would change),
2 usage, configuration or internal error.
"""
from __future__ import annotations

import argparse
import io
import os
import threading
import sys
from pathlib import Path

from cudalint import __version__

SUBCOMMANDS = ("check", "rule", "occupancy", "server", "version", "clean", "help")
FORMATS = ("full", "concise", "json", "json-lines", "sarif", "github", "junit", "gitlab",
           "rdjson")


class UsageError(Exception):
    pass


def _codes(value: str) -> list[str]:
    return [c.strip().upper() for c in value.split(",") if c.strip()]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cudalint", description="Static analysis for CUDA C++ "
                                "in Python projects.")
    p.add_argument("--version", action="version", version=f"cudalint {__version__}")
    sub = p.add_subparsers(dest="command")

    check = sub.add_parser("check", help="lint files (the default command)")
    check.add_argument("paths", nargs="*", help="files or folders (default: .); - for stdin")
    check.add_argument("--select", type=_codes, action="extend", default=None,
                       help="rule codes or prefixes to enable (replaces the default set)")
    check.add_argument("--ignore", type=_codes, action="extend", default=None,
                       help="rule codes or prefixes to disable (added to the config's)")
    check.add_argument("--extend-select", type=_codes, action="extend", default=None,
                       help="rule codes or prefixes to enable on top of the selection")
    check.add_argument("--output-format", choices=FORMATS, default=None,
                       help="how findings are printed (default: full; concise with -q)")
    check.add_argument("-o", "--output-file", default=None,
                       help="write the report to this file instead of standard output")
    check.add_argument("--statistics", action="store_true",
                       help="count findings per rule instead of listing them (text, or "
                            "JSON with --output-format json/json-lines)")
    check.add_argument("--show-metrics", action="store_true",
                       help="print each finding's numbers (the JSON formats always hold "
                            "them) under it in the full format")
    check.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                       help="colour and bold in the text formats (default: auto, off for a "
                            "pipe or with NO_COLOR set)")
    check.add_argument("--fix", action="store_true", default=None, help="apply safe fixes")
    check.add_argument("--no-fix", dest="fix", action="store_false",
                       help="do not apply fixes (the default)")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="also offer and apply unsafe fixes")
    check.add_argument("--diff", action="store_true",
                       help="print the changes --fix would make; write nothing")
    check.add_argument("--add-noqa", action="store_true",
                       help="add a noqa comment for every finding shown (joined to the "
                            "line's noqa comment when it has one); fixes nothing")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
    check.add_argument("--exit-non-zero-on-fix", action="store_true",
                       help="exit 1 when any fix was applied, even if nothing remains")
    check.add_argument("--stdin-filename", default=None,
                       help="the name of the file given on standard input")
    check.add_argument("--config", default=None, help="use this config file only")
    check.add_argument("--no-cache", action="store_true",
                       help="neither read nor write .cudalint_cache")
    check.add_argument("--arch", default=None, help="target architecture, e.g. sm_90")
    check.add_argument("--block-size", default=None,
                       help="default block shape when no launch says it, e.g. 256 or 32,8")
    check.add_argument("--ptxas-log", action="append", default=None,
                       help="ptxas -v output or a build log to read (CL3xx)")
    check.add_argument("--ptxas", action="store_true", default=None,
                       help="compile the device code with nvcc -Xptxas -v (CL3xx)")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply exclude to files named on the command line too")
    check.add_argument("-j", "--jobs", type=int, default=None,
                       help="worker processes (default: by the number of files and CPUs)")
    check.add_argument("-q", "--quiet", action="store_true",
                       help="concise findings, no summary")
    check.add_argument("--show-unread", action="store_true",
                       help="list each CUDA compile call in Python whose source was not "
                            "analysed, with the reason")

    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?", help="a rule code (CL104) or name "
                      "(legacy-warp-intrinsic)")
    rule.add_argument("--all", action="store_true", help="print every rule's documentation")
    rule.add_argument("--output-format", choices=("text", "json"), default="text",
                      help="text (default) or json")

    occ = sub.add_parser("occupancy", help="occupancy of a kernel configuration, and the "
                         "table of occupancy vs registers per thread")
    occ.add_argument("--arch", default="sm_90", help="e.g. sm_80, sm_90 (default sm_90)")
    occ.add_argument("--regs", type=int, default=None, help="registers per thread")
    occ.add_argument("--block", type=int, required=True, help="threads per block")
    occ.add_argument("--smem", type=int, default=0,
                     help="shared memory per block in bytes (static + dynamic)")
    occ.add_argument("--barriers", type=int, default=0, help="named barriers per block")
    occ.add_argument("--output-format", choices=("text", "json"), default="text",
                     help="text (default) or json")
    sub.add_parser("server", help="run the language server on stdio")
    sub.add_parser("version", help="print the version")
    sub.add_parser("clean", help="remove the caches (.cudalint_cache) in the current folder "
                   "and its subfolders")
    sub.add_parser("help", help="print this help")
    return p


def _unknown_command(word: str) -> bool:
    """A bare word that names no subcommand and no file is a mistyped command (`cudalint
    hlep`), not a path to lint: ruff says so too."""
    return not word.startswith("-") and not os.path.exists(word) and \
        all(c.isalnum() or c in "-_" for c in word)


_SIGINT = {"raised": False, "watchdog": False}
_UNWIND_SECONDS = 1.0
_ENDING = threading.Lock()      # held by whichever of main and the watchdog ends the run


def _on_sigint(signum, frame) -> None:
    """The first Ctrl-C unwinds the run (KeyboardInterrupt, caught in :func:`main`); one
    during that unwinding, or after main returned (exit handlers), ends the process.

    Python ignores an exception raised where nothing can catch it (a weakref callback, a
    `__del__`): a KeyboardInterrupt landing there is lost and the run would go on. So on
    the command line a watchdog thread ends the process if unwinding has not done so
    within a second."""
    if _SIGINT["raised"]:
        os._exit(130)
    _SIGINT["raised"] = True
    if _SIGINT["watchdog"]:
        timer = threading.Timer(_UNWIND_SECONDS, _hard_exit)
        timer.daemon = True
        timer.start()
    raise KeyboardInterrupt


def _unraisable(args) -> None:
    """sys.unraisablehook on the command line: a KeyboardInterrupt that Python could not
    raise (it landed in a weakref callback or a ``__del__``) ends the run now, quietly,
    instead of printing "Exception ignored in ..." and going on; anything else is
    reported as Python reports it."""
    if args.exc_type is not None and issubclass(args.exc_type, KeyboardInterrupt):
        _hard_exit()
        return                          # main is ending the run already
    sys.__unraisablehook__(args)


def _hard_exit() -> None:
    """The interrupt was swallowed: kill the worker processes and the libclang helper,
    say so in one line and exit 130 without unwinding."""
    if not _ENDING.acquire(blocking=False):
        return                          # main is ending the run already
    try:
        import multiprocessing
        for child in multiprocessing.active_children():
            child.kill()
    except Exception:
        pass
    _flushed_exit(_interrupted())


def _flushed_exit(code: int) -> None:
    """End the process now (no unwinding, no exit handlers) with what was printed out."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _interrupted() -> int:
    """Exit 130 with one line, whatever phase the interrupt reached: the libclang helper
    of this process is killed (the workers are, by the runner)."""
    helper = sys.modules.get("cudalint.analysis.fp.clang_process")
    if helper is not None:
        try:
            helper.stop(kill=True)
        except Exception:
            pass
    try:
        print("cudalint: interrupted", file=sys.stderr)
    except (OSError, ValueError):
        pass
    return 130


def main(argv: list[str] | None = None) -> int:
    import signal
    command_line = argv is None
    try:
        previous = signal.signal(signal.SIGINT, _on_sigint)
    except ValueError:                    # not the main thread (an embedding program)
        previous = None
    _SIGINT["raised"] = False
    _SIGINT["watchdog"] = command_line and previous is not None
    if _SIGINT["watchdog"]:
        sys.unraisablehook = _unraisable
    try:
        code = _main(argv)
        if _SIGINT["raised"]:     # an interrupt some guard took for a failure
            raise KeyboardInterrupt
        return code
    except KeyboardInterrupt:
        _ENDING.acquire()
        try:
            code = _interrupted()
        finally:
            if not command_line:
                _ENDING.release()
        if command_line:
            # exit here: CPython ends a process whose KeyboardInterrupt it saw anywhere
            # with a SIGINT of its own at shutdown (subprocess sees -2, not 130)
            _flushed_exit(code)
        return code
    finally:
        if command_line:
            _SIGINT["raised"] = True      # from here on a Ctrl-C just ends the process
        elif previous is not None:
            signal.signal(signal.SIGINT, previous)


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and _unknown_command(argv[0]) and argv[0] not in SUBCOMMANDS:
        print(f"cudalint: error: unrecognized subcommand `{argv[0]}` (commands: "
              f"{', '.join(SUBCOMMANDS)}; to lint a file of that name, use `cudalint check "
              f"{argv[0]}`)", file=sys.stderr)
        return 2
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help",
                                                                    "--version")):
        argv.insert(0, "check")
    try:
        try:
            args = _parser().parse_args(argv)
        except SystemExit as exc:
            return 0 if exc.code == 0 else 2
        return _command(args)
    except BrokenPipeError:
        # the reader went away (`cudalint . | head -1`): end quietly, exit 0 as ruff does;
        # stdout goes to /dev/null so that the interpreter's last flush cannot fail again
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 0


def _command(args) -> int:
    try:
        if args.command == "help":
            _parser().print_help()
            return 0
        if args.command == "clean":
            return _clean()
        if args.command == "rule":
            return _rule(args)
        if args.command == "occupancy":
            return _occupancy(args)
        if args.command == "version":
            print(f"cudalint {__version__}")
            return 0
        if args.command == "server":
            from cudalint.server.start import serve
            serve()
            return 0
        import gc
        threshold = gc.get_threshold()
        gc.set_threshold(10000, 10, 10)     # fewer collections (see runner._tune_gc)
        try:
            return _check(args)
        finally:
            gc.set_threshold(*threshold)
    except UsageError as exc:
        print(f"cudalint: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as exc:   # the last line of defence: a clear one-line error
        if _SIGINT["raised"]:  # what a Ctrl-C became on its way up (a RuntimeError
            raise KeyboardInterrupt from None    # from a class being created, say)
        from cudalint.config import ConfigError
        if isinstance(exc, ConfigError):
            print(f"cudalint: error: {exc}", file=sys.stderr)
        else:
            print(f"cudalint: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
            if os.environ.get("CUDALINT_DEBUG"):
                raise
        return 2


def _clean() -> int:
    """`cudalint clean`: remove every .cudalint_cache under the current folder, as
    `ruff clean` removes .ruff_cache."""
    import shutil
    from cudalint.cache import CACHE_DIR
    for folder, dirs, _ in os.walk("."):
        if CACHE_DIR in dirs:
            dirs.remove(CACHE_DIR)
            where = os.path.normpath(os.path.join(folder, CACHE_DIR))
            print(f"Removing cache at: {where}", file=sys.stderr)
            shutil.rmtree(where, ignore_errors=True)
        dirs[:] = [d for d in dirs if d not in (".git", ".hg", ".svn")]
    return 0


def _rule(args) -> int:
    from cudalint.rule import all_rules
    rules = all_rules()
    if args.all:
        chosen = list(rules.values())
    elif args.code:
        by_name = {r.name: r for r in rules.values()}
        rule = rules.get(args.code.upper()) or by_name.get(args.code.lower())
        if rule is None:
            from cudalint.selection import closest_selector
            near = closest_selector(args.code)
            hint = f"closest: `{near}` ({rules[near].name}); " if near in rules else ""
            raise UsageError(f"unknown rule `{args.code}` ({hint}see `cudalint rule "
                             "--all`)")
        chosen = [rule]
    else:
        raise UsageError("give a rule code (e.g. `cudalint rule CL104`) or --all")
    if args.output_format == "json":
        import json
        print(json.dumps([{"code": r.code, "name": r.name, "severity": r.severity,
                           "default_enabled": r.default_enabled, "fix": r.fix_safety,
                           "explanation": r.doc()} for r in chosen], indent=2))
        return 0
    for i, r in enumerate(chosen):
        if i:
            print()
        state = "" if r.default_enabled else " (off by default)"
        # fix_safety "safe": every fix the rule offers is safe; "unsafe": some or all
        # are (tests/test_manners.py checks both against the fixtures' fixes)
        fix = {"safe": "Fix is available for some findings, and safe.", "unsafe":
               "Fix is available for some findings; unsafe for some or all of them (use "
               "--unsafe-fixes; see \"Fix safety\")."}.get(r.fix_safety or "", "No fix.")
        print(f"# {r.name} ({r.code}){state}\n\nDefault severity: {r.severity}. {fix}\n")
        print(r.doc())
    return 0


def _occupancy(args) -> int:
    """`cudalint occupancy --arch sm_90 --regs 72 --block 256 --smem 0`."""
    from cudalint.analysis.ptxas.occupancy import ARCHS, occupancy, occupancy_table
    if args.arch not in ARCHS:
        raise UsageError(f"unknown architecture `{args.arch}`; known: {', '.join(ARCHS)}")
    if args.block <= 0 or (args.regs is not None and args.regs <= 0) or args.smem < 0:
        raise UsageError("--block and --regs must be positive, --smem not negative")
    table = occupancy_table(args.arch, args.block, args.smem, 0, args.barriers)
    occ = occupancy(args.arch, args.regs, args.block, args.smem, 0, args.barriers) \
        if args.regs is not None else None
    if args.output_format == "json":
        import json
        out: dict = {"arch": args.arch, "block": args.block, "smem": args.smem,
                     "table": [{"registers_from": a, "registers_to": b, "active_warps": w,
                                "occupancy": round(o, 4), "limiter": lim}
                               for a, b, w, o, lim in table]}
        if occ is not None:
            out["kernel"] = {"registers": occ.registers, "active_blocks": occ.active_blocks,
                             "active_warps": occ.active_warps, "max_warps": occ.max_warps,
                             "occupancy": round(occ.occupancy, 4), "limiter": occ.limiter,
                             "blocks_allowed_by": occ.limits}
        print(json.dumps(out, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table
    console = Console(highlight=False, emoji=False)
    if occ is not None:
        console.print(f"{args.arch}, {args.block} threads/block, {args.regs} registers/thread,"
                      f" {args.smem} bytes shared/block: occupancy {occ.occupancy:.0%} "
                      f"({occ.active_warps} of {occ.max_warps} warps/SM, {occ.active_blocks} "
                      f"blocks), limited by {occ.limiter}", soft_wrap=True)
    grid = Table(title=f"occupancy vs registers per thread ({args.arch}, block {args.block}, "
                 f"smem {args.smem} B)")
    for col in ("registers", "warps/SM", "occupancy", "", "limited by"):
        grid.add_column(col, justify="right" if col not in ("", "limited by") else "left")
    for a, b, w, o, lim in table:
        here = occ is not None and a <= occ.registers <= b
        bar = "█" * round(o * 10)
        style = "bold" if here else None
        grid.add_row(f"{a}-{b}" if a != b else str(a), str(w), f"{o:.0%}", bar,
                     lim + (" ◀" if here else ""), style=style)
    console.print(grid)
    return 0


def _overrides(args) -> dict:
    from cudalint.config import _arch, _block, ConfigError
    o: dict = {}
    for name in ("select", "ignore", "extend_select"):
        value = getattr(args, name)
        if value is not None:
            from cudalint.selection import selector_error, unknown_selectors
            bad = unknown_selectors(tuple(value))
            if bad:
                raise UsageError(selector_error(bad[0], f"--{name.replace('_', '-')}",
                                                "command line"))
            o[name] = tuple(value)
    try:
        if args.arch:
            o["arch"] = _arch("--arch", args.arch, "command line")
            o["arch_set"] = True
        if args.block_size:
            o["block_size"] = _block("--block-size", [int(v) for v in
                                                      args.block_size.split(",")],
                                     "command line")
    except (ConfigError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    if args.ptxas:
        import shutil
        if shutil.which("nvcc") is None:
            from cudalint.analysis.ptxas.ptxas_run import nvcc_problem
            problem = nvcc_problem("nvcc")
            if problem:   # exit 2: the user asked for compilation explicitly
                raise UsageError(problem)
    if args.ptxas or args.ptxas_log:
        from dataclasses import replace as _r
        from cudalint.config import PtxasSettings
        o["ptxas"] = _r(PtxasSettings(), enabled=bool(args.ptxas),
                        log=tuple(args.ptxas_log or ()))
    return o


def _write_output(args, stream) -> None:
    if not args.output_file:
        return
    from cudalint.fixes import write_atomic
    try:
        write_atomic(Path(args.output_file), stream.getvalue())
    except OSError as exc:
        raise UsageError(f"cannot write {args.output_file} ({exc.strerror or exc})") from None


def _stdin_kind(data: bytes) -> str:
    """The language of standard input without a file name: Python when it parses as
    Python (CUDA C++ practically never does: braces, semicolons, `*` declarators)."""
    import ast
    import warnings
    try:
        text = data.decode("utf-8-sig")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # invalid escapes in CUDA strings
            ast.parse(text)
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return "cuda"
    return "python" if text.strip() else "cuda"


def _hidden_fixes(results, unsafe_fixes: bool) -> int:
    if unsafe_fixes:
        return 0
    return sum(1 for r in results for d in r.visible if d.fix is not None
               and not d.fix.is_safe)


def _diff_summary(would_fix: int, hidden: int) -> None:
    """What --diff did and did not show, on stderr (stdout is the patch), in ruff's words:
    "Would fix 1 error (2 additional fixes available with `--unsafe-fixes`)"."""
    more = (f" ({hidden} additional fix{'es' if hidden != 1 else ''} available with "
            "`--unsafe-fixes`)") if hidden else ""
    if would_fix:
        print(f"Would fix {would_fix} finding{'s' if would_fix != 1 else ''}{more}.",
              file=sys.stderr)
    elif hidden:
        print(f"No findings would be fixed{more.replace(' additional', '')}.",
              file=sys.stderr)


def _add_noqa(targets, results) -> int:
    """ruff's wording: "Added 3 noqa directives." on stderr; exit 0."""
    from cudalint.fixes import add_noqa_files
    try:
        added, _, skipped = add_noqa_files(targets, results)
    except OSError as exc:
        raise UsageError(f"cannot write a noqa comment ({exc.strerror or exc})") from None
    print(f"Added {added} noqa directive{'s' if added != 1 else ''}.", file=sys.stderr)
    if skipped:
        print(f"cudalint: warning: {skipped} finding{'s' if skipped != 1 else ''} could not "
              "take a noqa comment (a line continued with `\\`, or a Python line ending "
              "inside a string that is not CUDA source)", file=sys.stderr)
    return 0


def _check(args) -> int:
    from cudalint.config import ConfigResolver
    from cudalint.discovery import discover
    from cudalint.output import FORMATS as RENDER
    from cudalint.output.text import render_statistics
    from cudalint.runner import run
    from cudalint.sources.base import file_kind

    if args.diff and args.fix is None:
        args.fix = True
    from cudalint.selection import check_settings
    resolver = ConfigResolver(_overrides(args), Path(args.config) if args.config else None,
                              check=check_settings)
    paths = args.paths or (["-"] if args.stdin_filename else ["."])
    stdin_mode = paths == ["-"]

    # --output-file: rendered in memory, written atomically at the end (a run killed
    # midway leaves the previous report, never half of a new one)
    out_stream = io.StringIO() if args.output_file else sys.stdout
    from cudalint.output.console import make_console
    console = make_console(out_stream, forced_plain=out_stream is not sys.stdout,
                           color=args.color)
    fmt = args.output_format or ("concise" if args.quiet else "full")
    if args.statistics and fmt not in ("full", "concise", "json", "json-lines"):
        raise UsageError(f"--statistics prints text or JSON; not --output-format {fmt}")
    fixed_total = 0
    would_change = 0
    unbuilt: list[tuple[str, str]] = []      # .cu files no build compiles, not linted

    if args.add_noqa and (stdin_mode or args.fix or args.diff):
        raise UsageError("--add-noqa writes files: not with stdin, --fix or --diff")
    if stdin_mode:
        from cudalint.engine import lint_bytes
        from cudalint.fixes import fix_text, unified_diff
        name = args.stdin_filename or "-"
        data = sys.stdin.buffer.read()
        from cudalint.discovery import unsupported
        why = unsupported(name)
        if why is not None:          # not CUDA: nothing to say, the text goes back as is
            print(f"cudalint: warning: {name}: {why}; skipped", file=sys.stderr)
            if args.fix and not args.diff:
                sys.stdout.buffer.write(data)
            return 0
        path = Path(name)
        settings = resolver.for_path(path if args.stdin_filename else Path.cwd() / "_")
        kind = file_kind(name) or _stdin_kind(data)
        result = lint_bytes(name, data, settings, kind)
        results = [result]
        if args.fix or args.diff:
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError:
                text = None
            if text is not None:
                fixed, n = fix_text(name, text, settings, kind, args.unsafe_fixes)
                fixed_total += n
                if args.diff:
                    if fixed != text:
                        would_change += 1
                        sys.stdout.write(unified_diff(name, text, fixed))
                    _diff_summary(n, _hidden_fixes(results, args.unsafe_fixes))
                    return 1 if would_change else 0
                sys.stdout.write(fixed)
                results = [lint_bytes(name, fixed.encode("utf-8"), settings, kind)]
                remaining = sum(len(r.visible) for r in results)
                return 0 if args.exit_zero else int(bool(remaining) or (
                    args.exit_non_zero_on_fix and fixed_total > 0))
    else:
        lookup = None
        if not args.no_cache:
            import time
            from cudalint.runner import Lookup
            lookup = Lookup(time.time_ns())
        skipped: list[tuple[str, str]] = []
        try:
            targets = discover(paths, resolver,
                               includes=lookup.includes if lookup is not None else None,
                               skipped=skipped, unbuilt=unbuilt)
        except FileNotFoundError as exc:
            raise UsageError(str(exc)) from None
        for shown, why in skipped:
            print(f"cudalint: warning: {shown}: {why}; skipped", file=sys.stderr)
        if args.force_exclude:
            from cudalint.discovery import _excluded
            targets = [t for t in targets if not _excluded(t.path, t.settings)]
        results = run(targets, use_cache=not args.no_cache, jobs=args.jobs, lookup=lookup)
        if args.add_noqa:
            return _add_noqa(targets, results)
        if args.fix or args.diff:
            from cudalint.engine import FileResult, recall, remember, reuse_lints
            from cudalint.fixes import fix_text, unified_diff, write_atomic
            changed: dict[int, FileResult | None] = {}
            for i, (t, res) in enumerate(zip(targets, results)):
                if not any(d.fix is not None and (d.fix.is_safe or args.unsafe_fixes)
                           and not d.suppressed for d in res.diagnostics):
                    continue
                try:
                    text = t.path.read_bytes().decode("utf-8-sig")
                except (OSError, UnicodeDecodeError):
                    continue
                # each text is analysed once: fix_text's first pass is the lint the run
                # just made, and its last pass is the report of the fixed file
                with reuse_lints():
                    remember(t.display, text, t.settings, t.kind, res)
                    fixed, n = fix_text(t.display, text, t.settings, t.kind,
                                        args.unsafe_fixes)
                    after = recall(t.display, fixed, t.settings, t.kind)
                if fixed == text:
                    continue
                if args.diff:
                    would_change += 1
                    fixed_total += n
                    console.file.write(unified_diff(t.display, text, fixed))
                else:
                    try:
                        write_atomic(t.path, fixed)
                    except OSError as exc:      # full disk, read-only file: say so, stop
                        raise UsageError(f"cannot write the fixed {t.display} "
                                         f"({exc.strerror or exc}); it is unchanged") from None
                    fixed_total += n
                    changed[i] = after
            if args.diff:
                _write_output(args, out_stream)
                _diff_summary(fixed_total, _hidden_fixes(results, args.unsafe_fixes))
                return 1 if would_change else 0
            stale = [i for i, after in changed.items() if after is None]
            for i, after in changed.items():
                if after is not None:
                    results[i] = after
            if stale:
                again = run([targets[i] for i in stale], use_cache=not args.no_cache,
                            jobs=args.jobs)
                for i, res in zip(stale, again):
                    results[i] = res

    if args.statistics and fmt in ("json", "json-lines"):
        from cudalint.output import machine
        (machine.render_statistics_json if fmt == "json" else
         machine.render_statistics_json_lines)(results, console,
                                               unsafe_fixes=args.unsafe_fixes)
    elif args.statistics:
        render_statistics(results, console, unsafe_fixes=args.unsafe_fixes)
    else:
        # the summary counts what --fix fixed ("Found 3 findings (2 fixed, 1 remaining)")
        RENDER[fmt](results, console, unsafe_fixes=args.unsafe_fixes, quiet=args.quiet,
                    fixed=fixed_total, show_metrics=args.show_metrics)
    if fmt in ("full", "concise") and not args.statistics:
        from cudalint.output.text import render_unbuilt, render_unread
        if args.show_unread:
            render_unread(results, console)
        render_unbuilt(unbuilt, console, listed=args.show_unread, quiet=args.quiet)
    _write_output(args, out_stream)
    remaining = sum(len(r.visible) for r in results)
    if args.exit_zero:
        return 0
    if args.exit_non_zero_on_fix and fixed_total:
        return 1
    return 1 if remaining else 0
