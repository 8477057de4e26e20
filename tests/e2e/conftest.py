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
