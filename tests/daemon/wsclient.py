#!/usr/bin/env python3
"""tests/daemon/wsclient.py — a raw WebSocket client (RFC 6455, written out
with sockets only) for the session tests: it speaks to gpupoold as a browser
would (no Authorization header, the token in the HELLO message) or as the CLI
does (the header), and can send what no well-behaved client sends (oversized
or malformed frames, a client that never reads).

Used as a module by the tests, or from a shell:
    wsclient.py SERVER PATH [--header-token T] [--hello JSON] [--send TYPE:TEXT]...
prints each message it gets as "TYPE payload" until the connection ends.
"""
import base64
import hashlib
import json
import os
import socket
import struct
import sys
import time

TYPES = {"STDIN": 1, "STDOUT": 2, "STDERR": 3, "RESIZE": 4, "SIGNAL": 5, "EXIT": 6,
         "DATA": 7, "ERROR": 8, "READY": 9, "HELLO": 10, "EOF": 11}
NAMES = {v: k for k, v in TYPES.items()}


class Paced:
    """A client's socket, read at most step bytes each delay seconds (a
    client that reads slowly)."""

    def __init__(self, sock, step, delay):
        self.sock, self.step, self.delay = sock, step, delay

    def recv(self, n):
        time.sleep(self.delay)
        return self.sock.recv(min(n, self.step))

    def __getattr__(self, name):
        return getattr(self.sock, name)


