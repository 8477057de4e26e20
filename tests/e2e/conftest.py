"""Fixtures shared by every end-to-end suite: the running test cluster (started by
tests/e2e/run via scripts/test-cluster), kubectl, a fresh namespace per test, and polling."""
import datetime
import email.utils
import http.client
import json
import os
import ssl
import subprocess
import time
import urllib.parse
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_configure(config):
    # The subset of the suite that make test-e2e runs on every claimed Kubernetes version beside the
    # default (tests/e2e/run --kubernetes V -m every_version; README, "Kubernetes versions").
    config.addinivalue_line("markers", "every_version: runs on every claimed Kubernetes version, not only the default")
    # Tests that need the real node (tests/e2e/run --real-node; docs/test-bed.md, "The real node").
    config.addinivalue_line("markers", "real_node: needs real pods: runs only in a cluster with the real node")


def pytest_collection_modifyitems(config, items):
    """A cluster with the real node (DIR/env sets TFJOB_REAL_NODE) runs the real_node tests only;
    any other (the KWOK suite) runs all but them."""
    real = bool(os.environ.get("TFJOB_REAL_NODE"))
    keep, drop = [], []
    for item in items:
        (keep if (item.get_closest_marker("real_node") is not None) == real else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


class Kube:
    def __init__(self, cluster_dir, kubeconfig):
        self.dir = cluster_dir
        self.kubeconfig = kubeconfig

    def run(self, *args, stdin=None, check=True, kubeconfig=None):
        cmd = ["kubectl", "--kubeconfig", kubeconfig or self.kubeconfig] + list(args)
        r = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
        return r

    def __call__(self, *args, **kw):
        return self.run(*args, **kw).stdout

    def apply(self, obj, namespace=None):
        args = ["apply", "-f", "-"] + (["-n", namespace] if namespace else [])
        return self(*args, stdin=obj if isinstance(obj, str) else json.dumps(obj))

    def get(self, kind, name=None, namespace=None, check=True):
        args = ["get", kind] + ([name] if name else []) + (["-n", namespace] if namespace else []) + ["-o", "json"]
        r = self.run(*args, check=check)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def wait_established(self, crd, timeout=60):
        """Waits, polling, for the CRD named `crd` to be Established. Not `kubectl wait
        --for=condition=Established`: that fails at once, instead of waiting, when it reads a CRD
        the API server has not yet given any status.conditions (`.status.conditions accessor
        error: <nil> is of the type <nil>`), which a just-applied CRD on a busy machine can be."""
        wait_for(lambda: any(c.get("type") == "Established" and c.get("status") == "True"
                             for c in ((self.get("crd", crd, check=False) or {}).get("status") or {})
                             .get("conditions") or []),
                 timeout=timeout, what=f"crd/{crd} Established")

    def server_get(self, path):
        """GET path with the admin certificate. Returns (HTTP status, the object or None, the API
        server's clock at the response: its Date header, whole seconds since the epoch)."""
        if not hasattr(self, "_ctx"):
            with open(self.kubeconfig) as f:
                u = urllib.parse.urlparse(json.load(f)["clusters"][0]["cluster"]["server"])
            pki = os.path.join(self.dir, "pki")
            ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
            ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
            self._host, self._port, self._ctx = u.hostname, u.port, ctx
        conn = http.client.HTTPSConnection(self._host, self._port, context=self._ctx, timeout=60)
        try:
            conn.request("GET", path, headers={"Accept": "application/json"})
            r = conn.getresponse()
            data = r.read()
            now = email.utils.parsedate_to_datetime(r.getheader("Date")).timestamp()
            return r.status, (json.loads(data) if r.status == 200 else None), now
        finally:
            conn.close()

    def server_now(self):
        """The API server's clock (whole seconds, from the Date header of a cheap request)."""
        return self.server_get("/version")[2]

    def script(self, *args):
        return subprocess.run([os.path.join(ROOT, "scripts", "test-cluster")] + list(args), check=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)


def wait_for(predicate, timeout=30, interval=0.25, what="condition"):
    """Polls predicate() until it returns a truthy value; fails the test with `what` on timeout."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except AssertionError as e:  # kubectl hiccup; try again
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last})" if last else ""))


def api_time(value):
    """An API timestamp (RFC 3339 Time or MicroTime) as seconds since the epoch."""
    return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def until_by_server_clock(kube, path, done, not_before, not_after, what, interval=0.25):
    """Polls GET path until done(object or None) holds, and judges when it came to hold by the API
    server's own clock (the Date header of each response), never by when this test happened to
    look: it must hold at no server time before not_before (seen at server second t, it held by
    t + 1, so t >= not_before is the exact test at second precision), and must have held by
    not_after (a response at server time >= not_after where it does not hold fails). A slow test
    process can only make the first check weaker and never makes the second one fail early. The
    bounds end the wait, so no other time-out is needed. Returns (server time, object)."""
    while True:
        status, obj, now = kube.server_get(path)
        assert status in (200, 404), f"GET {path}: HTTP {status}"
        if done(obj):
            assert now >= not_before, (f"{what}: already the case at server time {now:.0f}, "
                                       f"{not_before - now:.0f}s before it may be ({not_before:.0f})")
            return now, obj
        assert now < not_after, (f"{what}: still not the case at server time {now:.0f}, "
                                 f"{now - not_after:.0f}s after the latest acceptable ({not_after:.0f})")
        time.sleep(interval)


def wait_for_server_time(kube, t, interval=0.5):
    """Sleeps until the API server's clock reads at least t."""
    while kube.server_now() < t:
        time.sleep(interval)


@pytest.fixture(scope="session")
def kube():
    cluster_dir = os.environ.get("TFJOB_TEST_CLUSTER")
    if not cluster_dir:
        pytest.fail("no test cluster: run the e2e suites through tests/e2e/run (make test-e2e)")
    return Kube(cluster_dir, os.path.join(cluster_dir, "kubeconfig"))


@pytest.fixture
def namespace(kube):
    name = "e2e-" + uuid.uuid4().hex[:8]
    kube("create", "namespace", name)
    if os.environ.get("TFJOB_REAL_NODE"):
        # With the real node the API server admits a pod only once its ServiceAccount exists
        # (scripts/test-cluster: real pods get their token).
        wait_for(lambda: kube.get("serviceaccount", "default", name, check=False), timeout=60,
                 what=f"the default ServiceAccount of {name}")
    yield name
    kube("delete", "namespace", name, "--wait=false")


class OperatorProcess:
    """The real `tfjob operator` binary (TFJOB_BIN, else build/release/tfjob), run with the
    least-privilege kubeconfig."""

    def __init__(self, kube, *args, name="operator"):
        self.kube = kube
        self.log_path = os.path.join(kube.dir, f"{name}-{uuid.uuid4().hex[:6]}.log")
        self.args = [os.environ.get("TFJOB_BIN") or os.path.join(ROOT, "build", "release", "tfjob"), "operator",
                     "--kubeconfig", os.path.join(kube.dir, "operator.kubeconfig"),
                     "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0"] + list(args)
        if not any(a.startswith("--leader-elect") for a in args):
            self.args.append("--leader-elect=false")
        self.proc = None

    def start(self):
        import subprocess
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT)
        return self

    def stop(self, timeout=10):
        import signal
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=timeout)
            except Exception:
                self.proc.kill()
                raise
        return self.proc.returncode if self.proc else None

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def port(self, what):
        """The port the operator logged for `what` ("metrics" or "health probes")."""
        import re
        def find():
            with open(self.log_path, errors="replace") as f:
                for line in f:
                    if f"serving {what}" in line:
                        return int(re.search(r"port=(\d+)", line).group(1))
            return None
        return wait_for(find, what=f"the operator to log its {what} port")

    def metrics(self):
        import urllib.request
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port('metrics')}/metrics", timeout=5) as r:
            return r.read().decode()

    def metric(self, name_with_labels):
        total = 0.0
        for line in self.metrics().splitlines():
            if line.startswith(name_with_labels):
                total += float(line.rsplit(" ", 1)[1])
        return total


@pytest.fixture(scope="session")
def tfjob_crd(kube):
    kube("apply", "-f", os.path.join(ROOT, "config", "crd", "kubeflow.org_tfjobs.yaml"))
    kube.wait_established("tfjobs.kubeflow.org", timeout=30)
