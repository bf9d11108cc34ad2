"""Parse SHOW ENGINE INNODB STATUS into named numbers.

`parse_innodb_status(text)` returns `[(name, value, text)]`: `value` a float
for numbers, `text` a string for the few non-numeric fields (purge and main
thread state). A field that is not in the output is left out, never
guessed: a missing section (no PROCESS privilege shows nothing at all, a
truncated monitor output loses its tail, MariaDB 10.11 prints no pending-aio
line) simply gives fewer rows. Checkpoint age is the one derived value (log
sequence number minus last checkpoint, when both were printed).

Formats: MariaDB 10.11 (tested on real output) and MySQL 5.7/8.0 (the
`Ibuf:` prefix, pending aio arrays, the longer LOG section, several buffer
pool instances, "Number of rows inserted" lines).

Names (all in the counters table with source 'innodb_status'):

    averages_seconds                          "Per second averages calculated from the last N seconds"
    master_loops_active/_shutdown/_idle, master_log_flush_and_writes
    sem_reservation_count, sem_signal_count   (MySQL; MariaDB 10.11 prints no wait array info)
    trx_id_counter, purge_trx_no, purge_undo_no, purge_state (text), history_list_length
    file_pending_aio_reads, file_pending_aio_writes, file_pending_ibuf_aio_reads,
    file_pending_log_ios, file_pending_sync_ios, file_pending_preads, file_pending_pwrites,
    file_pending_fsyncs (MariaDB), file_pending_fsyncs_log, file_pending_fsyncs_buffer_pool (MySQL),
    file_os_reads, file_os_writes, file_os_fsyncs,
    file_reads_per_s, file_avg_bytes_per_read, file_writes_per_s, file_fsyncs_per_s
    ibuf_size_pages, ibuf_free_list_pages, ibuf_seg_size_pages, ibuf_merges,
    ibuf_merged_insert, ibuf_merged_delete_mark, ibuf_merged_delete,
    ibuf_discarded_insert, ibuf_discarded_delete_mark, ibuf_discarded_delete
    ahi_hash_table_size, ahi_node_heap_buffers (summed over partitions),
    ahi_hash_searches_per_s, ahi_non_hash_searches_per_s
    log_sequence_number, log_buffer_assigned_up_to, log_buffer_completed_up_to, log_written_up_to,
    log_flushed_up_to, log_added_dirty_pages_up_to, log_pages_flushed_up_to, log_last_checkpoint,
    checkpoint_age, log_pending_flushes, log_pending_checkpoint_writes, log_ios, log_ios_per_s
    buffer_pool_total_large_memory, buffer_pool_dictionary_memory,
    buffer_pool_pages (the pool's size in pages), buffer_pool_pages_free, buffer_pool_pages_data,
    buffer_pool_pages_old, buffer_pool_pages_dirty, buffer_pool_dirty_pct, buffer_pool_max_dirty_pct,
    buffer_pool_pending_reads, buffer_pool_pending_writes_lru, buffer_pool_pending_writes_flush_list,
    buffer_pool_pending_writes_single_page,
    buffer_pool_pages_made_young, buffer_pool_pages_not_young,
    buffer_pool_youngs_per_s, buffer_pool_non_youngs_per_s,
    buffer_pool_pages_read, buffer_pool_pages_created, buffer_pool_pages_written,
    buffer_pool_reads_per_s, buffer_pool_creates_per_s, buffer_pool_writes_per_s,
    buffer_pool_hit_rate_per_1000, buffer_pool_young_making_rate_per_1000,
    buffer_pool_not_young_making_rate_per_1000,
    buffer_pool_read_ahead_per_s, buffer_pool_evicted_without_access_per_s,
    buffer_pool_random_read_ahead_per_s, buffer_pool_lru_len, buffer_pool_unzip_lru_len,
    buffer_pool_io_sum, buffer_pool_io_cur, buffer_pool_unzip_io_sum, buffer_pool_unzip_io_cur
    row_queries_inside, row_queries_in_queue, row_read_views, main_thread_state (text),
    rows_inserted, rows_updated, rows_deleted, rows_read,
    rows_inserted_per_s, rows_updated_per_s, rows_deleted_per_s, rows_read_per_s

Counts are cumulative since server start; pending counts, sizes and the
"/s" rates (averaged over the last `averages_seconds`, which every call of
SHOW ENGINE INNODB STATUS restarts) are gauges.

Statement texts (deadlock report, transaction list) are never returned.
Because they are user text printed inside the output, a statement that
imitates the monitor's own lines must not be taken for them: the sections
after the transaction list are taken from their last occurrence (nothing
user-written follows the transaction list), and statement texts inside the
deadlock report are skipped when looking for the TRANSACTIONS section.
"""
from __future__ import annotations

