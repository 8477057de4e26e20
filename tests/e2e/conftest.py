"""Fixtures shared by every end-to-end suite: the running test cluster (started by
tests/e2e/run via scripts/test-cluster), kubectl, a fresh namespace per test, and polling."""
import json
import os
import subprocess
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
    yield name
    kube("delete", "namespace", name, "--wait=false")


class OperatorProcess:
    """The real `tfjob operator` binary, run with the least-privilege kubeconfig."""

    def __init__(self, kube, *args, name="operator"):
        self.kube = kube
        self.log_path = os.path.join(kube.dir, f"{name}-{uuid.uuid4().hex[:6]}.log")
        self.args = [os.path.join(ROOT, "build", "release", "tfjob"), "operator",
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
    kube("wait", "--for=condition=Established", "crd/tfjobs.kubeflow.org", "--timeout=30s")
