"""`report --format html` and `explain --format html`, rendered in headless Chromium.

One recording of a private MariaDB (8M buffer pool, a table several times
bigger) with two phases: "cached" (point selects on a few ids) and
"uncached" (random lookups on a secondary index, each reading the clustered
index). The pages are opened in headless Chromium and the rendered DOM is
checked: phases, index names, plots with data points, verdicts; a copy of
the recording with markup planted in file names, queries, index, thread and
phase names must show that markup as text. Chromium runs under a small
subreaper wrapper that kills its leftover helpers by pid and reaps them.
"""
from __future__ import annotations

import json
import random
import shutil
import struct
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ioattr.format.reader import Recording
from ioattr.format.schema import TABLES
from ioattr.host.sandbox import PrivateMariaDB
from ioattr.output.html_data import MAX_POINTS
from ioattr.output.html_report import render_html
from tests.conftest import need_root, need_tool
from tests.helpers import Background, ioattr, wait_phase

CHROMIUM = "/usr/bin/chromium"

# Runs CMD as a child subreaper: Chromium's helpers (zygote, gpu, ...) are orphaned when the
# browser exits and would otherwise linger (or stay zombies under an init that does not reap).
# Afterwards every remaining descendant is killed by its pid and reaped.
WRAPPER = r"""
import ctypes, os, signal, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
timeout = float(sys.argv[1])
p = subprocess.Popen(sys.argv[2:], stdout=sys.stdout, stderr=subprocess.DEVNULL)
try:
    rc = p.wait(timeout=timeout)
except subprocess.TimeoutExpired:
    p.kill()
    rc = p.wait()
    print("chromium timed out", file=sys.stderr)

def children():
    me = str(os.getpid())
    out = []
    for e in os.listdir("/proc"):
        if e.isdigit():
            try:
                with open(f"/proc/{e}/stat") as f:
                    st = f.read()
            except OSError:
                continue
            if st[st.rindex(")") + 2:].split()[1] == me:
                out.append(int(e))
    return out

deadline = time.monotonic() + 5
while True:
    kids = children()
    if not kids:
        break
    for pid in kids:
        try:
            os.kill(pid, signal.SIGKILL if time.monotonic() > deadline - 4 else signal.SIGTERM)
        except ProcessLookupError:
            pass
    time.sleep(0.05)
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                break
        except ChildProcessError:
            break
    if time.monotonic() > deadline:
        break
sys.exit(rc)
"""


