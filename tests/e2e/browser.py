"""A real browser for the dashboard's tests (docs/dashboard.md, "Tests"): Debian's headless
Chromium (installed by scripts/install-browser), driven over the DevTools protocol with a small
WebSocket client of the standard library only (no Node, no driver, no network beyond 127.0.0.1).

    with Browser(artifacts_dir) as b:
        b.open("http://127.0.0.1:8090/")
        b.wait("document.querySelectorAll('tr').length > 1")
        b.screenshot("list.png")
"""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0"]


def install():
    """scripts/install-browser (a no-op once chromium is there); the path of chromium."""
    subprocess.run([os.path.join(ROOT, "scripts", "install-browser")], check=True)
    return shutil.which("chromium")


class WebSocket:
    """The client side of RFC 6455, text frames only, enough for the DevTools protocol."""

    def __init__(self, url, timeout=30):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the browser closed the DevTools socket")
            head += chunk
        head, self.rest = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError(head.decode(errors="replace"))

    def _read(self, n):
        while len(self.rest) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("the browser closed the DevTools socket")
            self.rest += chunk
        out, self.rest = self.rest[:n], self.rest[n:]
        return out

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x81])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            opcode = b0 & 0x0F
            if opcode == 8:
                raise ConnectionError("the browser closed the DevTools socket")
            if opcode in (0, 1, 2):
                message += payload
                if b0 & 0x80:
                    return message.decode()


class Browser:
    """One headless Chromium with one page. Console messages, uncaught exceptions and CSP
    violations are collected in `console` and `errors`."""

    def __init__(self, artifacts, width=1400, height=1000):
        self.artifacts = artifacts
        os.makedirs(artifacts, exist_ok=True)
        self.width, self.height = width, height
        self.console, self.errors = [], []
        self._id = 0

    def __enter__(self):
        chromium = install()
        self.profile = tempfile.mkdtemp(prefix="tfjob-chromium-")
        self.log = open(os.path.join(self.artifacts, "chromium.log"), "ab")
        self.proc = subprocess.Popen([chromium, *FLAGS, f"--user-data-dir={self.profile}",
                                      f"--window-size={self.width},{self.height}", "about:blank"],
                                     stdout=self.log, stderr=self.log, start_new_session=True)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + 60
        while not (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("chromium did not start; see " + self.log.name)
            time.sleep(0.1)
        port = int(open(port_file).read().split("\n")[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(t for t in targets if t["type"] == "page")
        self.ws = WebSocket(page["webSocketDebuggerUrl"])
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride", width=self.width, height=self.height,
                  deviceScaleFactor=1, mobile=False)
        return self

    def __exit__(self, *exc):
        try:
            self.ws.sock.close()
        except Exception:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _event(self, m):
        method, p = m.get("method"), m.get("params", {})
        if method == "Runtime.consoleAPICalled":
            self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            self.errors.append(p.get("exceptionDetails", {}).get("text", "") + " " +
                               str(p.get("exceptionDetails", {}).get("exception", {}).get("description", "")))
        elif method == "Log.entryAdded":
            self.console.append(p.get("entry", {}).get("text", ""))

    def call(self, method, **params):
        self._id += 1
        my = self._id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == my:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self._event(m)

    def js(self, expression):
        """The value of a JavaScript expression (promises awaited)."""
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r.get("result", {}).get("value")

    def open(self, url):
        """Navigates and waits until the new document has loaded."""
        self.js("window.__old_document = true")
        self.call("Page.navigate", url=url)
        self.wait("!window.__old_document && document.readyState === 'complete'", timeout=30)

    def wait(self, expression, timeout=60, what=None):
        """Waits until the expression is truthy; its last value on a time-out is in the error."""
        deadline = time.monotonic() + timeout
        value = error = None
        while time.monotonic() < deadline:
            try:
                value = self.js(expression)
            except RuntimeError as e:  # the page is not there yet (a navigation): not an answer
                value, error = None, str(e)
            if value or isinstance(value, (dict, list)):  # an element comes back as {}
                return value
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout}s waiting for {what or expression} (last: {value!r}, "
                             f"{error}); "
                             f"console: {self.console[-10:]} errors: {self.errors[-5:]}")

    def text(self, selector="body"):
        return self.js(f"(document.querySelector({json.dumps(selector)}) || {{}}).innerText || ''")

    def click(self, selector):
        self.js(f"document.querySelector({json.dumps(selector)}).click()")

    def hover(self, selector):
        """Moves the mouse over the middle of the element (real input events)."""
        box = self.js(f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
                      " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for dx in (-1, 0):
            self.call("Input.dispatchMouseEvent", type="mouseMoved", x=box[0] + dx, y=box[1])

    def screenshot(self, name, full_page=True):
        """A PNG of the page into the artifacts folder; its path."""
        params = {"format": "png"}
        if full_page:
            size = self.js("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": max(size[0], self.width), "height": min(size[1], 6000), "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", **params)["data"]
        path = os.path.join(self.artifacts, name)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path
