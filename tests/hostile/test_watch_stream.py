"""The watch stream and the REST client against a misbehaving API server: a small fake server on
127.0.0.1 that the real `tfjob operator` connects to. Each case: the operator keeps running (or
exits clearly where it must), logs the cause, stays within a memory bound, and SIGTERM still ends
it within the grace period (terminationGracePeriodSeconds in config/manager). Hang detection is a
subprocess wait with a time-out; no case asserts on a time it measured."""
import json
import os
import re
import signal
import socket
import socketserver
import subprocess
import threading
import time

import pytest

from conftest import MiB, process_peak_rss, record

GRACE = 15  # config/manager: terminationGracePeriodSeconds
TIMEOUT = 2  # --kube-api-timeout for these runs (the default is 30 s)
EMPTY_LIST = json.dumps({"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": []})


class FakeApiServer(socketserver.ThreadingTCPServer):
    """Answers each request with `behaviour(kind, path, handler)`; kind is list, watch, lease or other."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.counts = {}
        self.lock = threading.Lock()
        self.closing = threading.Event()
        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def count(self, kind):
        with self.lock:
            return self.counts.get(kind, 0)

    def stop(self):
        self.closing.set()
        self.shutdown()
        self.server_close()


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = self.request.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            length = 0
            for line in lines[1:]:
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            while len(rest) < length:
                rest += self.request.recv(65536)
            resource = path.split("?")[0].rsplit("/", 1)[-1]
            if "/leases" in path:
                kind = "lease"
            elif method == "GET" and "watch=true" in path:
                kind = "watch"
            elif method == "GET" and resource in ("tfjobs", "pods", "services", "podgroups"):
                kind = "list"
            else:
                kind = "other"
            with self.server.lock:
                self.server.counts[kind] = self.server.counts.get(kind, 0) + 1
            self.server.behaviour(kind, path, self)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    # Helpers for behaviours.
    def send(self, data):
        self.request.sendall(data if isinstance(data, bytes) else data.encode())

    def respond(self, code, body, headers=()):
        reason = {200: "OK", 201: "Created", 404: "Not Found", 429: "Too Many Requests",
                  500: "Internal Server Error"}.get(code, "X")
        hdr = f"HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        hdr += "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
        self.send(hdr.encode() + (body if isinstance(body, bytes) else body.encode()))

    def start_stream(self):
        self.send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")

    def hold(self, seconds=3600):
        """Keeps the connection open (saying nothing) until the client goes or the server stops."""
        self.request.settimeout(0.5)
        end = time.monotonic() + seconds
        while time.monotonic() < end and not self.server.closing.is_set():
            try:
                if not self.request.recv(1):
                    return
            except socket.timeout:
                continue


def normal(kind, path, h):
    if kind == "list":
        h.respond(200, EMPTY_LIST)
    elif kind == "watch":
        h.start_stream()
        h.hold()
    elif kind == "lease":
        h.respond(404, json.dumps({"kind": "Status", "code": 404, "reason": "NotFound"}))
    else:
        h.respond(201, "{}")


class Operator:
    """`tfjob operator` against the fake server; stderr collected by a thread."""

    def __init__(self, tfjob, tmp_path, port, extra=(), api_timeout=TIMEOUT):
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
            f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
            "users: [{name: u, user: {token: t}}]\n"
            "contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]\n")
        args = [tfjob, "operator", "--kubeconfig", str(kubeconfig), "--metrics-bind-address", "0",
                "--health-probe-bind-address", "0", *extra]
        if api_timeout is not None:  # None: the defaults (and a build that predates the flag)
            args += ["--kube-api-timeout", str(api_timeout)]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        self.lines = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stderr:
            with self.cond:
                self.lines.append(raw.decode("utf-8", "replace"))
                self.cond.notify_all()

    def wait_for(self, pattern, timeout=30):
        """The first line matching `pattern`, or every regex of a list of them (in any order)."""
        if isinstance(pattern, (list, tuple)):
            pattern = "".join(f"(?=.*{p})" for p in pattern)
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    if rx.search(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return None
                self.cond.wait(min(left, 0.2))

    def log(self):
        with self.cond:
            return "".join(self.lines)

    def terminate(self, entry_point, case):
        """SIGTERM, then hang detection: the process must have exited by grace + margin."""
        peak = process_peak_rss(self.proc.pid)
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=GRACE + 5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            record(entry_point, case, time.monotonic() - self.started, peak, "HANG after SIGTERM")
            pytest.fail(f"{case}: still running {GRACE + 5}s after SIGTERM\n{self.log()[-3000:]}")
        record(entry_point, case, time.monotonic() - self.started, peak, f"rc {rc}")
        return rc, peak


def run_case(tfjob, tmp_path, case, behaviour, expect, max_rss_mib=96, extra=(), check=None, api_timeout=None):
    """api_timeout: --kube-api-timeout for the cases that wait for a time-out; the others run with the
    defaults, so that a build without the flag (TFJOB_BIN) shows its own behaviour."""
    server = FakeApiServer(behaviour)
    op = Operator(tfjob, tmp_path, server.server_address[1], extra, api_timeout)
    try:
        line = op.wait_for(expect)
        running = op.proc.poll() is None
        if check:
            check(server, op)
        rc, peak = op.terminate("watch stream", case)
    finally:
        if op.proc.poll() is None:
            op.proc.kill()
        server.stop()
    assert line, f"{case}: no log line matching {expect!r}\n{op.log()[-3000:]}"
    assert running, f"{case}: the operator exited\n{op.log()[-3000:]}"
    assert rc == 0, f"{case}: exit code {rc} after SIGTERM\n{op.log()[-3000:]}"
    assert peak <= max_rss_mib * MiB, f"{case}: peak RSS {peak / MiB:.1f} MiB over {max_rss_mib} MiB"
    return op


def test_server_accepts_and_never_answers(tfjob, tmp_path):
    def silent(kind, path, h):
        h.hold()
    run_case(tfjob, tmp_path, "accepts TCP, never answers", silent,
             [r'"API request failed"', r'verb=list', r'cause=timeout'], api_timeout=TIMEOUT)


def test_watch_sends_100mb_without_newline(tfjob, tmp_path):
    def huge_line(kind, path, h):
        if kind != "watch" or "tfjobs" not in path:
            return normal(kind, path, h)
        h.start_stream()
        block = b"x" * MiB
        for _ in range(100):
            h.send(block)
        h.hold()
    run_case(tfjob, tmp_path, "watch: one 100 MB line", huge_line,
             r'"watch failed; retrying".*watch event longer than the limit')


def test_watch_sends_endless_spaces(tfjob, tmp_path):
    def spaces(kind, path, h):
        if kind != "watch" or "pods" not in path:
            return normal(kind, path, h)
        h.start_stream()
        block = b" " * MiB
        while not h.server.closing.is_set():
            h.send(block)
    run_case(tfjob, tmp_path, "watch: endless spaces", spaces,
             r'"watch failed; retrying".*watch event longer than the limit')


def test_watch_sends_malformed_json(tfjob, tmp_path):
    def malformed(kind, path, h):
        if kind != "watch":
            return normal(kind, path, h)
        h.start_stream()
        h.send('{"type":"ADDED","object":{"metadata":\n')
        h.hold()
    run_case(tfjob, tmp_path, "watch: malformed JSON event", malformed,
             r'"watch failed; retrying".*undecodable watch event')


def test_watch_sends_unknown_event_type(tfjob, tmp_path):
    def unknown(kind, path, h):
        if kind != "watch":
            return normal(kind, path, h)
        h.start_stream()
        h.send('{"type":"EXPLODED","object":{"metadata":{"name":"x","resourceVersion":"2"}}}\n')
        h.hold()
    run_case(tfjob, tmp_path, "watch: unknown event type", unknown, r'unknown event type \\?"EXPLODED')


def test_watch_error_410_relists(tfjob, tmp_path):
    sent = threading.Event()

    def gone(kind, path, h):
        if kind != "watch" or "services" not in path or sent.is_set():
            return normal(kind, path, h)
        sent.set()
        h.start_stream()
        h.send(json.dumps({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                                       "message": "too old resource version", "reason": "Expired",
                                                       "code": 410}}) + "\n")
        h.hold()

    def relisted(server, op):
        # three informers list once each; the 410 adds one more
        assert op.wait_for(r"caches synced", timeout=20), op.log()[-2000:]
        deadline = time.monotonic() + 10
        while server.count("list") < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert server.count("list") >= 4, server.counts
    run_case(tfjob, tmp_path, "watch: ERROR 410 Gone", gone, r"watch version too old; relisting", check=relisted)


def test_429_with_retry_after(tfjob, tmp_path):
    def throttled(kind, path, h):
        if kind == "list" and h.server.count("list") <= 3:
            return h.respond(429, json.dumps({"kind": "Status", "code": 429, "reason": "TooManyRequests",
                                              "message": "slow down"}), [("Retry-After", "1")])
        normal(kind, path, h)

    def synced(server, op):
        assert op.wait_for(r"caches synced", timeout=20), op.log()[-2000:]
    run_case(tfjob, tmp_path, "429 with Retry-After", throttled,
             [r'"API request failed"', r'cause="HTTP 429"', r'retry_in=1s'], check=synced)


def test_500s(tfjob, tmp_path):
    def broken(kind, path, h):
        if kind == "list":
            return h.respond(500, "internal error: etcd is on fire")
        normal(kind, path, h)
    run_case(tfjob, tmp_path, "500 on every list", broken, [r'"API request failed"', r'cause="HTTP 500"'])


def test_list_response_of_200mb(tfjob, tmp_path):
    def huge_list(kind, path, h):
        if kind != "list":
            return normal(kind, path, h)
        size = 200 * 1000 * 1000
        h.send(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n")
        h.send('{"kind":"List","metadata":{"resourceVersion":"1"},"items":[')
        item = ('{"metadata":{"name":"p","namespace":"default"}},' * 1000).encode()
        sent = 0
        while sent < size and not h.server.closing.is_set():
            h.send(item)
            sent += len(item)
    run_case(tfjob, tmp_path, "list response of 200 MB", huge_list,
             [r'"API request failed"', r'cause="response too large"'])


def test_list_response_of_200mb_without_a_length(tfjob, tmp_path):
    # No Content-Length: the body ends when the connection closes, so only counting the bytes as
    # they arrive can stop it. Three informers list at once, each may hold up to the 64 MiB cap
    # plus the growth step's copy (the last reserve copies up to 64 MiB into the 64 MiB buffer):
    # 3 x 128 MiB and the process's own 40, under the Deployment's 512Mi. (320 was below that
    # sum: a loaded machine that lined the three final copies up saw 367 MiB.)
    def huge_list(kind, path, h):
        if kind != "list":
            return normal(kind, path, h)
        h.send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
        h.send('{"kind":"List","metadata":{"resourceVersion":"1"},"items":[')
        item = ('{"metadata":{"name":"p","namespace":"default"}},' * 1000).encode()
        sent = 0
        while sent < 200 * 1000 * 1000 and not h.server.closing.is_set():
            h.send(item)
            sent += len(item)
    run_case(tfjob, tmp_path, "list response of 200 MB, no length", huge_list,
             [r'"API request failed"', r'cause="response too large"'], max_rss_mib=3 * 128 + 40)


def test_server_drips_one_byte_a_second(tfjob, tmp_path):
    def drip(kind, path, h):
        if kind == "list":
            body = EMPTY_LIST.encode()
            h.send(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
            for b in body:
                if h.server.closing.is_set():
                    return
                h.send(bytes([b]))
                time.sleep(1)
        normal(kind, path, h)
    run_case(tfjob, tmp_path, "drips one byte a second", drip, [r'"API request failed"', r'verb=list', r'cause=timeout'],
             api_timeout=TIMEOUT)


def test_lease_requests_that_never_answer(tfjob, tmp_path):
    def lease_hangs(kind, path, h):
        if kind == "lease":
            return h.hold()
        normal(kind, path, h)
    run_case(tfjob, tmp_path, "lease requests never answer", lease_hangs,
             [r'"API request failed"', r'client=leader-election', r'cause=timeout'], extra=["--leader-elect=true"],
             api_timeout=TIMEOUT)


def test_sigterm_ends_the_operator_within_the_grace_period_while_every_request_hangs(tfjob, tmp_path):
    # Item 16 with the default time-outs (a request may wait 30 s, twice the grace period): the
    # lists of the three informers are in flight and never answered when SIGTERM comes. The
    # start-up's one-off reads (the TFJob CRD check) are answered, so that the lists start.
    def silent(kind, path, h):
        if kind == "other":
            return normal(kind, path, h)
        h.hold()

    def lists_in_flight(server, op):
        deadline = time.monotonic() + 10
        while server.count("list") < 3 and time.monotonic() < deadline and op.proc.poll() is None:
            time.sleep(0.05)
        assert server.count("list") >= 3, server.counts
    run_case(tfjob, tmp_path, "SIGTERM while every request hangs", silent, r"info starting", check=lists_in_flight)


LOG_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z ")


def _seconds(duration):
    """Seconds of a logged duration: 800ms, 6.2s, 1m30s."""
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration):
        total += float(number) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def _field(line, name):
    m = re.search(rf"\b{name}=(\S+)", line)
    return m.group(1) if m else None


def test_the_retry_log_says_what_actually_happens(tfjob, tmp_path):
    # Item 17: every list fails (HTTP 500). The client retries each request on its own (5 times,
    # 6.2 s) before the informer's own retry, so a "list failed" line that only says
    # "backoff=800ms" hides where the time went (its lines came 7 s apart). By the operator's own
    # log timestamps, the first "list failed" line of a resource must account for the time since
    # the operator started, and each failed request must be logged (or counted as suppressed)
    # with its attempt and retry delay. The retry_in that follows is the unit test
    # Reflector.Issue17RetryLogSaysTheElapsedTimeAndTheRealDelay. Default time-outs, so that a
    # build without --kube-api-timeout shows what it logs.
    import datetime

    def broken(kind, path, h):
        if kind == "list":
            return h.respond(500, "internal error")
        normal(kind, path, h)

    def accounted(server, op):
        def at(line):
            return datetime.datetime.fromisoformat(LOG_TS.match(line).group(1))
        log = op.log().splitlines()
        started = next(line for line in log if " info starting " in line)
        first = next(line for line in log if re.search(r'"list failed; retrying".* resource=tfjobs ', line))
        gap = (at(first) - at(started)).total_seconds()
        said = _seconds(_field(first, "elapsed") or "0s")
        assert abs(gap - said) < 1.0, (f"the log accounts for {said:.1f}s of the {gap:.1f}s the list took "
                                       f"(elapsed={_field(first, 'elapsed')}):\n{started}\n{first}")
        assert _field(first, "retry_in"), first
        failed = [line for line in log if '"API request failed"' in line and "kubeflow.org/v1/tfjobs" in line]
        assert failed and all(_field(line, "attempt") and _field(line, "retry_in") for line in failed), failed[:3]
    run_case(tfjob, tmp_path, "the retry log vs the retries (500s)", broken,
             r'"list failed; retrying".* resource=tfjobs ', check=accounted)
