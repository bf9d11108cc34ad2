"""A thin ctypes binding over the system libbpf (Debian's libbpf1).

Only what ioattr needs: open an object, set read-only config and share
maps before load, load, attach, drain maps in batches, and consume a ring
buffer. Nothing is pinned: every program and link lives in this process's
file descriptors, so the kernel detaches all of it when the process exits,
however it exits (including kill -9).

libbpf's own diagnostics (verifier logs included) are captured into a
buffer instead of being printed, so callers can show one clear line and
keep the detail for `--verbose`.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator

c_void_p = ctypes.c_void_p
c_int = ctypes.c_int
c_uint = ctypes.c_uint
c_char_p = ctypes.c_char_p
c_size_t = ctypes.c_size_t
c_uint32 = ctypes.c_uint32
c_uint64 = ctypes.c_uint64


class LibbpfError(RuntimeError):
    """A libbpf call failed; `errno` is the positive error number."""

    def __init__(self, what: str, err: int, log: str = "") -> None:
        self.errno = abs(err)
        self.log = log
        super().__init__(f"{what}: {os.strerror(self.errno)}")


def _load_library() -> ctypes.CDLL:
    for name in ("libbpf.so.1", ctypes.util.find_library("bpf") or ""):
        if not name:
            continue
        try:
            return ctypes.CDLL(name, use_errno=True)
        except OSError:
            continue
    raise LibbpfError("cannot load libbpf.so.1 (install the libbpf1 package)", errno.ENOENT)


#: a map key or value: a ctypes struct, scalar or byte array (what ctypes.byref takes)
CData = ctypes.Structure | ctypes._SimpleCData | ctypes.Array

_lib: ctypes.CDLL | None = None
_libc = ctypes.CDLL(None, use_errno=True)
_log_lines: list[str] = []

_PRINT_FN = ctypes.CFUNCTYPE(c_int, c_int, c_char_p, c_void_p)


@_PRINT_FN
def _capture_print(level: int, fmt: bytes, va_list: int) -> int:
    buf = ctypes.create_string_buffer(4096)
    _libc.vsnprintf(buf, ctypes.sizeof(buf), fmt, c_void_p(va_list))
    _log_lines.append(buf.value.decode(errors="replace"))
    if len(_log_lines) > 2000:
        del _log_lines[:1000]
    return 0


def take_log() -> str:
    """Return and clear what libbpf said since the last call."""
    text = "".join(_log_lines)
    _log_lines.clear()
    return text


def lib() -> ctypes.CDLL:
    """The libbpf CDLL with prototypes declared (loaded on first use)."""
    global _lib
    if _lib is not None:
        return _lib
    L = _load_library()
    protos: dict[str, tuple[object, list[object]]] = {
        "libbpf_major_version": (c_uint32, []),
        "libbpf_minor_version": (c_uint32, []),
        "libbpf_set_print": (c_void_p, [_PRINT_FN]),
        "bpf_object__open_file": (c_void_p, [c_char_p, c_void_p]),
        "bpf_object__load": (c_int, [c_void_p]),
        "bpf_object__close": (None, [c_void_p]),
        "bpf_object__next_map": (c_void_p, [c_void_p, c_void_p]),
        "bpf_object__next_program": (c_void_p, [c_void_p, c_void_p]),
        "bpf_map__name": (c_char_p, [c_void_p]),
        "bpf_map__fd": (c_int, [c_void_p]),
        "bpf_map__reuse_fd": (c_int, [c_void_p, c_int]),
        "bpf_map__initial_value": (c_void_p, [c_void_p, ctypes.POINTER(c_size_t)]),
        "bpf_map__set_max_entries": (c_int, [c_void_p, c_uint32]),
        "bpf_map__set_autocreate": (c_int, [c_void_p, ctypes.c_bool]),
        "bpf_map__key_size": (c_uint32, [c_void_p]),
        "bpf_map__value_size": (c_uint32, [c_void_p]),
        "bpf_program__name": (c_char_p, [c_void_p]),
        "bpf_program__section_name": (c_char_p, [c_void_p]),
        "bpf_program__set_autoload": (c_int, [c_void_p, ctypes.c_bool]),
        "bpf_program__autoload": (ctypes.c_bool, [c_void_p]),
        "bpf_program__fd": (c_int, [c_void_p]),
        "bpf_program__attach": (c_void_p, [c_void_p]),
        "bpf_program__attach_tracepoint": (c_void_p, [c_void_p, c_char_p, c_char_p]),
        "bpf_program__attach_perf_event": (c_void_p, [c_void_p, c_int]),
        "bpf_link__fd": (c_int, [c_void_p]),
        "bpf_program__attach_uprobe_opts": (c_void_p, [c_void_p, c_int, c_char_p, c_size_t, c_void_p]),
        "bpf_link__destroy": (c_int, [c_void_p]),
        "bpf_map_lookup_batch": (c_int, [c_int, c_void_p, c_void_p, c_void_p, c_void_p,
                                         ctypes.POINTER(c_uint32), c_void_p]),
        "bpf_map_lookup_elem": (c_int, [c_int, c_void_p, c_void_p]),
        "bpf_map_update_elem": (c_int, [c_int, c_void_p, c_void_p, c_uint64]),
        "bpf_map_delete_elem": (c_int, [c_int, c_void_p]),
        "bpf_map_lookup_and_delete_elem": (c_int, [c_int, c_void_p, c_void_p]),
        "bpf_map_get_next_key": (c_int, [c_int, c_void_p, c_void_p]),
        "bpf_enable_stats": (c_int, [c_int]),
        "ring_buffer__new": (c_void_p, [c_int, c_void_p, c_void_p, c_void_p]),
        "ring_buffer__consume": (c_int, [c_void_p]),
        "ring_buffer__poll": (c_int, [c_void_p, c_int]),
        "ring_buffer__free": (None, [c_void_p]),
        "ring_buffer__epoll_fd": (c_int, [c_void_p]),
        "bpf_prog_test_run_opts": (c_int, [c_int, c_void_p]),
    }
    for name, (restype, argtypes) in protos.items():
        fn = getattr(L, name)
        fn.restype = restype
        fn.argtypes = argtypes
    L.libbpf_set_print(_capture_print)
    _lib = L
    return L


def version() -> tuple[int, int]:
    L = lib()
    return int(L.libbpf_major_version()), int(L.libbpf_minor_version())


def _check_ptr(ptr: int | None, what: str) -> int:
    if not ptr:
        raise LibbpfError(what, ctypes.get_errno() or errno.EINVAL, take_log())
    # libbpf >= 1.0 returns NULL on error; older ERR_PTR values are small negatives
    if ptr > 0xFFFFFFFFFFFFF000:
        raise LibbpfError(what, ptr - (1 << 64), take_log())
    return ptr


def _from_lib(fn: str, conv: type = int) -> property:
    """A read-only attribute asked of libbpf each time: conv(fn(self.ptr))."""
    return property(lambda self: conv(getattr(lib(), fn)(self.ptr)), doc=f"{fn}() of this object")


class Map:
    """A BPF map of a loaded (or about to be loaded) object."""

    def __init__(self, ptr: int) -> None:
        self.ptr = ptr
        self.name = lib().bpf_map__name(ptr).decode()

    fd = _from_lib("bpf_map__fd")
    key_size = _from_lib("bpf_map__key_size")
    value_size = _from_lib("bpf_map__value_size")

    def reuse_fd(self, fd: int) -> None:
        err = lib().bpf_map__reuse_fd(self.ptr, fd)
        if err:
            raise LibbpfError(f"share map {self.name}", err, take_log())

    def set_max_entries(self, n: int) -> None:
        err = lib().bpf_map__set_max_entries(self.ptr, n)
        if err:
            raise LibbpfError(f"resize map {self.name}", err, take_log())

    def set_autocreate(self, on: bool) -> None:
        """Whether load() creates this map (False for maps of programs left out)."""
        err = lib().bpf_map__set_autocreate(self.ptr, on)
        if err:
            raise LibbpfError(f"autocreate map {self.name}", err, take_log())

    def initial_value(self) -> tuple[int, int]:
        """Address and size of a global-data map's contents (before load)."""
        size = c_size_t(0)
        addr = lib().bpf_map__initial_value(self.ptr, ctypes.byref(size))
        if not addr:
            raise LibbpfError(f"initial value of {self.name}", errno.EINVAL)
        return int(addr), int(size.value)