import re
from typing import Iterable

Row = tuple[str, "float | None", "str | None"]

_DASHES = re.compile(r"^-{3,}\s*$")
_NUM = r"(-?\d+(?:\.\d+)?)"
# statement text in the deadlock report starts after the "... thread id N, OS thread handle" line
_THREAD_LINE = re.compile(r"^(?:MySQL|MariaDB) thread id \d+,")

# section title -> [(regex, names)]; a name of None skips that group.
_F = re.M
_PATTERNS: dict[str, list[tuple[re.Pattern, tuple[str | None, ...]]]] = {
    "BACKGROUND THREAD": [
        (re.compile(r"^srv_master_thread loops: (\d+) srv_active, (\d+) srv_shutdown, (\d+) srv_idle", _F),
         ("master_loops_active", "master_loops_shutdown", "master_loops_idle")),
        (re.compile(r"^srv_master_thread log flush and writes: (\d+)", _F), ("master_log_flush_and_writes",)),
    ],
    "SEMAPHORES": [
        (re.compile(r"^OS WAIT ARRAY INFO: reservation count (\d+)", _F), ("sem_reservation_count",)),
        (re.compile(r"^OS WAIT ARRAY INFO: signal count (\d+)", _F), ("sem_signal_count",)),
    ],
    "TRANSACTIONS": [
        (re.compile(r"^Trx id counter (\d+)", _F), ("trx_id_counter",)),
        (re.compile(r"^Purge done for trx's n:o < (\d+) undo n:o < (\d+)", _F), ("purge_trx_no", "purge_undo_no")),
        (re.compile(r"^History list length (\d+)", _F), ("history_list_length",)),
    ],
    "FILE I/O": [
        (re.compile(r"^Pending flushes \(fsync\) log: (\d+); buffer pool: (\d+)", _F),
         ("file_pending_fsyncs_log", "file_pending_fsyncs_buffer_pool")),
        (re.compile(r"^Pending flushes \(fsync\):\s*(\d+)\s*$", _F), ("file_pending_fsyncs",)),
        (re.compile(r"^(\d+) pending preads, (\d+) pending pwrites", _F),
         ("file_pending_preads", "file_pending_pwrites")),
        (re.compile(r"^(\d+) OS file reads, (\d+) OS file writes, (\d+) OS fsyncs", _F),
         ("file_os_reads", "file_os_writes", "file_os_fsyncs")),
        (re.compile(rf"^{_NUM} reads/s, (\d+) avg bytes/read, {_NUM} writes/s, {_NUM} fsyncs/s", _F),
         ("file_reads_per_s", "file_avg_bytes_per_read", "file_writes_per_s", "file_fsyncs_per_s")),
    ],
    "INSERT BUFFER": [
        (re.compile(r"^(?:Ibuf: )?size (\d+), free list len (\d+), seg size (\d+), (\d+) merges", _F),
         ("ibuf_size_pages", "ibuf_free_list_pages", "ibuf_seg_size_pages", "ibuf_merges")),
        (re.compile(r"^merged operations:\s*\n\s*insert (\d+), delete mark (\d+), delete (\d+)", _F),
         ("ibuf_merged_insert", "ibuf_merged_delete_mark", "ibuf_merged_delete")),
        (re.compile(r"^discarded operations:\s*\n\s*insert (\d+), delete mark (\d+), delete (\d+)", _F),
         ("ibuf_discarded_insert", "ibuf_discarded_delete_mark", "ibuf_discarded_delete")),
    ],
    "ADAPTIVE HASH INDEX": [
        (re.compile(rf"^{_NUM} hash searches/s, {_NUM} non-hash searches/s", _F),
         ("ahi_hash_searches_per_s", "ahi_non_hash_searches_per_s")),
    ],
    "LOG": [
        (re.compile(r"^Log sequence number\s+(\d+)\s*$", _F), ("log_sequence_number",)),
        (re.compile(r"^Log buffer assigned up to\s+(\d+)", _F), ("log_buffer_assigned_up_to",)),
        (re.compile(r"^Log buffer completed up to\s+(\d+)", _F), ("log_buffer_completed_up_to",)),
        (re.compile(r"^Log written up to\s+(\d+)", _F), ("log_written_up_to",)),
        (re.compile(r"^Log flushed up to\s+(\d+)", _F), ("log_flushed_up_to",)),
        (re.compile(r"^Added dirty pages up to\s+(\d+)", _F), ("log_added_dirty_pages_up_to",)),
        (re.compile(r"^Pages flushed up to\s+(\d+)", _F), ("log_pages_flushed_up_to",)),
        (re.compile(r"^Last checkpoint at\s+(\d+)", _F), ("log_last_checkpoint",)),
        (re.compile(r"^(\d+) pending log flushes, (\d+) pending chkp writes", _F),
         ("log_pending_flushes", "log_pending_checkpoint_writes")),
        (re.compile(rf"^(\d+) log i/o's done, {_NUM} log i/o's/second", _F), ("log_ios", "log_ios_per_s")),
    ],
    "BUFFER POOL AND MEMORY": [
        (re.compile(r"^Total large memory allocated (\d+)", _F), ("buffer_pool_total_large_memory",)),
        (re.compile(r"^Dictionary memory allocated (\d+)", _F), ("buffer_pool_dictionary_memory",)),
        (re.compile(r"^Buffer pool size\s+(\d+)\s*$", _F), ("buffer_pool_pages",)),
        (re.compile(r"^Free buffers\s+(\d+)", _F), ("buffer_pool_pages_free",)),
        (re.compile(r"^Database pages\s+(\d+)", _F), ("buffer_pool_pages_data",)),
        (re.compile(r"^Old database pages\s+(\d+)", _F), ("buffer_pool_pages_old",)),
        (re.compile(r"^Modified db pages\s+(\d+)", _F), ("buffer_pool_pages_dirty",)),
        (re.compile(rf"^Percent of dirty pages\(LRU & free pages\):\s*{_NUM}", _F), ("buffer_pool_dirty_pct",)),
        (re.compile(rf"^Max dirty pages percent:\s*{_NUM}", _F), ("buffer_pool_max_dirty_pct",)),
        (re.compile(r"^Pending reads:?\s+(\d+)", _F), ("buffer_pool_pending_reads",)),
        (re.compile(r"^Pending writes: LRU (\d+), flush list (\d+)(?:, single page (\d+))?", _F),
         ("buffer_pool_pending_writes_lru", "buffer_pool_pending_writes_flush_list",
          "buffer_pool_pending_writes_single_page")),
        (re.compile(r"^Pages made young (\d+), not young (\d+)", _F),
         ("buffer_pool_pages_made_young", "buffer_pool_pages_not_young")),
        (re.compile(rf"^{_NUM} youngs/s, {_NUM} non-youngs/s", _F),
         ("buffer_pool_youngs_per_s", "buffer_pool_non_youngs_per_s")),
        (re.compile(r"^Pages read (\d+), created (\d+), written (\d+)", _F),
         ("buffer_pool_pages_read", "buffer_pool_pages_created", "buffer_pool_pages_written")),
        (re.compile(rf"^{_NUM} reads/s, {_NUM} creates/s, {_NUM} writes/s", _F),
         ("buffer_pool_reads_per_s", "buffer_pool_creates_per_s", "buffer_pool_writes_per_s")),
        (re.compile(r"^Buffer pool hit rate (\d+) / 1000, young-making rate (\d+) / 1000 not (\d+) / 1000", _F),
         ("buffer_pool_hit_rate_per_1000", "buffer_pool_young_making_rate_per_1000",
          "buffer_pool_not_young_making_rate_per_1000")),
        (re.compile(rf"^Pages read ahead {_NUM}/s, evicted without access {_NUM}/s, Random read ahead {_NUM}/s",
                    _F),
         ("buffer_pool_read_ahead_per_s", "buffer_pool_evicted_without_access_per_s",
          "buffer_pool_random_read_ahead_per_s")),
        (re.compile(r"^LRU len: (\d+), unzip_LRU len: (\d+)", _F),
         ("buffer_pool_lru_len", "buffer_pool_unzip_lru_len")),
        (re.compile(r"^I/O sum\[(\d+)\]:cur\[(\d+)\], unzip sum\[(\d+)\]:cur\[(\d+)\]", _F),
         ("buffer_pool_io_sum", "buffer_pool_io_cur", "buffer_pool_unzip_io_sum", "buffer_pool_unzip_io_cur")),
    ],
    "ROW OPERATIONS": [
        (re.compile(r"^(\d+) queries inside InnoDB, (\d+) queries in queue", _F),
         ("row_queries_inside", "row_queries_in_queue")),
        (re.compile(r"^(\d+) read views open inside InnoDB", _F), ("row_read_views",)),
        (re.compile(r"^Number of rows inserted (\d+), updated (\d+), deleted (\d+), read (\d+)", _F),
         ("rows_inserted", "rows_updated", "rows_deleted", "rows_read")),
        (re.compile(rf"^{_NUM} inserts/s, {_NUM} updates/s, {_NUM} deletes/s, {_NUM} reads/s", _F),
         ("rows_inserted_per_s", "rows_updated_per_s", "rows_deleted_per_s", "rows_read_per_s")),
    ],
}

