"""The asyncio client: AsyncSubscriber and AsyncLeaseGuard."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import AsyncIterator, Awaitable, Callable, Optional, Sequence, Union

from ._protocol import (MAX_LINE, Backoff, Event, ProtocolError, ack, default_socket, parse, reserved_path, unknown,
                        watch_peer)
from ._sync import HELLO_TIMEOUT, ClockUntrusted

Callback = Callable[[str], Union[None, Awaitable[None]]]


class AsyncSubscriber:
    """The asyncio twin of Subscriber: ``async for ev in sub.events()``,
    with ``peer`` events for the clocks of watch_peers."""

    def __init__(self, path: Optional[str] = None, watch_peers: Sequence[str] = ()) -> None:
        self.path = path or default_socket()
        self.watch_peers = list(watch_peers)
        self._writer: Optional[asyncio.StreamWriter] = None

    async def events(self) -> AsyncIterator[Event]:
        """Yields events forever; cancel the task or break out to stop."""
        backoff = Backoff()
        state = "unknown"
        while True:
            try:
                async for ev in self._session():
                    backoff.reset()
                    if ev.type == "peer":
                        yield ev
                        continue
                    if ev.type == "heartbeat" and ev.state == state:
                        continue
                    state = ev.state
                    yield ev
            except (OSError, ProtocolError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError) as e:
                if state != "unknown":
                    state = "unknown"
                    yield unknown(f"connection lost: {e!r}")
            finally:
                await self._close()
            await asyncio.sleep(backoff.next())

    async def _session(self) -> AsyncIterator[Event]:
        try:
            # The reserved socket first (root's and clockwatch's uid's), then
            # the stepdown socket on any error (docs/stepdown-protocol.md).
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(reserved_path(self.path), limit=MAX_LINE), HELLO_TIMEOUT)
        except OSError:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(self.path, limit=MAX_LINE), HELLO_TIMEOUT)
        self._writer = writer
        silence = HELLO_TIMEOUT
        while True:
            # readline raises ValueError past the limit: a line too long.
            line = await asyncio.wait_for(reader.readline(), silence)
            if not line:
                raise OSError("clockwatch closed the connection")
            line = line.rstrip(b"\n")
            if not line:
                continue
            ev = parse(line)
            if ev.type == "hello":
                silence = 3 * float(ev.fields.get("heartbeat_seconds", 1.0))
                for p in self.watch_peers:
                    writer.write(watch_peer(p))
                await writer.drain()
            if ev.type in ("hello", "stepdown", "resume", "heartbeat", "peer"):
                yield ev

    async def ack(self, event: Event) -> None:
        """Acknowledges a stepdown on the current connection, if any."""
        w = self._writer
        if not event.needs_ack or w is None:
            return
        try:
            w.write(ack(event.seq))
            await w.drain()
        except OSError:
            pass

    async def _close(self) -> None:
        w, self._writer = self._writer, None
        if w is not None:
            w.close()
            try:
                await w.wait_closed()
            except OSError:
                pass


class AsyncLeaseGuard:
    """The asyncio twin of LeaseGuard: ``async with guard.hold():`` sections
    run only while the clock is trusted; a stepdown calls on_release (a
    function or a coroutine function), waits for the sections to end, then
    acks."""

    def __init__(self, path: Optional[str] = None, *, on_release: Optional[Callback] = None,
                 subscriber: Optional[AsyncSubscriber] = None) -> None:
        self._sub = subscriber or AsyncSubscriber(path)
        self._on_release = on_release
        self._cond = asyncio.Condition()
        self._trusted = False
        self._holds = 0
        self._task: Optional[asyncio.Task[None]] = None

    async def __aenter__(self) -> "AsyncLeaseGuard":
        self._task = asyncio.create_task(self._follow())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    @property
    def trusted(self) -> bool:
        return self._trusted

    async def wait_trusted(self) -> None:
        async with self._cond:
            await self._cond.wait_for(lambda: self._trusted)

    @asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        async with self._cond:
            if not self._trusted:
                raise ClockUntrusted("clockwatch does not trust the clock now: release the lock")
            self._holds += 1
        try:
            yield
        finally:
            async with self._cond:
                self._holds -= 1
                self._cond.notify_all()

    async def _follow(self) -> None:
        async for ev in self._sub.events():
            if ev.type == "peer":
                continue  # another node's clock: not this guard's
            if ev.trusted:
                async with self._cond:
                    self._trusted = True
                    self._cond.notify_all()
                continue
            was, self._trusted = self._trusted, False
            if was and self._on_release:
                r = self._on_release(ev.reason or ev.type)
                if r is not None:
                    await r
            async with self._cond:
                await self._cond.wait_for(lambda: self._holds == 0)
            await self._sub.ack(ev)
