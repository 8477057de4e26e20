#!/usr/bin/env python3
"""The operator at scale (issue 7, issue 15): the real `build/release/tfjob operator` against the real
test control plane (scripts/test-cluster: etcd, kube-apiserver with raised in-flight limits and no
priority-and-fairness queueing, controller-manager, scheduler, KWOK nodes of 110 pods). Prints
figures, asserts nothing. Every run of the operator is in a fresh cluster; before it, the same
pods and services (`tfjob render`, owner references removed) are created in another namespace of
the same cluster by bench/limit_client (no operator logic, no client rate limit, 32 threads): the
"limit", and the operator's objects/s over it is the "ratio". A second limit does the same in a
third namespace while the TFJobs are submitted there as the operator's run submits them (their
creates are in the operator's time, and are not the operator's work): "ratio to it". All are
timed the same way: from
the first create (a TFJob's for the operator, a child's for the limit) to the last object seen by
the same watches, opened before (the limit client's own clock, to its last response, is in the
log and the defaults table). The operator starts only once the limits' pods have settled (none
Pending, the exiting ones Succeeded, no change for 3 s), so that none of the limit's aftermath
falls in the operator's run; the defaults tables print the changes that still did (0), how busy
the machine was in each run (/proc/stat), and the operator's CPU and requests up to its last
object. A cluster's start-up took 15-100 s
on the loaded 2-core machine; the times below include it and the limit's run. Parts (--scenarios), in the order they run and print; "took" is what
the tiny variants took on 2026-12-01 (load average 8), the rest are estimates from the runs in
bench/README.md:

  Every part but idle and memory times, beside all objects existing, all pods Running (past
  Pending) and all TFJobs Succeeded, for the operator and for the limits alike (the limit: all
  its exiting workers Succeeded); a big job's Workers run 10 s, then exit 0, and the job has
  successPolicy AllWorkers (since 2026-12-04; before, they ran forever). The operator's runs
  (defaults, scaling, peer) also time "all Running and reachable": all pods Running and every
  service's EndpointSlice listing its pod as ready, so that every host of TF_CONFIG resolves to
  its pod, which a TensorFlow replica needs of the others before it trains ("-" when a pod ended
  before every service had a ready address: a big job whose first workers end before its last
  pods run is never all reachable at once).

  defaults  the operator as users get it (no --workers/--kube-api-qps/--kube-api-burst/
            --write-concurrency): a burst of --burst-jobs (200) TFJobs of 1 PS + 4 Workers (to all
            pods Running and all jobs Succeeded) and one TFJob of --big-workers (500) Workers, each
            --rounds (5) times in a fresh cluster, the round with the median ratio shown and every
            round's ratios beside it; with its ratios to two limits (the children alone; the
            children while the TFJobs are submitted as in the operator's run, run before and after
            the operator's run and compared by the mean of the two times), operator CPU, peak
            RSS, events written/dropped (/metrics, summed over labels, "-" when the operator has
            no such metric) and the Events in the namespace at the end (about TFJobs); then where
            the time went (machine busy, the operator's CPU and requests up to its last object,
            CPU by process in each run, reconciles) and the fairness tables. About 17 min with 5
            rounds (3 rounds without the limit after took 7.0 min on 2026-12-02)
  fairness  the fairness tables alone (the same two runs as defaults, run once when both are
            asked): for the burst, when all pods of the first-submitted, the median and the last
            job existed; for the big job, when all its pods existed beside when all 5 pods of a
            1 PS + 4 Worker job submitted right after it did (from that job's own create)
  scaling   at the defaults: one TFJob of --big-sizes (100,500,2000) Workers and bursts of
            --burst-sizes (50,200,1000) small jobs: time to all pods and services, objects/s,
            ratio, operator CPU (also per object) and peak RSS, rendered bytes (quadratic in
            workers through TF_CONFIG: 140 MB for 2,000), KWOK nodes (enough for the limit's pods
            and the operator's at 110 a node). The 500 and 200 rows are those of defaults when
            both run. About 20 min more (took 0.5 min for 100 workers, 5 min for 2,000 workers,
            2-3.5 min for 50 jobs, 11 min for 1,000 jobs on 103 nodes)
  peer      tfjob against Kubeflow's training-operator (scripts/build-peer: PEER_VERSION of
            scripts/versions.env from the Go module proxy, cached in ~/.cache/tfjob; run out of
            cluster in the work namespace with the admin's kubeconfig, TFJobs only), at its
            defaults (1 thread, 20/30 QPS) and tuned (16 threads, 200/300 QPS): for each of
            --peer-work (big:500, big:2000, burst:200), --peer-rounds (3) rounds, each running
            tfjob then every peer configuration, each in a fresh cluster after its limits (so
            they take turns run by run and the machine's drift falls on all alike): times to all
            objects, all pods Running and all TFJobs Succeeded, their medians, tfjob's ratio to
            each round by round, where a pod waited (created, bound, Running), the control
            plane's own metrics and the CPU by process from the first create to all Running
            (taken when the last pod runs, which for the peer comes before its last service).
            Long: the peer at its defaults takes 50 s for the
            500-worker job's creates and about 230 s for the burst of 200
  burst     the tuning grid, --workers x --qps (burst 1.5x QPS; default 1,16 x 20,200): the burst
            of --burst-jobs to all pods Running and all jobs Succeeded, with its limit ratio and
            events. 2-4 min a row (took 1.3 min with 20 jobs)
  big       the tuning grid: one TFJob of --big-workers Workers (and the small job after it), with
            its limit ratio. 1-2 min a row (took 1 min with 50 workers)
  idle      1,000 finished TFJobs: operator CPU and API requests over 60 s, at the defaults, once
            the operator has sent no request for 15 s (it writes the jobs' events at --event-qps
            for minutes after they end) (took 4.7 min before that wait)
  memory    RSS with 5,000 managed pods, then with 5,000 unrelated pods added (R15), at the
            defaults (took 3.4 min)

All of it (make bench): about 35 min (1,978 s on 2026-12-02, before the idle part's wait).
The operators' logs are kept in build/bench-logs/.

Usage:

  bench/operator_bench.py [--scenarios defaults,scaling,burst,big,idle,memory] [--workers 1,16]
      [--qps 20,200] [--burst-jobs 200] [--big-workers 500] [--big-sizes 100,500,2000]
      [--burst-sizes 50,200,1000]
"""
import argparse
import base64
import faulthandler
import json
import math
import os
import resource
import shlex
import shutil
import signal
import ssl
import statistics
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
# Watches and lists of pods that need no status: the API server sends metadata only (a pod of a
# 2,000-worker job carries about 80 KB of TF_CONFIG, which the bench would otherwise decode for
# every event).
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
METADATA_ONLY_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


def list_accept(accept):
    return METADATA_ONLY_LIST if accept == METADATA_ONLY else accept
JOB_LABEL = "training.kubeflow.org/job-name"


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# The cluster, the API (watches), the operator process


# --kwok-pod-workers: KWOK's pod status writers in flight at once. "nodes" (the default since
# 2026-12-05): one per simulated node, as a cluster has a kubelet per node writing its own pods'
# status; "kwok": KWOK's own default, 4 for all nodes; or N.
KWOK_POD_WORKERS = "nodes"