# Sections printed before the transaction list may hold statement text.
_USER_TEXT_SECTIONS = ("LATEST DETECTED DEADLOCK", "LATEST FOREIGN KEY ERROR")
_LATER_SECTIONS = ("FILE I/O", "INSERT BUFFER AND ADAPTIVE HASH INDEX", "INSERT BUFFER", "ADAPTIVE HASH INDEX",
                   "LOG", "BUFFER POOL AND MEMORY", "INDIVIDUAL BUFFER POOL INFO", "ROW OPERATIONS")
_STATEMENT_ENDS = ("*** ", "Foreign key constraint fails", "Cannot ", "Trying to ", "But in ", "Error in ")
_KNOWN = ("BACKGROUND THREAD", "SEMAPHORES", "TRANSACTIONS") + _USER_TEXT_SECTIONS + _LATER_SECTIONS


def _headers(lines: list[str]) -> list[tuple[int, str]]:
    """(index of the title line, title) of every `----/TITLE/----` triple with a known title."""
    out = []
    for i in range(1, len(lines) - 1):
        title = lines[i].strip()
        if title in _KNOWN and _DASHES.match(lines[i - 1]) and _DASHES.match(lines[i + 1]):
            out.append((i, title))
    return out


def _user_text_lines(lines: list[str], headers: list[tuple[int, str]]) -> set[int]:
    """Line numbers of statement text inside the deadlock / foreign key error reports.

    A statement follows its "... thread id N, OS thread handle ..." line and
    runs to the report's next structural line ("*** ..." in a deadlock report,
    "Foreign key constraint fails ..." and the like in a foreign key error).
    """
    masked: set[int] = set()
    for k, (start, title) in enumerate(headers):
        if title not in _USER_TEXT_SECTIONS:
            continue
        in_stmt = False
        for j in range(start + 2, len(lines)):
            line = lines[j]
            if in_stmt:
                if line.startswith(_STATEMENT_ENDS):
                    in_stmt = False
                else:
                    masked.add(j)
                continue
            if _THREAD_LINE.match(line):
                in_stmt = True
            elif any(i == j for i, _ in headers[k + 1:]):
                break  # the report is over
    return masked


