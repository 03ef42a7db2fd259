"""Nothing lost: the job writes into a staging folder and its outputs replace ``--out``'s at the end.

:func:`staged_output` gives the job a fresh, hidden folder on the same file system as
``--out`` (beside it, or inside it when only ``--out`` itself is writable or is a mount
point). When the job succeeds each of its outputs (the table folders, ``report.html``,
``summary.json``) is renamed into ``--out``, replacing the previous run's; when it fails or
is interrupted the staging folder is removed and ``--out`` is exactly as it was.

Only what a run of this job wrote is ever deleted: the staging folder's contents, and the
replaced outputs of a previous run, whose table folders
:func:`~amqp_codec.analyze.preflight.check_out` has checked hold nothing else. A file that
turns up there anyway is kept, in a ``.amqp-codec-previous-*`` folder inside ``--out``.
Outputs that another run put into ``--out`` while this one ran are not the ones the user
let it replace: they stay, and this run's are left in its staging folder, which the error
names.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from .preflight import OUTPUT_NAMES, AnalyzeUsageError, is_spark_output

__all__ = ["staged_output"]

_STAGING_SUFFIX = ".amqp-codec-partial"
_PREVIOUS_PREFIX = ".amqp-codec-previous-"


def _staging_parent(out: str) -> str:
    """Where to create the staging folder: beside ``out`` if that is on the same file system
    (a rename is then atomic) and writable, else inside ``out``."""
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(out):
        os.makedirs(parent, exist_ok=True)
        return parent
    same_device = os.stat(parent).st_dev == os.stat(out).st_dev
    if same_device and os.access(parent, os.W_OK | os.X_OK):
        return parent
    return out


@contextmanager
def staged_output(out: str) -> Iterator[str]:
    """A fresh folder to write the run's outputs into; moved into ``out`` on success.

    Any exception (``KeyboardInterrupt`` too) removes the staging folder and leaves ``out``
    untouched.
    """
    name = os.path.basename(os.path.abspath(out))
    parent = _staging_parent(out)
    while True:  # not tempfile.mkdtemp: its folder is private (0700), the output is not
        staging = os.path.join(parent, f".{name}.{secrets.token_hex(4)}{_STAGING_SUFFIX}")
        try:
            os.mkdir(staging)
            break
        except FileExistsError:
            continue
    before = _outputs(out)  # what the user let this run replace (checked by preflight)
    kept = False
    try:
        yield staging
        if _outputs(out) != before:
            kept = True
            raise AnalyzeUsageError(
                f"the outputs in {out} changed while this run ran (another run's?): nothing "
                f"there was replaced; this run's outputs are in {staging}"
            )
        _commit(staging, out)
    finally:
        # After a commit only the emptied folder is left; after a failure, what the job wrote.
        if not kept:
            shutil.rmtree(staging, ignore_errors=True)


def _outputs(out: str) -> dict[str, int]:
    """The outputs of a run that ``out`` holds, by name: their inode numbers (another run's
    replacing them changes those)."""
    found: dict[str, int] = {}
    for name in OUTPUT_NAMES:
        try:
            found[name] = os.lstat(os.path.join(out, name)).st_ino
        except OSError:
            continue
    return found


def _commit(staging: str, out: str) -> None:
    """Move every output in ``staging`` into ``out``, replacing the previous run's."""
    if not os.path.lexists(out):
        try:
            os.rename(staging, out)
            return
        except OSError:
            if not os.path.isdir(out):  # not a race with another run creating it
                raise
    previous = tempfile.mkdtemp(prefix=_PREVIOUS_PREFIX, dir=out)
    moved: list[str] = []  # names whose previous version is in ``previous``
    placed: list[str] = []  # names whose new version is in ``out``
    try:
        for entry in sorted(os.listdir(staging)):
            target = os.path.join(out, entry)
            if os.path.lexists(target):
                os.rename(target, os.path.join(previous, entry))
                moved.append(entry)
            os.rename(os.path.join(staging, entry), target)
            placed.append(entry)
    except BaseException:
        # Put the previous outputs back: a half-replaced analysis mixes two runs' tables.
        for entry in placed:
            os.rename(os.path.join(out, entry), os.path.join(staging, entry))
        for entry in moved:
            os.rename(os.path.join(previous, entry), os.path.join(out, entry))
        os.rmdir(previous)
        raise
    _remove_previous(previous)


def _remove_previous(previous: str) -> None:
    """Delete a previous run's outputs, except any file the job did not write."""
    for entry in os.listdir(previous):
        path = os.path.join(previous, entry)
        if entry not in OUTPUT_NAMES:
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            for name in os.listdir(path):
                if is_spark_output(name) and not os.path.isdir(os.path.join(path, name)):
                    os.remove(os.path.join(path, name))
            if not os.listdir(path):
                os.rmdir(path)
        elif entry in OUTPUT_NAMES[4:] and os.path.isfile(path):
            os.remove(path)
    if not os.listdir(previous):
        os.rmdir(previous)