def map_update(fd: int, key: CData, value: CData, flags: int = 0) -> None:
    err = lib().bpf_map_update_elem(fd, ctypes.byref(key), ctypes.byref(value), flags)
    if err:
        raise LibbpfError("map update", ctypes.get_errno() or err)


def map_delete(fd: int, key: CData) -> bool:
    """Delete a key; False when it was not there."""
    err = lib().bpf_map_delete_elem(fd, ctypes.byref(key))
    if err:
        e = ctypes.get_errno() or abs(err)
        if e == errno.ENOENT:
            return False
        raise LibbpfError("map delete", e)
    return True


def map_lookup_and_delete(fd: int, key: CData, value: CData) -> bool | None:
    """Delete a hash map's key, reading its last value into `value` in the same step (no
    update between the two is lost). True: deleted; False: it was not there; None: this
    kernel cannot do it for this map (hash maps need 5.14): the caller deletes plainly."""
    err = lib().bpf_map_lookup_and_delete_elem(fd, ctypes.byref(key), ctypes.byref(value))
    if err:
        e = ctypes.get_errno() or abs(err)
        if e == errno.ENOENT:
            return False
        if e in (errno.EINVAL, errno.EOPNOTSUPP, 524):  # 524: the kernel's ENOTSUPP
            return None
        raise LibbpfError("map lookup and delete", e)
    return True


