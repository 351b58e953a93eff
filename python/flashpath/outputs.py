"""One rule for every file a command writes (issue 31).

- An output never names an input of the same run: paths are compared
  resolved (symbolic links followed) and by (st_dev, st_ino), so a hard
  link or a symbolic link to an input is refused too.
- An output that exists is a regular file; a directory, a device node, a
  FIFO or a socket is refused, saying which. `--out /dev/null` is refused
  rather than written through: every output is written whole to a
  temporary file beside the target and renamed over it (so a reader never
  sees half a file and a failed run leaves the old file as it was), and a
  rename over /dev/null would replace the device node with a regular file
  (as root) or fail half-way (as a user). Leaving the option out prints
  to stdout, which a shell sends to /dev/null when asked.
- Two outputs of one run never name the same file.
- A folder's existing files are not overwritten unless asked
  (`check_folder`, `--force`).

`check_output` runs before the work (a bad name costs no simulation);
`write_text`, `write_bytes` and `replacing` check again and write.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from flashpath._core import FlashpathError
from flashpath._messages import named, shown


class OutputError(FlashpathError):
    """An output that must not be written: one message for the user."""


@dataclass(frozen=True)
class Named:
    """A file of the run: its path and what it is ("the sweep spec",
    "--lat-csv"), for messages."""

    path: str
    what: str


StrPath = str | os.PathLike[str]


def _kind(mode: int) -> str | None:
    """What a non-regular file is, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def same_file(a: StrPath, b: StrPath) -> bool:
    """Whether `a` and `b` name one file: the same resolved path, or the
    same inode (a hard link, a bind mount)."""
    try:
        if os.path.realpath(a) == os.path.realpath(b):
            return True
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, ValueError):
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _name_problem(path: str) -> str | None:
    if not path:
        return "an empty file name"
    if "\0" in path:
        return "a file name cannot hold a NUL byte"
    return None


def check_output(
    path: StrPath,
    what: str,
    inputs: Sequence[Named] = (),
    others: Sequence[Named] = (),
) -> None:
    """Refuse `path` (asked for by `what`, e.g. "--out") as an output when
    it is an input of the run, another output of it, an existing
    non-regular file, or cannot be written (its folder is missing or
    read-only, it is read-only)."""
    text = os.fspath(path)
    problem = _name_problem(text)
    if problem:
        raise OutputError(f"{what}: {problem}")
    quoted = shown(text)
    for i in inputs:
        if same_file(text, i.path):
            also = "" if os.fspath(i.path) == text else f" {named(os.fspath(i.path))}"
            raise OutputError(
                f"{what} {quoted}: is {i.what}{also}, an input of this run: writing it "
                "would destroy it; choose another name"
            )
    for o in others:
        if same_file(text, o.path):
            raise OutputError(
                f"{what} {quoted}: {o.what} writes that file too; give each output its own name"
            )
    try:
        st = os.stat(text)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        # ENOTDIR: a file where a folder of the path should be.
        raise OutputError(f"{what}: cannot write {quoted}: {exc.strerror or exc}") from None
    if st is not None:
        kind = _kind(st.st_mode)
        if kind == "a directory":
            raise OutputError(f"{what}: cannot write {quoted}: Is a directory")
        if kind:
            raise OutputError(f"{what} {quoted}: {_not_regular(kind)}")
        if not os.access(text, os.W_OK):
            raise OutputError(f"{what}: cannot write {quoted}: Permission denied")
    folder = Path(os.path.realpath(text)).parent
    if not folder.is_dir():
        reason = "Not a directory" if folder.exists() else "No such file or directory"
        raise OutputError(f"{what}: cannot write {quoted}: {reason}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{what}: cannot write {quoted}: Permission denied")


def _not_regular(kind: str) -> str:
    return (
        f"is {kind}, not a regular file: flashpath writes an output whole (a temporary "
        "file beside it, renamed over it), which would replace the device node or "
        "special file; name a regular file"
    )