def chromium(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    profile = tempfile.mkdtemp(prefix="ioattr-chromium-")
    try:
        cmd = [sys.executable, "-c", WRAPPER, str(timeout), CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 15)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def rendered(page: Path, png: Path | None = None, height: int = 3000) -> "Dom":
    """The DOM Chromium rendered (and, with png, a 1400 x height screenshot of the page)."""
    shot = [f"--screenshot={png}", f"--window-size=1400,{height}"] if png else []
    r = chromium("--dump-dom", *shot, page.resolve().as_uri())
    assert r.returncode == 0 and "<html" in r.stdout, r.stderr
    if png is not None:
        assert png.exists(), r.stderr
        head = png.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n"
        assert struct.unpack(">II", head[16:24]) == (1400, height)
        assert png.stat().st_size > 50_000, "screenshot looks blank"
    return Dom(r.stdout)


class Dom(HTMLParser):
    """The rendered page: every element (tag, attrs, own text) and all text, entities decoded."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.raw = markup
        self.elements: list[dict] = []
        self._stack: list[dict] = []
        self.texts: list[str] = []
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        svg = next((e["attrs"].get("id") for e in reversed(self._stack) if e["tag"] == "svg"), None)
        el = {"tag": tag, "attrs": dict(attrs), "text": "", "svg": svg}
        self.elements.append(el)
        if tag not in ("meta", "link", "br", "wbr", "img", "input", "hr", "circle", "rect", "line", "polygon", "path"):
            self._stack.append(el)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i]["tag"] == tag:
                del self._stack[i:]
                break

    def handle_data(self, data: str) -> None:
        self.texts.append(data)
        for el in self._stack:
            el["text"] += data

    @property
    def text(self) -> str:
        return " ".join(self.texts)

    def find(self, tag: str, **attrs: str) -> list[dict]:
        return [e for e in self.elements if e["tag"] == tag
                and all(e["attrs"].get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def by_id(self, ident: str) -> dict:
        found = [e for e in self.elements if e["attrs"].get("id") == ident]
        assert found, f"no element #{ident}"
        return found[0]

    def check_ids(self) -> None:
        """Element ids are unique and every aria-labelledby names one."""
        ids = [e["attrs"]["id"] for e in self.elements if e["attrs"].get("id")]
        assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
        refs = {t for e in self.elements for t in (e["attrs"].get("aria-labelledby") or "").split()}
        assert refs <= set(ids), refs - set(ids)

    def plots(self) -> dict[str, dict]:
        return {e["attrs"]["id"]: e for e in self.elements if e["tag"] == "svg" and "plot" in
                e["attrs"].get("class", "")}


# -- the recording ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    """Two phases on a private MariaDB: cached point selects, then uncached secondary-index lookups."""
    need_root()
    need_tool("mariadbd")
    need_tool("mariadb-install-db")
    rec = tmp_path_factory.mktemp("html") / "rec"
    db = PrivateMariaDB(buffer_pool="8M")
    try:
        db.start()
        db.query("CREATE DATABASE b")
        db.query("CREATE TABLE b.t (id INT PRIMARY KEY, k INT, c CHAR(200), KEY k(k)) ENGINE=InnoDB")
        db.query("INSERT INTO b.t SELECT seq, seq % 5000, 'x' FROM b.seq_1_to_100000")
        db.restart()  # cold buffer pool
        bg = Background("record", "-o", str(rec), "--pid", str(db.pid), "--interval", "0.3", "--phase", "cached")
        try:
            bg.wait_recording()
            c = db.connect()
            rnd = random.Random(7)
            with c.cursor() as cur:
                for i in range(1000):
                    cur.execute("SELECT c FROM b.t WHERE id = %s", (1 + i % 20,))
                cur.execute("SELECT 'ioattr:phase=uncached'")
                # the cached phase is drained before the recorder lists the new one: no lookup below
                # is counted there
                wait_phase(rec, "uncached")
                # ~20 page reads per lookup, a fixed amount of work (no deadline: the outcome must
                # not depend on how fast the disk is)
                for _ in range(300):
                    cur.execute("SELECT c FROM b.t WHERE k = %s", (rnd.randint(0, 4999),))
            c.close()
        finally:  # stopping drains once more: nothing is lost by stopping right away
            code, err = bg.stop()
        assert code == 0, err
    finally:
        db.stop()
    meta = json.loads((rec / "meta.json").read_text())
    assert [p["name"] for p in meta["phases"]] == ["cached", "uncached"], meta["phases"]
    return rec


def _need_chromium() -> None:
    need_tool("chromium")


# -- the tests ----------------------------------------------------------------------------

def test_report_html_in_chromium(recording: Path, tmp_path: Path) -> None:
    _need_chromium()
    page = tmp_path / "report.html"
    r = ioattr("report", str(recording), "--format", "html", "--by", "index,phase", "-o", str(page))
    assert r.returncode == 0, r.stderr
    html = page.read_text()
    assert "<script" not in html.lower() and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    dom = rendered(page, tmp_path / "report.png")
    assert dom.find("title")[0]["text"].startswith("ioattr report: rec")
    dom.check_ids()
    text = dom.text
    for s in ("cached", "uncached", "b.t.PRIMARY", "b.t.k", "Requested breakdown", "Top files", "Top indexes",
              "t.ibd", "kernel", "probe sets"):
        assert s in text, s
    errors = dom.find("p", **{"class": "section-error"})
    assert not errors, [e["text"] for e in errors]

    # the phases table has both phases; the storage-reads bars: uncached far above cached
    rows = [e for e in dom.find("table") if "phases" in e["attrs"].get("class", "")]
    assert rows and "cached" in rows[0]["text"] and "uncached" in rows[0]["text"]
    bars = [e for e in dom.find("rect", **{"class": "bar"}) if e["svg"] == "r0-bars-storage_reads"]
    assert len(bars) == 2
    assert float(bars[1]["attrs"]["width"]) > 10 * float(bars[0]["attrs"]["width"]), bars

    plots = dom.plots()
    for ident in ("r0-index-read", "r0-bytes-read", "r0-latency-plot", "r0-bars-storage_reads"):
        assert ident in plots, sorted(plots)
        svg = plots[ident]
        assert svg["attrs"]["role"] == "img" and svg["attrs"].get("aria-labelledby")
        assert int(svg["attrs"]["data-points"]) > 0, ident
        title_id = svg["attrs"]["aria-labelledby"].split()[0]
        assert dom.by_id(title_id)["text"], ident
    # pages read per index: a stacked area per index, PRIMARY the biggest (stacked first), the phases marked
    areas = [e["attrs"]["data-name"] for e in dom.find("polygon", **{"class": "series"}) if e["svg"] == "r0-index-read"]
    assert areas[0] == "b.t.PRIMARY" and "b.t.k" in areas, areas
    labels = [e["text"] for e in dom.elements if e["attrs"].get("class") == "phase-label"]  # tooltip + label
    assert any(lab.endswith("uncached") for lab in labels), labels
    assert any(lab.endswith("cached") and not lab.endswith("uncached") for lab in labels), labels
    assert dom.find("line", **{"class": "boundary"}), "phase boundary not drawn"
    # the latency plot draws one point per interval that had syscall reads, no more, no fewer
    rec = Recording(recording)
    spans = rec.query("SELECT count(DISTINCT ts_start) FROM (SELECT ts_start FROM io UNION ALL "
                      "SELECT ts_start FROM pages)")[0][0]
    assert spans <= MAX_POINTS  # one slot per interval, not binned
    with_reads = rec.query("SELECT count(DISTINCT ts_start) FROM io WHERE layer = 'syscall' AND op = 'read' "
                           "AND count > 0")[0][0]
    assert with_reads >= 2, with_reads  # both phases read (the cached one from a cold pool)
    p50 = [e["attrs"]["d"] for e in dom.find("path") if e["attrs"].get("class") == "series"
           and e["attrs"]["data-name"] == "read p50"]
    assert sum(d.count("M") + d.count("L") for d in p50) == with_reads, (p50, with_reads)
    # the plots' numbers are also in tables
    assert text.count("The numbers behind this plot") >= 4


def test_explain_html_in_chromium(recording: Path, tmp_path: Path) -> None:
    _need_chromium()
    page = tmp_path / "explain.html"
    r = ioattr("explain", str(recording), "--format", "html", "-o", str(page))
    assert r.returncode == 0, r.stderr
    dom = rendered(page, tmp_path / "explain.png")
    dom.check_ids()
    text = dom.text
    assert "Why did reads_per_" in text and "What changed, by contributor" in text
    # contributors: the clustered index read by the secondary-index query tops the list
    contrib = [e for e in dom.find("table") if "contributors" in e["attrs"].get("class", "")]
    assert contrib
    rows = [e["text"] for e in dom.find("tr") if "%" in e["text"]]  # the first table with shares
    assert rows and "b.t.PRIMARY" in rows[0] and "WHERE k = ?" in rows[0], rows[:2]
    assert dom.find("span", **{"class": "share"}), "no share bars"
    # findings with verdict badges and their evidence: clustered lookups supported
    findings = {e["attrs"]["data-finding"]: e for e in dom.find("div") if "data-finding" in e["attrs"]}
    assert findings["clustered_lookups"]["attrs"]["data-verdict"] == "supported"
    assert "SUPPORTED" in findings["clustered_lookups"]["text"]
    assert "explain" in findings["clustered_lookups"]["text"]  # the evidence summary
    badges = {e["text"].strip() for e in dom.find("span") if "badge" in e["attrs"].get("class", "")}
    # explain's words (ioattr/analysis/direction.py), as the text marks them
    assert "SUPPORTED" in badges and badges <= {"SUPPORTED", "refuted: not what changed", "holds in both; not the cause",
                                                "inconclusive", "n/a"}, badges
    assert "Missing evidence" in text
    assert int(dom.plots()["explain-metric"]["attrs"]["data-points"]) == 2

    # --against: both recordings get their sections
    page2 = tmp_path / "against.html"
    r = ioattr("explain", str(recording), "--against", str(recording), "--baseline", "cached", "--target",
               "uncached", "--format", "html", "-o", str(page2))
    assert r.returncode == 0, r.stderr
    dom2 = Dom(page2.read_text())
    dom2.check_ids()
    assert "Baseline recording" in dom2.text and "Target recording" in dom2.text
    assert {"r0-index-read", "r1-index-read"} <= set(dom2.plots())


EVIL_FILE = '/data/<script>document.title="PWNED-file"</script>.ibd'
EVIL_QUERY = 'SELECT `<img src=x onerror="document.title=1">` FROM t WHERE k = ?'
EVIL_INDEX = 'b.<script>alert(1)</script>.PRIMARY'
EVIL_THREAD = '"><svg onload=alert(2)>'
EVIL_NOTE = "</style><script>document.title='PWNED-note'</script>"
EVIL_PHASE = "<b>bold</b>&amp;"


def _plant(rec: Path, dst: Path) -> None:
    """A copy of the recording with markup in every string a page shows."""
    shutil.copytree(rec, dst)
    r = Recording(dst)
    ts_start, ts_end = r.query("SELECT ts_start, ts_end FROM pages WHERE phase = 'uncached' "
                               "ORDER BY ts_start LIMIT 1")[0]
    common = {"ts_start": [ts_start], "ts_end": [ts_end], "phase": ["uncached"], "op": ["read"], "api": ["sync"],
              "pid": [4242], "tid": [4243], "process": ["mariadbd"], "thread": [EVIL_THREAD], "role": ["connection"],
              "stage": ["execute"], "digest": [0xABCDEF], "query": [EVIL_QUERY], "file": [EVIL_FILE],
              "file_class": ["tablespace"]}
    io = dict(common, layer=["syscall"], kind=["file"], dev=["0:0"], device=["<i>dev</i>"], ino=[99],
              count=[50000], bytes=[50000 * 16384], lat_sum_ns=[1000], h10=[50000])
    pages = dict(common, space_id=[77], index_id=[5], index=[EVIL_INDEX], level=[0], page_type=["index"],
                 flags=[None], pages=[50000], bytes=[50000 * 16384])
    for table, cols in (("io", io), ("pages", pages)):
        schema = TABLES[table]
        arrays = [pa.array(cols.get(f.name, [0] if f.name.startswith("h") and f.name[1:].isdigit() else [None]),
                           type=f.type) for f in schema]
        pq.write_table(pa.Table.from_arrays(arrays, schema=schema), dst / table / "chunk-999999.parquet")
    meta = json.loads((dst / "meta.json").read_text())
    meta["notes"].append({"time": ts_start, "text": EVIL_NOTE})
    meta["host"] = "<h1>host</h1>"
    meta["degraded"] = {"<u>x</u>": EVIL_NOTE}
    end = meta["phases"][-1]["end"]
    meta["phases"].append({"name": EVIL_PHASE, "start": end, "end": end, "source": "mark"})
    (dst / "meta.json").write_text(json.dumps(meta))


def test_untrusted_strings_render_as_text(recording: Path, tmp_path: Path) -> None:
    _need_chromium()
    evil = tmp_path / "evil"
    _plant(recording, evil)
    page = tmp_path / "evil.html"
    r = ioattr("report", str(evil), "--format", "html", "--by", "file,query,thread", "-o", str(page))
    assert r.returncode == 0, r.stderr
    rec = Recording(evil)
    from ioattr.analysis.explain import explain

    result = explain(rec, baseline="cached", target="uncached")
    page2 = tmp_path / "evil-explain.html"
    page2.write_text(render_html(rec, explanation=result))
    for p in (page, page2):
        dom = rendered(p)
        tags = {e["tag"] for e in dom.elements}
        assert "script" not in tags and "img" not in tags and "b" not in tags and "u" not in tags, tags
        assert len(dom.find("h1")) == 1
        assert not any(k.startswith("on") for e in dom.elements for k in e["attrs"]), "event handler attribute"
        title = dom.find("title")[0]["text"]
        assert "PWNED" not in title and title.startswith("ioattr")
        text = dom.text
        for s in (EVIL_FILE, EVIL_QUERY, EVIL_INDEX, EVIL_NOTE, "<h1>host</h1>", EVIL_PHASE):
            assert s in text, s
    assert EVIL_THREAD in Dom(page.read_text()).text  # in the requested breakdown
    # planted rows are big enough to be a contributor: the query shows in the contributors table
    assert EVIL_QUERY in " ".join(e["text"] for e in Dom(page2.read_text()).find("table"))


def test_html_without_pages_counters_or_io(recording: Path, tmp_path: Path) -> None:
    """Sections say what was not recorded instead of failing."""
    bare = tmp_path / "bare"
    shutil.copytree(recording, bare)
    shutil.rmtree(bare / "pages")
    html = render_html(Recording(bare))
    dom = Dom(html)
    assert "Page attribution: not recorded." in dom.text
    if not Recording(bare).has_table("counters"):
        assert "Engine and host counters: not recorded." in dom.text
    assert not dom.find("p", **{"class": "section-error"})
    assert int(dom.plots()["r0-bytes-read"]["attrs"]["data-points"]) > 0

    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(recording / "meta.json", empty / "meta.json")
    dom = Dom(render_html(Recording(empty)))
    assert not dom.find("p", **{"class": "section-error"}), [e["text"] for e in dom.find("p")]
    assert "File IO: not recorded." in dom.text and "cached" in dom.text


def test_report_html_bad_usage(recording: Path) -> None:
    r = ioattr("report", str(recording), "--format", "html", "--phase", "nope")
    assert r.returncode == 2 and "cached" in r.stderr
