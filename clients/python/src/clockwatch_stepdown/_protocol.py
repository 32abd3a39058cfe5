"""The wire format of clockwatch's stepdown socket (docs/stepdown-protocol.md)."""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, Optional

#: Where clockwatch serves the stepdown socket unless configured otherwise.
DEFAULT_SOCKET = "/run/clockwatch/stepdown.sock"

#: Longest line either side may send, newline included.
MAX_LINE = 4096

#: Environment variable that overrides DEFAULT_SOCKET for every client.
SOCKET_ENV = "CLOCKWATCH_STEPDOWN_SOCKET"


def default_socket() -> str:
    """Returns $CLOCKWATCH_STEPDOWN_SOCKET, or DEFAULT_SOCKET."""
    return os.environ.get(SOCKET_ENV) or DEFAULT_SOCKET


def reserved_path(path: str) -> str:
    """The reserved socket beside the stepdown socket at path: "x.sock"
    becomes "x.reserved.sock" (".reserved" is appended to a path that does
    not end in ".sock"). Only root and clockwatch's uid may connect there,
    and no other uid's connection flood can delay them: clients try it
    first and take path on any error (docs/stepdown-protocol.md)."""
    if path.endswith(".sock"):
        return path[: -len(".sock")] + ".reserved.sock"
    return path + ".reserved"


class ProtocolError(Exception):
    """clockwatch sent something that is not a stepdown protocol message."""


@dataclass(frozen=True)
class Event:
    """One message from clockwatch, or a synthetic ``unknown`` event.

    ``type`` is ``hello``, ``stepdown``, ``resume``, ``heartbeat`` or
    ``unknown`` (no connection, or silence for three heartbeats: treat it
    like a stepdown), or ``peer``: the state of a watched peer's clock
    (another node's clockwatch, named in ``peer``), which says nothing of
    this node's. ``state`` is ``ok``, ``stepdown`` or ``unknown``. Fields
    the protocol may add later are kept in ``fields``.
    """

    type: str
    state: str
    seq: int = 0
    epoch: int = 0
    reason: Optional[str] = None
    drill: bool = False
    step_seconds: Optional[float] = None
    detail: Optional[str] = None
    peer: Optional[str] = None
    fields: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def trusted(self) -> bool:
        """Whether the clock may be trusted after this event: only state ok."""
        return self.state == "ok"

    @property
    def needs_ack(self) -> bool:
        """Whether clockwatch waits for an ack of this event (stepdowns)."""
        return self.type == "stepdown"


def unknown(why: str) -> Event:
    """The event a client makes up when it cannot hear clockwatch."""
    return Event(type="unknown", state="unknown", reason=why)


def parse(line: bytes) -> Event:
    """Parses one line (without its newline) from the socket."""
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise ProtocolError(f"not JSON: {line[:80]!r}: {e}") from e
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise ProtocolError(f"not a message object with a string type: {line[:80]!r}")
    kind = obj["type"]
    state = obj.get("state")
    if not isinstance(state, str):
        # resume and stepdown always carry it; error messages do not.
        state = {"stepdown": "stepdown", "resume": "ok"}.get(kind, "")
    step = obj.get("step_seconds")
    return Event(
        type=kind,
        state=state,
        seq=int(obj.get("seq", 0)),
        epoch=int(obj.get("epoch", 0)),
        reason=obj.get("reason"),
        drill=bool(obj.get("drill", False)),
        step_seconds=float(step) if isinstance(step, (int, float)) else None,
        detail=obj.get("detail"),
        peer=obj.get("peer"),
        fields=obj,
    )


def encode(obj: Dict[str, Any]) -> bytes:
    """One client message as a line."""
    b = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
    if len(b) > MAX_LINE:
        raise ValueError(f"message of {len(b)} bytes is over the protocol's {MAX_LINE}")
    return b


def ack(seq: int) -> bytes:
    """The ack of stepdown seq."""
    return encode({"type": "ack", "seq": seq})


def drill(reason: str = "drill", step_seconds: Optional[float] = None, hold_seconds: Optional[float] = None) -> bytes:
    """A drill request (root, clockwatch's uid and stepdown.drill_uids only)."""
    msg: Dict[str, Any] = {"type": "drill", "reason": reason}
    if step_seconds is not None:
        msg["step_seconds"] = step_seconds
    if hold_seconds is not None:
        msg["hold_seconds"] = hold_seconds
    return encode(msg)


def watch_peer(peer: str) -> bytes:
    """Asks to follow the clock of a peer (another node's clockwatch this one
    measures: a name as its metrics show it, an IP:port or an IP)."""
    return encode({"type": "watch_peer", "peer": peer})


class Lines:
    """Splits received bytes into protocol lines, refusing over-long ones."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        self._buf += data
        while True:
            line, sep, rest = self._buf.partition(b"\n")
            if not sep:
                if len(self._buf) > MAX_LINE:
                    raise ProtocolError(f"line longer than {MAX_LINE} bytes")
                return
            self._buf = rest
            if line:
                yield line


class Backoff:
    """Jittered exponential backoff: 100 ms doubling to 5 s, each delay
    drawn from [d/2, d), as the protocol's client checklist asks."""

    def __init__(self, first: float = 0.1, limit: float = 5.0) -> None:
        self.first, self.limit, self._d = first, limit, first

    def reset(self) -> None:
        self._d = self.first

    def next(self) -> float:
        d = self._d
        self._d = min(self._d * 2, self.limit)
        return d / 2 + random.random() * d / 2
