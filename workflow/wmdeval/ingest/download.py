"""Download and unpack remote inputs: resumable, retried, checksum-verified, atomic.

A download lands in ``<dest>.part`` and is renamed to ``<dest>`` only once it is
complete and its SHA-256 matches, so Snakemake never sees a half-written input.
An interrupted download is resumed with an HTTP ``Range`` request. Checksums
that are not pinned in the config are recorded in a lock file (``<sha256>  <url>``
per line) so later runs notice when the remote file changes.
"""

from __future__ import annotations

import contextlib
import email.utils
import fcntl
import gzip
import hashlib
import http.client
import logging
import os
import re
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import NoReturn

from ..core.errors import WmdevalError
from ..core.io import atomic_path

log = logging.getLogger("wmdeval.ingest.download")

MAX_BACKOFF = 60.0  # seconds; the longest wait between two attempts
CHUNK_SIZE = 1 << 16
USER_AGENT = "wmdeval/0.1"
_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]")
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")


class _TransientError(Exception):
    """A problem worth another attempt (network, timeout, truncated body, 5xx, 429)."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class _RangeNotSatisfiable(Exception):
    """HTTP 416: the partial file does not fit the remote file; start again from zero."""


# --------------------------------------------------------------------------- download
def download(
    url: str,
    dest: str | os.PathLike,
    sha256: str | None,
    *,
    retries: int = 5,
    backoff: float = 1.0,
    timeout: float = 60,
    lock_file: str | os.PathLike | None = None,
    progress: bool = True,
) -> Path:
    """Download ``url`` to ``dest`` (resumable, retried, verified); return ``dest``.

    ``sha256`` pins the expected checksum. Without it, the checksum recorded for
    ``url`` in ``lock_file`` (if any) is checked instead, and the checksum seen is
    recorded there. ``retries`` is the number of attempts after the first one.
    """
    dest = Path(dest)
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in ("http", "https"):
        raise WmdevalError(f"{url}: only http and https URLs can be downloaded")
    if sha256 and not _SHA256_HEX.fullmatch(sha256.strip()):
        raise WmdevalError(f"{url}: sha256 must be 64 hex digits, got {sha256!r}")
    expected = sha256.strip().lower() if sha256 else _locked_sha256(lock_file, url)

    if dest.exists():
        actual = file_sha256(dest)
        if expected is None or actual == expected:
            _note_unpinned(url, actual, sha256, lock_file)
            return dest
        # A wrong file under the final name (e.g. copied by hand): fetch a fresh copy.
        log.warning(
            "%s: existing file has sha256 %s, expected %s; downloading again",
            dest,
            actual,
            expected,
        )
        dest.unlink()

    part = partial_path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    _fetch_with_retries(
        url, part, retries=retries, backoff=backoff, timeout=timeout, progress=progress
    )

    actual = file_sha256(part)
    if expected is not None and actual != expected:
        # Never keep (or later resume from) a corrupted body.
        part.unlink(missing_ok=True)
        dest.unlink(missing_ok=True)
        raise WmdevalError(
            f"{url}: checksum mismatch: expected {expected}, got {actual} (the file was removed)"
        )
    os.replace(part, dest)
    _note_unpinned(url, actual, sha256, lock_file)
    return dest


def partial_path(dest: Path) -> Path:
    """Where the bytes of ``dest`` collect while it is being downloaded."""
    return dest.with_name(dest.name + ".part")


def _fetch_with_retries(
    url: str, part: Path, *, retries: int, backoff: float, timeout: float, progress: bool
) -> None:
    """Fill ``part`` with the whole body of ``url``, retrying transient problems."""
    attempts = max(retries, 0) + 1
    for attempt in range(attempts):
        try:
            _fetch_once(url, part, timeout=timeout, progress=progress)
            return
        except _TransientError as exc:
            problem = exc
        if attempt + 1 < attempts:
            delay = min(backoff * 2**attempt, MAX_BACKOFF)
            if problem.retry_after is not None:
                delay = min(max(delay, problem.retry_after), MAX_BACKOFF)
            log.warning(
                "%s: %s; retrying in %.1f s (attempt %d of %d)",
                url,
                problem,
                delay,
                attempt + 2,
                attempts,
            )
            time.sleep(delay)
    raise WmdevalError(f"{url}: download failed after {attempts} attempt(s): {problem}")


def _fetch_once(url: str, part: Path, *, timeout: float, progress: bool) -> None:
    """One attempt: resume ``part`` if it has bytes; if that is refused, start from zero."""
    try:
        _request_into(url, part, timeout=timeout, progress=progress)
    except _RangeNotSatisfiable:
        log.info("%s: server could not resume the partial file; starting again from zero", url)
        part.unlink(missing_ok=True)
        try:
            _request_into(url, part, timeout=timeout, progress=progress)
        except _RangeNotSatisfiable:
            raise _TransientError("server sent a byte range that was not asked for") from None


def _request_into(url: str, part: Path, *, timeout: float, progress: bool) -> None:
    """Send one GET (with ``Range`` if ``part`` has bytes) and append the body to ``part``."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            start, total = _body_start_and_total(response, offset)
            if offset and start == 0:
                log.info("%s: server ignored the Range request; starting again from zero", url)
            received = _copy_body(response, part, start, total, progress)
    except urllib.error.HTTPError as exc:
        _raise_for_http_error(url, exc, had_range=bool(offset))
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        # URLError wraps refused connections and DNS failures; OSError covers timeouts
        # and resets while reading; HTTPException covers malformed or cut-off responses.
        raise _TransientError(_describe_network_error(exc)) from None
    if total is not None and received < total:
        raise _TransientError(f"truncated body: got {received} of {total} bytes")


