"""Client for clockwatch's stepdown socket.

clockwatch tells lock and lease holders, over a unix socket, the moment this
machine's clock cannot be trusted (a step, a large offset, lost
synchronisation, a resume from suspend) and when it can again. The wire
format is docs/stepdown-protocol.md in clockwatch's repository.

- Subscriber / AsyncSubscriber: the events, reconnecting when clockwatch
  goes away; ack each stepdown after releasing.
- LeaseGuard / AsyncLeaseGuard: run lock-dependent work in ``hold()``
  sections; a stepdown calls your release callback, waits for the sections,
  then acks.
- Subscriber(watch_peers=[...]): ``peer`` events for the clocks of other
  nodes (the node your lock server runs on), when clockwatch measures its
  peers (peers: in its configuration).
"""

from ._async import AsyncLeaseGuard, AsyncSubscriber
from ._protocol import DEFAULT_SOCKET, SOCKET_ENV, Event, ProtocolError, default_socket, parse, reserved_path
from ._sync import ClockUntrusted, LeaseGuard, Subscriber, request_drill

__all__ = [
    "AsyncLeaseGuard",
    "AsyncSubscriber",
    "ClockUntrusted",
    "DEFAULT_SOCKET",
    "Event",
    "LeaseGuard",
    "ProtocolError",
    "SOCKET_ENV",
    "Subscriber",
    "default_socket",
    "parse",
    "request_drill",
    "reserved_path",
]
__version__ = "0.1.0"
