"""report, compare and explain HTML in a 1400 px Chromium window: no horizontal scroll, no label clipped.

The pages come from the synthetic recordings with a real benchmark's wide numbers
(tests/unit/test_terminal_width.py); a copy of each page gets a script (the page's own
Content-Security-Policy forbids scripts, so the copy drops it) that measures, after layout, the
document's scrollWidth and every SVG text's box against its SVG's, and writes the result into
the DOM that `chromium --dump-dom` prints."""
from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import need_tool
from tests.helpers import cli_in_process
from tests.test_html_report import chromium
from tests.unit import test_terminal_width

recs = test_terminal_width.recs  # the fixture: the synthetic recordings with wide numbers

MEASURE = """<script>
window.addEventListener("load", () => {
  const out = {scroll: document.documentElement.scrollWidth, clipped: [], labels: 0};
  for (const t of document.querySelectorAll("svg text")) {
    const s = t.ownerSVGElement.getBoundingClientRect(), b = t.getBoundingClientRect();
    if (!b.width) continue;
    out.labels++;
    if (b.left < s.left - 0.5 || b.right > s.right + 0.5) out.clipped.push(t.textContent);
  }
  const pre = document.createElement("pre");
  pre.id = "measured";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def measure(page: Path) -> dict:
    copy = page.with_name("measured-" + page.name)
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text())
    copy.write_text(html.replace("</body>", MEASURE + "</body>"))
    r = chromium("--window-size=1400,900", "--dump-dom", copy.resolve().as_uri())
    m = re.search(r'<pre id="measured">(.*?)</pre>', r.stdout)
    assert m, r.stderr[-2000:]
    return json.loads(m.group(1))


def test_report_and_compare_fit_1400px(recs, tmp_path: Path) -> None:
    need_tool("chromium")
    a, b = recs
    report, compare, explain = tmp_path / "report.html", tmp_path / "compare.html", tmp_path / "explain.html"
    for argv in (["report", str(a), "--by", "phase", "--format", "html", "-o", str(report)],
                 ["compare", str(a), str(b), "--label", "bp256m", "--label", "mariadb-bp1g-o_direct",
                  "--html", str(compare), "-o", str(tmp_path / "compare.txt")],
                 ["explain", str(a), "--against", str(b), "--format", "html", "-o", str(explain)]):
        rc, _, err = cli_in_process(argv)
        assert rc == 0, err
    for page in (report, compare, explain):
        got = measure(page)
        assert got["scroll"] <= 1400, (page.name, got)
        assert got["labels"] > 10 and not got["clipped"], (page.name, got)
    assert "bp256m" in compare.read_text()