def _body_start_and_total(
    response: http.client.HTTPResponse, offset: int
) -> tuple[int, int | None]:
    """Where this response's body starts in the file, and the file's full size (if known)."""
    if response.status == 206:
        match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
        if match is None or int(match.group(1)) != offset:
            # A range we did not ask for cannot be appended safely; a fresh start can.
            raise _RangeNotSatisfiable
        size = match.group(3)
        return offset, (None if size == "*" else int(size))
    # 200: the whole file (also when a server ignores Range).
    length = response.headers.get("Content-Length")
    return 0, (int(length) if length and length.isdigit() else None)


def _copy_body(
    response: http.client.HTTPResponse,
    part: Path,
    start: int,
    total: int | None,
    show_progress: bool,
) -> int:
    """Write the body to ``part`` from byte ``start``; return the file's size afterwards."""
    received = start
    bar = _ProgressBar(total, start, enabled=show_progress)
    try:
        with _open_for_writing(part, append=start > 0) as out:
            while chunk := response.read(CHUNK_SIZE):
                _write(out, chunk, part)
                received += len(chunk)
                bar.update(received)
    finally:
        bar.close(received)
    return received


def _open_for_writing(part: Path, *, append: bool):
    try:
        return open(part, "ab" if append else "wb")
    except OSError as exc:
        raise WmdevalError(f"{part}: cannot write the download ({exc})") from None


def _write(out, chunk: bytes, part: Path) -> None:
    # A local disk problem (full, read-only) is not worth retrying like a network one.
    try:
        out.write(chunk)
    except OSError as exc:
        raise WmdevalError(f"{part}: cannot write the download ({exc})") from None


def _raise_for_http_error(url: str, exc: urllib.error.HTTPError, *, had_range: bool) -> NoReturn:
    status = f"HTTP {exc.code} {exc.reason}".rstrip()
    exc.close()
    if exc.code == 416 and had_range:
        raise _RangeNotSatisfiable
    if exc.code >= 500 or exc.code == 429:
        raise _TransientError(status, retry_after=_retry_after_seconds(exc.headers))
    raise WmdevalError(f"{url}: {status}")


def _retry_after_seconds(headers) -> float | None:
    """The server's ``Retry-After`` (seconds or an HTTP date) as seconds, if any."""
    value = (headers.get("Retry-After") or "").strip() if headers else ""
    if not value:
        return None
    if value.isdigit():
        return float(value)
    with contextlib.suppress(TypeError, ValueError):
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    return None


def _describe_network_error(exc: BaseException) -> str:
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, str):
        return reason
    if isinstance(reason, TimeoutError):
        return "timed out"
    return f"{type(reason).__name__}: {reason}".rstrip(": ")


