"""The blocking client: a Subscriber and a LeaseGuard for threaded code."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Optional, Sequence

from ._protocol import (Backoff, Event, Lines, ProtocolError, ack, default_socket, drill, parse, reserved_path, unknown,
                        watch_peer)

#: How long to wait for the hello before the heartbeat interval is known.
HELLO_TIMEOUT = 5.0


def _connect(path: str, keep: Optional[Callable[[socket.socket], None]] = None) -> socket.socket:
    """Connects to the reserved socket beside path, else (on any error) to
    path; keep is handed each socket before its connect, so that another
    thread may close it."""
    for p in (reserved_path(path), path):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if keep is not None:
            keep(s)
        s.settimeout(HELLO_TIMEOUT)
        try:
            s.connect(p)
            return s
        except OSError:
            s.close()
            if p == path:
                raise
    raise AssertionError("unreachable")


class ClockUntrusted(Exception):
    """Raised by LeaseGuard.hold when clockwatch says the clock cannot be trusted now."""


class Subscriber:
    """Follows clockwatch's stepdown socket, reconnecting when it goes away.

    events() yields every hello, stepdown and resume, a heartbeat when it
    changes the state, and a synthetic ``unknown`` event when clockwatch
    can no longer be heard (the connection is lost, or silent for three
    heartbeats). The state starts unknown: until a hello arrives, treat the
    clock as untrusted. After releasing for a stepdown, call ack(event).

    watch_peers names other nodes' clocks to follow (the node a lock server
    runs on): after each hello the subscriber asks for them, and events()
    yields ``peer`` events, at once and whenever such a peer's state, reason
    or clock epoch changes (a changed epoch: its clock stepped). A peer
    event says nothing of this node's clock.
    """

    def __init__(self, path: Optional[str] = None, watch_peers: Sequence[str] = ()) -> None:
        self.path = path or default_socket()
        self.watch_peers = list(watch_peers)
        self._sock: Optional[socket.socket] = None
        self._lock = threading.Lock()

    def events(self, stop: Optional[threading.Event] = None) -> Iterator[Event]:
        """Yields events until stop is set (forever without one)."""
        stop = stop or threading.Event()
        backoff = Backoff()
        state = "unknown"
        while not stop.is_set():
            try:
                for ev in self._session(stop):
                    backoff.reset()
                    if ev.type == "peer":
                        yield ev
                        continue
                    if ev.type == "heartbeat" and ev.state == state:
                        continue
                    state = ev.state
                    yield ev
            except (OSError, ProtocolError) as e:  # socket.timeout is an OSError
                if state != "unknown":
                    state = "unknown"
                    yield unknown(f"connection lost: {e}")
            finally:
                self._close()
            stop.wait(backoff.next())

    def _session(self, stop: threading.Event) -> Iterator[Event]:
        s = _connect(self.path, self._keep)
        # Short reads so that stop is honoured; the silence deadline is kept
        # apart.
        s.settimeout(0.2)
        silence = HELLO_TIMEOUT
        last = time.monotonic()
        lines = Lines()
        while not stop.is_set():
            try:
                data = s.recv(65536)
            except socket.timeout:
                if time.monotonic() - last > silence:
                    raise OSError(f"nothing from clockwatch for {silence:.1f}s") from None
                continue
            if not data:
                raise OSError("clockwatch closed the connection")
            last = time.monotonic()
            for line in lines.feed(data):
                ev = parse(line)
                if ev.type == "hello":
                    silence = 3 * float(ev.fields.get("heartbeat_seconds", 1.0))
                    # Asked again on every connection: a watch ends with it.
                    for p in self.watch_peers:
                        s.sendall(watch_peer(p))
                if ev.type in ("hello", "stepdown", "resume", "heartbeat", "peer"):
                    yield ev
                # error messages and types added later are ignored

    def ack(self, event: Event) -> None:
        """Acknowledges a stepdown on the current connection. Nothing to do
        when the connection is gone: the next hello carries the state."""
        if not event.needs_ack:
            return
        with self._lock:
            s = self._sock
        if s is None:
            return
        try:
            s.sendall(ack(event.seq))
        except OSError:
            pass

    def _keep(self, s: socket.socket) -> None:
        with self._lock:
            self._sock = s

    def _close(self) -> None:
        with self._lock:
            s, self._sock = self._sock, None
        if s is not None:
            s.close()


def request_drill(path: Optional[str] = None, reason: str = "drill", step_seconds: Optional[float] = None,
                  hold_seconds: Optional[float] = None) -> None:
    """Asks clockwatch for a drill: a stepdown with drill true, then a resume
    hold_seconds later. Allowed for root, clockwatch's uid and
    stepdown.drill_uids; raises ProtocolError with clockwatch's refusal."""
    deadline = time.monotonic() + 2 * HELLO_TIMEOUT
    with _connect(path or default_socket()) as s:
        lines = Lines()
        sent = False
        while time.monotonic() < deadline:
            data = s.recv(65536)
            if not data:
                raise ProtocolError("clockwatch closed the connection before answering the drill")
            for line in lines.feed(data):
                ev = parse(line)
                if ev.type == "hello" and not sent:
                    # Only now is this connection surely a subscriber that
                    # hears the drill's stepdown.
                    s.sendall(drill(reason, step_seconds, hold_seconds))
                    sent = True
                elif ev.type == "error":
                    raise ProtocolError(f"drill refused: {ev.fields.get('code')}: {ev.fields.get('error')}")
                elif ev.type == "stepdown" and ev.drill:
                    return
        raise ProtocolError(f"no drill stepdown from clockwatch within {2 * HELLO_TIMEOUT:.0f}s")


