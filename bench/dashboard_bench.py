#!/usr/bin/env python3
"""The dashboard's list with many TFJobs (issue 37, docs/dashboard.md): `build/release/tfjob
dashboard` against the real test control plane (scripts/test-cluster), N TFJobs (default 1,000)
created in one namespace (no operator: they keep their spec and no status), and the page in
headless Chromium (tests/e2e/browser.py). Prints figures, asserts nothing:

  - sync: from the dashboard's start to /api/jobs holding all N (its list and watch);
  - first paint: from navigation to the last of the N rows in the DOM, in the page's own clock
    (performance.now() read by a 10 ms timer injected before the page's scripts), and the size of
    the first answer;
  - update latency: a label changed on one job (its queue column) with kubectl, from kubectl's
    return to the row showing it (the page's Date.now(), same machine's clock), --updates times;
  - memory: the dashboard's RSS and peak RSS (VmRSS, VmHWM) before the jobs and with them; the
    page's JS heap.

  bench/dashboard_bench.py [--jobs 1000] [--updates 20] [--keep]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from browser import Browser  # noqa: E402

TFJOB = os.path.join(ROOT, "build", "release", "tfjob")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def rss(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


def kubectl(cluster, *args, stdin=None):
    return subprocess.run(["kubectl", "--kubeconfig", os.path.join(cluster, "kubeconfig"), *args], input=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True).stdout


def job(i):
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": f"job-{i:05d}"},
            "spec": {"tfReplicaSpecs": {
                "PS": {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}},
                "Worker": {"replicas": 4, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}}}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--updates", type=int, default=20)
    ap.add_argument("--keep", action="store_true", help="leave the cluster up")
    ap.add_argument("--cluster", help="a test cluster already up (scripts/test-cluster up DIR): use it, in a new namespace")
    a = ap.parse_args()
    own = not a.cluster
    cluster = a.cluster or tempfile.mkdtemp(prefix="tfjob-dash-bench-")
    if own:
        t = time.time()
        subprocess.run([os.path.join(ROOT, "scripts", "test-cluster"), "up", cluster, "--nodes", "1"], check=True,
                       stdout=subprocess.DEVNULL)
        log(f"cluster up in {time.time() - t:.0f} s")
    ns = "bench-" + str(int(time.time()))
    dash = None
    try:
        kubectl(cluster, "apply", "-f", os.path.join(ROOT, "config", "crd", "kubeflow.org_tfjobs.yaml"))
        # Polled, not `kubectl wait`: that fails at once on a CRD without status yet (tests/e2e/conftest.py).
        deadline = time.time() + 60
        while "Established" not in kubectl(cluster, "get", "crd", "tfjobs.kubeflow.org", "-o",
                                           "jsonpath={.status.conditions[?(@.status=='True')].type}"):
            assert time.time() < deadline, "the TFJob CRD is not Established"
            time.sleep(0.5)
        kubectl(cluster, "create", "namespace", ns)
        dash = subprocess.Popen([TFJOB, "dashboard", "--kubeconfig", os.path.join(cluster, "kubeconfig"), "-n", ns,
                                 "--address", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True)
        url = dash.stdout.readline().split()[3]
        time.sleep(2)
        before = rss(dash.pid)
        t = time.time()
        for start in range(0, a.jobs, 200):
            items = [job(i) for i in range(start, min(a.jobs, start + 200))]
            kubectl(cluster, "create", "-n", ns, "-f", "-",
                    stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        created = time.time() - t
        while True:
            with urllib.request.urlopen(url + "api/jobs", timeout=30) as r:
                body = r.read()
            if len(json.loads(body)["rows"]) >= a.jobs:
                break
            time.sleep(0.2)
        synced = time.time() - t
        with_jobs = rss(dash.pid)
        log(f"{a.jobs} TFJobs created in {created:.1f} s; all in the dashboard's list {synced:.1f} s after the first create")

        with Browser(os.path.join(ROOT, "build", "dashboard-artifacts")) as b:
            b.call("Page.addScriptToEvaluateOnNewDocument", source=(
                "window.__rows = 0; const __i = setInterval(() => { const n = document.querySelectorAll('#jobs tr').length;"
                f" if (n >= {a.jobs}) {{ window.__painted = performance.now(); clearInterval(__i); }} }}, 10);"))
            paints = []
            for _ in range(3):
                b.open(url)
                paints.append(b.wait("window.__painted", timeout=120))
            b.screenshot("bench-list.png", full_page=False)
            heap = b.call("Runtime.getHeapUsage")
            latencies = []
            for k in range(a.updates):
                name = f"job-{(k * 37) % a.jobs:05d}"
                queue = f"q-{k}"
                b.js("window.__seen = 0; window.__watch = setInterval(() => { const tr = [...document.querySelectorAll('#jobs tr')]"
                     f".find(r => r.dataset.key === '{ns}/{name}'); if (tr && tr.querySelector('td.queue').textContent === '{queue}')"
                     " { window.__seen = Date.now(); clearInterval(window.__watch); } }, 5)")
                kubectl(cluster, "label", "-n", ns, "tfjob", name, f"kueue.x-k8s.io/queue-name={queue}", "--overwrite")
                sent = time.time() * 1000
                seen = b.wait("window.__seen", timeout=30)
                latencies.append(max(0.0, seen - sent))
        print()
        print(f"dashboard list with {a.jobs} TFJobs (1 PS + 4 Workers each, no status), {time.strftime('%Y-%m-%d')}, "
              f"load average {os.getloadavg()[0]:.1f}")
        print(f"  first answer of /api/jobs        {len(body) / 1024:.0f} KiB")
        print(f"  first paint (navigation to {a.jobs} rows)  runs: {', '.join(f'{p:.0f} ms' for p in paints)}; "
              f"median {statistics.median(paints):.0f} ms")
        print(f"  update latency (kubectl label -> row shows it), {a.updates} updates: median "
              f"{statistics.median(latencies):.0f} ms, p90 {sorted(latencies)[int(len(latencies) * 0.9) - 1]:.0f} ms, "
              f"max {max(latencies):.0f} ms")
        print(f"  dashboard RSS before the jobs     {before['VmRSS']:.1f} MiB")
        print(f"  dashboard RSS with them           {with_jobs['VmRSS']:.1f} MiB (peak {with_jobs['VmHWM']:.1f} MiB)")
        print(f"  the page's JS heap                {heap['usedSize'] / 1048576:.1f} MiB")
    finally:
        if dash:
            dash.terminate()
            dash.wait(15)
        if not own and not a.keep:  # an operator of that cluster must not reconcile them afterwards
            subprocess.run(["kubectl", "--kubeconfig", os.path.join(cluster, "kubeconfig"), "delete", "namespace", ns,
                            "--wait=false"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if own and not a.keep:
            subprocess.run([os.path.join(ROOT, "scripts", "test-cluster"), "down", cluster], stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