# --------------------------------------------------------------------------- progress
class _ProgressBar:
    """A one-line text progress bar on stderr, redrawn at most a few times per second.

    On a terminal the line is redrawn in place; in a log file (not a terminal) a
    new line is written only every few seconds so logs stay readable.
    """

    WIDTH = 24

    def __init__(self, total: int | None, start: int, *, enabled: bool):
        self.total = total
        self.start = start
        self.enabled = enabled
        self.began = time.monotonic()
        self.last_drawn = 0.0
        self.interactive = enabled and sys.stderr.isatty()
        self.interval = 0.25 if self.interactive else 10.0

    def update(self, done: int) -> None:
        now = time.monotonic()
        if self.enabled and now - self.last_drawn >= self.interval:
            self.last_drawn = now
            self._draw(done, final=False)

    def close(self, done: int) -> None:
        if self.enabled:
            self._draw(done, final=True)

    def _draw(self, done: int, *, final: bool) -> None:
        elapsed = max(time.monotonic() - self.began, 1e-6)
        rate = _human_bytes((done - self.start) / elapsed) + "/s"
        if self.total:
            fraction = min(done / self.total, 1.0)
            filled = int(fraction * self.WIDTH)
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            line = (
                f"{fraction:4.0%} [{bar}] {_human_bytes(done)} / {_human_bytes(self.total)}  {rate}"
            )
        else:
            line = f"{_human_bytes(done)}  {rate}"
        if self.interactive:
            sys.stderr.write("\r" + line.ljust(72) + ("\n" if final else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _human_bytes(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------- checksums
def file_sha256(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _note_unpinned(
    url: str, actual: str, sha256: str | None, lock_file: str | os.PathLike | None
) -> None:
    """Warn that ``url`` has no pinned checksum, and record the one seen in ``lock_file``."""
    if sha256:
        return
    if lock_file is None:
        log.warning("%s: checksum not pinned; got sha256 %s (add it to the config)", url, actual)
        return
    log.warning(
        "%s: checksum not pinned in the config; got sha256 %s (recorded in %s)",
        url,
        actual,
        lock_file,
    )
    record_sha256(lock_file, url, actual)


def read_lock_file(lock_file: str | os.PathLike) -> dict[str, str]:
    """``{url: sha256}`` from a lock file of ``<sha256>  <url>`` lines ({} if absent)."""
    path = Path(lock_file)
    if not path.exists():
        return {}
    entries = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(maxsplit=1)
        if len(fields) != 2 or not _SHA256_HEX.fullmatch(fields[0]):
            raise WmdevalError(f"{path}:{number}: expected '<sha256>  <url>', got {line!r}")
        entries[fields[1].strip()] = fields[0].lower()
    return entries


def _locked_sha256(lock_file: str | os.PathLike | None, url: str) -> str | None:
    return read_lock_file(lock_file).get(url) if lock_file is not None else None


def record_sha256(lock_file: str | os.PathLike, url: str, sha256: str) -> None:
    """Set the line for ``url`` in ``lock_file``, keeping the others, sorted by URL."""
    path = Path(lock_file)
    with _exclusive_lock(path.with_name(path.name + ".lock")):
        # Read inside the lock: another job may have added its line meanwhile.
        entries = read_lock_file(path)
        if entries.get(url) == sha256.lower():
            return
        entries[url] = sha256.lower()
        with atomic_path(path) as tmp:
            tmp.write_text("".join(f"{entries[u]}  {u}\n" for u in sorted(entries)))


@contextlib.contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# --------------------------------------------------------------------------- extract
def extract(archive: str | os.PathLike, member: str | None, dest: str | os.PathLike) -> Path:
    """Unpack one file from a ``.zip`` (``member``) or a ``.gz`` to ``dest``; return ``dest``."""
    archive, dest = Path(archive), Path(dest)
    if not archive.exists():
        raise WmdevalError(f"{archive}: file not found")
    kind = _archive_kind(archive)
    if kind == "zip":
        _extract_zip_member(archive, member, dest)
    elif kind == "gz":
        if member is not None:
            raise WmdevalError(
                f"{archive}: a .gz file holds a single file; "
                f"no member can be chosen (got {member!r})"
            )
        _gunzip(archive, dest)
    else:
        raise WmdevalError(f"{archive}: unsupported archive type (expected .zip or .gz)")
    return dest


def _archive_kind(archive: Path) -> str | None:
    """'zip' or 'gz' by file name; by the first bytes when the name does not say."""
    name = archive.name.lower()
    if name.endswith((".tar.gz", ".tgz")):
        return None
    if name.endswith(".zip"):
        return "zip"
    if name.endswith(".gz"):
        return "gz"
    with open(archive, "rb") as handle:
        magic = handle.read(4)
    if magic.startswith(b"PK\x03\x04") or zipfile.is_zipfile(archive):
        return "zip"
    if magic.startswith(b"\x1f\x8b"):
        return "gz"
    return None


def _extract_zip_member(archive: Path, member: str | None, dest: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            files = [info for info in zf.infolist() if not info.is_dir()]
            info = _choose_member(archive, files, member)
            with zf.open(info) as source, atomic_path(dest) as tmp, open(tmp, "wb") as out:
                shutil.copyfileobj(source, out, CHUNK_SIZE)
    except zipfile.BadZipFile as exc:
        raise WmdevalError(f"{archive}: not a zip file, or a damaged one ({exc})") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise WmdevalError(f"{archive}: cannot extract {member or 'its file'} ({exc})") from None


def _choose_member(
    archive: Path, files: list[zipfile.ZipInfo], member: str | None
) -> zipfile.ZipInfo:
    names = [info.filename for info in files]
    listing = ", ".join(names) if names else "(none)"
    if member is None:
        if len(files) != 1:
            raise WmdevalError(
                f"{archive}: holds {len(files)} files, name the one to extract (members: {listing})"
            )
        chosen = files[0]
    else:
        matches = [info for info in files if info.filename == member]
        if not matches:
            # Folder downloads (e.g. a shared Dropbox folder) put files under a directory:
            # accept the one member whose base name is the requested name.
            matches = [info for info in files if info.filename.rsplit("/", 1)[-1] == member]
        if len(matches) > 1:
            raise WmdevalError(
                f"{archive}: several members named {member!r} "
                f"({', '.join(m.filename for m in matches)}): give the full path"
            )
        if not matches:
            raise WmdevalError(f"{archive}: no member {member!r} (members: {listing})")
        chosen = matches[0]
    if _is_unsafe_member_name(chosen.filename):
        raise WmdevalError(
            f"{archive}: refusing unsafe member name {chosen.filename!r} (absolute path or '..')"
        )
    return chosen


def _is_unsafe_member_name(name: str) -> bool:
    """True for absolute paths and names that climb out with ``..`` (zip path traversal)."""
    posix = name.replace("\\", "/")
    return (
        posix.startswith("/")
        or re.match(r"[A-Za-z]:", posix) is not None
        or ".." in PurePosixPath(posix).parts
    )


def _gunzip(archive: Path, dest: Path) -> None:
    try:
        with gzip.open(archive, "rb") as source, atomic_path(dest) as tmp, open(tmp, "wb") as out:
            shutil.copyfileobj(source, out, CHUNK_SIZE)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise WmdevalError(f"{archive}: not a gzip file, or a truncated one ({exc})") from None


# --------------------------------------------------------------------------- naming
def cache_name(url: str) -> str:
    """A stable, file-system-safe name for the download of ``url``.

    ``<12 hex of sha256(url)>-<last path component, sanitised>``: the hash keeps
    different URLs apart; the readable tail keeps the extension (``.zip``, ``.gz``)
    that :func:`extract` goes by.
    """
    prefix = hashlib.sha256(url.encode("utf-8")).hexdigest()[:12]
    path = urllib.parse.urlsplit(url).path
    tail = urllib.parse.unquote(path.rsplit("/", 1)[-1])
    tail = _UNSAFE_NAME_CHARS.sub("_", tail)[-100:]  # keep the end: it holds the extension
    if tail.strip("._") == "":
        tail = "download"
    return f"{prefix}-{tail}"


# --------------------------------------------------------------------------- entry points
def run_download(
    url: str, sha256: str | None, out_path: str | os.PathLike, lock_file: str | os.PathLike | None
) -> Path:
    return download(url, out_path, sha256 or None, lock_file=lock_file)


def run_extract(
    archive: str | os.PathLike, member: str | None, out_path: str | os.PathLike
) -> Path:
    return extract(archive, member or None, out_path)
