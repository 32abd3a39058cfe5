#!/usr/bin/env python3
"""Reads clockwatch's bounded-time segment with os.pread and struct alone.

The segment is AWS ClockBound's shared memory format version 2 (80 bytes,
native byte order), by default /run/clockwatch/clockbound/shm0. It gives the
current time as an interval [earliest, latest] that true time is within, and
a status: only "synchronized" and "free_running" intervals can be trusted.
The checks are those of ClockBound's reader (clock-bound-shm/src/reader.rs).
When the segment has the VMClock flag (clockwatch reads /dev/vmclock0), the
device's disruption marker is compared with the segment's as ClockBound's
client does (clock-bound-vmclock VMClock::now): while they differ the VM was
migrated or restored and clockwatch has not said so yet, and the status is
"unknown".

Both files are read with pread, not mmap: a load from a mapping whose file
was truncated raises SIGBUS, which kills a Python process (no handler can
resume it), whereas a pread of a truncated file returns fewer bytes, which
is an error here. The device (ptp_vmclock) supports read() and applies the
page's seqlock itself. Opens are non-blocking and check the file's type,
so a FIFO in either place is refused rather than waited on.

    python3 boundedtime.py [PATH] [--vmclock DEVICE] [--watch SECONDS]

prints one line per reading:

    status=synchronized earliest_ns=... latest_ns=... bound_ns=... generation=...
"""

import os
import stat
import struct
import sys
import time

DEFAULT_PATH = "/run/clockwatch/clockbound/shm0"
MAGIC = (0x414D5A4E, 0x43420200)  # two native u32s
VERSION = 2
SIZE = 80
RESTART_GRACE_NS = 5_000_000_000
CAUSALITY_BLUR_NS = 1000
# Python has no name for it on every version; 6 on Linux.
CLOCK_MONOTONIC_COARSE = getattr(time, "CLOCK_MONOTONIC_COARSE", 6)

STATUSES = {0: "unknown", 1: "synchronized", 2: "free_running", 3: "disrupted"}

DEFAULT_VMCLOCK = "/dev/vmclock0"
VMCLOCK_MAGIC = 0x4B4C4356  # "VCLK", little-endian, like every field of the page
VMCLOCK_SEQ = struct.Struct("<I")  # seq_count at 12: odd while the hypervisor updates
VMCLOCK_MARKER = struct.Struct("<Q")  # disruption_marker at 16
VMCLOCK_MIN_SIZE = 104  # the page's structure up to time_maxerror_nanosec
OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC

HEADER = struct.Struct("=IIIHH")  # magic0, magic1, size, version, generation
BODY = struct.Struct("=qqqqqQIiB7x")  # as_of, void_after, bound, marker, drift, status, vmclock flag


class SegmentError(Exception):
    """The segment cannot be read (ClockBound's ShmError kinds)."""


class VMClock:
    """The VMClock device's page, read with pread (Linux's vmclock-abi.h)."""

    def __init__(self, path=DEFAULT_VMCLOCK):
        fd = os.open(path, OPEN_FLAGS)
        try:
            st = os.fstat(fd)
            if not (stat.S_ISCHR(st.st_mode) or stat.S_ISREG(st.st_mode) and st.st_size >= VMCLOCK_MIN_SIZE):
                raise SegmentError(f"{path}: not a VMClock device (a character device, or a page of at least {VMCLOCK_MIN_SIZE} bytes)")
            head = os.pread(fd, 24, 0)
            if len(head) < 24:
                raise SegmentError(f"{path}: {len(head)} bytes: not a VMClock page")
            magic, version = struct.unpack_from("<I4xH", head, 0)
            if magic != VMCLOCK_MAGIC or version != 1:
                raise SegmentError(f"{path}: not a VMClock page of version 1")
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def marker(self):
        """The disruption marker, read under the page's seqlock (None if it never settles or the file shrank)."""
        try:
            for _ in range(10_000):
                b = os.pread(self._fd, 24, 0)
                if len(b) < 24:
                    return None
                seq = VMCLOCK_SEQ.unpack_from(b, 12)[0]
                if seq & 1:
                    continue
                again = os.pread(self._fd, 4, 12)
                if len(again) == 4 and VMCLOCK_SEQ.unpack_from(again, 0)[0] == seq:
                    return VMCLOCK_MARKER.unpack_from(b, 16)[0]
        except OSError:  # the device's own seqlock timed out (ETIMEDOUT)
            return None
        return None

    def close(self):
        os.close(self._fd)