def map_lookup(fd: int, key: CData, value: CData) -> bool:
    err = lib().bpf_map_lookup_elem(fd, ctypes.byref(key), ctypes.byref(value))
    return err == 0


def map_keys(fd: int, key_type: type) -> Iterator[object]:
    """Iterate a map's keys (for small maps; big ones use lookup_batch)."""
    prev = None
    while True:
        nxt = key_type()
        err = lib().bpf_map_get_next_key(fd, ctypes.byref(prev) if prev is not None else None,
                                         ctypes.byref(nxt))
        if err:
            return
        yield nxt
        prev = nxt


class BatchBuffers:
    """Key and value buffers for lookup_batch, kept per map and reused across drains.

    They start small and grow (doubling, capped at max_entries) only when a drain finds
    more entries than they hold, so their size follows the map's real entry count rather
    than its capacity: a full-size pair for a 65536-entry io_stats is ~37 MiB that
    create_string_buffer zero-fills (resident at once), and allocating it every drain cost
    ~45 ms of CPU per second.
    """

    def __init__(self, key_size: int, value_size: int, max_entries: int, initial: int = 1024) -> None:
        self.key_size, self.value_size, self.max_entries = key_size, value_size, max_entries
        self.capacity = 0
        self.keys, self.vals = ctypes.create_string_buffer(0), ctypes.create_string_buffer(0)  # until ensure()
        self.ensure(min(max(1, initial), max_entries))

    def ensure(self, n: int, keep: int = 0) -> None:
        """Room for at least n entries (at most max_entries); the first `keep` entries survive."""
        n = min(n, self.max_entries)
        if n <= self.capacity:
            return
        cap = min(max(n, 2 * self.capacity), self.max_entries)
        keys = ctypes.create_string_buffer(self.key_size * cap)
        vals = ctypes.create_string_buffer(self.value_size * cap)
        if keep:
            ctypes.memmove(keys, self.keys, keep * self.key_size)
            ctypes.memmove(vals, self.vals, keep * self.value_size)
        self.keys, self.vals, self.capacity = keys, vals, cap


