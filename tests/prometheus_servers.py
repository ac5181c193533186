"""Throwaway Prometheus and Pushgateway servers for the tests: Debian's binaries (installed by
.ci/run), fresh storage, 127.0.0.1 on free ports; Prometheus scrapes the gateway every second."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from typing import Any, List, Optional

from tests.mariadb_server import free_port

PUSHGATEWAY = "prometheus-pushgateway"


def binaries() -> Optional[dict]:
    found = {name: shutil.which(name) for name in ("prometheus", PUSHGATEWAY, "promtool")}
    return found if all(found.values()) else None


def _wait(url: str, what: str, process: subprocess.Popen, log: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited: {open(log).read()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{what} did not answer {url} in {seconds:.0f} s: {open(log).read()[-2000:]}")


class Servers:
    def __init__(self, root: str):
        self.bin = binaries()
        if self.bin is None:
            raise FileNotFoundError("no prometheus / prometheus-pushgateway / promtool "
                                    "(apt-get install prometheus prometheus-pushgateway)")
        self.root = root
        self.gateway_port, self.prometheus_port = free_port(), free_port()
        self.gateway: Optional[subprocess.Popen] = None
        self.prometheus: Optional[subprocess.Popen] = None

    @property
    def gateway_url(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}"

    @property
    def prometheus_url(self) -> str:
        return f"http://127.0.0.1:{self.prometheus_port}"

    def start_gateway(self) -> None:
        log = os.path.join(self.root, "pushgateway.log")
        # --persistence.file= : memory only. Debian's build defaults to /var/lib/prometheus/pushgateway.data,
        # which every gateway on the machine would load at start (an earlier test's metrics)
        self.gateway = subprocess.Popen([self.bin[PUSHGATEWAY], f"--web.listen-address=127.0.0.1:{self.gateway_port}",
                                         "--persistence.file="], stdout=open(log, "a"), stderr=subprocess.STDOUT)
        _wait(self.gateway_url + "/-/ready", "the Pushgateway", self.gateway, log)

    def stop_gateway(self) -> None:
        if self.gateway is not None:
            self.gateway.terminate()
            self.gateway.wait(timeout=30)
            self.gateway = None

    def start(self) -> "Servers":
        self.start_gateway()
        config = os.path.join(self.root, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                    "scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
                    f"    static_configs: [{{targets: ['127.0.0.1:{self.gateway_port}']}}]\n")
        log = os.path.join(self.root, "prometheus.log")
        self.prometheus = subprocess.Popen(
            [self.bin["prometheus"], f"--config.file={config}", f"--storage.tsdb.path={self.root}/tsdb",
             f"--web.listen-address=127.0.0.1:{self.prometheus_port}"], stdout=open(log, "w"), stderr=subprocess.STDOUT)
        _wait(self.prometheus_url + "/-/ready", "Prometheus", self.prometheus, log)
        return self

    def stop(self) -> None:
        self.stop_gateway()
        if self.prometheus is not None:
            self.prometheus.terminate()
            self.prometheus.wait(timeout=30)

    def query(self, expr: str) -> List[Any]:
        url = self.prometheus_url + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.load(r)["data"]["result"]

    def wait_for(self, expr: str, accept=lambda result: bool(result), seconds: float = 30) -> List[Any]:
        """``query(expr)`` once Prometheus has scraped what ``accept`` wants (it scrapes every second)."""
        deadline = time.monotonic() + seconds
        result: List[Any] = []
        while time.monotonic() < deadline:
            result = self.query(expr)
            if accept(result):
                return result
            time.sleep(0.5)
        raise AssertionError(f"Prometheus never answered {expr!r} as expected; last answer {result}")