class WS:
    def __init__(self, server, path, token=None, timeout=30, rcvbuf=None):
        """rcvbuf: the socket's receive buffer, set before it connects (a
        small window, as on a slow link)."""
        host, port = server.replace("http://", "").rstrip("/").rsplit(":", 1)
        if rcvbuf is None:
            self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        else:
            af, kind, proto, _, addr = socket.getaddrinfo(host, int(port),
                                                          type=socket.SOCK_STREAM)[0]
            self.sock = socket.socket(af, kind, proto)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            self.sock.settimeout(timeout)
            self.sock.connect(addr)
        key = base64.b64encode(os.urandom(16)).decode()
        head = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
        if token:
            head += f"Authorization: Bearer {token}\r\n"
        self.sock.sendall((head + "\r\n").encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            buf += chunk
        head, _, self.rest = buf.partition(b"\r\n\r\n")
        lines = head.decode(errors="replace").split("\r\n")
        self.status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
        self.body = b""
        if self.status != 101:
            # An ordinary answer: read its body (Content-Length).
            n = 0
            for l in lines[1:]:
                if l.lower().startswith("content-length:"):
                    n = int(l.split(":", 1)[1])
            self.body = self.rest
            while len(self.body) < n:
                chunk = self.sock.recv(4096)
                if not chunk:
                    break
                self.body += chunk
            return
        want = base64.b64encode(hashlib.sha1(
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        if f"sec-websocket-accept: {want}".lower() not in head.decode().lower():
            raise RuntimeError("bad Sec-WebSocket-Accept")

    def frame(self, opcode, payload, fin=True, length_override=None):
        self.sock.sendall(self.encode(opcode, payload, fin, length_override))

    @staticmethod
    def encode(opcode, payload, fin=True, length_override=None):
        """One masked frame, as bytes."""
        mask = os.urandom(4)
        n = len(payload) if length_override is None else length_override
        h = bytes([(0x80 if fin else 0) | opcode])
        if n < 126:
            h += bytes([0x80 | n])
        elif n < 65536:
            h += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            h += bytes([0x80 | 127]) + struct.pack(">Q", n)
        # XOR as one big integer: fast enough to send megabytes.
        k = (mask * (len(payload) // 4 + 1))[:len(payload)]
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes(k, "big")).to_bytes(
            len(payload), "big")
        return h + mask + masked

    @staticmethod
    def message(type_, payload=b""):
        """One message (a type byte, then its payload) as a masked frame."""
        if isinstance(payload, str):
            payload = payload.encode()
        return WS.encode(2, bytes([TYPES[type_] if isinstance(type_, str) else type_]) + payload)

    def send(self, type_, payload=b""):
        self.sock.sendall(self.message(type_, payload))

    def hello(self, then=(), **fields):
        """Sends HELLO, and the messages of then ((type, payload) pairs) in
        the same write, as a client that does not wait for READY may."""
        self.sock.sendall(self.message("HELLO", json.dumps(fields)) +
                          b"".join(self.message(t, p) for t, p in then))

    def _frame(self):
        """One whole frame from the bytes held, or None: nothing is taken
        until all of it is there, so a timeout loses nothing."""
        r = self.rest
        if len(r) < 2:
            return None
        n, at = r[1] & 0x7F, 2
        if n == 126:
            if len(r) < 4:
                return None
            n, at = struct.unpack(">H", r[2:4])[0], 4
        elif n == 127:
            if len(r) < 10:
                return None
            n, at = struct.unpack(">Q", r[2:10])[0], 10
        if len(r) < at + n:
            return None
        self.rest = r[at + n:]
        return r[0], r[at:at + n]

    def recv(self):
        """One message: (type name, payload); ("CLOSE", code) at a close."""
        data = b""
        while True:
            f = self._frame()
            if f is None:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise EOFError
                self.rest += chunk
                continue
            b0, payload = f
            op = b0 & 0x0F
            if op == 8:
                code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 0
                return ("CLOSE", code)
            if op == 9:
                # A ping is answered as a browser does: gpupoold cuts off a
                # client that leaves its ping unanswered.
                self.frame(10, payload)
            if op in (9, 10):
                continue
            data += payload
            if b0 & 0x80:
                break
        if not data:
            return ("EMPTY", b"")
        return (NAMES.get(data[0], str(data[0])), data[1:])

    def until(self, pred, limit=1 << 20):
        """Reads messages until pred(type, payload) holds; returns the
        output (STDOUT, STDERR, DATA) collected on the way."""
        out = b""
        while True:
            t, p = self.recv()
            if t in ("STDOUT", "STDERR", "DATA"):
                out += p
            if pred(t, p, out):
                return t, p, out
            if t in ("CLOSE", "ERROR", "EXIT") or len(out) > limit:
                raise RuntimeError(f"ended before the condition: {t} {p!r}; output {out[-400:]!r}")

    def read_output(self, until, res):
        """Reads the session's output until time until, or until it ends:
        res["got"] is how many bytes of output were read and, where the
        session ended, res["why"] how (the message that ended it, or the
        exception's name). A read that times out is tried again."""
        got = 0
        while time.time() < until:
            try:
                t, p = self.recv()
            except socket.timeout:
                continue
            except (EOFError, OSError) as e:
                res["why"] = type(e).__name__
                break
            if t not in ("STDOUT", "STDERR"):
                res["why"] = (t, p)
                break
            got += len(p)
        res["got"] = got

    def ended(self, within=20):
        """How the session ends once what was held for it is read (fast):
        the message that ended it, the exception's name if it was cut off
        with none, or "served" if it goes on for within seconds."""
        end = time.time() + within
        try:
            while time.time() < end:
                t, p = self.recv()
                if t not in ("STDOUT", "STDERR"):
                    return (t, p)
        except (EOFError, OSError) as e:
            return type(e).__name__
        return "served"

    def close(self):
        try:
            self.frame(8, struct.pack(">H", 1000))
        except OSError:
            pass
        self.sock.close()


def started(*clients, line=b"go\n"):
    """Opens each client's session (HELLO, then READY) and types line into
    it: the tasks of the session tests wait for it before they print."""
    for ws in clients:
        ws.hello()
        ws.until(lambda t, p, o: t == "READY")
        ws.send("STDIN", line)


def attached(server, token, command, what, limit, rcvbuf=None):
    """Two interactive tasks that run command, checked running (the check
    named what), each with a session attached and started; the first's
    socket with receive buffer rcvbuf: (their ids, first, second)."""
    import taplib

    wids, run, states = taplib.interactive(server, token, command, 2, limit)
    taplib.ok(run, what, states)
    first = WS(server, f"/api/v1/workloads/{wids[0]}/attach", token, timeout=limit, rcvbuf=rcvbuf)
    second = WS(server, f"/api/v1/workloads/{wids[1]}/attach", token, timeout=limit)
    started(first, second)
    return wids, first, second


def main(argv):
    server, path = argv[0], argv[1]
    token = None
    hello = {}
    sends = []
    i = 2
    while i < len(argv):
        if argv[i] == "--header-token":
            token = argv[i + 1]
            i += 2
        elif argv[i] == "--hello":
            hello = json.loads(argv[i + 1])
            i += 2
        elif argv[i] == "--send":
            t, _, text = argv[i + 1].partition(":")
            sends.append((t, text))
            i += 2
        else:
            raise SystemExit(f"unknown argument {argv[i]}")
    ws = WS(server, path, token)
    if ws.status != 101:
        print(f"HTTP {ws.status} {ws.body.decode(errors='replace')}")
        return 1
    ws.send("HELLO", json.dumps(hello))
    for t, text in sends:
        ws.send(t, text.encode().decode("unicode_escape").encode("latin-1"))
    while True:
        try:
            t, p = ws.recv()
        except (EOFError, OSError):
            print("EOF")
            return 0
        if t == "CLOSE":
            print(f"CLOSE {p}")
            return 0
        print(t, repr(p))
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
