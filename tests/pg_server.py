"""A real PostgreSQL server for the tests that share Optuna studies (no mock): `initdb` + `postgres`
from the PATH or Debian's /usr/lib/postgresql/*/bin (.ci/run installs the `postgresql` package),
else the server that the `pgserver` wheel carries. Trust authentication on 127.0.0.1, a free port,
a throw-away data directory; stopped (and removed) when the fixture ends."""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def _binaries() -> Path | None:
    found = shutil.which("postgres")
    if found and shutil.which("initdb"):
        return Path(found).resolve().parent
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.access(os.path.join(d, "postgres"), os.X_OK):
            return Path(d)
    try:
        import pgserver  # noqa: F401  (a wheel with the server binaries)

        d = Path(pgserver.__file__).parent / "pginstall" / "bin"
        if (d / "postgres").is_file():
            return d
    except ImportError:
        pass
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """`url` is `postgresql://wb@127.0.0.1:PORT/postgres` once `start()` returned."""

    def __init__(self) -> None:
        self.bin = _binaries()
        self.proc: subprocess.Popen | None = None
        self.dir: Path | None = None
        self.url = ""

    def _as_server_user(self, argv: list[str]) -> list[str]:
        # the server refuses to run as root: run it as the `postgres` account the package created
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--", *argv]
        return argv

    def start(self) -> "PostgresServer":
        if self.bin is None:
            raise RuntimeError("no PostgreSQL server binaries (apt-get install postgresql, or pip install pgserver)")
        self.dir = Path(tempfile.mkdtemp(prefix="lh-pg-"))
        os.chmod(self.dir, 0o755)
        data = self.dir / "data"
        data.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
            shutil.chown(data, "postgres")
        subprocess.run(self._as_server_user([str(self.bin / "initdb"), "-D", str(data), "-U", "wb", "--auth=trust",
                                             "-E", "UTF8", "--no-sync"]),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        port = _free_port()
        self.proc = subprocess.Popen(
            self._as_server_user([str(self.bin / "postgres"), "-D", str(data), "-p", str(port), "-h", "127.0.0.1",
                                  "-k", str(self.dir), "-c", "fsync=off", "-c", "max_connections=200"]),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.url = f"postgresql://wb@127.0.0.1:{port}/postgres"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.2)
        else:
            raise RuntimeError("postgres did not start within 30 s")
        import psycopg

        for _ in range(50):  # accepting TCP before it accepts logins
            try:
                psycopg.connect(f"host=127.0.0.1 port={port} user=wb dbname=postgres").close()
                return self
            except psycopg.OperationalError:
                time.sleep(0.2)
        raise RuntimeError("postgres does not accept connections")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # smart shutdown of our own server process
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
