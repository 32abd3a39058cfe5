"""Tests of clockwatch_stepdown against a real clockwatch daemon.

The Go harness (clients/clients_test.go) starts clockwatch and passes its
stepdown socket in CLOCKWATCH_STEPDOWN_SOCKET and its metrics URL in
CLOCKWATCH_METRICS_URL. Drills are requested over the socket (this test runs
as clockwatch's own user, which may drill). The tests run one at a time: a
drill reaches every subscriber.
"""

import asyncio
import dataclasses
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

import clockwatch_stepdown as cs

SOCKET = os.environ.get(cs.SOCKET_ENV, "")
METRICS = os.environ.get("CLOCKWATCH_METRICS_URL", "")
# A second clockwatch that the first measures (peers.static): its name as the
# first knows it, and its own socket, where the tests drill it.
PEER = os.environ.get("CLOCKWATCH_PEER", "")
PEER_SOCKET = os.environ.get("CLOCKWATCH_PEER_SOCKET", "")
README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def acks() -> float:
    body = urllib.request.urlopen(METRICS, timeout=5).read().decode()
    m = re.search(r"^clockwatch_stepdown_acks_total (\S+)$", body, re.M)
    return float(m.group(1)) if m else 0.0


def wait(cond, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(0.02)


def drill_when_ok(**kw):
    """Drills, retrying while an earlier drill's hold has not ended (busy)."""
    deadline = time.monotonic() + 20
    while True:
        try:
            cs.request_drill(SOCKET, **kw)
            return
        except cs.ProtocolError as e:
            if "busy" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def hello_state() -> str:
    stop = threading.Event()
    for ev in cs.Subscriber(SOCKET).events(stop):
        stop.set()
        return ev.state
    return "unknown"


@unittest.skipUnless(SOCKET and METRICS, "run by clients/clients_test.go with a clockwatch daemon")
class TestAgainstClockwatch(unittest.TestCase):
    def setUp(self):
        # An earlier test's drill may still hold the stepdown state.
        wait(lambda: hello_state() == "ok", what="clockwatch in state ok")

    def test_sync_events_and_ack(self):
        sub = cs.Subscriber(SOCKET)
        stop = threading.Event()
        timer = threading.Timer(30, stop.set)  # never hang: a missing event fails below
        timer.daemon = True
        timer.start()
        before = acks()
        seen = []
        for ev in sub.events(stop):
            seen.append(ev)
            if ev.type == "hello":
                self.assertEqual(ev.state, "ok")
                self.assertTrue(ev.trusted)
                threading.Thread(target=drill_when_ok, kwargs=dict(reason="step", step_seconds=-12.4, hold_seconds=0.3)).start()
            elif ev.type == "stepdown":
                self.assertTrue(ev.drill)
                self.assertEqual(ev.reason, "step")
                self.assertEqual(ev.step_seconds, -12.4)
                self.assertFalse(ev.trusted)
                sub.ack(ev)
            elif ev.type == "resume":
                self.assertTrue(ev.trusted)
                stop.set()
        self.assertEqual([e.type for e in seen if e.type != "heartbeat"], ["hello", "stepdown", "resume"])
        wait(lambda: acks() >= before + 1, what="clockwatch counting the ack")

    def test_async_events_and_ack(self):
        async def main():
            sub = cs.AsyncSubscriber(SOCKET)
            types = []
            async for ev in sub.events():
                types.append(ev.type)
                if ev.type == "hello":
                    asyncio.get_running_loop().run_in_executor(None, lambda: drill_when_ok(reason="offset", hold_seconds=0.3))
                elif ev.type == "stepdown":
                    self.assertEqual(ev.reason, "offset")
                    await sub.ack(ev)
                elif ev.type == "resume":
                    break
            await sub._close()
            return [t for t in types if t != "heartbeat"]

        before = acks()
        self.assertEqual(asyncio.run(asyncio.wait_for(main(), 30)), ["hello", "stepdown", "resume"])
        wait(lambda: acks() >= before + 1, what="clockwatch counting the async ack")

    def test_lease_guard_acks_after_holds_end(self):
        released = []
        in_hold = threading.Event()
        leave_hold = threading.Event()
        with cs.LeaseGuard(SOCKET, on_release=released.append) as guard:
            self.assertTrue(guard.wait_trusted(10))
            before = acks()

            def work():
                with guard.hold():
                    in_hold.set()
                    leave_hold.wait(10)

            t = threading.Thread(target=work)
            t.start()
            in_hold.wait(5)
            drill_when_ok(reason="step", hold_seconds=1)
            wait(lambda: released == ["step"], what="on_release called")
            self.assertFalse(guard.trusted)
            with self.assertRaises(cs.ClockUntrusted):
                with guard.hold():
                    pass
            time.sleep(0.5)
            self.assertEqual(acks(), before, "acked while a hold() section still ran")
            leave_hold.set()
            t.join()
            wait(lambda: acks() >= before + 1, what="the ack after the hold ended")
            self.assertTrue(guard.wait_trusted(10), "trusted again after the drill's resume")

    def test_async_lease_guard(self):
        async def main():
            released = []

            async def on_release(reason):
                released.append(reason)

            async with cs.AsyncLeaseGuard(SOCKET, on_release=on_release) as guard:
                await asyncio.wait_for(guard.wait_trusted(), 10)
                async with guard.hold():
                    pass
                await asyncio.get_running_loop().run_in_executor(None, lambda: drill_when_ok(reason="suspend", hold_seconds=0.5))
                while not released:
                    await asyncio.sleep(0.02)
                self.assertFalse(guard.trusted)
                with self.assertRaises(cs.ClockUntrusted):
                    async with guard.hold():
                        pass
                await asyncio.wait_for(guard.wait_trusted(), 10)
            return released

        self.assertEqual(asyncio.run(asyncio.wait_for(main(), 30)), ["suspend"])

    def test_watch_peer(self):
        # The peer's drill: its clock untrusted, told through this node's
        # socket; this node's own state does not move.
        self.assertTrue(PEER and PEER_SOCKET, "CLOCKWATCH_PEER and CLOCKWATCH_PEER_SOCKET are not set")
        sub = cs.Subscriber(SOCKET, watch_peers=[PEER])
        stop = threading.Event()
        timer = threading.Timer(30, stop.set)
        timer.daemon = True
        timer.start()
        peer_states, local = [], []
        drilled = False
        for ev in sub.events(stop):
            if ev.type != "peer":
                local.append(ev.state)
                continue
            self.assertEqual(ev.peer, PEER)
            peer_states.append((ev.state, ev.reason))
            if ev.state == "ok" and not drilled:
                drilled = True
                threading.Thread(target=lambda: cs.request_drill(PEER_SOCKET, reason="drill", hold_seconds=2)).start()
            elif ev.state == "ok" and ("stepdown", "drill") in peer_states:
                stop.set()
        self.assertIn(("stepdown", "drill"), peer_states, "the peer's drill was not heard")
        self.assertEqual(peer_states[-1], ("ok", None), "the peer's resume was not heard")
        self.assertEqual(set(local), {"ok"}, "this node's state moved with its peer's")

    def test_async_watch_peer(self):
        async def main():
            sub = cs.AsyncSubscriber(SOCKET, watch_peers=[PEER])
            async for ev in sub.events():
                if ev.type == "peer" and ev.state == "ok":
                    await sub._close()
                    return ev
            return None

        ev = asyncio.run(asyncio.wait_for(main(), 30))
        self.assertIsNotNone(ev)
        self.assertEqual(ev.peer, PEER)
        self.assertIsNotNone(ev.fields.get("offset_seconds"))

    def test_readme_example(self):
        with open(README) as f:
            text = f.read()
        code = re.search(r"## Release your lock\n\n```python\n(.*?)```", text, re.S).group(1)
        # As a user runs it: copied into a file.
        with tempfile.TemporaryDirectory() as d:
            holder = os.path.join(d, "holder.py")
            with open(holder, "w") as f:
                f.write(code)
            env = dict(os.environ, **{cs.SOCKET_ENV: SOCKET})
            p = subprocess.Popen([sys.executable, holder], env=env, stdout=subprocess.PIPE, text=True)
            try:
                self.assertEqual(p.stdout.readline().strip(), "holding the lock, turn 1")
                drill_when_ok(reason="step", step_seconds=-1.5, hold_seconds=0.3)
                self.assertEqual(p.stdout.readline().strip(), "released the lock: step")
                self.assertEqual(p.stdout.readline().strip(), "holding the lock, turn 2", "no resume shown")
                drill_when_ok(reason="suspend", hold_seconds=0.3)
                self.assertEqual(p.stdout.readline().strip(), "released the lock: suspend")
                self.assertEqual(p.wait(20), 0)
            finally:
                p.kill()
                p.stdout.close()

    def test_readme_lists_event_fields(self):
        with open(README) as f:
            text = f.read()
        m = re.search(r"^- `Event` fields: (.*?)^- ", text, re.S | re.M)
        self.assertIsNotNone(m, "the README's API section does not list the Event fields")
        for f in dataclasses.fields(cs.Event):
            self.assertIn("`%s`" % f.name, m.group(1), "the README does not list Event.%s" % f.name)
        for prop in ("trusted", "needs_ack"):
            self.assertIn("`%s`" % prop, m.group(1))


class TestWithoutClockwatch(unittest.TestCase):
    def test_unknown_when_nobody_listens(self):
        sub = cs.Subscriber("/nonexistent/clockwatch/stepdown.sock")
        stop = threading.Event()
        timer = threading.Timer(3, stop.set)
        timer.daemon = True
        timer.start()
        # The state starts unknown: a missing socket yields nothing new until
        # something is heard, and the guard stays untrusted.
        self.assertEqual(list(sub.events(stop)), [])
        with cs.LeaseGuard("/nonexistent/clockwatch/stepdown.sock") as guard:
            self.assertFalse(guard.wait_trusted(0.3))
            with self.assertRaises(cs.ClockUntrusted):
                with guard.hold():
                    pass

    def test_reserved_path(self):
        for path, want in (("/run/clockwatch/stepdown.sock", "/run/clockwatch/stepdown.reserved.sock"),
                           ("/tmp/x/socket", "/tmp/x/socket.reserved")):
            self.assertEqual(cs.reserved_path(path), want)

    def test_reserved_socket_first(self):
        # request_drill connects to the reserved socket when it is served,
        # and to the stepdown socket when it is not.
        import socket
        with tempfile.TemporaryDirectory() as d:
            public = os.path.join(d, "s.sock")
            listeners = {}
            for name, path in (("public", public), ("reserved", cs.reserved_path(public))):
                listeners[name] = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                listeners[name].bind(path)
                listeners[name].listen()
                listeners[name].settimeout(0.2)
            for want in ("reserved", "public"):
                t = threading.Thread(target=lambda: self.assertRaises(Exception, cs.request_drill, public), daemon=True)
                t.start()
                conn, _ = listeners[want].accept()
                conn.close()
                t.join(5)
                listeners[want].close()
                if want == "reserved":
                    os.unlink(cs.reserved_path(public))

    def test_parse(self):
        ev = cs.parse(b'{"type":"stepdown","state":"stepdown","epoch":3,"seq":2,"reason":"step","drill":true,"step_seconds":-12.4,"new":1}')
        self.assertEqual((ev.type, ev.seq, ev.epoch, ev.reason, ev.drill, ev.step_seconds), ("stepdown", 2, 3, "step", True, -12.4))
        self.assertTrue(ev.needs_ack)
        self.assertEqual(ev.fields["new"], 1)
        for bad in (b"not json", b"[1]", b'{"type":1}'):
            with self.assertRaises(cs.ProtocolError):
                cs.parse(bad)


if __name__ == "__main__":
    unittest.main()
