#!/usr/bin/env python3
"""The operator at scale (issue 7): the real `build/release/tfjob operator` against the real test
control plane (scripts/test-cluster: etcd, kube-apiserver with raised in-flight limits and no
priority-and-fairness queueing, controller-manager, scheduler, KWOK nodes), five scenarios, one
table each. Prints figures, asserts nothing.

  1. burst   200 TFJobs of 1 PS + 4 Workers submitted at once
  2. big     one TFJob with 500 Workers
  3. limit   the same 1,000 pods + 1,000 services created by bench/limit_client (no operator
             logic, no client rate limit) in the same cluster: the operator's rate as a ratio
  4. idle    1,000 finished TFJobs: operator CPU and API requests over 60 s
  5. memory  RSS with 5,000 managed pods, then with 5,000 unrelated pods added (R15)

Scenarios 1-3 run for every --workers x --kube-api-qps pair (default 1,4,16 x 20,200), each in a
fresh cluster. Times are measured from the first TFJob create to what a watch (opened before the
submission) reports. Usage:

  bench/operator_bench.py [--scenarios burst,big,idle,memory] [--workers 1,4,16] [--qps 20,200]
"""
import argparse
import faulthandler
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TFJOB = os.environ.get("TFJOB_BIN") or os.path.join(ROOT, "build", "release", "tfjob")
LIMIT = os.path.join(ROOT, "build", "release", "bench", "limit_client")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# The cluster, the API (watches), the operator process


