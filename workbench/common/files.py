"""Writing files so that a crash or a full disk never leaves a half-written one.

`atomic_write` writes a temporary file in the target's folder, fsyncs it, renames it over the
target and fsyncs the folder, so after a power cut the file is either the old or the new one.
The new file gets the mode a plain `open(path, "w")` would give (0666 less the umask), or the
mode of the file it replaces, not mkstemp's 0600.
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


def resolved(path: Path) -> Path:
    """`path` made absolute with its symbolic links followed where they lead somewhere; a symlink loop
    (on which Python 3.11's Path.resolve raises RuntimeError: a traceback from `save`, `replay`) is left
    as it is, for the error its use gives (`Too many levels of symbolic links`)."""
    path = Path(path)
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return Path(os.path.abspath(path))


def broken_link_reason(path: Path) -> str:
    """Why `path`, a symbolic link, names no file: a loop or a target that does not exist ("" when it is
    no symbolic link, or a working one)."""
    path = Path(path)
    if not os.path.islink(path):
        return ""
    try:
        os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "a symbolic link loop"
        return f"a symbolic link to {os.readlink(path)}, which does not exist"
    return ""


def not_a_folder(path: Path) -> str:
    """'' where `path` is a folder or can be made one (its first existing ancestor is a folder), else why not
    (`run --save-outputs`, `import --out`: asked before the work whose results go there)."""
    path = Path(path)
    for p in (path, *path.parents):
        if p.is_dir():
            return ""
        if p.exists() or p.is_symlink():
            kind = ("a character device" if p.is_char_device() else "a block device" if p.is_block_device()
                    else "a FIFO" if p.is_fifo() else "a broken symbolic link" if not p.exists() else "a file")
            return f"{p} is {kind}, not a folder" if p != path else f"{kind} exists there, not a folder"
    return ""


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def output_file(text: str | Path) -> Path:
    """The file a command is to write, as typed: a name ending in '/' means a folder, and Path() drops the slash
    (`save out/` wrote a file named `out`, `export reproducer dir/` one named `dir`): refused with an OSError
    whose strerror says so, which the commands' `cannot write X: ...` lines carry."""
    if isinstance(text, str) and text.endswith(("/", os.sep)):
        raise IsADirectoryError(errno.EISDIR, "that is a folder's name (it ends in '/'): name a file in it", text)
    return Path(text)


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write a file whole or not at all: a temporary file next to it, fsync, rename over it, fsync of the folder.
    A symbolic link is written through (its target gets the text, the link stays); what is not a regular file
    (`/dev/null`, `/dev/stdout`, a FIFO) is written to as it is: renaming over it replaced a device node with
    a regular file (`save /dev/full` as root: "saved", and /dev/full was gone)."""
    path = Path(path)
    if os.path.islink(path):   # (a loop stays the link: its use says "Too many levels of symbolic links")
        path = resolved(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        raise IsADirectoryError(21, "Is a directory", str(path))
    data = text.encode() if isinstance(text, str) else text
    try:
        st = path.stat()
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(path, "wb") as f:   # a device or a pipe: the bytes go to it (ENOSPC of /dev/full raised)
            f.write(data)
            f.flush()
        return
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _kind_of(mode: int) -> str:
    import stat

    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a pipe"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_regular_file(path: Path, max_bytes: int | None = None) -> bytes:
    """A regular file's bytes, read at most once and at most `max_bytes` (+1 to notice more).

    Raises OSError with a one-line `strerror` for what is not a regular file (a directory,
    /dev/zero, a FIFO: reading one would never end or block) and for files over `max_bytes`,
    so every caller that reports `e.strerror` says what is wrong instead of hanging."""
    import errno
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        info = os.fstat(fd)
        mode = info.st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL,
                          f"is {_kind_of(mode)}, not a file", str(path))
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read() if max_bytes is None else f.read(max_bytes + 1)
    finally:
        os.close(fd)
    if max_bytes is not None and len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"larger than {max_bytes >> 20} MiB", str(path))
    if len(data) != info.st_size:
        # procfs reports size 0, sysfs 4096, whatever they hold: text the kernel makes as it is read, a new
        # one at every read (a worker that reads the path again, as MLIR's parser does by its size, gets
        # nothing: `load /proc/self/status` loaded an empty module), and nothing a session can record
        raise OSError(errno.EINVAL, f"not a file to load (its size says {info.st_size} bytes, reading it gave "
                                    f"{len(data)}: a kernel pseudo-file of /proc or /sys, or a file being written)", str(path))
    return data


#: the UTF-8 byte order mark some editors (Notepad, a PowerShell redirection) write first: no part of the text
UTF8_BOM = b"\xef\xbb\xbf"


def without_bom(text: str) -> str:
    """`text` without a leading byte order mark (U+FEFF): MLIR's lexer reads it as `unexpected character` at
    1:1, a command script's first command as an unknown one that prints like a known one."""
    return text[1:] if text.startswith("\ufeff") else text


def read_regular_text(path: Path, max_bytes: int | None = None) -> str:
    """`read_regular_file` decoded as UTF-8, a leading byte order mark dropped; undecodable bytes raise
    OSError with the offset."""
    import errno

    data = read_regular_file(path, max_bytes)
    try:
        return without_bom(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise OSError(errno.EILSEQ, f"not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r})",
                      str(path)) from None