def lookup_batch(fd: int, key_size: int, value_size: int, max_entries: int,
                 chunk: int = 4096, buffers: BatchBuffers | None = None) -> tuple[bytes, bytes, int]:
    """Read a whole hash map in batches: (keys, values, count) as bytes of just the entries read.

    Uses BPF_MAP_LOOKUP_BATCH (~1 µs per entry) instead of one syscall per key. With
    `buffers` (kept by the caller across calls) nothing map-sized is allocated per call.
    """
    L = lib()
    if buffers is None:
        buffers = BatchBuffers(key_size, value_size, max_entries, initial=min(chunk, max_entries))
    out_batch = c_uint64(0)
    in_batch = c_uint64(0)
    count = c_uint32(0)
    total = 0
    first = True
    while total < max_entries:
        want = min(chunk, max_entries - total)
        if total + want > buffers.capacity:
            buffers.ensure(total + want, keep=total)
            want = min(want, buffers.capacity - total)
        count.value = want
        err = L.bpf_map_lookup_batch(
            fd,
            None if first else ctypes.byref(in_batch),
            ctypes.byref(out_batch),
            ctypes.byref(buffers.keys, total * key_size),
            ctypes.byref(buffers.vals, total * value_size),
            ctypes.byref(count),
            None,
        )
        e = ctypes.get_errno() if err else 0
        total += int(count.value)
        if err:
            if e == errno.ENOENT:
                break
            if e == errno.ENOSPC and count.value == 0:
                # a bucket holds more than `chunk` entries: retry with room for all
                chunk = max_entries
                continue
            raise LibbpfError("map lookup_batch", e or abs(err))
        in_batch.value = out_batch.value
        first = False
    # copy only what was read, not the whole buffer
    return ctypes.string_at(buffers.keys, total * key_size), ctypes.string_at(buffers.vals, total * value_size), total


class Program:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr
        self.name = lib().bpf_program__name(ptr).decode()
        self.section = lib().bpf_program__section_name(ptr).decode()

    def set_autoload(self, on: bool) -> None:
        lib().bpf_program__set_autoload(self.ptr, on)

    autoload = _from_lib("bpf_program__autoload", bool)
    fd = _from_lib("bpf_program__fd")

    def attach(self) -> "Link":
        """Attach by section name (tracepoint/, tp_btf/, raw_tp/ ...)."""
        ptr = lib().bpf_program__attach(self.ptr)
        return Link(_check_ptr(ptr, f"attach {self.name} ({self.section})"))

    def attach_tracepoint(self, category: str, event: str) -> "Link":
        """Attach to a named tracepoint, whatever the program's section says."""
        ptr = lib().bpf_program__attach_tracepoint(self.ptr, category.encode(), event.encode())
        return Link(_check_ptr(ptr, f"attach to tracepoint {category}:{event}"))

    def attach_perf_event(self, pfd: int) -> "Link":
        """Attach to an open perf event (see open_tracepoint_event). The link
        owns `pfd` once this succeeds; on failure the caller still does."""
        ptr = lib().bpf_program__attach_perf_event(self.ptr, pfd)
        return Link(_check_ptr(ptr, f"attach {self.name} to perf event"))

    def attach_uprobe(self, pid: int, binary: str, func_offset: int, retprobe: bool = False) -> "Link":
        class UprobeOpts(ctypes.Structure):
            _fields_ = [("sz", c_size_t), ("ref_ctr_offset", c_size_t), ("bpf_cookie", c_uint64),
                        ("retprobe", ctypes.c_bool), ("func_name", c_char_p), ("attach_mode", c_int)]

        opts = UprobeOpts(sz=ctypes.sizeof(UprobeOpts), retprobe=retprobe)
        ptr = lib().bpf_program__attach_uprobe_opts(self.ptr, pid, binary.encode(), func_offset,
                                                    ctypes.byref(opts))
        return Link(_check_ptr(ptr, f"attach uprobe {self.name} at {binary}+{func_offset:#x}"))


class Link:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    @property
    def fd(self) -> int:
        return int(lib().bpf_link__fd(self.ptr)) if self.ptr else -1

    def destroy(self) -> None:
        if self.ptr:
            lib().bpf_link__destroy(self.ptr)
            self.ptr = 0


_PERF_EVENT_OPEN_NR = {"x86_64": 298, "aarch64": 241}
PERF_TYPE_TRACEPOINT = 2
PERF_FLAG_FD_CLOEXEC = 8
PERF_EVENT_IOC_DISABLE = 0x2401


