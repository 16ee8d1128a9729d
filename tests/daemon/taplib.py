"""tests/daemon/taplib.py — what the Python session tests share: TAP lines
(ok, done), a JSON call to gpupoold's API that returns the status and the
decoded body, errors included, and a free port on loopback."""
import json
import socket
import sys
import urllib.error
import urllib.request

_n = 0
_failed = 0


def ok(cond, name, detail=""):
    """Prints one TAP line; on failure, the last lines of detail."""
    global _n, _failed
    _n += 1
    if not cond:
        _failed += 1
        print(f"not ok {_n} - {name}")
        for line in str(detail).splitlines()[-15:]:
            print(f"#   {line}")
    else:
        print(f"ok {_n} - {name}")
    sys.stdout.flush()


def free_port():
    """A port free on loopback now (tasks share the host's network): bound
    to 0 and read back."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def done():
    """Prints the plan and exits: 1 if any case failed."""
    print(f"1..{_n}")
    sys.exit(1 if _failed else 0)


def api(server, method, path, token, body=None, timeout=30):
    """(status, JSON body) of one call; an HTTP error's status and body too."""
    req = urllib.request.Request(server + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")