def _mode_for(target: str) -> int:
    """The new file's permissions: the old file's, or 0666 less the umask
    (what open(2) with O_CREAT gives)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


@contextlib.contextmanager
def replacing(path: StrPath, what: str, image: bool = False) -> Iterator[str]:
    """A temporary file beside `path` (the target of a symbolic link is
    the one replaced, so the link stays), for the caller to write; renamed
    over `path` when the block ends without an exception, removed
    otherwise. Its name ends in ".tmp", so that a reader of the folder
    (a sweep's parts) never takes a half-written file for a whole one;
    for an `image` it ends in the target's extension (".png" when it has
    none), which tells matplotlib the format. An OS error is an
    OutputError naming `what` and the file."""
    text = os.fspath(path)
    problem = _name_problem(text)
    if problem:
        raise OutputError(f"{what}: {problem}")
    target = os.path.realpath(text)
    folder, base = os.path.split(target)
    suffix = ".tmp" + (Path(base).suffix or ".png") if image else ".tmp"
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{base[:64]}.", suffix=suffix, dir=folder)
    except OSError as exc:
        raise OutputError(f"{what}: cannot write {shown(text)}: {exc.strerror or exc}") from None
    os.close(fd)
    try:
        yield tmp
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
        # Checked again: the target may have changed while the run ran.
        if st is not None and _kind(st.st_mode):
            raise OutputError(f"{what} {shown(text)}: {_not_regular(_kind(st.st_mode) or '')}")
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except OSError as exc:
        raise OutputError(f"{what}: cannot write {shown(text)}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def write_bytes(path: StrPath, data: bytes, what: str) -> None:
    """Write `data` to `path` whole (see `replacing`)."""
    with replacing(path, what) as tmp, open(tmp, "wb") as f:
        f.write(data)


def write_text(path: StrPath, text: str, what: str) -> None:
    """Write `text` (UTF-8) to `path` whole (see `replacing`)."""
    write_bytes(path, text.encode("utf-8"), what)


def append_text(path: StrPath, text: str, what: str) -> None:
    """Add `text` (UTF-8) to the end of `path`, as fio opens a shared log
    or an I/O log with "a": the old lines and the new are written whole
    together (see `replacing`), so a failed run leaves the file as it was."""
    try:
        with open(path, "rb") as f:
            old = f.read()
    except FileNotFoundError:
        old = b""
    except OSError as exc:
        raise OutputError(
            f"{what}: cannot read {shown(os.fspath(path))}: {exc.strerror or exc}"
        ) from None
    write_bytes(path, old + text.encode("utf-8"), what)


def check_folder(
    folder: StrPath,
    names: Sequence[str],
    what: str,
    force: bool = False,
    inputs: Sequence[Named] = (),
) -> None:
    """Refuse to write the files `names` into `folder` when it is not a
    folder, or when any of them exists and `force` is not given (a rerun
    would overwrite what the user may have edited); each file is also
    checked as `check_output` checks one."""
    text = os.fspath(folder)
    problem = _name_problem(text)
    if problem:
        raise OutputError(f"{what}: {problem}")
    try:
        st = os.stat(text)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"{what}: cannot write {shown(text)}: {exc.strerror or exc}") from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        kind = _kind(st.st_mode) or "a regular file"
        raise OutputError(f"{what} {named(text)}: is {kind}, not a folder")
    if st is not None and not force:
        present = [n for n in names if os.path.lexists(os.path.join(text, n))]
        if present:
            listed = ", ".join(present[:4]) + (
                f" and {len(present) - 4} more" if len(present) > 4 else ""
            )
            raise OutputError(
                f"{what} {named(text)}: the folder already has {listed}; give --force to "
                "overwrite them, or another folder"
            )
    if st is None:
        return
    for n in names:
        check_output(os.path.join(text, n), what, inputs)
