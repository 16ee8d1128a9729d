"""Opens N connections that each ask for a workload's log and read only the
head of the answer, then hold it unread (as slow readers do); prints the
daemon's resident memory growth in KiB from before the first to after the
last head, and keeps the connections open until stdin closes.

usage: slow_log_readers.py SERVER TOKEN ID N PID"""
import socket
import sys
from urllib.parse import urlparse


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit("no VmRSS")


def main():
    server, token, wid, n, pid = sys.argv[1:6]
    u = urlparse(server)
    before = rss_kib(pid)
    socks = []
    for _ in range(int(n)):
        s = socket.socket()
        # A small window: what the daemon cannot send stays with it.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((u.hostname, u.port))
        s.sendall(f"GET /api/v1/workloads/{wid}/logs HTTP/1.1\r\nHost: x\r\n"
                  f"Authorization: Bearer {token}\r\n\r\n".encode())
        got = b""
        while b"\r\n" not in got:
            b = s.recv(1)
            if not b:
                raise SystemExit("closed before the head")
            got += b
        if b" 200 " not in got:
            raise SystemExit(f"answered {got!r}")
        socks.append(s)
    print(rss_kib(pid) - before, flush=True)
    sys.stdin.read()


main()
