"""dashboards/: importable Grafana JSON, and every PromQL expression in them answered by a real
Prometheus (on loopback, its own config and data directory) scraping a real exporter during a
workload."""
from __future__ import annotations

import json
import re
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path


from tests.conftest import need_root, need_tool
from tests.helpers import ROOT, Background, exporter_port, listening_tcp_ports, wait_until
from tests.test_top import Workload, assert_no_leftover_programs, live_db  # noqa: F401

DASHBOARDS = sorted((ROOT / "dashboards").glob("*.json"))
GRAFANA_RANGE_VARS = {"$__rate_interval": "10s", "${__rate_interval}": "10s", "$__interval": "2s",
                      "${__interval}": "2s", "$__range": "1m", "${__range}": "1m"}


def panels(dash: dict) -> list[dict]:
    """Every panel, including those inside (collapsed) rows."""
    out = []
    for p in dash.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []))
    return out


def expressions(dash: dict) -> list[tuple[str, str]]:
    """(panel title, expr) of every query target."""
    return [(p.get("title", ""), t["expr"]) for p in panels(dash) for t in p.get("targets", []) if t.get("expr")]


def variables(dash: dict) -> dict[str, dict]:
    return {v["name"]: v for v in dash["templating"]["list"]}


def substitutions(dash: dict, instance: str) -> list[dict[str, str]]:
    """Values for the template variables: the instance, and each option of every custom variable."""
    # as Grafana writes a picked value into a regex matcher: regex-escaped, inside a PromQL string
    combos: list[dict[str, str]] = [{"instance": re.escape(instance).replace("\\", "\\\\")}]
    for name, v in variables(dash).items():
        if v["type"] == "custom":
            values = [o["value"] for o in v.get("options", [])] or v["query"].split(",")
            combos = [{**c, name: val} for c in combos for val in values]
    return combos


def substitute(expr: str, values: dict[str, str]) -> str:
    for k, v in GRAFANA_RANGE_VARS.items():
        expr = expr.replace(k, v)
    for name, v in sorted(values.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace("${" + name + "}", v).replace("$" + name, v)
    assert "$" not in expr, f"unsubstituted variable in {expr}"
    return expr


def test_dashboards_are_importable() -> None:
    assert len(DASHBOARDS) >= 2, DASHBOARDS
    titles = set()
    for path in DASHBOARDS:
        dash = json.loads(path.read_text())
        assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 36, path
        titles.update(p.get("title", "") for p in panels(dash))
        v = variables(dash)
        assert v["datasource"]["type"] == "datasource" and v["datasource"]["query"] == "prometheus"
        assert v["instance"]["type"] == "query"
        assert v["instance"]["datasource"]["uid"] == "${datasource}"
        assert "label_values(ioattr_build_info, instance)" in json.dumps(v["instance"]["query"])
        ids = [p["id"] for p in panels(dash)]
        assert len(ids) == len(set(ids)), path
        for p in panels(dash):
            g = p["gridPos"]
            assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, (path, p["title"])
            if p["type"] == "row":
                continue
            assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, (path, p["title"])
            assert p["targets"], (path, p["title"])
            for t in p["targets"]:
                assert '$instance' in t["expr"], (path, p["title"], t["expr"])  # every query follows the picker
        # no hard-coded datasource from the machine it was made on
        assert '"uid": "prometheus"' not in path.read_text()
    # what the issue asks for is there
    for want in ("Pages read by index", "Read by file class", "Read by role", "Storage reads per query",
                 "Read latency", "BPF CPU by program", "Drops", "Map fill", "Drain duration"):
        assert want in titles, want
    heatmaps = [p for d in DASHBOARDS for p in panels(json.loads(d.read_text())) if p["type"] == "heatmap"]
    assert heatmaps and all(t.get("format") == "heatmap" for p in heatmaps for t in p["targets"])


class Prometheus:
    """A private Prometheus: own config and data directory under tmp, stopped by pid. It listens
    on a loopback port the kernel picks (port 0), found from its socket once it is ready."""

    def __init__(self, tmp: Path, target: str) -> None:
        binary = need_tool("prometheus")
        self.port = 0  # known after wait_ready()
        cfg = tmp / "prometheus.yml"
        cfg.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                       "scrape_configs:\n  - job_name: ioattr\n    static_configs:\n"
                       f"      - targets: ['{target}']\n")
        (tmp / "prom-data").mkdir()
        self.log = open(tmp / "prometheus.log", "wb")
        self.proc = subprocess.Popen([binary, f"--config.file={cfg}", f"--storage.tsdb.path={tmp / 'prom-data'}",
                                      "--web.listen-address=127.0.0.1:0", "--log.level=warn",
                                      "--storage.tsdb.retention.time=1h"],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.logpath = tmp / "prometheus.log"

    def get(self, path: str, **params: str) -> dict:
        url = f"http://127.0.0.1:{self.port}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:  # a bad query answers 400 with a JSON error
            return json.loads(e.read())

    def wait_ready(self, timeout: float = 60) -> None:
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError("prometheus exited: " + self.logpath.read_text())
            ports = listening_tcp_ports(self.proc.pid)
            if len(ports) != 1:
                return False  # not listening yet
            self.port = ports.pop()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        wait_until(ready, timeout, lambda: "prometheus to become ready: " + self.logpath.read_text())

    def query(self, expr: str) -> dict:
        return self.get("/api/v1/query", query=expr)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def test_every_dashboard_expression_returns_data(live_db, tmp_path: Path) -> None:
    need_root()
    exp = Background("exporter", "--pid", str(live_db.pid), "--listen", "127.0.0.1:0", "--interval", "0.5")
    prom = None
    try:
        target = f"127.0.0.1:{exporter_port(exp)}"  # the kernel picked a free port: no race for it
        prom = Prometheus(tmp_path, target)
        prom.wait_ready()
        wait_until(lambda: prom.query("ioattr_build_info")["data"]["result"], 60,
                   "prometheus to scrape the exporter")
        # the instance picker's own query: label_values(ioattr_build_info, instance)
        r = prom.query("ioattr_build_info")
        assert [s["metric"].get("instance") for s in r["data"]["result"]] == [target], r

        def check_all() -> tuple[list[str], int]:
            failures: list[str] = []
            checked = 0
            for path in DASHBOARDS:
                dash = json.loads(path.read_text())
                for values in substitutions(dash, target):
                    for title, expr in expressions(dash):
                        q = substitute(expr, values)
                        r = prom.query(q)
                        checked += 1
                        if r.get("status") != "success":
                            failures.append(f"{path.name} / {title}: {q}\n    error: {r.get('error')}")
                        elif not r["data"]["result"]:
                            failures.append(f"{path.name} / {title}: {q}\n    no data")
            return failures, checked

        # reads and writes (updates, their redo, the page cleaner's flushes) until every
        # expression has data (rates need two scrapes that saw it); an expression that never
        # gets data fails with the list below
        result: dict = {}

        def all_answered() -> bool:
            result["failures"], result["checked"] = check_all()
            return result["checked"] > 0 and not result["failures"]

        with Workload(live_db, updates=True, cold_every=5):
            try:
                wait_until(all_answered, 120, "every dashboard expression to return data", interval=1.0)
            except AssertionError:
                failures = result.get("failures", [])
                raise AssertionError(f"{len(failures)} of {result.get('checked')} expressions failed:\n"
                                     + "\n".join(failures)) from None
        assert result["checked"] >= 40, result["checked"]
    finally:
        if prom is not None:
            prom.stop()
        code, err = exp.stop()
    assert code == 0, err
    assert_no_leftover_programs()