class Cluster:
    def __init__(self, nodes):
        self.operators = []  # stopped by down(), whatever happened
        self.dir = tempfile.mkdtemp(prefix="tfjob-bench.")
        shutil.rmtree(self.dir)
        workers = []
        if KWOK_POD_WORKERS != "kwok":
            workers = ["--kwok-pod-workers", str(nodes if KWOK_POD_WORKERS == "nodes" else int(KWOK_POD_WORKERS))]
        subprocess.run([os.path.join(ROOT, "scripts", "test-cluster"), "up", self.dir, "--nodes", str(nodes)] + workers,
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
        for attempt in range(10):  # the CRD may not be served yet right after the create
            try:
                self.kubectl("wait", "--for=condition=Established", "crd/tfjobs.kubeflow.org", "--timeout=60s")
                break
            except RuntimeError:
                if attempt == 9:
                    raise
                time.sleep(1)

    def bin_dir(self):
        with open(os.path.join(self.dir, "state.json")) as f:
            return json.load(f)["bin"]

    def kubectl(self, *args, stdin=None):
        r = subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig] + list(args), input=stdin,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)
        if r.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def namespace(self, name):
        self.kubectl("create", "namespace", name)
        return name

    def pid(self, component):
        with open(os.path.join(self.dir, "pids", component + ".pid")) as f:
            return int(f.read().strip())

    def request(self, path, method="GET", body=None, accept="application/json"):
        """One API call; 429 (the API server's in-flight limit) is retried after Retry-After."""
        for attempt in range(30):
            req = urllib.request.Request(self.server + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None,
                                         headers={"Content-Type": "application/json", "Accept": accept})
            try:
                with urllib.request.urlopen(req, context=self.ctx, timeout=60) as r:
                    return json.loads(r.read())
            except urllib.error.HTTPError as e:
                if e.code != 429 or attempt == 29:
                    raise
                time.sleep(float(e.headers.get("Retry-After") or 1))

    def profile(self, seconds, path):
        """Starts a thread that writes kube-apiserver's CPU profile (Go pprof, --profiling is on by
        default) of the next `seconds` to `path`; returns it to join."""
        def fetch():
            try:
                req = urllib.request.Request(f"{self.server}/debug/pprof/profile?seconds={seconds}")
                with urllib.request.urlopen(req, context=self.ctx, timeout=seconds + 60) as r, open(path, "wb") as f:
                    f.write(r.read())
            except OSError as e:
                log(f"apiserver profile {path}: {e}")
        t = threading.Thread(target=fetch, daemon=True)
        t.start()
        return t

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.down()

    def down(self):
        """Stops everything; the operators' logs are kept in build/bench-logs/ (the cluster's are not)."""
        logs = os.path.join(ROOT, "build", "bench-logs")
        os.makedirs(logs, exist_ok=True)
        for op in self.operators:
            op.stop()
            shutil.copy(op.log_path, os.path.join(logs, f"{time.strftime('%Y%m%d-%H%M%S')}-{os.path.basename(self.dir)}-"
                                                        f"{os.path.basename(op.log_path)}"))
        subprocess.run([os.path.join(ROOT, "scripts", "test-cluster"), "down", self.dir], stdout=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


class Watch(threading.Thread):
    """A raw watch of one collection; `on_event(type, object, t)` runs for every event, t the time
    of arrival. On this 2-core machine the API server drops watchers that fall behind during a
    burst; the watch then resumes from the last resourceVersion it saw (or relists on 410, the
    objects counted at the time of the relist, so never early)."""

    def __init__(self, cluster, path, on_event, accept="application/json"):
        super().__init__(daemon=True)
        self.cluster, self.path, self.on_event, self.accept = cluster, path, on_event, accept
        self.rv = cluster.request(path, accept=list_accept(accept))["metadata"]["resourceVersion"]
        self.stopped = False
        self.reconnects = 0
        self.start()

    def relist(self):
        listed = self.cluster.request(self.path, accept=list_accept(self.accept))
        now = time.time()
        for obj in listed["items"] or []:
            self.on_event("ADDED", obj, now)
        self.rv = listed["metadata"]["resourceVersion"]

    def run(self):
        while not self.stopped:
            sep = "&" if "?" in self.path else "?"
            url = (f"{self.cluster.server}{self.path}{sep}watch=1&resourceVersion={self.rv}"
                   "&allowWatchBookmarks=true&timeoutSeconds=3600")
            try:
                req = urllib.request.Request(url, headers={"Accept": self.accept})
                with urllib.request.urlopen(req, context=self.cluster.ctx, timeout=3600) as r:
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
    """First time each pod / service was seen (also per job, by the job-name label), first time
    each pod was past Pending (Running, or already ended) and Succeeded, first time each job was
    seen (its submission order) and had a Succeeded condition; wait() blocks until a count is
    reached. Pods are watched as metadata only, three times: all of them, those whose
    `status.phase!=Pending` and those whose `status.phase=Succeeded` (field selectors the API
    server applies to the whole pod before it sends the metadata): a pod enters the second and
    third watch with the very event that changed its phase, and the bench never decodes a pod's
    80 KB of TF_CONFIG. With `phases` also the first time each service's EndpointSlice listed an
    address as ready ("reachable": its DNS name then resolves to its pod, which a TensorFlow
    replica needs of every other before it trains; the slice's labels are its service's). Times
    are the arrival of those watch events (the API's own timestamps are whole seconds)."""

    def __init__(self, cluster, ns, phases=True):
        self.lock = threading.Condition()
        self.created, self.running, self.succeeded, self.services, self.jobs = {}, {}, {}, {}, {}
        self.pods_succeeded, self.bound, self.reachable = {}, {}, {}
        self.job_pods, self.job_services, self.job_running = {}, {}, {}  # job name -> {object name: first seen}
        self.job_reachable = {}  # job name -> {service name: first seen with a ready address}
        pods = f"/api/v1/namespaces/{ns}/pods"
        self.watches = [Watch(cluster, pods, self.pod, METADATA_ONLY),
                        Watch(cluster, f"/api/v1/namespaces/{ns}/services", self.service),
                        Watch(cluster, f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs", self.job)]
        if phases:
            self.watches += [Watch(cluster, pods + "?fieldSelector=status.phase%21%3DPending", self.pod_running,
                                   METADATA_ONLY),
                             Watch(cluster, pods + "?fieldSelector=spec.nodeName%21%3D", self.pod_bound, METADATA_ONLY),
                             Watch(cluster, pods + "?fieldSelector=status.phase%3DSucceeded", self.pod_succeeded,
                                   METADATA_ONLY),
                             Watch(cluster, f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
                                   self.endpoint_slice)]

    def pod(self, kind, obj, t):
        with self.lock:
            name = obj["metadata"]["name"]
            self.created.setdefault(name, t)
            self.job_pods.setdefault(obj["metadata"].get("labels", {}).get(JOB_LABEL), {}).setdefault(name, t)
            self.lock.notify_all()

    def pod_running(self, kind, obj, t):
        if kind == "DELETED":  # it left the selector (or was deleted): not a change to Running
            return
        with self.lock:
            name = obj["metadata"]["name"]
            self.running.setdefault(name, t)
            self.job_running.setdefault(obj["metadata"].get("labels", {}).get(JOB_LABEL), {}).setdefault(name, t)
            self.lock.notify_all()

    def pod_bound(self, kind, obj, t):
        if kind == "DELETED":
            return
        with self.lock:
            self.bound.setdefault(obj["metadata"]["name"], t)
            self.lock.notify_all()

    def endpoint_slice(self, kind, obj, t):
        if kind == "DELETED":
            return
        labels = obj["metadata"].get("labels", {})
        service = labels.get("kubernetes.io/service-name")
        ready = [e for e in obj.get("endpoints") or []
                 if e.get("addresses") and (e.get("conditions") or {}).get("ready", True) is not False]
        if not service or not ready:
            return
        with self.lock:
            self.reachable.setdefault(service, t)
            self.job_reachable.setdefault(labels.get(JOB_LABEL), {}).setdefault(service, t)
            self.lock.notify_all()

    def pipeline(self, t0, fractions=(0.1, 0.5, 0.9, 1.0)):
        """Seconds after t0 at which each fraction of the pods existed, was bound to a node (the
        scheduler) and Running (KWOK): where a pod waits between its create and Running."""
        with self.lock:
            stages = {k: sorted(getattr(self, k).values()) for k in ("created", "bound", "running")}
        return {k: [round(v[max(0, math.ceil(f * len(v)) - 1)] - t0, 2) for f in fractions] if v else []
                for k, v in stages.items()}

    def pod_succeeded(self, kind, obj, t):
        if kind == "DELETED":
            return
        with self.lock:
            self.pods_succeeded.setdefault(obj["metadata"]["name"], t)
            self.lock.notify_all()

    def service(self, kind, obj, t):
        with self.lock:
            name = obj["metadata"]["name"]
            self.services.setdefault(name, t)
            self.job_services.setdefault(obj["metadata"].get("labels", {}).get(JOB_LABEL), {}).setdefault(name, t)
            self.lock.notify_all()

    def job(self, kind, obj, t):
        with self.lock:
            self.jobs.setdefault(obj["metadata"]["name"], t)
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

    def wait_job(self, what, job, n, timeout):
        """Time at which the n-th entry of `what` (job_pods, job_running) of `job` arrived, or None."""
        deadline = time.time() + timeout
        with self.lock:
            while len(getattr(self, what).get(job, {})) < n:
                left = deadline - time.time()
                if left <= 0:
                    return None
                self.lock.wait(min(left, 1))
            return sorted(getattr(self, what)[job].values())[n - 1]

    def wait_reachable(self, n, timeout, job=None):
        """Time at which the n-th service (of `job`, else of all) was first seen with a ready
        address; None after timeout, or at once when a pod ended (Succeeded) whose service had
        none by then: a service is named as its pod, and an ended pod's address never becomes
        ready, as when a 2,000-worker job's first workers end (they run 10 s) before its last pods
        run. Without this the wait ran to its timeout (600 s) in every such run."""
        deadline = time.time() + timeout
        with self.lock:
            while True:
                got = self.reachable if job is None else self.job_reachable.get(job, {})
                if len(got) >= n:
                    return sorted(got.values())[n - 1]
                ours = self.job_pods.get(job, {}) if job is not None else self.created
                if any(name in ours and name not in self.reachable for name in self.pods_succeeded):
                    return None
                left = deadline - time.time()
                if left <= 0:
                    return None
                self.lock.wait(min(left, 1))

    def wait_key(self, what, key, timeout):
        """Time at which `key` entered `what` (e.g. a job's name in succeeded), or None."""
        deadline = time.time() + timeout
        with self.lock:
            while key not in getattr(self, what):
                left = deadline - time.time()
                if left <= 0:
                    return None
                self.lock.wait(min(left, 1))
            return getattr(self, what)[key]

    def job_done(self, job, pods, services=0):
        """When the job had `pods` pods and `services` services (the last one's arrival), or None."""
        with self.lock:
            p, s = self.job_pods.get(job, {}), self.job_services.get(job, {})
            if len(p) < pods or len(s) < services:
                return None
            return max(sorted(p.values())[pods - 1], sorted(s.values())[services - 1] if services else 0)

    def progress(self, t0, fractions=(0.1, 0.25, 0.5, 0.75, 0.9, 1.0)):
        """Seconds after t0 at which each fraction of the pods and services seen so far existed:
        where a run was slower than another (the start, a steady rate, the tail)."""
        with self.lock:
            times = sorted(list(self.created.values()) + list(self.services.values()))
        return [round(times[max(0, math.ceil(f * len(times)) - 1)] - t0, 2) for f in fractions] if times else []

    def submission_order(self):
        with self.lock:
            return sorted(self.jobs, key=self.jobs.get)

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


def binary_rss_kib(pid):
    """The resident pages of the operator's own executable (its code and read-only data), of the
    RssFile in /proc/PID/status; the rest of that is the shared libraries'."""
    exe, total, inside = os.path.realpath(f"/proc/{pid}/exe"), 0, False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                inside = len(head) >= 6 and head[5] == exe
            elif inside and line.startswith("Rss:"):
                total += int(head[1])
    return total


def tuning(workers=None, qps=None, burst=None, write_concurrency=None):
    """The operator's tuning flags; None = not passed (the operator's default)."""
    flags = []
    for name, v in (("--workers", workers), ("--kube-api-qps", qps), ("--kube-api-burst", burst),
                    ("--write-concurrency", write_concurrency)):
        if v is not None:
            flags += [name, str(v)]
    return tuple(flags)


DEFAULTS = tuning()
ENV_FLAG = "@env="  # an element "@env=NAME=VALUE" of a tfjob configuration: in its process's environment
OPERATOR_ENV = ""  # experiments: --operator-env
LIMIT_AFTER = True  # the limit with the TFJobs once more after the operator's run (--no-limit-after: not)
PROFILE_DIR = ""  # experiments: --apiserver-profile DIR
PROFILE_SECONDS = 5


def start_profile(cluster, name):
    """kube-apiserver's CPU profile of the run starting now, to PROFILE_DIR/<time>-<name>.pprof
    (--apiserver-profile); None without it."""
    if not PROFILE_DIR:
        return None
    os.makedirs(PROFILE_DIR, exist_ok=True)
    path = os.path.join(PROFILE_DIR, f"{time.strftime('%H%M%S')}-{name}.pprof")
    log(f"apiserver profile of {PROFILE_SECONDS} s: {path}")
    return cluster.profile(PROFILE_SECONDS, path)


def flags_text(flags):
    if flags and flags[0] == PEER:
        return f"training-operator {peer_version()} " + (" ".join(flags[1:]) or "(its defaults)")
    if flags and any(f.startswith(ENV_FLAG) for f in flags):
        plain = [f for f in flags if not f.startswith(ENV_FLAG)]
        env = " ".join(f[len(ENV_FLAG):] for f in flags if f.startswith(ENV_FLAG))
        return f"tfjob {' '.join(plain) or '(defaults)'} with {env}"
    return " ".join(flags) if flags else "(defaults)"


class Operator:
    def __init__(self, cluster, ns, flags=DEFAULTS):
        self.log_path = os.path.join(cluster.dir, f"operator-{ns}.log")
        self.logf = open(self.log_path, "w")
        self.flags = flags
        args = [TFJOB, "operator", "--kubeconfig", os.path.join(cluster.dir, "operator.kubeconfig"),
                "--leader-elect=false", "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "0"]
        args += [f for f in flags if not f.startswith(ENV_FLAG)]
        if ns:
            args += ["--namespace", ns]
        env = dict(os.environ, **dict(kv.split("=", 1) for kv in shlex.split(OPERATOR_ENV)))
        env.update(dict(f[len(ENV_FLAG):].split("=", 1) for f in flags if f.startswith(ENV_FLAG)))
        self.proc = subprocess.Popen(args, stdout=self.logf, stderr=subprocess.STDOUT, env=env)
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

    def rss_split(self):
        """What the resident memory is, now: the heap, stacks and other private memory (RssAnon)
        against pages of mapped files (RssFile: the binary's code and the shared libraries, which
        grow with the code a run touches, not with what it holds), and the thread count."""
        return {"rss_anon_mib": status_kib(self.proc.pid, "RssAnon") / 1024,
                "rss_file_mib": status_kib(self.proc.pid, "RssFile") / 1024,
                "rss_binary_mib": binary_rss_kib(self.proc.pid) / 1024,
                "threads": status_kib(self.proc.pid, "Threads")}

    def samples(self):
        """One read of /metrics: [(name, labels text, value)]."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            out = []
            for line in r.read().decode().splitlines():
                if line and not line.startswith("#"):
                    series, value = line.rsplit(" ", 1)
                    name, _, labels = series.partition("{")
                    out.append((name, labels, float(value)))
            return out

    def metrics(self, samples=None):
        """Every metric of /metrics (or of `samples`) summed over its labels: {name: value}; absent
        names are absent."""
        sums = {}
        for name, _, value in self.samples() if samples is None else samples:
            sums[name] = sums.get(name, 0.0) + value
        return sums

    @staticmethod
    def by_label(samples, metric, label):
        """`metric` of `samples` summed by one label's value: {value: count}."""
        out = {}
        for name, labels, value in samples:
            if name == metric and f'{label}="' in labels:
                key = labels.split(f'{label}="', 1)[1].split('"', 1)[0]
                out[key] = out.get(key, 0) + int(value)
        return out

    def requests(self):
        """rest_client_requests_total summed over verbs and codes."""
        return self.metrics().get("rest_client_requests_total", 0.0)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.logf.close()


PEER = "@peer"  # first element of an operator configuration that is the peer's (flags after it are its own)
PEER_DIR = ""  # scripts/build-peer's folder, built when a part needs it
PEER_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"  # where the peer reads its webhook server's certificate


def peer_dir():
    """scripts/build-peer (training-operator from the Go module proxy, cached): its folder."""
    global PEER_DIR
    if not PEER_DIR:
        r = subprocess.run([os.path.join(ROOT, "scripts", "build-peer")], stdout=subprocess.PIPE, check=True, text=True)
        PEER_DIR = r.stdout.strip().splitlines()[-1]
    return PEER_DIR


def peer_version():
    with open(os.path.join(peer_dir(), "VERSION")) as f:
        return f.read().split()[0].rsplit("@", 1)[1]


def free_port():
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PeerOperator(Operator):
    """Kubeflow's training-operator (scripts/build-peer), out of cluster, TFJobs only, in one
    namespace, with the admin's kubeconfig (ours runs with its own service account and role). Its
    webhook certificate: it writes a CA and a serving certificate into the Secret named by
    --webhook-secret-name in MY_POD_NAMESPACE (here the work namespace) and waits for them in
    PEER_CERT_DIR, where a pod would have the Secret mounted: the bench copies them there. No
    webhook configuration points at it (its webhooks are never called); it logs that and goes on."""

    def __init__(self, cluster, ns, flags):
        self.log_path = os.path.join(cluster.dir, f"peer-{ns}.log")
        self.logf = open(self.log_path, "w")
        self.flags = flags
        secret = "training-operator-webhook-cert"
        cluster.request(f"/api/v1/namespaces/{ns}/secrets", "POST",
                        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret}})
        shutil.rmtree(PEER_CERT_DIR, ignore_errors=True)
        os.makedirs(PEER_CERT_DIR)
        self.port = free_port()
        args = [os.path.join(peer_dir(), "bin", "training-operator"), "--enable-scheme=tfjob", "--namespace", ns,
                "--metrics-bind-address", f"127.0.0.1:{self.port}", "--health-probe-bind-address", "0",
                "--webhook-server-port", str(free_port()), "--webhook-secret-name", secret,
                "--zap-log-level", "info"] + list(flags[1:])
        env = dict(os.environ, KUBECONFIG=cluster.kubeconfig, MY_POD_NAMESPACE=ns)
        self.proc = subprocess.Popen(args, stdout=self.logf, stderr=subprocess.STDOUT, env=env)
        cluster.operators.append(self)
        deadline, mounted = time.time() + 120, False
        while time.time() < deadline:
            if not mounted:
                data = cluster.request(f"/api/v1/namespaces/{ns}/secrets/{secret}").get("data") or {}
                if data.get("tls.crt") and data.get("tls.key"):
                    for name in ("tls.crt", "tls.key"):
                        with open(os.path.join(PEER_CERT_DIR, name), "wb") as f:
                            f.write(base64.b64decode(data[name]))
                    mounted = True
            text = open(self.log_path).read()
            # controller-runtime starts a controller's workers once its caches have synced.
            if any("Starting workers" in line and "tfjob-controller" in line for line in text.splitlines()):
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"the peer exited: {text[-3000:]}")
            time.sleep(0.1)
        raise RuntimeError("the peer's TFJob controller did not start in 120 s")


def start_operator(cluster, ns, flags):
    """Our operator with `flags`, or the peer when flags start with PEER."""
    if flags and flags[0] == PEER:
        return PeerOperator(cluster, ns, flags)
    return Operator(cluster, ns, flags)


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


# What the control plane's own metrics say about a run (where the time between "objects exist"
# and "all Running" goes): (component, metric, label to split by or None). Counters and
# histograms' _sum/_count are differences over the run; gauges are read at its end.
COMPONENT_METRICS = [
    ("kube-scheduler", "scheduler_schedule_attempts_total", "result"),
    ("kube-scheduler", "scheduler_pod_scheduling_attempts_sum", None),
    ("kube-scheduler", "scheduler_pod_scheduling_attempts_count", None),
    ("kube-scheduler", "scheduler_pod_scheduling_sli_duration_seconds_sum", None),
    ("kube-scheduler", "scheduler_pod_scheduling_sli_duration_seconds_count", None),
    ("kube-scheduler", "scheduler_scheduling_attempt_duration_seconds_sum", None),
    ("kube-scheduler", "scheduler_queue_incoming_pods_total", "event"),
    ("kube-scheduler", "scheduler_pending_pods", "queue"),
    ("kube-scheduler", "rest_client_requests_total", "method"),
    ("kube-scheduler", "rest_client_rate_limiter_duration_seconds_sum", None),
    ("kube-controller-manager", "endpoint_slice_controller_changes", "operation"),
    ("kube-controller-manager", "endpoint_slice_controller_syncs", "result"),
    ("kube-controller-manager", "rest_client_requests_total", "method"),
    ("kube-controller-manager", "rest_client_rate_limiter_duration_seconds_sum", None),
    ("kube-apiserver", "apiserver_request_total", "resource"),
]
GAUGES = {"scheduler_pending_pods"}


def scrape(cluster, component):
    """One read of a control-plane process's /metrics: [(name, labels text, value)]."""
    with open(os.path.join(cluster.dir, "state.json")) as f:
        ports = json.load(f)["ports"]
    if component == "kube-apiserver":
        url, ctx = f"{cluster.server}/metrics", cluster.ctx
    else:
        url, ctx = f"https://127.0.0.1:{ports['scheduler' if component == 'kube-scheduler' else 'kcm']}/metrics", \
            ssl._create_unverified_context()  # noqa: S323 - their self-signed serving certificates
    with urllib.request.urlopen(url, context=ctx, timeout=30) as r:
        out = []
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                series, value = line.rsplit(" ", 1)
                name, _, labels = series.partition("{")
                out.append((name, labels, float(value)))
        return out


def component_metrics(cluster, since=None):
    """COMPONENT_METRICS now ({"component metric[label]": value}), or their change since `since`."""
    out = {}
    for component in sorted({c for c, _, _ in COMPONENT_METRICS}):
        try:
            samples = scrape(cluster, component)
        except OSError as e:
            log(f"metrics of {component}: {e}")
            continue
        for c, metric, label in COMPONENT_METRICS:
            if c != component:
                continue
            for name, labels, value in samples:
                if name != metric:
                    continue
                if component == "kube-apiserver" and not any(f'verb="{v}"' in labels for v in
                                                             ("POST", "PATCH", "PUT", "DELETE")):
                    continue  # the writes alone
                key = f"{component} {metric}"
                if label and f'{label}="' in labels:
                    key += "[" + labels.split(f'{label}="', 1)[1].split('"', 1)[0]
                    if component == "kube-apiserver":
                        key += " " + labels.split('verb="', 1)[1].split('"', 1)[0]
                    key += "]"
                out[key] = out.get(key, 0.0) + value
    if since is not None:
        out = {k: v - (0 if any(g in k for g in GAUGES) else since.get(k, 0.0)) for k, v in out.items()}
        out = {k: round(v, 3) for k, v in out.items() if v}
    return out


def control_plane_cpu(cluster):
    return sum(cpu_seconds(cluster.pid(c)) for c in ("kube-apiserver", "etcd"))


class CpuSplit:
    """CPU seconds by process since the object was made: every process of the test cluster (its
    pid files), the operator if given, and the bench itself with the limit clients it ran."""

    def __init__(self, cluster, operator_pid=None):
        self.cluster, self.operator_pid = cluster, operator_pid
        self.start = self.read()

    def read(self):
        out = {}
        pids = os.path.join(self.cluster.dir, "pids")
        for f in sorted(os.listdir(pids)):
            try:
                out[f[:-len(".pid")]] = cpu_seconds(self.cluster.pid(f[:-len(".pid")]))
            except (OSError, ValueError):
                pass
        if self.operator_pid:
            out["operator"] = cpu_seconds(self.operator_pid)
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        out["bench"] = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
        return out

    def since(self):
        now = self.read()
        return {k: round(v - self.start.get(k, 0.0), 2) for k, v in now.items()}


# ---------------------------------------------------------------------------------------------
# Scenarios


class Activity:
    """Counts the changes of a namespace's pods (a metadata watch): when the last came, and how
    many came after a moment."""

    def __init__(self, cluster, ns):
        self.lock = threading.Lock()
        self.times = []
        self.watch = Watch(cluster, f"/api/v1/namespaces/{ns}/pods", self.event, METADATA_ONLY)

    def event(self, kind, obj, t):
        with self.lock:
            self.times.append(t)

    def last(self):
        with self.lock:
            return self.times[-1] if self.times else 0.0

    def since(self, t):
        with self.lock:
            return sum(1 for x in self.times if x >= t)

    def stop(self):
        self.watch.stopped = True


def settle(cluster, ns, activity, timeout, quiet=3.0):
    """Waits until the limit's pods are in the phase they keep (none Pending; those that exit, with
    a tfjob.test/run-for annotation, Succeeded) and no pod of ns changed for `quiet` s. Else the
    limit's aftermath (KWOK ending its workers 5 s after they ran, the scheduler's and the
    endpoint controllers' updates for them) would land in the operator's run and be counted
    against it."""
    deadline = time.time() + timeout
    base = f"/api/v1/namespaces/{ns}/pods?fieldSelector=status.phase%3D"
    while time.time() < deadline:
        # An empty PartialObjectMetadataList has "items": null.
        pending = cluster.request(base + "Pending&limit=1", accept=METADATA_ONLY_LIST)["items"] or []
        running = cluster.request(base + "Running", accept=METADATA_ONLY_LIST)["items"] or []
        exiting = sum(1 for p in running if "tfjob.test/run-for" in (p["metadata"].get("annotations") or {}))
        if not pending and not exiting and time.time() - activity.last() >= quiet:
            return
        time.sleep(1)
    log(f"settle: pods of {ns} still changing after {timeout:.0f} s")


def namespace_events(cluster, ns):
    """(Events in ns, those about a TFJob): what users see with kubectl get events."""
    items = cluster.request(f"/api/v1/namespaces/{ns}/events")["items"]
    return len(items), sum(1 for e in items if e.get("involvedObject", {}).get("kind") == "TFJob")


def small_job(name, ns, run_for="5s"):
    return tfjob(name, ns, {"PS": {"replicas": 1, "template": worker_template()},
                            "Worker": {"replicas": 4, "template": worker_template(run_for)}})


def burst_jobs(ns, n=200, run_for="5s"):
    return [small_job(f"burst-{i}", ns, run_for) for i in range(n)]


BIG_RUN_FOR = "10s"  # a big job's workers exit 0 after this long Running, and the job then Succeeds


def big_job(ns, workers):
    """One TFJob of `workers` Workers, each Running for BIG_RUN_FOR, then Succeeded; the job
    Succeeds when all of them have (successPolicy AllWorkers), so that its "all Succeeded" is
    when the last worker ended, as the limit's is (before 2026-12-04 its workers ran forever)."""
    job = tfjob("big", ns, {"Worker": {"replicas": workers, "template": worker_template(BIG_RUN_FOR)}})
    job["spec"]["successPolicy"] = "AllWorkers"
    return job


def warm_up(cluster, n=20):
    """TFJob creates in a namespace no operator watches: a fresh API server's first creates of a
    custom resource wait for it to make ready its handling of the kind (bench/request_cost.py:
    200 creates took 2.4 s at 19 % CPU in a fresh cluster, 0.3 s after 20 warm-up creates),
    which would fall on the first run that submits TFJobs (the limit with the TFJobs) and not
    on the operator's."""
    ns = cluster.namespace("warm-up")
    limit_create(cluster, ns, [tfjob(f"warm-{i}", ns, {"Worker": {"replicas": 1, "template": worker_template()}})
                               for i in range(n)], concurrency=4)


def measure_limit(cluster, name, jobs, pods, follow, with_jobs=False, exiting=0):
    """The limit in a namespace of its own: bench/limit_client creates the children the operator
    will create (32 threads), timed as the operator is: from its first create to the last object
    seen by the same watches (opened before, pods watched the same way). with_jobs: the TFJobs
    are submitted at the same moment, as the operator's run submits them (a second
    limit_client, 16 threads; no operator watches this namespace), so that the API server's work
    for the user's submissions, which the operator's time includes, is on both sides. Waits
    until its pods settle. follow: also when all its pods were Running (past Pending) and all the
    `exiting` ones (the workers, which end after a while) Succeeded, from the same start: the
    same scheduler and KWOK run them as the operator's."""
    lns = cluster.namespace(name)
    objs = rendered_children(jobs(lns), lns)
    rendered_mb = sum(len(json.dumps(o)) for o in objs) / 1e6
    objects = len(objs)
    ltr = Tracker(cluster, lns, phases=follow)
    activity = Activity(cluster, lns)
    submit = threading.Thread(target=limit_create, args=(cluster, lns, jobs(lns), 16)) if with_jobs else None
    cpu, split = MachineCpu(), CpuSplit(cluster)
    profile = start_profile(cluster, name) if with_jobs else None
    tl0 = time.time()
    if submit:
        submit.start()
    lim = limit_create(cluster, lns, objs)
    if submit:
        submit.join()
    del objs
    tl_pods, tl_svcs = ltr.wait("created", pods, 600), ltr.wait("services", pods, 600)
    lim["busy"], lim["cpu_split"], lim["progress"] = cpu.busy(), split.since(), ltr.progress(tl0)
    if follow:
        tl_run = ltr.wait("running", pods, 600)
        tl_reach = ltr.wait_reachable(pods, 600)  # a service per pod, as the operator's
        tl_done = ltr.wait("pods_succeeded", exiting, 600) if exiting else None
        lim["running_s"], lim["succeeded_s"] = tl_run and tl_run - tl0, tl_done and tl_done - tl0
        lim["reachable_s"] = tl_run and tl_reach and max(tl_run, tl_reach) - tl0
        lim["pipeline"] = ltr.pipeline(tl0)
    ltr.stop()
    if profile:
        profile.join()
    lim["client_per_second"] = lim["per_second"]  # the limit client's own clock: its last response
    if tl_pods and tl_svcs:
        lim["seconds"] = max(tl_pods, tl_svcs) - tl0
        lim["per_second"] = objects / lim["seconds"]
    else:
        log(f"{name}: the limit's objects were not all seen; its own clock is used")
    settle(cluster, lns, activity, max(120, pods / 10))
    lim.update({"activity": activity, "rendered_mb": rendered_mb})
    return lim


class MachineCpu:
    """The share of the machine's CPU time that was not idle since the object was made
    (/proc/stat: everything on the machine, the control plane, KWOK, the operator, the bench)."""

    def __init__(self):
        self.start = self.read()

    @staticmethod
    def read():
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        return sum(fields), fields[3] + fields[4]  # total, idle + iowait

    def busy(self):
        total, idle = self.read()
        dt = total - self.start[0]
        return 1 - (idle - self.start[1]) / dt if dt else 0.0


def run_jobs(kind, n, flags, follow):
    """One operator run in a fresh cluster, after the limit's run on the same objects. kind "burst":
    n TFJobs of 1 PS + 4 Workers at once; kind "big": one TFJob of n Workers, then one of 1 PS + 4
    Workers right after it (fairness). follow: also wait for all pods Running and all jobs
    Succeeded (bursts; pods are then watched whole)."""
    pods = 5 * n if kind == "burst" else n
    exiting = 4 * n if kind == "burst" else n  # workers, which end (their TFJobs then Succeed)
    objects = 2 * pods
    jobs = (lambda ns: burst_jobs(ns, n)) if kind == "burst" else (lambda ns: [big_job(ns, n)])
    # The two limits' pods and the operator's (+ the small job's) at 110 a node, with a margin.
    # A burst's workers exit and its PS pods go when its jobs succeed, so the limit after the operator's
    # run fits where the operator's pods were; a big job's pods stay.
    # The tuning grid prints the ratio to the children alone: no limit after there.
    after = LIMIT_AFTER and (flags == DEFAULTS or flags[:1] == (PEER,) or any(f.startswith(ENV_FLAG) for f in flags))
    sets = 4 if after and kind == "big" else 3
    nodes = max(4, math.ceil((sets * pods + 5) * 1.1 / 110) + 2)
    timeout = max(300, objects / 5)  # s from the first create to the last wait's end
    t = time.time()
    with Cluster(nodes=nodes) as cluster:
        log(f"{kind} {n}: cluster of {nodes} nodes up in {time.time() - t:.0f} s")
        warm_up(cluster)
        lim = measure_limit(cluster, "limit", jobs, pods, follow, exiting=exiting)
        lim_jobs = measure_limit(cluster, "limit-jobs", jobs, pods, follow, with_jobs=True, exiting=exiting)
        log(f"{kind} {n}: limit {lim['per_second']:.1f} objects/s seen ({lim['client_per_second']:.1f} by its own "
            f"clock, machine busy {lim['busy']:.0%}), {lim_jobs['per_second']:.1f} with the TFJobs submitted "
            f"(busy {lim_jobs['busy']:.0%}); their pods settled {time.time() - t:.0f} s in")
        ns = cluster.namespace("work")
        op = start_operator(cluster, ns, flags)
        tr = Tracker(cluster, ns, phases=follow)
        work_activity = Activity(cluster, ns) if after else None
        cpu0, cp0 = op.cpu(), control_plane_cpu(cluster)
        machine, split = MachineCpu(), CpuSplit(cluster, op.proc.pid)
        components0 = component_metrics(cluster)
        profile = start_profile(cluster, f"operator-{kind}-{n}")
        t0 = time.time()
        t_small0 = None
        if kind == "burst":
            limit_create(cluster, ns, jobs(ns), concurrency=16)
        else:
            cluster.request(f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs", "POST", big_job(ns, n))
            t_small0 = time.time()
            cluster.request(f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs", "POST", small_job("small", ns))
        extra = 0 if kind == "burst" else 5
        deadline = t0 + timeout  # one for all the waits: a stuck run costs `timeout`, not a multiple

        def left():
            return max(1, deadline - time.time())

        # The CPU by process and the control plane's metrics at the moment all pods are Running,
        # which may come before the last object (the peer creates its services after its pods).
        at_running = {}

        def on_running():
            t = tr.wait("running", pods, left()) if kind == "burst" else tr.wait_job("job_running", "big", n, left())
            at_running["t"] = t
            if t:
                at_running["cpu"] = split.since()
                at_running["metrics"] = component_metrics(cluster, since=components0)

        running_watcher = threading.Thread(target=on_running, daemon=True)
        if follow:
            running_watcher.start()

        t_pods = tr.wait("created", pods + extra, left())
        t_svcs = tr.wait("services", pods + extra, left())
        busy, cpu_window, cpu_split = machine.busy(), op.cpu() - cpu0, split.since()
        progress = tr.progress(t0)
        if profile:
            profile.join()
        # None of the limit's pods may change during the operator's run (they settled before it).
        limit_changes = lim["activity"].since(t0) + lim_jobs["activity"].since(t0)
        samples = op.samples()  # the operator's requests and events up to its last object
        in_window = op.by_label(samples, "rest_client_requests_total", "verb")
        if not in_window:  # client-go's metric (the peer's) names the HTTP method
            methods = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "GET": "get"}
            in_window = {methods.get(k, k): v for k, v in
                         op.by_label(samples, "rest_client_requests_total", "method").items()}
        sums = op.metrics(samples)
        events_in_window = sums.get("tfjob_events_written_total")
        reconciles_in_window = (sums.get("controller_runtime_reconcile_total"),
                                sums.get("controller_runtime_reconcile_time_seconds_sum"))
        lim["activity"].stop()
        lim_jobs["activity"].stop()
        if kind == "burst":
            t_exist = max(t_pods, t_svcs) if t_pods and t_svcs else None
        else:
            t_exist = tr.job_done("big", n, n)
            t_pods = tr.job_done("big", n)
        t_run = t_reach = t_done = t_pods_done = running_cpu_split = None
        if follow:  # all pods Running (the control plane's metrics then), all the jobs Succeeded
            running_watcher.join(left())
            t_run, running_cpu_split = at_running.get("t"), at_running.get("cpu")
            scheduler = at_running.get("metrics") or component_metrics(cluster, since=components0)
            pipeline = tr.pipeline(t0)
            t_reach = tr.wait_reachable(pods, left()) if kind == "burst" else tr.wait_reachable(n, left(), "big")
            t_done = tr.wait("succeeded", n, left()) if kind == "burst" else tr.wait_key("succeeded", "big", left())
            t_pods_done = tr.wait("pods_succeeded", exiting + (0 if kind == "burst" else 4), left())
        else:
            scheduler, pipeline = component_metrics(cluster, since=components0), None
        cpu, cp = op.cpu() - cpu0, control_plane_cpu(cluster) - cp0
        row = {"kind": kind, "n": n, "flags": flags, "pods": pods, "objects": objects, "rendered_mb": lim["rendered_mb"],
               "nodes": nodes, "pods_s": t_pods and t_pods - t0, "exist_s": t_exist and t_exist - t0,
               "running_s": t_run and t_run - t0, "succeeded_s": t_done and t_done - t0,
               "reachable_s": t_run and t_reach and max(t_run, t_reach) - t0,
               "pods_succeeded_s": t_pods_done and t_pods_done - t0, "scheduler": scheduler,
               "pipeline": pipeline, "limit_jobs_pipeline": lim_jobs.get("pipeline"),
               "limit_running_s": lim.get("running_s"), "limit_succeeded_s": lim.get("succeeded_s"),
               "limit_jobs_running_s": lim_jobs.get("running_s"), "limit_jobs_succeeded_s": lim_jobs.get("succeeded_s"),
               "limit_jobs_reachable_s": lim_jobs.get("reachable_s"),
               "pods_per_s": t_pods and pods / (t_pods - t0), "objects_per_s": t_exist and objects / (t_exist - t0),
               "limit_objects_per_s": lim["per_second"], "limit_seconds": lim["seconds"],
               "limit_client_objects_per_s": lim["client_per_second"], "cpu_s": cpu,
               "limit_busy": lim["busy"], "busy": busy, "cpu_window_s": cpu_window,
               "limit_jobs_objects_per_s": lim_jobs["per_second"], "limit_jobs_busy": lim_jobs["busy"],
               "limit_before_objects_per_s": lim_jobs["per_second"],
               "control_plane_cpu_s": cp, "limit_changes": limit_changes, "requests_in_window": in_window,
               "events_in_window": events_in_window, "cpu_split": cpu_split, "running_cpu_split": running_cpu_split,
               "reconciles_in_window": reconciles_in_window,
               "limit_cpu_split": lim["cpu_split"], "limit_jobs_cpu_split": lim_jobs["cpu_split"],
               "progress": progress, "limit_jobs_progress": lim_jobs["progress"]}
        row["ratio"] = row["objects_per_s"] and row["objects_per_s"] / lim["per_second"]
        row["ratio_jobs"] = row["objects_per_s"] and row["objects_per_s"] / lim_jobs["per_second"]
        if kind == "burst":
            order = tr.submission_order()
            row["last_job_seen_s"] = order and tr.jobs[order[-1]] - t0  # when the submission ended
            for label, i in (("first", 0), ("median", len(order) // 2), ("last", len(order) - 1)):
                t = tr.job_done(order[i], 5) if order else None
                row[f"{label}_job_pods_s"] = t and t - t0
        else:
            t = tr.job_done("small", 5)
            row["small_job_pods_s"] = t and t - t_small0
        tr.stop()
        time.sleep(5)  # the last events
        m = op.metrics()
        row.update(op.rss_split())
        row.update({"peak_rss_mib": op.peak_rss_mib(), "requests": m.get("rest_client_requests_total", 0.0),
                    "events_written": m.get("tfjob_events_written_total"),
                    "events_dropped": m.get("tfjob_events_dropped_total")})
        row["ns_events"], row["ns_tfjob_events"] = namespace_events(cluster, ns)
        op.stop()
        if after:
            settle(cluster, ns, work_activity, max(120, pods / 10))
            work_activity.stop()
            lim_after = measure_limit(cluster, "limit-after", jobs, pods, follow, with_jobs=True, exiting=exiting)
            lim_after["activity"].stop()
            # The cluster holds more with every run, and the same work costs more later (a limit after
            # the operator's run took up to 50 % more CPU than the same limit before it): the
            # operator's run is compared with the mean time of the two limits around it.
            before_s, after_s = objects / lim_jobs["per_second"], objects / lim_after["per_second"]
            row.update({"limit_after_objects_per_s": lim_after["per_second"],
                        "limit_after_running_s": lim_after.get("running_s"),
                        "limit_after_reachable_s": lim_after.get("reachable_s"),
                        "limit_after_succeeded_s": lim_after.get("succeeded_s"),
                        "limit_after_cpu_split": lim_after["cpu_split"], "limit_after_busy": lim_after["busy"],
                        "limit_after_progress": lim_after["progress"],
                        "ratio_before": row["ratio_jobs"],
                        "limit_jobs_objects_per_s": objects / ((before_s + after_s) / 2)})
            row["ratio_jobs"] = row["objects_per_s"] and row["objects_per_s"] / row["limit_jobs_objects_per_s"]
        with open("/proc/loadavg") as f:
            row["uptime"] = f.read().split()[:3]  # the load averages at the end of the run
        log(f"{kind} {row}")
        return row


class Runs:
    """Each (kind, n, flags) runs once per invocation (or `rounds` times, each in a fresh cluster):
    defaults, fairness and scaling share rows. Of several rounds the row shown is the round with
    the median ratio to the limit with the TFJobs submitted; every round's ratios are kept in
    "rounds" (a single run on this 2-core machine moves by 15 % either way)."""

    def __init__(self):
        self.rows = {}

    def get(self, kind, n, flags, follow=False, rounds=1):
        key = (kind, n, flags)
        have = self.rows.get(key)
        if have is None or (follow and not have["follow"]) or len(have["rounds"]) < rounds:
            t = time.time()
            done = []
            for i in range(rounds):
                try:
                    done.append(run_jobs(kind, n, flags, follow))
                except Exception as e:  # noqa: BLE001 - one failed run leaves a row of "-", the others still print
                    log(f"{kind} {n} {flags_text(flags)} round {i + 1}: failed: {e!r}")
                    done.append({"kind": kind, "n": n, "flags": flags})
            have = median_round(done)
            have["follow"], have["wall_s"] = follow, time.time() - t
            log(f"{kind} {n} {flags_text(flags)}: {rounds} round(s), {have['wall_s']:.0f} s")
            self.rows[key] = have
        return have


def median_round(rows):
    """The round with the median ratio to the limit with the TFJobs (the first when none has
    one), with "rounds": [(ratio, ratio_jobs)] of every round, in the order they ran."""
    measured = sorted((r for r in rows if r.get("ratio_jobs")), key=lambda r: r["ratio_jobs"])
    out = dict(measured[(len(measured) - 1) // 2] if measured else rows[0])
    out["rounds"] = [(r.get("ratio"), r.get("ratio_jobs")) for r in rows]
    return out


def rounds_text(r):
    """Every round's "ratio / ratio to the limit with the TFJobs", e.g. "0.75/0.84, 0.80/0.88"."""
    return ", ".join(f"{fmt(a, '.2f')}/{fmt(b, '.2f')}" for a, b in r.get("rounds", []))


def wait_quiet(op, quiet, timeout):
    """Seconds until the operator sent no request for `quiet` s (polled every second; its
    /metrics reads are not requests of its client), or None after timeout."""
    t0 = time.time()
    last, since = op.requests(), time.time()
    while time.time() - t0 < timeout:
        time.sleep(1)
        now = op.requests()
        if now != last:
            last, since = now, time.time()
        elif time.time() - since >= quiet:
            return since - t0
    log(f"idle: the operator still sent requests after {timeout} s")
    return None


def scenario_idle(rows):
    with Cluster(nodes=12) as cluster:
        ns = cluster.namespace("idle")
        op = Operator(cluster, "")
        tr = Tracker(cluster, ns)
        jobs = [tfjob(f"done-{i}", ns, {"Worker": {"replicas": 1, "template": worker_template("1s")}})
                for i in range(1000)]
        limit_create(cluster, ns, jobs, concurrency=16)
        if tr.wait("succeeded", 1000, 900) is None:
            log(f"idle: only {len(tr.succeeded)} jobs succeeded")
        tr.stop()
        # The window starts once the operator has stopped writing: the events of 1,000 jobs are
        # written at --event-qps (50/s) after the jobs end, for minutes, which is work, not idling.
        t_quiet = wait_quiet(op, quiet=15, timeout=900)
        cpu0, req0, t0 = op.cpu(), op.requests(), time.time()
        time.sleep(60)
        cpu, req, dt = op.cpu() - cpu0, op.requests() - req0, time.time() - t0
        rows.append({"jobs": len(tr.succeeded), "window_s": dt, "cpu_s": cpu, "cpu_percent": 100 * cpu / dt,
                     "requests_per_min": req * 60 / dt, "rss_mib": op.rss_mib(), "quiet_after_s": t_quiet})
        op.stop()
        log(f"idle {rows[-1]}")


def scenario_memory(rows):
    with Cluster(nodes=4) as cluster:
        ns = cluster.namespace("managed")
        other = cluster.namespace("unrelated")
        op = Operator(cluster, "")
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


def events_text(r):
    return f"{fmt(r.get('events_written'), '.0f')} / {fmt(r.get('events_dropped'), '.0f')}"


def work_text(r):
    return f"burst of {r['n']} TFJobs (1 PS + 4 Workers)" if r["kind"] == "burst" else f"1 TFJob of {r['n']} Workers"


class Printer:
    def __init__(self):
        self.number = 0

    def table(self, title, header, lines):
        self.number += 1
        print(f"\n### {self.number}. {title}\n")
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for line in lines:
            print("| " + " | ".join(line) + " |")
        sys.stdout.flush()


def print_header(title="operator benchmark"):
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           stdout=subprocess.PIPE, text=True).stdout.strip()
    version = subprocess.run([TFJOB, "version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    print(f"# {title}\n\nCommand: `{shlex.join(sys.argv)}`  \n"
          f"Commit: `{commit}{'+' if dirty else ''}`, `tfjob version`: {version}  \n"
          f"Date: {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {os.cpu_count()} CPUs")
    sys.stdout.flush()


def print_defaults(out, burst, big):
    rounds = len(burst.get("rounds", [])) or 1
    title = "At the defaults: the operator as users get it (no tuning flags" if not DEFAULTS else \
        f"NOT the defaults: the operator with {flags_text(DEFAULTS)} (--operator-flags"
    out.table(title + "; times from the first create; "
              "ratio = operator objects/s / limit objects/s in the same cluster; the limit creates the children "
              "alone, or at the same moment as the TFJobs are submitted as in the operator's run"
              + (", once before the operator's run and once after it, compared by the mean of their two times; "
                 if LIMIT_AFTER else " (before the operator's run only: --no-limit-after); ") +
              f"the round of {rounds} with the median ratio to the latter, each round in a fresh cluster)",
              ["work", "pods + services", "all pods + services (s)", "all pods Running (s)",
               "all Running and reachable (s)", "all TFJobs Succeeded (s)",
               "limit: all Running / its workers Succeeded (s), alone; with the TFJobs before; after",
               "objects/s", "limit objects/s", "ratio",
               "limit with the TFJobs submitted (objects/s): before / after / by the mean time", "ratio to it",
               "every round: ratio / ratio to the limit with the TFJobs", "operator CPU (s)",
               "operator peak RSS (MiB)", "at the end: RSS anon / files (of them the tfjob binary's) (MiB), threads",
               "events written / dropped (/metrics)", "Events in the namespace (about TFJobs)"],
              [[work_text(r), str(r.get("objects", "-")), fmt(r.get("exist_s")), fmt(r.get("running_s")),
                fmt(r.get("reachable_s")), fmt(r.get("succeeded_s")), limit_times_text(r), fmt(r.get("objects_per_s")),
                fmt(r.get("limit_objects_per_s")), fmt(r.get("ratio"), ".2f"),
                limit_jobs_text(r), fmt(r.get("ratio_jobs"), ".2f"), rounds_text(r),
                fmt(r.get("cpu_s"), ".2f"), fmt(r.get("peak_rss_mib")), rss_split_text(r), events_text(r),
                f"{r.get('ns_events', '-')} ({r.get('ns_tfjob_events', '-')})"] for r in (burst, big)])
    out.table("At the defaults, where the time went (the same rounds): the machine's CPU (all of it: control "
              "plane, KWOK, operator, bench) was busy this share of each run; up to the operator's last object",
              ["work", "machine busy: limit / limit with the TFJobs / operator / the latter limit after",
               "operator CPU (s)",
               "operator requests", "changes of the limits' pods during the operator's run",
               "limit client's own objects/s", "operator API requests in all"],
              [[work_text(r),
                " / ".join(fmt(r.get(k), ".0%") for k in ("limit_busy", "limit_jobs_busy", "busy", "limit_after_busy")),
                fmt(r.get("cpu_window_s"), ".2f"), requests_text(r.get("requests_in_window")),
                str(r.get("limit_changes", "-")), fmt(r.get("limit_client_objects_per_s")),
                fmt(r.get("requests"), ".0f")] for r in (burst, big)])
    out.table("At the defaults, CPU seconds by process in each run of the same rounds, each up to its last "
              "object (limit / limit with the TFJobs / operator's run / limit with the TFJobs after). The "
              "clients: the bench, with the limit clients or the TFJob submitter it ran; the operator. "
              "Reconciles: in the operator's run, and the seconds they took, summed over the workers (wall "
              "time, not CPU)",
              ["work"] + list(CPU_SPLIT_COLUMNS) + ["all", "reconciles (s)"],
              [[work_text(r)] + [cpu_split_text(r, cols) for cols in CPU_SPLIT_COLUMNS.values()] +
               [cpu_split_text(r, None), reconciles_text(r.get("reconciles_in_window"))] for r in (burst, big)])


CPU_SPLIT_COLUMNS = {"kube-apiserver": ("kube-apiserver",), "etcd": ("etcd",),
                     "controller-manager": ("kube-controller-manager",), "scheduler": ("kube-scheduler",),
                     "KWOK": ("kwok",), "clients: bench / operator": ("bench", "operator")}


def cpu_split_text(r, processes):
    """One process group's CPU in each run of a round, "a / b / c / d"; processes None: all of them.
    The operator's run splits the clients as "bench + operator"."""
    def one(split, is_operator_run):
        if not split:
            return "-"
        if processes is None:
            return f"{sum(split.values()):.1f}"
        if is_operator_run and len(processes) > 1:
            return " + ".join(f"{split.get(p, 0):.2f}" for p in processes)
        return f"{sum(split.get(p, 0) for p in processes):.2f}"
    parts = [one(r.get("limit_cpu_split"), False), one(r.get("limit_jobs_cpu_split"), False),
             one(r.get("cpu_split"), True)]
    if r.get("limit_after_cpu_split"):
        parts.append(one(r.get("limit_after_cpu_split"), False))
    return " / ".join(parts)


def limit_times_text(r):
    """The limits' "all Running / workers Succeeded" of a run: alone; with the TFJobs; after."""
    parts = [f"{fmt(r.get(f'{k}running_s'))} / {fmt(r.get(f'{k}succeeded_s'))}"
             for k in ("limit_", "limit_jobs_", "limit_after_") if r.get(f"{k}running_s") is not None]
    return "; ".join(parts) or "-"


def limit_jobs_text(r):
    """The limit with the TFJobs: "before / after / by the mean time", or the one before alone."""
    if r.get("limit_after_objects_per_s") is None:
        return fmt(r.get("limit_jobs_objects_per_s"))
    return " / ".join(fmt(r.get(k)) for k in ("limit_before_objects_per_s", "limit_after_objects_per_s",
                                              "limit_jobs_objects_per_s"))


def reconciles_text(rec):
    if not rec or rec[0] is None:
        return "-"
    return f"{rec[0]:.0f} ({rec[1]:.1f})" if rec[1] is not None else f"{rec[0]:.0f}"


def requests_text(by_verb):
    """{verb: n} as "create 2062, patch 339" (watches, lists and gets left out)."""
    if not by_verb:
        return "-"
    return ", ".join(f"{v} {by_verb[v]}" for v in ("create", "patch", "delete", "update") if by_verb.get(v))


def print_fairness(out, burst, big):
    out.table(f"Fairness in a burst of {burst['n']} TFJobs (1 PS + 4 Workers), {flags_text(burst['flags'])}: "
              "when all 5 pods of a job existed, jobs in submission order (s from the first create)",
              ["first-submitted job", "median job", "last job", "all pods of all jobs"],
              [[fmt(burst.get("first_job_pods_s")), fmt(burst.get("median_job_pods_s")),
                fmt(burst.get("last_job_pods_s")), fmt(burst.get("pods_s"))]])
    out.table(f"Fairness beside a big job, {flags_text(big['flags'])}: a TFJob of 1 PS + 4 Workers submitted "
              f"right after one of {big['n']} Workers",
              [f"big job: all {big['n']} pods (s from its create)",
               "small job: all 5 pods (s from its own create)"],
              [[fmt(big.get("pods_s")), fmt(big.get("small_job_pods_s"))]])


def print_scaling(out, rows):
    at = "at the defaults" if not DEFAULTS else f"NOT at the defaults ({flags_text(DEFAULTS)})"
    out.table(f"Scaling {at}: one job of growing size, bursts of growing count (times from the first "
              "create; rendered MB = the pods' and services' JSON, quadratic in workers through TF_CONFIG)",
              ["work", "pods + services", "rendered MB", "KWOK nodes", "all pods + services (s)",
               "all pods Running (s)", "all Running and reachable (s)", "all TFJobs Succeeded (s)",
               "limit: all Running / its workers Succeeded (s), alone; with the TFJobs before; after", "objects/s",
               "limit objects/s", "ratio",
               "limit with the TFJobs submitted (objects/s): before / after / by the mean time", "ratio to it",
               "operator CPU (s)", "CPU ms/object", "operator peak RSS (MiB)",
               "events written / dropped"],
              [[work_text(r), str(r.get("objects", "-")), fmt(r.get("rendered_mb")), str(r.get("nodes", "-")),
                fmt(r.get("exist_s")), fmt(r.get("running_s")), fmt(r.get("reachable_s")), fmt(r.get("succeeded_s")),
                limit_times_text(r), fmt(r.get("objects_per_s")), fmt(r.get("limit_objects_per_s")),
                fmt(r.get("ratio"), ".2f"), limit_jobs_text(r), fmt(r.get("ratio_jobs"), ".2f"),
                fmt(r.get("cpu_s"), ".2f"), fmt(r.get("cpu_s") and 1000 * r["cpu_s"] / r["objects"], ".2f"), fmt(r.get("peak_rss_mib")),
                events_text(r)] for r in rows])


def print_tuning_burst(out, rows):
    n = rows[0]["n"]
    out.table(f"Tuning, burst: {n} TFJobs of 1 PS + 4 Workers submitted at once (times from the first create)",
              ["operator flags", f"all {5 * n} pods + {5 * n} services (s)", "all pods Running (s)",
               "all jobs Succeeded (s)", "pods/s", "limit objects/s", "ratio", "operator CPU (s)",
               "operator peak RSS (MiB)", "apiserver+etcd CPU (s)", "operator API requests",
               "events written / dropped", "Events in the namespace (about TFJobs)"],
              [[flags_text(r["flags"]), fmt(r.get("exist_s")), fmt(r.get("running_s")), fmt(r.get("succeeded_s")),
                fmt(r.get("pods_per_s")), fmt(r.get("limit_objects_per_s")), fmt(r.get("ratio"), ".2f"),
                fmt(r.get("cpu_s"), ".2f"), fmt(r.get("peak_rss_mib")), fmt(r.get("control_plane_cpu_s")),
                fmt(r.get("requests"), ".0f"), events_text(r),
                f"{r.get('ns_events', '-')} ({r.get('ns_tfjob_events', '-')})"] for r in rows])


def print_tuning_big(out, rows):
    n = rows[0]["n"]
    out.table(f"Tuning, big job: one TFJob with {n} Workers",
              ["operator flags", f"all {n} pods (s)", "all pods + services (s)", "pods/s", "limit objects/s", "ratio",
               "small job submitted after: all 5 pods (s)", "operator CPU (s)", "operator peak RSS (MiB)"],
              [[flags_text(r["flags"]), fmt(r.get("pods_s")), fmt(r.get("exist_s")), fmt(r.get("pods_per_s")),
                fmt(r.get("limit_objects_per_s")), fmt(r.get("ratio"), ".2f"), fmt(r.get("small_job_pods_s")),
                fmt(r.get("cpu_s"), ".2f"), fmt(r.get("peak_rss_mib"))] for r in rows])


PEER_TUNED = (PEER, "--controller-threads", "16", "--kube-api-qps", "200", "--kube-api-burst", "300")
PEER_DEFAULTS = (PEER,)


def peer_rounds(work, rounds, configs):
    """The peer part: for each (kind, n) of `work`, `rounds` rounds, each running tfjob at its
    defaults and then every peer configuration, each in a fresh cluster with its limits, so that
    the machine's drift falls on all of them alike. {(kind, n): {flags: [row of each round]}}."""
    out = {}
    for kind, n in work:
        got = out.setdefault((kind, n), {})
        for i in range(rounds):
            for flags in (DEFAULTS,) + tuple(configs):
                try:
                    row = run_jobs(kind, n, flags, follow=True)
                except Exception as e:  # noqa: BLE001 - a failed run leaves "-"
                    log(f"peer part {kind} {n} {flags_text(flags)} round {i + 1}: failed: {e!r}")
                    row = {"kind": kind, "n": n, "flags": flags}
                got.setdefault(flags, []).append(row)
    return out


def median_of(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def ratios(ours, theirs, key):
    """Round by round ours/theirs of `key` (the rounds ran side by side), and their median."""
    rs = [a[key] / b[key] for a, b in zip(ours, theirs) if a.get(key) and b.get(key)]
    return rs, (statistics.median(rs) if rs else None)


def limit_mean(r, key):
    """The limit with the TFJobs' `key` (running_s, reachable_s), the mean of before and after (else before)."""
    vals = [r.get(k) for k in ("limit_jobs_" + key, "limit_after_" + key) if r.get(k) is not None]
    return sum(vals) / len(vals) if vals else None


def metrics_text(m):
    """The control plane's metrics of a run (component_metrics), shortened."""
    if not m:
        return "-"
    short = {"kube-scheduler ": "sched ", "kube-controller-manager ": "kcm ", "kube-apiserver ": "api ",
             "scheduler_": "", "endpoint_slice_controller_": "eps_", "apiserver_request_total": "writes",
             "rest_client_requests_total": "requests", "rest_client_rate_limiter_duration_seconds_sum": "ratelimit_s"}
    out = []
    for k, v in sorted(m.items()):
        for a, b in short.items():
            k = k.replace(a, b)
        out.append(f"{k}={v:g}")
    return ", ".join(out)


def rss_split_text(r):
    if r.get("rss_anon_mib") is None:
        return "-"
    return f"{fmt(r['rss_anon_mib'])} / {fmt(r['rss_file_mib'])} ({fmt(r.get('rss_binary_mib'))} tfjob's), {r['threads']}"


def print_peer(out, results):
    for (kind, n), by_flags in results.items():
        ours = by_flags.get(DEFAULTS, [])
        lines = []
        for flags, rows in by_flags.items():
            for r in rows:
                r["limit_running_mean_s"] = limit_mean(r, "running_s")
                r["limit_reachable_mean_s"] = limit_mean(r, "reachable_s")
            every = "; ".join(f"{fmt(r.get('exist_s'))} / {fmt(r.get('running_s'))} / {fmt(r.get('reachable_s'))} / "
                              f"{fmt(r.get('succeeded_s'))}" for r in rows)
            lines.append([flags_text(flags) if flags != DEFAULTS else "tfjob (defaults)", str(len(rows)),
                          fmt(median_of(rows, "exist_s")), fmt(median_of(rows, "running_s")),
                          fmt(median_of(rows, "reachable_s")), fmt(median_of(rows, "succeeded_s")),
                          f"{fmt(median_of(rows, 'limit_running_mean_s'))} / "
                          f"{fmt(median_of(rows, 'limit_reachable_mean_s'))}",
                          fmt(median_of(rows, "cpu_s"), ".2f"), fmt(median_of(rows, "peak_rss_mib")), every,
                          ", ".join("/".join(r.get("uptime", [])) for r in rows)])
        out.table(f"Against the peer, {work_text({'kind': kind, 'n': n})}: medians of the rounds (each run in a fresh "
                  "cluster after its limits, tfjob and the peer taking turns run by run); times from the first create",
                  ["operator", "rounds", "all pods + services (s)", "all pods Running (s)",
                   "all Running and reachable: every service's EndpointSlice lists its pod as ready (s)",
                   "all TFJobs Succeeded (s)",
                   "limit with the TFJobs, same cluster: all Running / reachable (s, mean of before and after)",
                   "operator CPU (s)", "peak RSS (MiB)", "every round: exist / Running / reachable / Succeeded (s)",
                   "load average (1/5/15 min) after each run"], lines)
        ratio_lines = []
        for flags, rows in by_flags.items():
            if flags == DEFAULTS:
                continue
            cells = []
            for key in ("exist_s", "running_s", "reachable_s", "succeeded_s"):
                rs, med = ratios(ours, rows, key)
                cells.append(f"**{fmt(med, '.2f')}** ({', '.join(f'{x:.2f}' for x in rs)})")
            ratio_lines.append([f"tfjob / {flags_text(flags)}"] + cells)
        cells = []
        for key in ("running_s", "reachable_s"):
            lim = [r[key] / limit_mean(r, key) for r in ours if r.get(key) and limit_mean(r, key)]
            cells.append(f"**{fmt(statistics.median(lim) if lim else None, '.2f')}** "
                         f"({', '.join(f'{x:.2f}' for x in lim)})")
        ratio_lines.append(["tfjob / the limit with the TFJobs (same cluster)", "-"] + cells + ["-"])
        out.table(f"Ratios, {work_text({'kind': kind, 'n': n})}: tfjob's time over the other's, round by round (below "
                  "1: tfjob is done first); the median in bold",
                  ["", "all pods + services", "all pods Running", "all Running and reachable", "all TFJobs Succeeded"],
                  ratio_lines)
        out.table(f"Where a pod waited, {work_text({'kind': kind, 'n': n})}: seconds from the first create at which "
                  "10 % / 50 % / 90 % / all of the pods existed, were bound to a node (kube-scheduler) and Running "
                  "(KWOK), in the round with the median all-Running time, and in the limit with the TFJobs of the "
                  "same cluster",
                  ["operator", "created", "bound", "Running", "limit: created", "limit: bound", "limit: Running"],
                  [[flags_text(flags) if flags != DEFAULTS else "tfjob (defaults)"] +
                   [" / ".join(fmt(x, ".1f") for x in (median_row(rows, "running_s").get(p) or {}).get(stage, []))
                    or "-" for p in ("pipeline", "limit_jobs_pipeline") for stage in ("created", "bound", "running")]
                   for flags, rows in by_flags.items()])
        out.table(f"The control plane during each run up to all Running, {work_text({'kind': kind, 'n': n})} (changes "
                  "of kube-scheduler's, kube-controller-manager's and kube-apiserver's own metrics; writes by resource "
                  "and verb; the round of each with the median all-Running time)",
                  ["operator", "metrics"],
                  [[flags_text(flags) if flags != DEFAULTS else "tfjob (defaults)",
                    metrics_text(median_row(rows, "running_s").get("scheduler"))] for flags, rows in by_flags.items()])
        out.table(f"CPU seconds by process from the first create to all pods Running, {work_text({'kind': kind, 'n': n})} "
                  "(every process of the machine's test cluster, the operator and the bench's own watches), round by "
                  "round",
                  ["operator", "total", "by process, every round"],
                  [[flags_text(flags) if flags != DEFAULTS else "tfjob (defaults)",
                    ", ".join(fmt(sum(r["running_cpu_split"].values()), ".2f") for r in rows if r.get("running_cpu_split"))
                    or "-",
                    "; ".join(" ".join(f"{k} {v:.2f}" for k, v in sorted(r["running_cpu_split"].items()))
                              for r in rows if r.get("running_cpu_split")) or "-"]
                   for flags, rows in by_flags.items()])


def median_row(rows, key):
    have = sorted((r for r in rows if r.get(key) is not None), key=lambda r: r[key])
    return have[(len(have) - 1) // 2] if have else (rows[0] if rows else {})


def ints(text):
    return [int(x) for x in text.split(",") if x]


def main():
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 <pid> prints where every thread is
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the cluster is taken down
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", default="defaults,scaling,peer,burst,big,idle,memory",
                    help="any of defaults,fairness,scaling,peer,burst,big,idle,memory")
    ap.add_argument("--workers", default="1,16", help="tuning grid: --workers values")
    ap.add_argument("--qps", default="20,200", help="tuning grid: --kube-api-qps values (burst 1.5x)")
    ap.add_argument("--burst-jobs", type=int, default=200, help="jobs of the defaults', fairness and tuning burst")
    ap.add_argument("--big-workers", type=int, default=500, help="workers of the defaults', fairness and tuning big job")
    ap.add_argument("--rounds", type=int, default=5,
                    help="defaults: runs of each (a fresh cluster each); the round with the median ratio is shown")
    ap.add_argument("--big-sizes", default="100,500,2000", help="scaling: workers of the one job")
    ap.add_argument("--burst-sizes", default="50,200,1000", help="scaling: jobs of the bursts")
    ap.add_argument("--peer-work", default="big:500,big:2000,burst:200",
                    help="peer: the workloads, kind:n (big: one TFJob of n Workers; burst: n TFJobs of 1 PS + 4 Workers)")
    ap.add_argument("--peer-rounds", type=int, default=3, help="peer: rounds (each runs tfjob and every configuration)")
    ap.add_argument("--peer-configs", default="tuned,defaults",
                    help="peer: training-operator's configurations: tuned (16 threads, 200/300 QPS), defaults")
    ap.add_argument("--peer-compare-env", default="",
                    help="experiments: peer: one more tfjob configuration, its defaults with NAME=VALUE ... in its "
                         "environment, taking turns with the others")
    ap.add_argument("--operator-flags", default="",
                    help="experiments: flags for the operator in place of the defaults (the tables name them)")
    ap.add_argument("--operator-env", default="", help="experiments: NAME=VALUE ... for the operator's process alone")
    ap.add_argument("--apiserver-profile", metavar="DIR", default="",
                    help="experiments: kube-apiserver's CPU profile (Go pprof) of the first 5 s of each limit with "
                         "the TFJobs and each operator run, written to DIR")
    ap.add_argument("--kwok-pod-workers", default="nodes", metavar="nodes|kwok|N",
                    help="KWOK's pod status writers in flight at once: 'nodes' (default) one per simulated node, as "
                         "a cluster has a kubelet per node; 'kwok' KWOK's own default, 4 for all nodes (the bench's "
                         "setting before 2026-12-05); or N")
    ap.add_argument("--no-limit-after", dest="limit_after", action="store_false",
                    help="no second limit with the TFJobs after the operator's run (compare with the one before)")
    a = ap.parse_args()
    global DEFAULTS, OPERATOR_ENV, LIMIT_AFTER, PROFILE_DIR, KWOK_POD_WORKERS
    if a.kwok_pod_workers not in ("kwok", "nodes") and not (a.kwok_pod_workers.isdigit() and int(a.kwok_pod_workers) > 0):
        sys.exit(f"operator_bench: --kwok-pod-workers {a.kwok_pod_workers!r}: want 'nodes', 'kwok' or a number")
    KWOK_POD_WORKERS = a.kwok_pod_workers
    if a.operator_flags:
        DEFAULTS = tuple(shlex.split(a.operator_flags))
    OPERATOR_ENV = a.operator_env
    LIMIT_AFTER = a.limit_after
    PROFILE_DIR = a.apiserver_profile
    scenarios = a.scenarios.split(",")
    unknown = set(scenarios) - {"defaults", "fairness", "scaling", "peer", "burst", "big", "idle", "memory"}
    if unknown:
        sys.exit(f"operator_bench: unknown scenarios {','.join(sorted(unknown))}")
    for tool in (TFJOB, LIMIT):
        if not os.path.exists(tool):
            sys.exit(f"operator_bench: {tool} is missing (make build)")
    print_header()
    if OPERATOR_ENV:
        print(f"The operator's environment adds: {OPERATOR_ENV} (--operator-env)\n")
    print(f"KWOK's pod status writers: {'one per node' if KWOK_POD_WORKERS == 'nodes' else KWOK_POD_WORKERS} "
          "(--kwok-pod-workers; KWOK's own default is 4 for all nodes)\n")
    out, runs, started = Printer(), Runs(), time.time()

    def part(name, fn):
        t = time.time()
        fn()
        log(f"part {name}: {time.time() - t:.0f} s")

    if "defaults" in scenarios or "fairness" in scenarios:
        def defaults():
            # The defaults' burst is followed to Running and Succeeded, so the scaling table can share it.
            burst = runs.get("burst", a.burst_jobs, DEFAULTS, follow=True, rounds=a.rounds)
            big = runs.get("big", a.big_workers, DEFAULTS, follow=True, rounds=a.rounds)
            if "defaults" in scenarios:
                print_defaults(out, burst, big)
            print_fairness(out, burst, big)
        part("defaults", defaults)
    if "scaling" in scenarios:
        part("scaling", lambda: print_scaling(out, [runs.get("big", n, DEFAULTS, follow=True) for n in ints(a.big_sizes)] +
                                              [runs.get("burst", n, DEFAULTS, follow=True) for n in ints(a.burst_sizes)]))
    if "peer" in scenarios:
        configs = [{"tuned": PEER_TUNED, "defaults": PEER_DEFAULTS}[c] for c in a.peer_configs.split(",") if c]
        if a.peer_compare_env:
            configs.append(DEFAULTS + tuple(ENV_FLAG + kv for kv in shlex.split(a.peer_compare_env)))
        work = [(w.split(":")[0], int(w.split(":")[1])) for w in a.peer_work.split(",") if w]
        peer_dir()  # built (or found in the cache) before the first cluster
        part("peer", lambda: print_peer(out, peer_rounds(work, a.peer_rounds, configs)))
    grid = [tuning(workers=w, qps=q, burst=int(q * 1.5)) for q in ints(a.qps) for w in ints(a.workers)]
    if "burst" in scenarios:
        part("burst", lambda: print_tuning_burst(out, [runs.get("burst", a.burst_jobs, f, follow=True) for f in grid]))
    if "big" in scenarios:
        part("big", lambda: print_tuning_big(out, [runs.get("big", a.big_workers, f) for f in grid]))
    if "idle" in scenarios:
        idle = []
        part("idle", lambda: scenario_idle(idle))
        out.table("Idle cost: 1,000 finished TFJobs (operator at the defaults, all namespaces; the 60 s window "
                  "starts once it sent no request for 15 s)",
                  ["operator flags", "finished jobs", "last request after the jobs ended (s)", "window (s)",
                   "operator CPU (s)", "CPU %", "API requests/min", "RSS (MiB)"],
                  [[flags_text(DEFAULTS), str(r["jobs"]), fmt(r.get("quiet_after_s")), fmt(r["window_s"]),
                    fmt(r["cpu_s"], ".2f"), fmt(r["cpu_percent"], ".2f"), fmt(r["requests_per_min"]),
                    fmt(r["rss_mib"])] for r in idle])
    if "memory" in scenarios:
        memory = []
        part("memory", lambda: scenario_memory(memory))
        out.table("Memory: 1,000 TFJobs x 5 Workers (5,000 pods + 5,000 services), then 5,000 unrelated pods (R15), "
                  "operator at the defaults",
                  ["operator flags", "RSS at start (MiB)", "RSS with 5,000 managed pods (MiB)",
                   "+ 5,000 unrelated pods (MiB)", "bytes per managed pod (+ its service)",
                   "growth from unrelated pods (MiB)", "peak RSS (MiB)"],
                  [[flags_text(DEFAULTS), fmt(r["rss_start_mib"]), fmt(r["rss_5000_managed_mib"]),
                    fmt(r["rss_plus_5000_unrelated_mib"]), fmt(r["bytes_per_managed_pod"], ".0f"),
                    fmt(r["unrelated_growth_mib"]), fmt(r["peak_rss_mib"])] for r in memory])
    print(f"\nTotal: {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
