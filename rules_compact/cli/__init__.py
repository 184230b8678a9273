"""The ``rules-compact`` command: the parser, global options, and errors as one line.

One module per command group (``apply``; ``validate``; ``explain``; ``stats``, ``replay`` and
``diff`` over corpora; ``tools``, ``audit`` and ``schema``; ``presets``; ``serve``), each with ``register(add)``
adding its subcommands; ``output`` prints, ``inputs`` reads."""

from __future__ import annotations

import argparse
import io
import os
import signal
import sys
import threading
from typing import Sequence

from .. import __version__
from ..documents import SURROGATES
from ..errors import ConfigError, RulesCompactError
from . import apply, corpus, explain, presets, serve, tools, validate
from .output import BAD_INPUT, PROG

__all__ = ["main", "build_parser", "PROG"]

COMMANDS = (apply, validate, explain, tools, corpus, presets, serve)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, exit code 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _global_options(default) -> argparse.ArgumentParser:
    """The options every command takes, before or after its name (``default``: SUPPRESS after
    it, so that a subcommand without them keeps what was given before it)."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--strict", action="store_true", default=default,
                         help="a plugin that fails to load is an error; validate: warn about unknown tools")
    return options


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Compact LLM agent conversations with YAML rules.",
                     parents=[_global_options(False)])
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    after = _global_options(argparse.SUPPRESS)

    def add(name: str, **kwargs) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[after], **kwargs)

    for module in COMMANDS:
        module.register(add)
    return parser


class Terminated(BaseException):
    """SIGTERM, raised like KeyboardInterrupt so that a write in progress removes its temp file."""


def _terminate(signum, frame):
    raise Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main_thread else None
    errors = _escape_surrogates()
    try:
        code = args.func(args)
        sys.stdout.flush()
        return code
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return exc.exit_code
    except RulesCompactError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # the reader went away (| head): not an error
        _drop_stdout()
        return 0
    except OSError as exc:
        if exc.filename is not None:  # files are reported as InputError; this is unexpected
            raise
        _drop_stdout()  # stdout failed (a full disk): the output is incomplete
        print(f"{PROG}: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except Terminated:
        return 128 + signal.SIGTERM
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
        _restore(errors)


def _escape_surrogates() -> dict:
    """Write a lone surrogate (in JSON output or a tool name) as ``\\udXXX`` instead of failing;
    returns each stream's previous error handler, for ``_restore``."""
    before = {}
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            before[stream] = stream.errors
            stream.reconfigure(errors=SURROGATES)
    return before


def _restore(errors: dict) -> None:
    for stream, handler in errors.items():
        try:
            stream.reconfigure(errors=handler)
        except (OSError, ValueError):  # it flushes first: a failing or closed stream
            pass


def _drop_stdout() -> None:
    """Send what is still buffered for stdout to /dev/null, so that exiting does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a file (a test's capture)
        pass