class Cluster:
    def __init__(self, nodes):
        self.operators = []  # stopped by down(), whatever happened
        self.dir = tempfile.mkdtemp(prefix="tfjob-bench.")
        shutil.rmtree(self.dir)
        subprocess.run([os.path.join(ROOT, "scripts", "test-cluster"), "up", self.dir, "--nodes", str(nodes)],
                       check=True, stdout=subprocess.DEVNULL)
        try:
            self.connect()
        except BaseException:
            self.down()
            raise

    def connect(self):
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        with open(self.kubeconfig) as f:
            self.server = json.load(f)["clusters"][0]["cluster"]["server"]
        self.ctx = ssl.create_default_context(cafile=os.path.join(self.dir, "pki", "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(self.dir, "pki", "admin.crt"), os.path.join(self.dir, "pki", "admin.key"))
        env = dict(os.environ)
        env["PATH"] = os.path.join(self.bin_dir()) + ":" + env["PATH"]
        self.env = env
        self.kubectl("apply", "-f", os.path.join(ROOT, "config", "crd", "kubeflow.org_tfjobs.yaml"))
        # A CRD just created has no status.conditions yet, and `kubectl wait` fails on that: retry.
        for attempt in range(30):
            try:
                self.kubectl("wait", "--for=condition=Established", "crd/tfjobs.kubeflow.org", "--timeout=60s")
                break
            except subprocess.CalledProcessError:
                if attempt == 29:
                    raise
                time.sleep(0.5)

    def bin_dir(self):
        with open(os.path.join(self.dir, "state.json")) as f:
            return json.load(f)["bin"]

    def kubectl(self, *args, stdin=None):
        return subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig] + list(args), input=stdin, check=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env).stdout

    def namespace(self, name):
        self.kubectl("create", "namespace", name)
        return name

    def pid(self, component):
        with open(os.path.join(self.dir, "pids", component + ".pid")) as f:
            return int(f.read().strip())

    def request(self, path, method="GET", body=None):
        """One API call; 429 (the API server's in-flight limit) is retried after Retry-After."""
        for attempt in range(30):
            req = urllib.request.Request(self.server + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, context=self.ctx, timeout=60) as r:
                    return json.loads(r.read())
            except urllib.error.HTTPError as e:
                if e.code != 429 or attempt == 29:
                    raise
                time.sleep(float(e.headers.get("Retry-After") or 1))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.down()

    def down(self):
        for op in self.operators:
            op.stop()
        subprocess.run([os.path.join(ROOT, "scripts", "test-cluster"), "down", self.dir], stdout=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


class Watch(threading.Thread):
    """A raw watch of one collection; `on_event(type, object, t)` runs for every event, t the time
    of arrival. On this 2-core machine the API server drops watchers that fall behind during a
    burst; the watch then resumes from the last resourceVersion it saw (or relists on 410, the
    objects counted at the time of the relist, so never early)."""

    def __init__(self, cluster, path, on_event):
        super().__init__(daemon=True)
        self.cluster, self.path, self.on_event = cluster, path, on_event
        self.rv = cluster.request(path)["metadata"]["resourceVersion"]
        self.stopped = False
        self.reconnects = 0
        self.start()

    def relist(self):
        listed = self.cluster.request(self.path)
        now = time.time()
        for obj in listed["items"]:
            self.on_event("ADDED", obj, now)
        self.rv = listed["metadata"]["resourceVersion"]

    def run(self):
        while not self.stopped:
            url = (f"{self.cluster.server}{self.path}?watch=1&resourceVersion={self.rv}"
                   "&allowWatchBookmarks=true&timeoutSeconds=3600")
            try:
                with urllib.request.urlopen(url, context=self.cluster.ctx, timeout=3600) as r:
                    for line in r:
                        if self.stopped:
                            return
                        ev = json.loads(line)
                        if ev["type"] == "ERROR":
                            if ev["object"].get("code") == 410:
                                self.relist()
                            break
                        self.rv = ev["object"]["metadata"]["resourceVersion"]
                        if ev["type"] != "BOOKMARK":
                            self.on_event(ev["type"], ev["object"], time.time())
            except Exception as e:  # noqa: BLE001 - reconnect; a dead API server shows as missing figures
                if self.stopped:
                    return
                log(f"watch {self.path}: {e!r}; reconnecting")
                time.sleep(0.5)
            self.reconnects += 1


class Tracker:
    """First time each pod / service was seen, first time each pod ran, first time each job had
    a Succeeded condition; wait() blocks until a count is reached."""

    def __init__(self, cluster, ns):
        self.lock = threading.Condition()
        self.created, self.running, self.succeeded, self.services = {}, {}, {}, {}
        self.watches = [Watch(cluster, f"/api/v1/namespaces/{ns}/pods", self.pod),
                        Watch(cluster, f"/api/v1/namespaces/{ns}/services", self.service),
                        Watch(cluster, f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs", self.job)]

    def pod(self, kind, obj, t):
        with self.lock:
            name = obj["metadata"]["name"]
            self.created.setdefault(name, t)
            if obj.get("status", {}).get("phase") in ("Running", "Succeeded"):
                self.running.setdefault(name, t)
            self.lock.notify_all()

    def service(self, kind, obj, t):
        with self.lock:
            self.services.setdefault(obj["metadata"]["name"], t)
            self.lock.notify_all()

    def job(self, kind, obj, t):
        with self.lock:
            for c in obj.get("status", {}).get("conditions", []):
                if c["type"] == "Succeeded" and c["status"] == "True":
                    self.succeeded.setdefault(obj["metadata"]["name"], t)
            self.lock.notify_all()

    def wait(self, what, n, timeout):
        """Time at which the n-th entry of `what` arrived, or None after timeout."""
        deadline = time.time() + timeout
        with self.lock:
            while len(getattr(self, what)) < n:
                left = deadline - time.time()
                if left <= 0:
                    return None
                self.lock.wait(min(left, 1))
            return sorted(getattr(self, what).values())[n - 1]

    def stop(self):
        for w in self.watches:
            w.stopped = True


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


class Operator:
    def __init__(self, cluster, ns, workers, qps, burst):
        self.log_path = os.path.join(cluster.dir, f"operator-{ns}.log")
        self.logf = open(self.log_path, "w")
        args = [TFJOB, "operator", "--kubeconfig", os.path.join(cluster.dir, "operator.kubeconfig"),
                "--leader-elect=false", "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "0",
                "--workers", str(workers), "--kube-api-qps", str(qps), "--kube-api-burst", str(burst)]
        if ns:
            args += ["--namespace", ns]
        self.proc = subprocess.Popen(args, stdout=self.logf, stderr=subprocess.STDOUT)
        cluster.operators.append(self)
        self.port = None
        deadline = time.time() + 60
        while time.time() < deadline:
            text = open(self.log_path).read()
            if self.port is None and "serving metrics" in text:
                self.port = int(text.split("serving metrics", 1)[1].split("port=", 1)[1].split()[0])
            if "caches synced" in text:
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"the operator exited: {text}")
            time.sleep(0.05)
        raise RuntimeError("the operator did not sync its caches in 60 s")

    def cpu(self):
        return cpu_seconds(self.proc.pid)

    def rss_mib(self):
        return status_kib(self.proc.pid, "VmRSS") / 1024

    def peak_rss_mib(self):
        return status_kib(self.proc.pid, "VmHWM") / 1024

    def requests(self):
        """rest_client_requests_total summed over verbs and codes."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            total = 0.0
            for line in r.read().decode().splitlines():
                if line.startswith("rest_client_requests_total{"):
                    total += float(line.rsplit(" ", 1)[1])
            return total

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.logf.close()


# ---------------------------------------------------------------------------------------------
# Workloads


def worker_template(run_for=None, node_name=None):
    meta = {"annotations": {"tfjob.test/exit-code": "0", "tfjob.test/run-for": run_for}} if run_for else {}
    spec = {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": meta, "spec": spec}


def tfjob(name, ns, replicas):
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name, "namespace": ns},
            "spec": {"tfReplicaSpecs": replicas}}


def burst_jobs(ns, n=200, run_for="5s"):
    return [tfjob(f"burst-{i}", ns, {"PS": {"replicas": 1, "template": worker_template()},
                                      "Worker": {"replicas": 4, "template": worker_template(run_for)}})
            for i in range(n)]


def write_list(items):
    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    return path


def limit_create(cluster, ns, items, concurrency=32):
    path = write_list(items)
    try:
        r = subprocess.run([LIMIT, cluster.kubeconfig, ns, path, str(concurrency)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        out = json.loads(r.stdout.strip().splitlines()[-1])
        if out["errors"]:
            log(f"limit_client: {out['errors']} errors, first: {out['first_error']}")
        return out
    finally:
        os.remove(path)


def rendered_children(jobs, ns):
    """What the operator would create for `jobs` (tfjob render), owner references removed."""
    path = write_list(jobs)
    try:
        out = json.loads(subprocess.run([TFJOB, "render", path, "-o", "json", "--namespace", ns], check=True,
                                        stdout=subprocess.PIPE, text=True).stdout)
    finally:
        os.remove(path)
    for o in out["items"]:
        o["metadata"].pop("ownerReferences", None)
    return out["items"]


def control_plane_cpu(cluster):
    return sum(cpu_seconds(cluster.pid(c)) for c in ("kube-apiserver", "etcd"))


# ---------------------------------------------------------------------------------------------
# Scenarios


def scenario_burst(workers, qps, rows, limit_rows):
    with Cluster(nodes=20) as cluster:
        # 3. The limit first, in its own namespace, with the very objects the operator will create.
        lns = cluster.namespace("limit")
        objs = rendered_children(burst_jobs("limit"), "limit")
        lt = Tracker(cluster, lns)
        lim = limit_create(cluster, lns, objs)
        lt.wait("running", 1000, 120)  # let KWOK settle them before the operator's run
        lt.stop()
        ns = cluster.namespace("burst")
        op = Operator(cluster, ns, workers, qps, int(qps * 1.5))
        tr = Tracker(cluster, ns)
        cpu0, cp0 = op.cpu(), control_plane_cpu(cluster)
        t0 = time.time()
        sub = limit_create(cluster, ns, burst_jobs(ns), concurrency=16)
        t_pods = tr.wait("created", 1000, 900)
        t_svcs = tr.wait("services", 1000, 900)
        t_exist = max(t_pods or 0, t_svcs or 0) if t_pods and t_svcs else None
        t_run = tr.wait("running", 1000, 900)
        t_done = tr.wait("succeeded", 200, 900)
        cpu, cp = op.cpu() - cpu0, control_plane_cpu(cluster) - cp0
        row = {"workers": workers, "qps": qps, "submit_s": sub["seconds"],
               "exist_s": t_exist and t_exist - t0, "running_s": t_run and t_run - t0,
               "succeeded_s": t_done and t_done - t0,
               "pods_per_s": t_pods and 1000 / (t_pods - t0), "cpu_s": cpu, "peak_rss_mib": op.peak_rss_mib(),
               "control_plane_cpu_s": cp, "requests": op.requests()}
        tr.stop()
        op.stop()
        rows.append(row)
        limit_rows.append({"workers": workers, "qps": qps, "limit_objects_per_s": lim["per_second"],
                           "limit_seconds": lim["seconds"],
                           "operator_objects_per_s": t_exist and 2000 / (t_exist - t0),
                           "ratio": t_exist and (2000 / (t_exist - t0)) / lim["per_second"]})
        log(f"burst {row}")
        log(f"limit {limit_rows[-1]}")


def scenario_big(workers, qps, rows):
    with Cluster(nodes=8) as cluster:
        ns = cluster.namespace("big")
        op = Operator(cluster, ns, workers, qps, int(qps * 1.5))
        tr = Tracker(cluster, ns)
        cpu0 = op.cpu()
        t0 = time.time()
        cluster.request(f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs", "POST",
                        tfjob("big", ns, {"Worker": {"replicas": 500, "template": worker_template()}}))
        t_pods = tr.wait("created", 500, 900)
        t_svcs = tr.wait("services", 500, 900)
        t_exist = max(t_pods, t_svcs) if t_pods and t_svcs else None
        row = {"workers": workers, "qps": qps, "pods_s": t_pods and t_pods - t0, "exist_s": t_exist and t_exist - t0,
               "pods_per_s": t_pods and 500 / (t_pods - t0), "cpu_s": op.cpu() - cpu0,
               "peak_rss_mib": op.peak_rss_mib()}
        tr.stop()
        op.stop()
        rows.append(row)
        log(f"big {row}")


def scenario_idle(rows):
    with Cluster(nodes=12) as cluster:
        ns = cluster.namespace("idle")
        op = Operator(cluster, "", 4, 200, 300)
        tr = Tracker(cluster, ns)
        jobs = [tfjob(f"done-{i}", ns, {"Worker": {"replicas": 1, "template": worker_template("1s")}})
                for i in range(1000)]
        limit_create(cluster, ns, jobs, concurrency=16)
        if tr.wait("succeeded", 1000, 900) is None:
            log(f"idle: only {len(tr.succeeded)} jobs succeeded")
        tr.stop()
        time.sleep(15)  # last status writes and events
        cpu0, req0, t0 = op.cpu(), op.requests(), time.time()
        time.sleep(60)
        cpu, req, dt = op.cpu() - cpu0, op.requests() - req0, time.time() - t0
        rows.append({"jobs": len(tr.succeeded), "window_s": dt, "cpu_s": cpu, "cpu_percent": 100 * cpu / dt,
                     "requests_per_min": req * 60 / dt, "rss_mib": op.rss_mib()})
        op.stop()
        log(f"idle {rows[-1]}")


def scenario_memory(rows):
    with Cluster(nodes=4) as cluster:
        ns = cluster.namespace("managed")
        other = cluster.namespace("unrelated")
        op = Operator(cluster, "", 4, 200, 300)
        time.sleep(5)
        rss0 = op.rss_mib()
        tr = Tracker(cluster, ns)
        # 1,000 jobs x 5 workers; the pods name a node that does not exist, so they stay Pending
        # and cost the scheduler and KWOK nothing: only the objects matter here.
        jobs = [tfjob(f"mem-{i}", ns, {"Worker": {"replicas": 5, "template": worker_template(node_name="nowhere")}})
                for i in range(1000)]
        t0 = time.time()
        limit_create(cluster, ns, jobs, concurrency=16)
        tr.wait("created", 5000, 900)
        tr.wait("services", 5000, 900)
        t_all = time.time() - t0
        tr.stop()
        time.sleep(15)
        rss1 = op.rss_mib()
        unrelated = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"other-{i}", "labels": {"app": "other"}},
                      "spec": {"nodeName": "nowhere", "containers": [{"name": "c", "image": "busybox"}]}}
                     for i in range(5000)]
        lim = limit_create(cluster, other, unrelated, concurrency=32)
        time.sleep(15)
        rss2 = op.rss_mib()
        rows.append({"rss_start_mib": rss0, "rss_5000_managed_mib": rss1, "rss_plus_5000_unrelated_mib": rss2,
                     "bytes_per_managed_pod": (rss1 - rss0) * 2**20 / 5000, "unrelated_growth_mib": rss2 - rss1,
                     "create_5000_s": t_all, "unrelated_created": lim["created"], "peak_rss_mib": op.peak_rss_mib()})
        op.stop()
        log(f"memory {rows[-1]}")


# ---------------------------------------------------------------------------------------------
# Tables


def fmt(v, spec=".1f"):
    return "-" if v is None else format(v, spec)


def table(title, header, lines):
    print(f"\n{title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for line in lines:
        print("| " + " | ".join(line) + " |")


def main():
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 <pid> prints where every thread is
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the cluster is taken down
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", default="burst,big,idle,memory")
    ap.add_argument("--workers", default="1,4,16")
    ap.add_argument("--qps", default="20,200")
    a = ap.parse_args()
    scenarios = a.scenarios.split(",")
    pairs = [(int(w), int(q)) for q in a.qps.split(",") for w in a.workers.split(",")]
    for tool in (TFJOB, LIMIT):
        if not os.path.exists(tool):
            sys.exit(f"operator_bench: {tool} is missing (make build)")
    print(f"# operator benchmark: {time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} CPUs, "
          f"tfjob {subprocess.run([TFJOB, 'version'], stdout=subprocess.PIPE, text=True).stdout.strip()}")
    burst, limits, big, idle, memory = [], [], [], [], []
    for w, q in pairs:
        if "burst" in scenarios:
            scenario_burst(w, q, burst, limits)
        if "big" in scenarios:
            scenario_big(w, q, big)
    if "idle" in scenarios:
        scenario_idle(idle)
    if "memory" in scenarios:
        scenario_memory(memory)
    if burst:
        table("1. Burst: 200 TFJobs of 1 PS + 4 Workers submitted at once (times from the first create)",
              ["workers", "qps/burst", "all 1,000 pods + 1,000 services (s)", "all pods Running (s)",
               "all jobs Succeeded (s)", "pods/s", "operator CPU (s)", "operator peak RSS (MiB)",
               "apiserver+etcd CPU (s)", "operator API requests"],
              [[str(r["workers"]), f"{r['qps']}/{int(r['qps'] * 1.5)}", fmt(r["exist_s"]), fmt(r["running_s"]),
                fmt(r["succeeded_s"]), fmt(r["pods_per_s"]), fmt(r["cpu_s"], ".2f"), fmt(r["peak_rss_mib"]),
                fmt(r["control_plane_cpu_s"]), fmt(r["requests"], ".0f")] for r in burst])
    if big:
        table("2. Big job: one TFJob with 500 Workers",
              ["workers", "qps/burst", "all 500 pods (s)", "all pods + services (s)", "pods/s", "operator CPU (s)",
               "operator peak RSS (MiB)"],
              [[str(r["workers"]), f"{r['qps']}/{int(r['qps'] * 1.5)}", fmt(r["pods_s"]), fmt(r["exist_s"]),
                fmt(r["pods_per_s"]), fmt(r["cpu_s"], ".2f"), fmt(r["peak_rss_mib"])] for r in big])
    if limits:
        table("3. The limit: the same 1,000 pods + 1,000 services by a 32-thread client with no rate limit, "
              "same cluster (objects/s)",
              ["workers", "qps/burst", "limit objects/s", "limit time (s)", "operator objects/s", "ratio"],
              [[str(r["workers"]), f"{r['qps']}/{int(r['qps'] * 1.5)}", fmt(r["limit_objects_per_s"]),
                fmt(r["limit_seconds"]), fmt(r["operator_objects_per_s"]), fmt(r["ratio"], ".2f")] for r in limits])
    if idle:
        table("4. Idle cost: 1,000 finished TFJobs (operator with --workers 4 --kube-api-qps 200, all namespaces)",
              ["finished jobs", "window (s)", "operator CPU (s)", "CPU %", "API requests/min", "RSS (MiB)"],
              [[str(r["jobs"]), fmt(r["window_s"]), fmt(r["cpu_s"], ".2f"), fmt(r["cpu_percent"], ".2f"),
                fmt(r["requests_per_min"]), fmt(r["rss_mib"])] for r in idle])
    if memory:
        table("5. Memory: 1,000 TFJobs x 5 Workers (5,000 pods + 5,000 services), then 5,000 unrelated pods (R15)",
              ["RSS at start (MiB)", "RSS with 5,000 managed pods (MiB)", "+ 5,000 unrelated pods (MiB)",
               "bytes per managed pod (+ its service)", "growth from unrelated pods (MiB)", "peak RSS (MiB)"],
              [[fmt(r["rss_start_mib"]), fmt(r["rss_5000_managed_mib"]), fmt(r["rss_plus_5000_unrelated_mib"]),
                fmt(r["bytes_per_managed_pod"], ".0f"), fmt(r["unrelated_growth_mib"]), fmt(r["peak_rss_mib"])]
               for r in memory])


if __name__ == "__main__":
    main()