def open_tracepoint_event(category: str, event: str, tracefs: str = "/sys/kernel/tracing") -> int:
    """A perf event on tracepoint category:event (all CPUs see BPF attached
    to it), as libbpf's attach_tracepoint opens it; returns the fd. Opening
    it here, not in libbpf, lets the caller keep a dup of the fd (see
    close_fds_in_child)."""
    try:
        with open(os.path.join(tracefs, "events", category, event, "id")) as f:
            tp_id = int(f.read())
    except (OSError, ValueError) as e:
        raise LibbpfError(f"tracepoint {category}:{event} id", getattr(e, "errno", None) or errno.ENOENT) from e
    nr = _PERF_EVENT_OPEN_NR.get(os.uname().machine)
    if nr is None:
        raise LibbpfError(f"perf_event_open on {os.uname().machine}", errno.ENOSYS)
    attr = (ctypes.c_uint64 * 16)()  # struct perf_event_attr, 128 bytes (PERF_ATTR_SIZE_VER7)
    attr[0] = PERF_TYPE_TRACEPOINT | (ctypes.sizeof(attr) << 32)  # type, size
    attr[1] = tp_id  # config; the rest zero: a counting event, BPF does the work
    _libc.syscall.restype = ctypes.c_long
    fd = _libc.syscall(ctypes.c_long(nr), ctypes.byref(attr), c_int(-1), c_int(0), c_int(-1),
                       ctypes.c_ulong(PERF_FLAG_FD_CLOEXEC))
    if fd < 0:
        raise LibbpfError(f"perf_event_open {category}:{event}", ctypes.get_errno() or errno.EINVAL)
    return int(fd)


_closers: list[int] = []  # pids of close_fds_in_child helpers still tearing down


def close_fds_in_child(fds: list[int]) -> None:
    """Close perf event fds without waiting for the kernel's teardown.

    Tearing down a tracepoint perf event waits for RCU grace periods under
    a global mutex (~30-200 ms each, one after another); for the ~40
    per-syscall tracepoints that is seconds, and a process that exits with
    them open waits that long in its exit. A helper process (`cat`, detached
    with `setsid -f` so it is nobody's child) inherits the fds and does that
    wait instead; ours are closed at once and the helper exits when the
    teardown is done. Callers detach the BPF programs and disable the events
    first, so nothing runs meanwhile. wait_for_closers() waits for helpers."""
    fds = [fd for fd in fds if fd >= 0]
    if not fds:
        return
    # the helper says its pid, then holds the fds until its stdin closes
    argv = ["sh", "-c", "echo $$; exec cat >/dev/null"]
    setsid = shutil.which("setsid")
    if setsid:
        argv = [setsid, "-f", *argv]
    pid = 0
    child = None
    try:
        child = subprocess.Popen(argv, pass_fds=fds, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
        pid = int(child.stdout.readline() or 0)
    except (OSError, ValueError):
        pid = 0
    for fd in fds:
        try:
            os.close(fd)  # without a helper this is where the wait happens
        except OSError:
            pass
    if child is None:
        return
    child.stdin.close()  # the helper exits; the kernel tears the events down in its exit
    child.stdout.close()
    if pid:
        _closers.append(pid)
    # reap `setsid` (it exits at once) or, without setsid, the helper itself
    threading.Thread(target=child.wait, name="ioattr-perf-close", daemon=True).start()


def wait_for_closers(timeout: float = 30.0) -> bool:
    """Wait until the helpers of close_fds_in_child are gone, i.e. the perf
    events they held are torn down; False on timeout."""
    deadline = time.monotonic() + timeout
    while _closers:
        for pid in list(_closers):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    gone = f.read().rsplit(")", 1)[1].split()[0] == "Z"
            except (OSError, IndexError):
                gone = True
            if gone:
                _closers.remove(pid)
        if not _closers:
            break
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def disable_perf_event(fd: int) -> None:
    """Stop a perf event firing (it stays open)."""
    _libc.ioctl(c_int(fd), ctypes.c_ulong(PERF_EVENT_IOC_DISABLE), c_int(0))


def destroy_links(links: list[Link]) -> None:
    """Destroy many links side by side. Detaching a program from a tracepoint
    waits for an RCU grace period (~50-80 ms here); one at a time, the ~40
    per-syscall tracepoints would take seconds. ctypes drops the GIL."""
    live = [link for link in links if link.ptr]
    if len(live) <= 1:
        for link in live:
            link.destroy()
        return
    with ThreadPoolExecutor(min(len(live), 64)) as pool:
        list(pool.map(Link.destroy, live))


class Object:
    """One BPF ELF object: open, configure, load, attach, close."""

    def __init__(self, path: str) -> None:
        L = lib()
        take_log()
        ptr = L.bpf_object__open_file(path.encode(), None)
        self.ptr = _check_ptr(ptr, f"open {path}")
        self.path = path
        self.links: list[Link] = []

    def _each(self, next_fn: str) -> list[int]:
        """The object's maps or programs (libbpf's bpf_object__next_* walk), as pointers."""
        out, prev = [], None
        while True:
            prev = getattr(lib(), next_fn)(self.ptr, prev)
            if not prev:
                return out
            out.append(prev)

    def maps(self) -> list[Map]:
        return [Map(p) for p in self._each("bpf_object__next_map")]

    def map(self, name: str) -> Map:
        for m in self.maps():
            if m.name == name:
                return m
        raise KeyError(f"{self.path} has no map {name}")

    def programs(self) -> list[Program]:
        return [Program(p) for p in self._each("bpf_object__next_program")]

    def load(self) -> None:
        take_log()
        err = lib().bpf_object__load(self.ptr)
        if err:
            raise LibbpfError(f"load {os.path.basename(self.path)}", err, take_log())

    def close(self) -> None:
        for link in self.links:
            link.destroy()
        self.links.clear()
        if self.ptr:
            lib().bpf_object__close(self.ptr)
            self.ptr = 0


SAMPLE_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_size_t)


