"""wmdeval.ingest.download against a scripted HTTP server on 127.0.0.1 (no internet needed)."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import logging
import random
import re
import threading
import time
import zipfile

import pytest

from wmdeval.core.errors import WmdevalError
from wmdeval.ingest import download as dl

BODY = random.Random(0).randbytes(200_000)  # several read chunks, so truncation shows
FAST = {"backoff": 0.01, "timeout": 5, "progress": False}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- the server
class ScriptedServer:
    """What the fake server does per request: ``plan`` is a list of actions, one per
    request; the last one repeats. ``requests`` records each request's Range header."""

    def __init__(self, body: bytes):
        self.body = body
        self.plan = ["ok"]
        self.requests: list[dict] = []
        self._lock = threading.Lock()

    def take(self, path: str, range_header: str | None) -> str:
        with self._lock:
            self.requests.append({"path": path, "range": range_header})
            return self.plan.pop(0) if len(self.plan) > 1 else self.plan[0]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        script: ScriptedServer = self.server.script
        action = script.take(self.path, self.headers.get("Range"))
        getattr(self, "act_" + action.replace("-", "_"))(script.body)

    # -- actions
    def act_ok(self, body: bytes, *, truncate: bool = False):
        start = self._range_start()
        if start is None:
            self._send(200, body, truncate=truncate)
        elif start >= len(body):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(body)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            extra = {"Content-Range": f"bytes {start}-{len(body) - 1}/{len(body)}"}
            self._send(206, body[start:], truncate=truncate, extra=extra)

    def act_truncate(self, body: bytes):
        self.act_ok(body, truncate=True)

    def act_ignore_range(self, body: bytes):
        self._send(200, body)

    def act_corrupt(self, body: bytes):
        self._send(200, bytes([body[0] ^ 0xFF]) + body[1:])

    def act_not_found(self, body: bytes):
        self.send_error(404)

    def act_error_500(self, body: bytes):
        self.send_error(500)

    def act_redirect(self, body: bytes):
        self.send_response(302)  # like Dropbox's ?dl=1 links
        self.send_header("Location", self.path.split("?")[0] + "?redirected=1")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def act_slow(self, body: bytes):
        time.sleep(0.5)  # longer than the client's timeout in the test
        self._send(200, body)

    # -- helpers
    def _range_start(self) -> int | None:
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        return int(match.group(1)) if match else None

    def _send(self, status: int, data: bytes, *, truncate: bool = False, extra=None):
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))  # the full length, even if cut
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data[: len(data) // 2] if truncate else data)
        self.close_connection = True

    def log_message(self, *args):  # keep test output quiet
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # e.g. a broken pipe after the client timed out


@pytest.fixture
def server():
    httpd = QuietServer(("127.0.0.1", 0), Handler)
    httpd.script = ScriptedServer(BODY)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    httpd.script.url = f"http://127.0.0.1:{httpd.server_address[1]}/data/file.bin"
    yield httpd.script
    httpd.shutdown()
    httpd.server_close()


# --------------------------------------------------------------------------- download
def test_plain_download_with_checksum(server, tmp_path):
    dest = tmp_path / "sub" / "file.bin"
    assert dl.download(server.url, dest, sha(BODY), **FAST) == dest
    assert dest.read_bytes() == BODY
    assert not dl.partial_path(dest).exists()
    assert [r["range"] for r in server.requests] == [None]


def test_truncated_body_is_resumed_with_range(server, tmp_path):
    server.plan = ["truncate", "ok"]
    dest = tmp_path / "file.bin"
    dl.download(server.url, dest, sha(BODY), **FAST)
    assert dest.read_bytes() == BODY
    first, second = server.requests
    assert first["range"] is None
    assert second["range"] == f"bytes={len(BODY) // 2}-"


def test_resume_from_a_part_file_left_by_an_earlier_run(server, tmp_path):
    dest = tmp_path / "file.bin"
    dl.partial_path(dest).write_bytes(BODY[:1000])
    dl.download(server.url, dest, sha(BODY), **FAST)
    assert dest.read_bytes() == BODY
    assert [r["range"] for r in server.requests] == ["bytes=1000-"]


def test_redirect_is_followed_and_keeps_the_range(server, tmp_path):
    server.plan = ["redirect", "ok"]
    dest = tmp_path / "file.bin"
    dl.partial_path(dest).write_bytes(BODY[:5])
    dl.download(server.url, dest, sha(BODY), **FAST)
    assert dest.read_bytes() == BODY
    assert [r["range"] for r in server.requests] == ["bytes=5-", "bytes=5-"]
    assert server.requests[1]["path"].endswith("?redirected=1")


def test_truncated_body_on_every_attempt_gives_up(server, tmp_path):
    server.plan = ["truncate"]
    with pytest.raises(WmdevalError, match=r"failed after 3 attempt.*truncated body"):
        dl.download(server.url, tmp_path / "file.bin", sha(BODY), retries=2, **FAST)
    assert len(server.requests) == 3


def test_corrupted_body_is_removed_and_not_resumed(server, tmp_path):
    server.plan = ["corrupt", "ok"]
    dest = tmp_path / "file.bin"
    with pytest.raises(WmdevalError, match="checksum mismatch") as info:
        dl.download(server.url, dest, sha(BODY), **FAST)
    assert f"expected {sha(BODY)}" in str(info.value)
    assert "the file was removed" in str(info.value)
    assert not dest.exists() and not dl.partial_path(dest).exists()
    # next time: a fresh download, not a resume of the bad bytes
    dl.download(server.url, dest, sha(BODY), **FAST)
    assert dest.read_bytes() == BODY
    assert server.requests[-1]["range"] is None


def test_404_is_final_at_once(server, tmp_path):
    server.plan = ["not-found"]
    with pytest.raises(WmdevalError, match=r"file\.bin: HTTP 404"):
        dl.download(server.url, tmp_path / "file.bin", sha(BODY), **FAST)
    assert len(server.requests) == 1


def test_server_errors_are_retried(server, tmp_path, caplog):
    server.plan = ["error-500", "error-500", "ok"]
    dest = tmp_path / "file.bin"
    with caplog.at_level(logging.WARNING, logger="wmdeval.ingest.download"):
        dl.download(server.url, dest, sha(BODY), **FAST)
    assert dest.read_bytes() == BODY
    assert len(server.requests) == 3
    assert "HTTP 500" in caplog.text and "retrying" in caplog.text


def test_server_errors_until_the_last_retry(server, tmp_path):
    server.plan = ["error-500"]
    with pytest.raises(WmdevalError, match=r"failed after 2 attempt\(s\): HTTP 500"):
        dl.download(server.url, tmp_path / "file.bin", sha(BODY), retries=1, **FAST)


def test_timeout_is_retried(server, tmp_path):
    server.plan = ["slow", "ok"]
    dest = tmp_path / "file.bin"
    dl.download(server.url, dest, sha(BODY), backoff=0.01, timeout=0.2, progress=False)
    assert dest.read_bytes() == BODY


def test_connection_refused_is_retried_then_reported(tmp_path):
    # Bind and close a server to get a port where nothing listens.
    probe = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    port = probe.server_address[1]
    probe.server_close()
    url = f"http://127.0.0.1:{port}/x.bin"
    with pytest.raises(WmdevalError, match=rf"{re.escape(url)}: download failed after 2"):
        dl.download(url, tmp_path / "x.bin", None, retries=1, **FAST)


def test_server_ignoring_range_restarts_from_zero(server, tmp_path):
    server.plan = ["truncate", "ignore-range"]
    dest = tmp_path / "file.bin"
    dl.download(server.url, dest, sha(BODY), **FAST)
    assert dest.read_bytes() == BODY
    assert server.requests[1]["range"] is not None


def test_range_not_satisfiable_restarts_from_zero(server, tmp_path):
    dest = tmp_path / "file.bin"
    dl.partial_path(dest).write_bytes(BODY + b"stale tail")  # longer than the remote file
    dl.download(server.url, dest, sha(BODY), **FAST)
    assert dest.read_bytes() == BODY
    assert [r["range"] for r in server.requests] == [f"bytes={len(BODY) + 10}-", None]


def test_unpinned_checksum_is_recorded_then_enforced(server, tmp_path, caplog):
    lock = tmp_path / "downloads.lock.txt"
    lock.write_text(f"{'a' * 64}  http://zzz.example/later\n{'b' * 64}  http://0.example/x\n")
    dest = tmp_path / "file.bin"
    with caplog.at_level(logging.WARNING, logger="wmdeval.ingest.download"):
        dl.download(server.url, dest, None, lock_file=lock, **FAST)
    assert "not pinned" in caplog.text and sha(BODY) in caplog.text
    assert lock.read_text().splitlines() == [
        f"{'b' * 64}  http://0.example/x",
        f"{sha(BODY)}  {server.url}",
        f"{'a' * 64}  http://zzz.example/later",
    ]
    # The remote file changes: the recorded checksum catches it.
    changed = BODY[::-1]
    server.body = changed
    dest.unlink()
    with pytest.raises(WmdevalError, match="checksum mismatch") as info:
        dl.download(server.url, dest, None, lock_file=lock, **FAST)
    assert f"expected {sha(BODY)}, got {sha(changed)}" in str(info.value)
    assert not dest.exists() and not dl.partial_path(dest).exists()


def test_lock_file_keeps_entries_of_concurrent_writers(tmp_path):
    lock = tmp_path / "lock.txt"
    urls = [f"http://example.org/{i}" for i in range(16)]
    threads = [
        threading.Thread(target=dl.record_sha256, args=(lock, u, sha(u.encode()))) for u in urls
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert dl.read_lock_file(lock) == {u: sha(u.encode()) for u in urls}


def test_malformed_lock_file_is_reported(tmp_path):
    lock = tmp_path / "lock.txt"
    lock.write_text("not-a-hash http://x\n")
    with pytest.raises(WmdevalError, match=r"lock\.txt:1: expected"):
        dl.read_lock_file(lock)


def test_existing_file_with_right_checksum_is_not_downloaded(server, tmp_path):
    dest = tmp_path / "file.bin"
    dest.write_bytes(BODY)
    dl.download(server.url, dest, sha(BODY), **FAST)
    dl.download(server.url, dest, None, **FAST)
    assert server.requests == []


def test_existing_file_with_wrong_checksum_is_replaced(server, tmp_path):
    dest = tmp_path / "file.bin"
    dest.write_bytes(b"something else")
    dl.download(server.url, dest, sha(BODY), **FAST)
    assert dest.read_bytes() == BODY
    assert len(server.requests) == 1


def test_bad_arguments_are_refused_before_any_request(server, tmp_path):
    with pytest.raises(WmdevalError, match="64 hex digits"):
        dl.download(server.url, tmp_path / "f", "abc", **FAST)
    with pytest.raises(WmdevalError, match="only http and https"):
        dl.download("ftp://example.org/f", tmp_path / "f", None, **FAST)
    assert server.requests == []


def test_progress_bar_goes_to_stderr_and_can_be_switched_off(server, tmp_path, capsys):
    dl.download(server.url, tmp_path / "a.bin", sha(BODY), backoff=0.01, progress=True)
    captured = capsys.readouterr()
    assert "100%" in captured.err and "KiB" in captured.err and captured.out == ""
    dl.download(server.url, tmp_path / "b.bin", sha(BODY), **FAST)
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------- extract
def make_zip(path, members: dict[str, bytes]):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_extract_zip_member(tmp_path):
    archive = make_zip(tmp_path / "a.zip", {"a.txt": b"A", "dir/b.txt": b"B"})
    out = dl.extract(archive, "dir/b.txt", tmp_path / "out" / "b.txt")
    assert out.read_bytes() == b"B"
    assert sorted(p.name for p in out.parent.iterdir()) == ["b.txt"]  # no temporary left


def test_extract_missing_member_lists_members(tmp_path):
    archive = make_zip(tmp_path / "a.zip", {"a.txt": b"A", "dir/b.txt": b"B"})
    expected = r"a\.zip: no member 'c\.txt' \(members: a\.txt, dir/b\.txt\)"
    with pytest.raises(WmdevalError, match=expected):
        dl.extract(archive, "c.txt", tmp_path / "c.txt")
    with pytest.raises(WmdevalError, match="holds 2 files"):
        dl.extract(archive, None, tmp_path / "c.txt")
    assert not (tmp_path / "c.txt").exists()


def test_extract_single_member_without_a_name(tmp_path):
    archive = make_zip(tmp_path / "one.zip", {"only/data.csv": b"x,y\n"})
    assert dl.extract(archive, None, tmp_path / "data.csv").read_bytes() == b"x,y\n"


@pytest.mark.parametrize("name", ["../evil.txt", "/etc/evil.txt", "a/../../evil.txt"])
def test_extract_refuses_path_traversal(tmp_path, name):
    archive = make_zip(tmp_path / "bad.zip", {name: b"evil"})
    with pytest.raises(WmdevalError, match="unsafe member name"):
        dl.extract(archive, name, tmp_path / "out.txt")
    with pytest.raises(WmdevalError, match="unsafe member name"):
        dl.extract(archive, None, tmp_path / "out.txt")
    assert not (tmp_path / "out.txt").exists()


def test_extract_gz(tmp_path):
    archive = tmp_path / "vectors.txt.gz"
    archive.write_bytes(gzip.compress(BODY))
    assert dl.extract(archive, None, tmp_path / "vectors.txt").read_bytes() == BODY


def test_extract_recognises_the_format_by_content(tmp_path):
    archive = make_zip(tmp_path / "download", {"a.txt": b"A"})
    assert dl.extract(archive, "a.txt", tmp_path / "a.txt").read_bytes() == b"A"


def test_extract_reports_damaged_archives(tmp_path):
    not_zip = tmp_path / "x.zip"
    not_zip.write_bytes(b"plain text")
    with pytest.raises(WmdevalError, match=r"x\.zip: not a zip file"):
        dl.extract(not_zip, "a", tmp_path / "a")
    truncated = tmp_path / "y.gz"
    truncated.write_bytes(gzip.compress(BODY)[:1000])
    with pytest.raises(WmdevalError, match=r"y\.gz: not a gzip file, or a truncated one"):
        dl.extract(truncated, None, tmp_path / "y")
    assert not (tmp_path / "y").exists()
    tarball = tmp_path / "z.tar.gz"
    tarball.write_bytes(gzip.compress(b""))
    with pytest.raises(WmdevalError, match="unsupported archive type"):
        dl.extract(tarball, None, tmp_path / "z")
    with pytest.raises(WmdevalError, match="file not found"):
        dl.extract(tmp_path / "missing.zip", "a", tmp_path / "a")


# --------------------------------------------------------------------------- cache_name
def test_cache_name():
    url = "https://www.dropbox.com/s/abc123/20news-bydate.zip?dl=1"
    prefix = sha(url.encode())[:12]
    assert dl.cache_name(url) == f"{prefix}-20news-bydate.zip"
    assert dl.cache_name(url) == dl.cache_name(url)
    other = dl.cache_name(url.replace("dl=1", "dl=0"))
    assert other.endswith("-20news-bydate.zip") and other != dl.cache_name(url)
    assert dl.cache_name("https://example.org/").endswith("-download")
    assert dl.cache_name("https://example.org").endswith("-download")
    assert dl.cache_name("https://example.org/a%20b/c%20d$(x).txt.gz").endswith("-c_d__x_.txt.gz")
    assert re.fullmatch(r"[0-9a-f]{12}-[A-Za-z0-9._-]+", dl.cache_name("https://x.org/ü/ä?q#f"))


def test_extract_zip_member_by_base_name_inside_a_folder(tmp_path):
    archive = tmp_path / "folder.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("shared/bbcsport.mat", b"mat bytes")
        handle.writestr("shared/other.mat", b"other")
    out = dl.extract(archive, "bbcsport.mat", tmp_path / "out.mat")
    assert out.read_bytes() == b"mat bytes"