def _sections(text: str) -> dict[str, str]:
    lines = text.splitlines()
    headers = _headers(lines)
    ends = {i: (headers[k + 1][0] - 1 if k + 1 < len(headers) else len(lines)) for k, (i, _) in enumerate(headers)}
    masked = _user_text_lines(lines, headers)
    chosen: dict[str, int] = {}
    for i, title in headers:
        if title == "TRANSACTIONS":
            # the first one outside statement text that starts like the real one
            if "TRANSACTIONS" not in chosen and i not in masked and i + 2 < len(lines) \
                    and lines[i + 2].startswith("Trx id counter"):
                chosen[title] = i
        else:
            chosen[title] = i  # later ones win: no user text follows the transaction list
    out: dict[str, str] = {}
    for title, i in chosen.items():
        body = "\n".join(lines[i + 2: ends[i]])
        if title == "TRANSACTIONS":
            body = body.split("LIST OF TRANSACTIONS FOR EACH SESSION:", 1)[0]
            body = body.split("\n---TRANSACTION", 1)[0]
        out[title] = body
    # MySQL prints the change buffer and the adaptive hash index in one section
    both = out.pop("INSERT BUFFER AND ADAPTIVE HASH INDEX", None)
    if both is not None:
        out.setdefault("INSERT BUFFER", both)
        out.setdefault("ADAPTIVE HASH INDEX", both)
    return out