class LeaseGuard:
    """Holds the right to act on a lock or lease while clockwatch trusts the clock.

    Work that relies on the lock runs inside ``with guard.hold():``, which
    raises ClockUntrusted unless the state is ok. On a stepdown (or when
    clockwatch cannot be heard) the guard turns untrusted, calls on_release
    with the reason, waits for every hold to end, and only then acks:
    clockwatch's ack count then means "nothing runs on the lock any more".
    Use it as a context manager; it follows the socket in a daemon thread.
    """

    def __init__(self, path: Optional[str] = None, *, on_release: Optional[Callable[[str], None]] = None,
                 on_trusted: Optional[Callable[[], None]] = None, subscriber: Optional[Subscriber] = None) -> None:
        self._sub = subscriber or Subscriber(path)
        self._on_release = on_release
        self._on_trusted = on_trusted
        self._cond = threading.Condition()
        self._trusted = False
        self._holds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="clockwatch-lease-guard", daemon=True)

    def __enter__(self) -> "LeaseGuard":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def trusted(self) -> bool:
        """Whether clockwatch says the clock may be trusted now."""
        with self._cond:
            return self._trusted

    def wait_trusted(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the clock is trusted; False if timeout passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: self._trusted, timeout)

    @contextmanager
    def hold(self) -> Iterator[None]:
        """A section of work that relies on the lock; raises ClockUntrusted
        when the clock is not trusted now."""
        with self._cond:
            if not self._trusted:
                raise ClockUntrusted("clockwatch does not trust the clock now: release the lock")
            self._holds += 1
        try:
            yield
        finally:
            with self._cond:
                self._holds -= 1
                self._cond.notify_all()

    def _follow(self) -> None:
        for ev in self._sub.events(self._stop):
            if ev.type == "peer":
                continue  # another node's clock: not this guard's
            if ev.trusted:
                with self._cond:
                    was, self._trusted = self._trusted, True
                    self._cond.notify_all()
                if not was and self._on_trusted:
                    self._on_trusted()
                continue
            with self._cond:
                was, self._trusted = self._trusted, False
            if was and self._on_release:
                self._on_release(ev.reason or ev.type)
            with self._cond:
                self._cond.wait_for(lambda: self._holds == 0)
            self._sub.ack(ev)
