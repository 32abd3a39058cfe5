#!/usr/bin/env python3
"""A clockwatch stepdown client for lock holders, standard library only.

Usage: clockwatch_client.py [SOCKET] [--until-resume]

It connects to clockwatch's stepdown socket (default
/run/clockwatch/stepdown.sock), follows the state, "releases its locks" on a
stepdown and acknowledges it, and reconnects with jittered exponential backoff
when clockwatch goes away. No message for three heartbeat intervals means the
state is unknown: treat it like a stepdown. With --until-resume it exits 0
after the first resume that follows a stepdown (used by clockwatch's CI).
"""

import json
import random
import socket
import sys
import time

DEFAULT_SOCKET = "/run/clockwatch/stepdown.sock"
MAX_LINE = 4096


class Client:
    def __init__(self, path):
        self.path = path
        self.state = "unknown"
        self.sock = None

    def release_locks(self, msg):
        # A real application stops using its lock or lease here, before the
        # lock server hands it to someone else.
        print(f"releasing locks: reason={msg.get('reason')} drill={str(msg.get('drill', False)).lower()}", flush=True)

    def set_state(self, state, why):
        if state != self.state:
            print(f"state {self.state} -> {state} ({why})", flush=True)
        if state != "ok" and self.state == "ok":
            self.release_locks({"reason": why})
        self.state = state

    def send(self, obj):
        self.sock.sendall((json.dumps(obj) + "\n").encode())

    def session(self, until_resume):
        """Runs one connection; returns True when --until-resume is done."""
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5.0)  # until the hello gives the heartbeat
        self.sock.connect(self.path)
        buf = b""
        stepped_down = False
        try:
            while True:
                while b"\n" not in buf:
                    if len(buf) > MAX_LINE:
                        raise ValueError("line too long")
                    chunk = self.sock.recv(65536)
                    if not chunk:
                        raise ConnectionError("clockwatch closed the connection")
                    buf += chunk
                line, buf = buf.split(b"\n", 1)
                msg = json.loads(line)
                kind = msg.get("type")
                if kind == "hello":
                    self.sock.settimeout(3 * msg.get("heartbeat_seconds", 1.0))
                    print(f"hello state={msg['state']} epoch={msg['epoch']} seq={msg['seq']}", flush=True)
                    if msg["state"] != "ok" and self.state == "ok":
                        self.release_locks(msg)
                    self.state = msg["state"]
                elif kind == "stepdown":
                    print(f"stepdown seq={msg['seq']} reason={msg['reason']} drill={str(msg.get('drill', False)).lower()}"
                          f" step_seconds={msg.get('step_seconds')}", flush=True)
                    if self.state == "ok":
                        self.release_locks(msg)
                    self.state = "stepdown"
                    stepped_down = True
                    self.send({"type": "ack", "seq": msg["seq"]})
                    print(f"acked seq={msg['seq']}", flush=True)
                elif kind == "resume":
                    print(f"resume seq={msg['seq']} reason={msg.get('reason')}", flush=True)
                    self.state = "ok"
                    if until_resume and stepped_down:
                        return True
                elif kind == "heartbeat":
                    if msg.get("state") != self.state:
                        self.set_state(msg["state"], "heartbeat")
                elif kind == "error":
                    print(f"error from clockwatch: {msg.get('code')}: {msg.get('error')}", flush=True)
        finally:
            self.sock.close()


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    until_resume = "--until-resume" in argv
    client = Client(args[0] if args else DEFAULT_SOCKET)
    backoff = 0.1
    while True:
        try:
            if client.session(until_resume):
                return 0
            backoff = 0.1
        except (OSError, ValueError, ConnectionError) as e:  # socket.timeout is an OSError
            client.set_state("unknown", f"connection lost: {e}")
        time.sleep(backoff / 2 + random.random() * backoff / 2)
        backoff = min(backoff * 2, 5.0)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except KeyboardInterrupt:
        sys.exit(130)