class RingBuffer:
    """Consumer of a BPF ring buffer; `handler` gets each record's bytes."""

    def __init__(self, map_fd: int, handler: Callable[[bytes], None]) -> None:
        def _cb(_ctx: int, data: int, size: int) -> int:
            try:
                handler(ctypes.string_at(data, size))
            except Exception:  # never let a handler error unwind through C
                return 0
            return 0

        self._cb = SAMPLE_FN(_cb)
        ptr = lib().ring_buffer__new(map_fd, self._cb, None, None)
        self.ptr = _check_ptr(ptr, "ring buffer")

    def consume(self) -> int:
        return int(lib().ring_buffer__consume(self.ptr))

    def poll(self, timeout_ms: int) -> int:
        return int(lib().ring_buffer__poll(self.ptr, timeout_ms))

    def epoll_fd(self) -> int:
        """An fd that polls readable when a record submitted with a wakeup is waiting
        (for select() beside other fds; consume() reads the records)."""
        return int(lib().ring_buffer__epoll_fd(self.ptr))

    def free(self) -> None:
        if self.ptr:
            lib().ring_buffer__free(self.ptr)
            self.ptr = 0


class _TestRunOpts(ctypes.Structure):
    """struct bpf_test_run_opts (libbpf 1.x)."""
    _fields_ = [("sz", c_size_t), ("data_in", c_void_p), ("data_out", c_void_p),
                ("data_size_in", c_uint32), ("data_size_out", c_uint32), ("ctx_in", c_void_p),
                ("ctx_out", c_void_p), ("ctx_size_in", c_uint32), ("ctx_size_out", c_uint32),
                ("retval", c_uint32), ("repeat", c_int), ("duration", c_uint32), ("flags", c_uint32),
                ("cpu", c_uint32), ("batch_size", c_uint32)]


def prog_test_run(prog_fd: int, ctx: ctypes.Structure | None = None) -> int:
    """Run a program once with BPF_PROG_TEST_RUN (a SEC("syscall") program: userspace's way
    to do something atomically in BPF); its return value. `ctx`, when given, is the
    program's context: the kernel copies it back into the same buffer after the run, so the
    program can answer through it (a syscall program takes ctx_in only; ctx_out is EINVAL)."""
    opts = _TestRunOpts()
    opts.sz = ctypes.sizeof(opts)
    if ctx is not None:
        opts.ctx_in = ctypes.cast(ctypes.byref(ctx), c_void_p)
        opts.ctx_size_in = ctypes.sizeof(ctx)
    err = lib().bpf_prog_test_run_opts(prog_fd, ctypes.byref(opts))
    if err:
        raise LibbpfError("BPF_PROG_TEST_RUN", ctypes.get_errno() or -err)
    return int(opts.retval)


def enable_run_time_stats() -> int | None:
    """Turn on kernel BPF run-time accounting; returns an fd to keep open, or None."""
    fd = lib().bpf_enable_stats(0)  # BPF_STATS_RUN_TIME
    return int(fd) if fd >= 0 else None
