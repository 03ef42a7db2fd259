"""The ``amqp-codec`` command line: one subcommand per tool, each in its own module.

* ``amqp-codec decode FILE...`` (:mod:`amqp_codec.inspect.command`) prints captured AMQP
  byte streams, or a pcap file's connections, frame by frame;
* ``amqp-codec analyze CAPTURE... --out DIR`` (:mod:`amqp_codec.analyze.command`) runs the
  capture analysis on Spark: Parquet tables and ``report.html``.

This module only builds the parser and hands the arguments to the command's ``run``. A
usage error is one line and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from types import ModuleType
from typing import NoReturn

from .analyze import command as analyze_command
from .inspect import command as decode_command

__all__ = ["COMMANDS", "build_parser", "main"]

#: Each subcommand's module: HELP, DESCRIPTION, EPILOG, add_arguments(parser) and
#: run(args, out, err) -> exit status; FORMATTER, if its help text is laid out by hand.
COMMANDS: dict[str, ModuleType] = {"decode": decode_command, "analyze": analyze_command}

#: A usage error, for every command.
EXIT_USAGE = 2

#: The protocol versions the codec reads, as the help names them.
VERSIONS_TEXT = "AMQP 0-9-1, 0-8 and the 0-10 draft 99-0"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("amqp-codec")
    except PackageNotFoundError:
        return "unknown"


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit status 2), not the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``amqp-codec`` argument parser."""
    parser = _Parser(
        prog="amqp-codec",
        description=f"Tools of amqp-codec, the sans-IO codec for {VERSIONS_TEXT}.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"amqp-codec {_version()} ({VERSIONS_TEXT})",
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    for name, command in COMMANDS.items():
        sub = commands.add_parser(
            name,
            help=command.HELP,
            description=command.DESCRIPTION.format(versions=VERSIONS_TEXT),
            epilog=command.EPILOG,
            formatter_class=getattr(command, "FORMATTER", argparse.HelpFormatter),
        )
        command.add_arguments(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``amqp-codec``; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    status: int = COMMANDS[args.command].run(args, sys.stdout, sys.stderr)
    return status