class Reader:
    def __init__(self, path=DEFAULT_PATH, vmclock_path=DEFAULT_VMCLOCK):
        self._vmclock_path = vmclock_path
        self._vmclock = None
        self._path = path
        fd = os.open(path, OPEN_FLAGS)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise SegmentError(f"{path}: not a regular file: not initialized")
            if st.st_size < SIZE:
                raise SegmentError(f"{path}: {st.st_size} bytes, want at least {SIZE}: not initialized")
            magic0, magic1, segsize, version, generation = HEADER.unpack_from(self._read(fd, SIZE), 0)
            if (magic0, magic1) != MAGIC:
                raise SegmentError(f"{path}: magic {magic0:#x} {magic1:#x}: not initialized")
            if version == 0 or generation == 0:
                raise SegmentError(f"{path}: version {version}, generation {generation}: not initialized")
            if version != VERSION:
                raise SegmentError(f"{path}: version {version} not supported")
            if segsize < SIZE:
                raise SegmentError(f"{path}: size {segsize}: malformed")
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._last = None
        if self.snapshot() is None:
            raise SegmentError(f"{path}: no consistent read: not initialized")

    def _read(self, fd, n):
        b = os.pread(fd, n, 0)
        if len(b) < n:
            raise SegmentError(f"{self._path}: {len(b)} bytes, want {n}: truncated under the reader")
        return b

    def close(self):
        os.close(self._fd)
        if self._vmclock is not None:
            self._vmclock.close()

    def _device_marker(self):
        """The VMClock device's marker, mapping it on first use; None if it cannot be read."""
        if self._vmclock is None:
            try:
                self._vmclock = VMClock(self._vmclock_path)
            except (OSError, SegmentError, ValueError):
                return None
        return self._vmclock.marker()

    def snapshot(self):
        """One consistent read under the seqlock, or the last one while the writer is mid-update."""
        for _ in range(1_000_000):
            b = self._read(self._fd, SIZE)
            _, _, _, version, gen = HEADER.unpack_from(b, 0)
            if version not in (0, VERSION):
                raise SegmentError(f"version {version} not supported")
            if version == 0 or gen == 0 or gen & 1:
                return self._last
            body = BODY.unpack_from(b, HEADER.size)
            if HEADER.unpack_from(self._read(self._fd, HEADER.size), 0)[4] == gen:
                self._last = (gen,) + body
                return self._last
        raise SegmentError("no consistent read after 1000000 tries: not initialized")

    def now(self):
        """(earliest_ns, latest_ns, status, bound_ns, generation), as ClockBound's compute_bound_at."""
        # The snapshot first, then the clocks (ClockBound's order): clocks
        # read first could be older than a record written in between.
        snap = self.snapshot()
        if snap is None:
            raise SegmentError("not initialized")
        real = time.clock_gettime_ns(time.CLOCK_REALTIME)
        mono = time.clock_gettime_ns(CLOCK_MONOTONIC_COARSE)
        gen, as_s, as_ns, void_s, void_ns, bound, marker, drift, status, vmclock = snap
        if drift >= 1_000_000_000 or status not in STATUSES or bound < 0:
            raise SegmentError("malformed")
        as_of, void_after = as_s * 10**9 + as_ns, void_s * 10**9 + void_ns
        if status in (1, 2):
            if mono >= as_of + RESTART_GRACE_NS:
                status = 2 if mono < void_after else 0
        if mono >= as_of:
            elapsed = mono - as_of
        elif mono > as_of - CAUSALITY_BLUR_NS:
            elapsed = 0
        else:
            raise SegmentError("causality breach: written after now")
        if vmclock and self._device_marker() != marker:
            status = 0  # the device moved on (or cannot be read): the segment does not speak for the clock
        bound += int(elapsed / 1e9 * drift)
        return real - bound, real + bound, STATUSES[status], bound, gen

    def surely_before(self, deadline_ns):
        """True when deadline_ns (CLOCK_REALTIME) is surely still in the future."""
        _, latest, status, _, _ = self.now()
        return status in ("synchronized", "free_running") and latest < deadline_ns


def main(argv):
    path, vmclock, watch = DEFAULT_PATH, DEFAULT_VMCLOCK, None
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--watch":
            watch = float(args.pop(0))
        elif a == "--vmclock":
            vmclock = args.pop(0)
        else:
            path = a
    try:
        r = Reader(path, vmclock)
        end = time.monotonic() + (watch or 0)
        while True:
            e, l, status, bound, gen = r.now()
            print(f"status={status} earliest_ns={e} latest_ns={l} bound_ns={bound} generation={gen}", flush=True)
            if watch is None or time.monotonic() >= end:
                return 0
            time.sleep(0.1)
    except (OSError, SegmentError) as err:
        print(f"boundedtime: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
