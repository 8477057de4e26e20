"""Hostile clients of the dashboard's server (`tfjob dashboard`, docs/dashboard.md "Safe by
default"): the Host header (DNS rebinding), the access token of a non-loopback address, no CORS,
the Content-Security-Policy, actions refused without --allow-actions or without the page's CSRF
token, malformed queries, and the bounds it shares with the operator's servers (idle and
numerous connections, huge headers and bodies, long polls past their slots). The server runs
against an API server that is not there: the pages and their guards do not need one."""
import http.client
import json
import os
import socket
import subprocess
import time

import pytest

from conftest import KUBECONFIG, MiB, TFJOB, process_peak_rss, record

def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Dashboard:
    def __init__(self, tmp_path, *args):
        cfg = tmp_path / "kubeconfig"
        cfg.write_text(KUBECONFIG % _free_port())
        self.proc = subprocess.Popen([TFJOB, "dashboard", "--kubeconfig", str(cfg), "-n", "ns",
                                      "--request-timeout", "1s", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("tfjob dashboard: serving http://"), (line, self.proc.stderr.read())
        self.url = line.split()[3]
        hostport = self.url.split("/")[2]
        self.port = int(hostport.rsplit(":", 1)[1])
        self.token = self.url.split("?token=")[1] if "?token=" in self.url else ""

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(10)
        return rc


@pytest.fixture
def dash(tmp_path):
    d = Dashboard(tmp_path, "--address", "127.0.0.1:0")
    yield d
    assert d.stop() == 0


@pytest.fixture
def dash_actions(tmp_path):
    d = Dashboard(tmp_path, "--address", "127.0.0.1:0", "--allow-actions")
    yield d
    assert d.stop() == 0


def _request(port, method, path, headers=None, body=None, timeout=10, host="127.0.0.1"):
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        h = {"Host": f"127.0.0.1:{port}"}
        h.update(headers or {})
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def _case(d, case, started, result):
    record("dashboard http", case, time.monotonic() - started, process_peak_rss(d.proc.pid), result)


def test_pages_have_a_strict_csp_and_no_cors(dash):
    started = time.monotonic()
    for path in ("/", "/job?ns=a&name=b", "/app.js", "/app.css", "/api/config", "/api/jobs"):
        status, h, body = _request(dash.port, "GET", path, {"Origin": "http://evil.example"})
        assert status == 200, (path, status, body)
        csp = h["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp, csp
        assert "frame-ancestors 'none'" in csp
        assert h["x-content-type-options"] == "nosniff"
        assert not any(k.startswith("access-control-") for k in h), (path, h)
    # A preflight is never granted.
    status, h, _ = _request(dash.port, "OPTIONS", "/api/action",
                            {"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert status in (404, 405) and not any(k.startswith("access-control-") for k in h)
    # Every asset is in the binary: the page names no other host.
    _, _, html = _request(dash.port, "GET", "/")
    assert b"http://" not in html and b"https://" not in html
    _case(dash, "CSP on every answer, no CORS", started, "ok")


@pytest.mark.parametrize("host", ["evil.example:%d", "127.0.0.1.evil.example:%d", "127.0.0.1:1", "", "localhost"])
def test_dns_rebinding_host_headers_are_refused(dash, host):
    started = time.monotonic()
    value = host % dash.port if "%d" in host else host
    for path in ("/", "/api/jobs", "/api/config"):
        status, _, body = _request(dash.port, "GET", path, {"Host": value})
        assert status == 403 and b"Host header" in body, (value, path, status, body)
    status, _, _ = _request(dash.port, "GET", "/api/config", {"Host": f"localhost:{dash.port}"})
    assert status == 200
    _case(dash, f"Host {value!r}", started, "403")


def test_actions_are_refused_without_allow_actions(dash):
    started = time.monotonic()
    _, _, cfg = _request(dash.port, "GET", "/api/config")
    cfg = json.loads(cfg)
    assert cfg["actions"] is False
    status, _, body = _request(dash.port, "POST", "/api/action",
                               {"Content-Type": "application/json", "X-Tfjob-Csrf": cfg["csrf"]},
                               json.dumps({"action": "delete", "ns": "ns", "name": "x"}))
    assert status == 403 and b"read-only" in body, (status, body)
    _case(dash, "action without --allow-actions", started, "403")


@pytest.mark.parametrize("case,headers", [
    ("no CSRF token", {"Content-Type": "application/json"}),
    ("a wrong CSRF token", {"Content-Type": "application/json", "X-Tfjob-Csrf": "0" * 32}),
    ("a form's content type", {"Content-Type": "application/x-www-form-urlencoded", "X-Tfjob-Csrf": "CSRF"}),
    ("text/plain (no preflight)", {"Content-Type": "text/plain", "X-Tfjob-Csrf": "CSRF"}),
    ("another Origin", {"Content-Type": "application/json", "X-Tfjob-Csrf": "CSRF", "Origin": "http://evil.example"}),
])
def test_cross_site_actions_are_refused(dash_actions, case, headers):
    started = time.monotonic()
    _, _, cfg = _request(dash_actions.port, "GET", "/api/config")
    csrf = json.loads(cfg)["csrf"]
    assert len(csrf) == 32
    headers = {k: v.replace("CSRF", csrf) for k, v in headers.items()}
    status, _, body = _request(dash_actions.port, "POST", "/api/action", headers,
                               json.dumps({"action": "delete", "ns": "ns", "name": "x"}))
    assert status == 403, (case, status, body)
    _case(dash_actions, "action: " + case, started, "403")


def test_bad_actions_and_queries_are_400(dash_actions):
    started = time.monotonic()
    _, _, cfg = _request(dash_actions.port, "GET", "/api/config")
    h = {"Content-Type": "application/json", "X-Tfjob-Csrf": json.loads(cfg)["csrf"]}
    for body in ("not json", "[]", json.dumps({"action": "scale", "ns": "a", "name": "b"}),
                 json.dumps({"action": "delete", "ns": "", "name": "b"}), "{" * 3000):
        status, _, answer = _request(dash_actions.port, "POST", "/api/action", h, body)
        assert status == 400, (body[:40], status, answer)
    for path in ("/api/job", "/api/job?ns=a", "/api/logs?name=b", "/api/job?ns=%zz&name=b"):
        status, _, _ = _request(dash_actions.port, "GET", path)
        assert status == 400, path
    for path in ("/api/jobs?since=-1", "/api/jobs?since=99999999999999999999999", "/api/jobs?since=abc"):
        status, _, body = _request(dash_actions.port, "GET", path)
        assert status == 200 and json.loads(body)["full"] is True, path
    status, _, _ = _request(dash_actions.port, "GET", "/api/job?ns=a&name=b")
    assert status == 404
    _case(dash_actions, "malformed actions and queries", started, "400")


def test_a_non_loopback_address_needs_the_token(tmp_path):
    """Any address but 127.0.0.1, ::1 or localhost gets a token; 127.0.0.2 keeps the test's traffic
    on the loopback interface."""
    started = time.monotonic()
    d = Dashboard(tmp_path, "--address", "127.0.0.2:0")
    try:
        assert len(d.token) == 32, d.url
        assert d.url.startswith("http://127.0.0.2:")
        status, _, body = _request(d.port, "GET", "/api/config", {"Host": "some.host:1"}, host="127.0.0.2")
        assert status == 403 and b"access token" in body
        status, _, _ = _request(d.port, "GET", "/api/config?token=" + "0" * 32, {"Host": "some.host:1"},
                                host="127.0.0.2")
        assert status == 403
        status, h, _ = _request(d.port, "GET", "/?token=" + d.token, {"Host": "some.host:1"}, host="127.0.0.2")
        assert status == 200
        cookie = h["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        status, _, _ = _request(d.port, "GET", "/api/jobs", {"Cookie": cookie.split(";")[0], "Host": "some.host:1"},
                                host="127.0.0.2")
        assert status == 200
    finally:
        assert d.stop() == 0
    record("dashboard http", "127.0.0.2 without/with the token", time.monotonic() - started, 0, "403/200")


def test_long_polls_past_their_slots_are_answered_at_once(dash):
    started = time.monotonic()
    socks = []
    try:
        # 80 long polls (64 slots): the ones past the slots answer at once, and the page still loads.
        for _ in range(80):
            s = socket.create_connection(("127.0.0.1", dash.port), timeout=30)
            s.sendall(f"GET /api/jobs?since=1&wait=1 HTTP/1.1\r\nHost: 127.0.0.1:{dash.port}\r\n\r\n".encode())
            socks.append(s)
        answered = 0
        deadline = time.monotonic() + 10
        for s in socks:
            s.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                if s.recv(100).startswith(b"HTTP/1.1 200"):
                    answered += 1
            except OSError:
                pass
        assert answered >= 16, answered
        status, _, _ = _request(dash.port, "GET", "/", timeout=5)
        assert status == 200
    finally:
        for s in socks:
            s.close()
    _case(dash, "80 long polls, 64 slots", started, "ok")


def test_idle_connections_huge_headers_and_bodies(dash_actions):
    started = time.monotonic()
    idle = [socket.create_connection(("127.0.0.1", dash_actions.port), timeout=5) for _ in range(150)]
    try:
        # Past the 96 threads and the 32 queued: refused at once (503), not held.
        last = idle[-1]
        last.settimeout(10)
        assert last.recv(100).startswith(b"HTTP/1.1 503")
    finally:
        for s in idle:
            s.close()
    # Once they went, the server answers again.
    deadline = time.monotonic() + 20
    status = None
    while status != 200:
        assert time.monotonic() < deadline, status
        try:
            status, _, _ = _request(dash_actions.port, "GET", "/api/config", timeout=5)
        except OSError as e:
            status = repr(e)
        time.sleep(0.2)
    s = socket.create_connection(("127.0.0.1", dash_actions.port), timeout=15)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Huge: " + b"a" * (1 * MiB) + b"\r\n\r\n")
    answer = s.recv(100)
    s.close()
    assert answer.startswith(b"HTTP/1.1 431"), answer
    status, _, _ = _request(dash_actions.port, "POST", "/api/action",
                            {"Content-Type": "application/json"}, b"x" * (1 * MiB))
    assert status == 413
    assert process_peak_rss(dash_actions.proc.pid) < 128 * MiB
    _case(dash_actions, "150 idle, 1 MiB header, 1 MiB body", started, "431/413")
