"""A throwaway MariaDB server for the tests: Debian's mariadb-server binaries (installed by
.ci/run), a fresh data directory, 127.0.0.1 on a free port, a database and user for MLMD.
Nothing of the machine's own MariaDB (its service, /var/lib/mysql) is touched."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from typing import Dict, Optional

DATABASE, USER, PASSWORD = "tfxline", "tfxline", "tfxline-test-password"


def binaries() -> Optional[Dict[str, str]]:
    found = {name: shutil.which(name) or (f"/usr/sbin/{name}" if os.path.exists(f"/usr/sbin/{name}") else None)
             for name in ("mariadbd", "mariadb-install-db", "mariadb")}
    return found if all(found.values()) else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MariaDB:
    def __init__(self, root: str):
        self.bin = binaries()
        if self.bin is None:
            raise FileNotFoundError("no MariaDB server binaries (apt-get install mariadb-server)")
        self.root, self.port = root, free_port()
        self.datadir, self.socket = os.path.join(root, "data"), os.path.join(root, "mysqld.sock")
        self.process: Optional[subprocess.Popen] = None

    def start(self) -> "MariaDB":
        log = open(os.path.join(self.root, "server.log"), "w")
        subprocess.run([self.bin["mariadb-install-db"], "--no-defaults", f"--datadir={self.datadir}",
                        "--user=root", "--auth-root-authentication-method=socket", "--skip-test-db"],
                       check=True, stdout=log, stderr=subprocess.STDOUT)
        self.process = subprocess.Popen(
            [self.bin["mariadbd"], "--no-defaults", f"--datadir={self.datadir}", f"--socket={self.socket}",
             f"--port={self.port}", "--bind-address=127.0.0.1", "--user=root",
             f"--pid-file={os.path.join(self.root, 'mysqld.pid')}", "--innodb-buffer-pool-size=64M"],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while self.sql("SELECT 1").returncode != 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"MariaDB did not start; see {log.name}")
            time.sleep(0.5)
        self.sql(f"CREATE DATABASE {DATABASE}; CREATE USER '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'; "
                 f"GRANT ALL ON {DATABASE}.* TO '{USER}'@'127.0.0.1';", check=True)
        return self

    def sql(self, statement: str, check: bool = False) -> subprocess.CompletedProcess:
        return subprocess.run([self.bin["mariadb"], "--no-defaults", f"--socket={self.socket}", "-uroot",
                               "-e", statement], capture_output=True, text=True, check=check)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def config_overrides(self):
        return ["metadata.backend=mysql", "metadata.host=127.0.0.1", f"metadata.port={self.port}",
                f"metadata.database={DATABASE}", f"metadata.user={USER}"]
