"""Throwaway Prometheus, Pushgateway and Alertmanager servers for the tests: Debian's binaries
(installed by .ci/run), fresh storage, 127.0.0.1 on free ports; Prometheus scrapes the gateway
every second. ``Webhook`` is a receiver for the Alertmanager's notifications."""
from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, List, Optional

from tests.mariadb_server import free_port

PUSHGATEWAY = "prometheus-pushgateway"
ALERTMANAGER = "prometheus-alertmanager"


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
    """Pushgateway + Prometheus scraping it every second. ``rules``: a rule file Prometheus also
    evaluates every second; ``alertmanager_port``: where it sends the alerts."""

    def __init__(self, root: str, rules: Optional[str] = None, alertmanager_port: Optional[int] = None):
        self.bin = binaries()
        if self.bin is None:
            raise FileNotFoundError("no prometheus / prometheus-pushgateway / promtool "
                                    "(apt-get install prometheus prometheus-pushgateway)")
        self.root = root
        self.rules, self.alertmanager_port = rules, alertmanager_port
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
            f.write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n")
            if self.rules:
                f.write(f"rule_files: [{self.rules}]\n")
            if self.alertmanager_port:
                f.write("alerting: {alertmanagers: [{static_configs: "
                        f"[{{targets: ['127.0.0.1:{self.alertmanager_port}']}}]}}]}}\n")
            f.write("scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
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


def alertmanager_binaries() -> Optional[dict]:
    """Debian's prometheus-alertmanager and amtool (package prometheus-alertmanager), or None."""
    found = {name: shutil.which(name) for name in (ALERTMANAGER, "amtool")}
    return found if all(found.values()) else None


class Webhook:
    """A webhook receiver on 127.0.0.1: keeps every notification the Alertmanager POSTs (its JSON:
    receiver, status, alerts with their labels, ...)."""

    def __init__(self):
        self.received: List[Dict[str, Any]] = []
        self._lock = threading.Lock()
        webhook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with webhook._lock:
                    webhook.received.append({"path": self.path, **json.loads(body or b"{}")})
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):  # quiet
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def start(self) -> "Webhook":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def alerts(self) -> List[Dict[str, Any]]:
        """Every alert of every notification so far, each with its notification's receiver and status."""
        with self._lock:
            return [{**a, "receiver": n.get("receiver"), "notification_status": n.get("status")}
                    for n in self.received for a in n.get("alerts", [])]

    def wait_for(self, accept: Callable[[List[Dict[str, Any]]], bool], seconds: float = 30) -> List[Dict[str, Any]]:
        """``alerts()`` once ``accept`` takes them."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if accept(self.alerts()):
                return self.alerts()
            time.sleep(0.2)
        raise AssertionError(f"the webhook never received what was expected; it has {self.alerts()}")


def receivers_to(config: Dict[str, Any], webhook_url: str) -> Dict[str, Any]:
    """``config`` (a parsed alertmanager.yml) with every receiver a webhook to ``webhook_url``
    (each notification names its receiver)."""
    out = dict(config)
    out["receivers"] = [{"name": r["name"], "webhook_configs": [{"url": webhook_url, "send_resolved": True}]}
                        for r in config.get("receivers", [])]
    return out


def _with_timings(route: Dict[str, Any], timings: Dict[str, str]) -> Dict[str, Any]:
    route = {**route, **timings}
    if "routes" in route:
        route["routes"] = [_with_timings(r, timings) for r in route["routes"]]
    return route


class Alertmanager:
    """A throwaway Alertmanager (Debian's prometheus-alertmanager, no cluster gossip) running
    ``config`` (the YAML text, or a path to it) with every receiver pointed at ``webhook_url`` and
    the routes' timings replaced by ``timings`` (default: group_wait and group_interval 1s, so a
    test sees a notification within seconds). Prometheus sends it alerts at ``url``; a test may
    also POST them (``post``)."""

    def __init__(self, root: str, config: str, webhook_url: str,
                 timings: Optional[Dict[str, str]] = None):
        import yaml

        self.bin = alertmanager_binaries()
        if self.bin is None:
            raise FileNotFoundError("no prometheus-alertmanager / amtool (apt-get install prometheus-alertmanager)")
        self.root = root
        text = open(config).read() if "\n" not in config and os.path.isfile(config) else config
        parsed = receivers_to(yaml.safe_load(text), webhook_url)
        parsed["route"] = _with_timings(parsed["route"], timings or {"group_wait": "1s", "group_interval": "1s"})
        self.config_file = os.path.join(root, "alertmanager.yml")
        with open(self.config_file, "w") as f:
            yaml.safe_dump(parsed, f, sort_keys=False)
        self.port = free_port()
        self.process: Optional[subprocess.Popen] = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Alertmanager":
        log = os.path.join(self.root, "alertmanager.log")
        self.process = subprocess.Popen(
            [self.bin[ALERTMANAGER], f"--config.file={self.config_file}", f"--storage.path={self.root}/am-data",
             f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address="],
            stdout=open(log, "w"), stderr=subprocess.STDOUT)
        _wait(self.url + "/-/ready", "the Alertmanager", self.process, log)
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None

    def post(self, alerts: List[Dict[str, Any]]) -> None:
        """POST /api/v2/alerts: each alert {"labels": {...}, "annotations": {...}} (firing from now)."""
        request = urllib.request.Request(self.url + "/api/v2/alerts", data=json.dumps(alerts).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=5) as r:
            assert r.status == 200, r.read()

    def alerts(self) -> List[Dict[str, Any]]:
        """GET /api/v2/alerts: every alert it holds, each with status {state: active | suppressed |
        unprocessed, inhibitedBy, silencedBy} and its receivers."""
        with urllib.request.urlopen(self.url + "/api/v2/alerts", timeout=5) as r:
            return json.load(r)

    def wait_for(self, accept: Callable[[List[Dict[str, Any]]], bool], seconds: float = 30) -> List[Dict[str, Any]]:
        """``alerts()`` once ``accept`` takes them."""
        deadline = time.monotonic() + seconds
        found: List[Dict[str, Any]] = []
        while time.monotonic() < deadline:
            found = self.alerts()
            if accept(found):
                return found
            time.sleep(0.3)
        raise AssertionError(f"the Alertmanager never held the alerts expected; it holds {found}")


# ---- the session's one set (tests/conftest.py: monitoring_stack) -------------------------------

MONITORING = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "monitoring")
LABEL = "scenario"  # the grouping label that keeps each test's pushes apart on the shared gateway


def rules_with_short_waits(path: str) -> None:
    """monitoring/alerts.yml with its `for:` waits cut to a second, written to ``path``."""
    import re

    with open(os.path.join(MONITORING, "alerts.yml")) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(re.sub(r"(?m)^(\s+)for: \S+$", r"\1for: 1s", text))


def alertmanager_config_by_label() -> str:
    """monitoring/alertmanager.yml with LABEL in its group_by and its inhibitions' `equal`
    lists, as docs/operations.md tells a team with several deployments of one pipeline to do."""
    import yaml

    with open(os.path.join(MONITORING, "alertmanager.yml")) as f:
        config = yaml.safe_load(f)
    config["route"]["group_by"] = list(config["route"]["group_by"]) + [LABEL]
    for rule in config.get("inhibit_rules", []):
        if rule.get("equal"):
            rule["equal"] = list(rule["equal"]) + [LABEL]
    return yaml.safe_dump(config)


class Stack:
    """One Pushgateway, one Prometheus that scrapes it and evaluates the committed rules (waits cut
    to 1 s) every second, one Alertmanager (alertmanager_config_by_label) and its webhook, when
    Debian's prometheus-alertmanager is installed (``manager`` is None otherwise). Shared by the
    session: each test pushes under its own job or LABEL value and reads only those."""

    def __init__(self, root: str):
        self.root = root
        self.webhook: Optional[Webhook] = None
        self.manager: Optional[Alertmanager] = None
        if alertmanager_binaries() is not None:
            self.webhook = Webhook().start()
            self.manager = Alertmanager(root, alertmanager_config_by_label(), self.webhook.url).start()
        rules_with_short_waits(os.path.join(root, "alerts.yml"))
        self.servers = Servers(root, rules="alerts.yml",
                               alertmanager_port=self.manager.port if self.manager else None).start()

    def stop(self) -> None:
        self.servers.stop()
        if self.manager is not None:
            self.manager.stop()
            self.webhook.stop()
