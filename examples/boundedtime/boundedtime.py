#!/usr/bin/env python3
"""Reads clockwatch's bounded-time segment with mmap and struct alone.

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

    python3 boundedtime.py [PATH] [--vmclock DEVICE] [--watch SECONDS]

prints one line per reading:

    status=synchronized earliest_ns=... latest_ns=... bound_ns=... generation=...
"""

import mmap
import os
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

HEADER = struct.Struct("=IIIHH")  # magic0, magic1, size, version, generation
BODY = struct.Struct("=qqqqqQIiB7x")  # as_of, void_after, bound, marker, drift, status, vmclock flag


class SegmentError(Exception):
    """The segment cannot be read (ClockBound's ShmError kinds)."""


class VMClock:
    """The VMClock device's page, mapped read-only (Linux's vmclock-abi.h)."""

    def __init__(self, path=DEFAULT_VMCLOCK):
        fd = os.open(path, os.O_RDONLY)
        try:
            self._mem = mmap.mmap(fd, mmap.PAGESIZE, mmap.MAP_SHARED, mmap.PROT_READ)
        finally:
            os.close(fd)
        magic, version = struct.unpack_from("<I4xH", self._mem, 0)
        if magic != VMCLOCK_MAGIC or version != 1:
            self._mem.close()
            raise SegmentError(f"{path}: not a VMClock page of version 1")

    def marker(self):
        """The disruption marker, read under the page's seqlock (None if it never settles)."""
        for _ in range(10_000):
            seq = VMCLOCK_SEQ.unpack_from(self._mem, 12)[0]
            if seq & 1:
                continue
            marker = VMCLOCK_MARKER.unpack_from(self._mem, 16)[0]
            if VMCLOCK_SEQ.unpack_from(self._mem, 12)[0] == seq:
                return marker
        return None

    def close(self):
        self._mem.close()


class Reader:
    def __init__(self, path=DEFAULT_PATH, vmclock_path=DEFAULT_VMCLOCK):
        self._vmclock_path = vmclock_path
        self._vmclock = None
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            if size < SIZE:
                raise SegmentError(f"{path}: {size} bytes, want at least {SIZE}: not initialized")
            self._mem = mmap.mmap(fd, SIZE, mmap.MAP_SHARED, mmap.PROT_READ)
        finally:
            os.close(fd)
        magic0, magic1, segsize, version, generation = HEADER.unpack_from(self._mem, 0)
        if (magic0, magic1) != MAGIC:
            raise SegmentError(f"{path}: magic {magic0:#x} {magic1:#x}: not initialized")
        if version == 0 or generation == 0:
            raise SegmentError(f"{path}: version {version}, generation {generation}: not initialized")
        if version != VERSION:
            raise SegmentError(f"{path}: version {version} not supported")
        if segsize < SIZE:
            raise SegmentError(f"{path}: size {segsize}: malformed")
        self._last = None
        if self.snapshot() is None:
            raise SegmentError(f"{path}: no consistent read: not initialized")

    def close(self):
        self._mem.close()
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
            _, _, _, version, gen = HEADER.unpack_from(self._mem, 0)
            if version not in (0, VERSION):
                raise SegmentError(f"version {version} not supported")
            if version == 0 or gen == 0 or gen & 1:
                return self._last
            body = BODY.unpack_from(self._mem, HEADER.size)
            if HEADER.unpack_from(self._mem, 0)[4] == gen:
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