def _num(s: str) -> float:
    return float(s)


def _pending_aio(body: str, label: str) -> float | None:
    """'Pending normal aio reads: 3 [1, 2] ,' (total first) or '[0, 1, 0, 0]' (sum) or nothing."""
    m = re.search(rf"{label}:\s*(\d+)?\s*(\[[\d,\s]*\])?", body)
    if not m or (m.group(1) is None and m.group(2) is None):
        return None
    if m.group(1) is not None:
        return float(m.group(1))
    parts = [p for p in m.group(2).strip("[]").split(",") if p.strip()]
    return float(sum(int(p) for p in parts)) if parts else None


def parse_innodb_status(text: str) -> list[Row]:
    """Named numbers of one SHOW ENGINE INNODB STATUS output (see the module docstring)."""
    if not text:
        return []
    rows: list[Row] = []
    seen: set[str] = set()

    def add(name: str, value: float | None = None, txt: str | None = None) -> None:
        if name not in seen and (value is not None or txt is not None):
            seen.add(name)
            rows.append((name, value, txt))

    m = re.search(r"^Per second averages calculated from the last (\d+) seconds", text, re.M)
    if m:
        add("averages_seconds", _num(m.group(1)))
    sections = _sections(text)
    for title, patterns in _PATTERNS.items():
        body = sections.get(title)
        if body is None:
            continue
        for rx, names in patterns:
            m = rx.search(body)
            if not m:
                continue
            for name, val in zip(names, m.groups()):
                if name is not None and val is not None:
                    add(name, _num(val))
        if title == "TRANSACTIONS":
            m = re.search(r"^Purge done for trx's .* state: (.+?)\s*$", body, re.M)
            if m:
                add("purge_state", txt=m.group(1))
        elif title == "FILE I/O":
            for label, name in (("Pending normal aio reads", "file_pending_aio_reads"),
                                (r"\baio writes", "file_pending_aio_writes"),
                                ("ibuf aio reads", "file_pending_ibuf_aio_reads"),
                                ("log i/o's", "file_pending_log_ios"),
                                ("sync i/o's", "file_pending_sync_ios")):
                add(name, _pending_aio(body, label))
        elif title == "ADAPTIVE HASH INDEX":
            parts = re.findall(r"^Hash table size (\d+), node heap has (\d+) buffer\(s\)", body, re.M)
            if parts:
                add("ahi_hash_table_size", float(sum(int(a) for a, _ in parts)))
                add("ahi_node_heap_buffers", float(sum(int(b) for _, b in parts)))
        elif title == "ROW OPERATIONS":
            m = re.search(r"^(?:Process ID=.*?)?state: (.+?)\s*$", body, re.M)
            if m:
                add("main_thread_state", txt=m.group(1))
    values = {n: v for n, v, _ in rows}
    if "log_sequence_number" in values and "log_last_checkpoint" in values:
        add("checkpoint_age", values["log_sequence_number"] - values["log_last_checkpoint"])
    return rows


def as_dict(rows: Iterable[Row]) -> dict[str, float | str]:
    """{name: value or text}, for tests and quick looks."""
    return {n: (v if v is not None else t) for n, v, t in rows}
