"""Reliability of the operator under chaos (issue 7): SIGKILL at random points (R01 generalised),
leader failover under load, and malformed objects from the API.

Every creation is observed with real watches (from the resourceVersion of an initial list, so
nothing is missed), and "no duplicates" means one uid per pod or service name over the whole run.

The kill test is seeded: it prints its seed, and TFJOB_CHAOS_SEED=<seed> replays the same plan
(which trials, kill points, flags). TFJOB_CHAOS_TRIALS (default 30; `make chaos`: 200) sets the
number of trials, TFJOB_CHAOS_PARALLEL (default 5) how many run at once, each in its own namespace
with its own operator scoped to it (`--namespace`), so other suites' operators never see them."""
import collections
import http.client
import json
import os
import random
import socket
import ssl
import threading
import time
import urllib.parse
import uuid
from concurrent.futures import ThreadPoolExecutor


from conftest import OperatorProcess, wait_for
from test_operator import container, ends, tfjob

TFJOBS = "/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs"
PODS = "/api/v1/namespaces/{ns}/pods"
SERVICES = "/api/v1/namespaces/{ns}/services"


class Api:
    """A small HTTPS client of the test API server with the admin certificate: cheaper than
    kubectl when several trials poll at once on 2 cores."""

    def __init__(self, cluster_dir):
        with open(os.path.join(cluster_dir, "kubeconfig")) as f:
            server = json.load(f)["clusters"][0]["cluster"]["server"]
        u = urllib.parse.urlparse(server)
        self.host, self.port = u.hostname, u.port
        pki = os.path.join(cluster_dir, "pki")
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))

    def connect(self, timeout=60):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def request(self, method, path, body=None, content_type="application/json"):
        conn = self.connect()
        try:
            headers = {"Accept": "application/json"}
            if body is not None:
                headers["Content-Type"] = content_type
                body = body if isinstance(body, (str, bytes)) else json.dumps(body)
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            return r.status, (json.loads(data) if data else None)
        finally:
            conn.close()

    def get(self, path):
        code, obj = self.request("GET", path)
        return obj if code == 200 else None

    def create(self, path, obj):
        code, out = self.request("POST", path, obj)
        assert code == 201, f"POST {path}: {code} {out}"
        return out

    def create_namespace(self, name):
        self.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def delete_namespace(self, name):
        self.request("DELETE", f"/api/v1/namespaces/{name}")


class Watch:
    """Every version of every object of one collection, from a list then a watch started at the
    list's resourceVersion (resumed after a dropped connection, so no event is lost)."""

    def __init__(self, api, path):
        self.api, self.path = api, path
        self.cond = threading.Condition()
        self.uids = {}           # name -> set of uids ever seen
        self.history = {}        # name -> list of objects, in order
        self.added = 0           # ADDED events (plus the initial list)
        self.added_by_name = collections.Counter()
        self.deleted = []        # (name, last object) of every DELETED event
        self.trail = []          # (event, name, uid, resourceVersion, phase, being deleted) of every event
        self.events = 0          # every event
        self.error = None
        self.conn = None
        self.stopped = False
        # Retried: right after the CRD is Established its new collection may still be a 404.
        listed = wait_for(lambda: api.get(path), timeout=60, what=f"a list of {path}")
        for obj in listed["items"]:
            self._record("ADDED", obj)
        self.rv = listed["metadata"]["resourceVersion"]
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _record(self, kind, obj):
        name, uid = obj["metadata"]["name"], obj["metadata"]["uid"]
        with self.cond:
            self.uids.setdefault(name, set()).add(uid)
            self.history.setdefault(name, []).append(obj)
            self.events += 1
            meta = obj["metadata"]
            self.trail.append((kind, name, uid[:8], meta.get("resourceVersion"),
                               (obj.get("status") or {}).get("phase"), "deletionTimestamp" in meta))
            if kind == "ADDED":
                self.added += 1
                self.added_by_name[name] += 1
            elif kind == "DELETED":
                self.deleted.append((name, obj))
            self.cond.notify_all()

    def _run(self):
        while not self.stopped:
            try:
                conn = self.api.connect(timeout=None)
                self.conn = conn
                if self.stopped:
                    return
                conn.request("GET", f"{self.path}?watch=1&allowWatchBookmarks=true&timeoutSeconds=600"
                                    f"&resourceVersion={self.rv}", headers={"Accept": "application/json"})
                r = conn.getresponse()
                if r.status != 200:
                    raise RuntimeError(f"watch {self.path}: HTTP {r.status}")
                for line in r:
                    if not line.strip():
                        continue
                    ev = json.loads(line)
                    obj = ev["object"]
                    if ev["type"] == "ERROR":  # e.g. 410 Gone: events were lost; fail loudly
                        raise RuntimeError(f"watch {self.path}: {obj}")
                    self.rv = obj["metadata"]["resourceVersion"]
                    if ev["type"] != "BOOKMARK":
                        self._record(ev["type"], obj)
            except Exception as e:  # noqa: BLE001 - reported by check()
                if self.stopped:
                    return
                if isinstance(e, RuntimeError):
                    with self.cond:
                        self.error = str(e)
                        self.cond.notify_all()
                    return
                time.sleep(0.2)  # connection dropped: resume from self.rv
            finally:
                try:
                    conn.close()
                except Exception:  # noqa: BLE001
                    pass

    def wait(self, predicate, timeout):
        """Waits until predicate(self) holds (evaluated under the lock) or timeout; returns it."""
        deadline = time.time() + timeout
        with self.cond:
            while not predicate(self) and self.error is None:
                left = deadline - time.time()
                if left <= 0:
                    break
                self.cond.wait(min(left, 0.5))
            return predicate(self)

    def stop(self):
        self.stopped = True
        conn = self.conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.thread.join(timeout=10)

    def duplicates(self, prefix=""):
        with self.cond:
            return {n: sorted(u) for n, u in self.uids.items() if len(u) > 1 and n.startswith(prefix)}

    def names(self, prefix=""):
        with self.cond:
            return {n for n in self.uids if n.startswith(prefix)}

    def added_for(self, prefix):
        """ADDED events of the objects whose name starts with prefix. REQUIRES: the lock held
        (in a wait predicate) or no concurrent writer that matters."""
        return sum(n for name, n in self.added_by_name.items() if name.startswith(prefix))

    def versions(self, name):
        return len(self.history.get(name, []))

    def check(self):
        assert self.error is None, self.error


def condition_types(status):
    return [(c["type"], c["status"]) for c in (status or {}).get("conditions", [])]


def check_condition_history(history):
    """Conditions are only ever appended, in order, and a terminal one is never taken back: every
    version's condition types are a prefix of the next version's."""
    seen = [[t for t, _ in condition_types(o.get("status"))] for o in history]
    for before, after in zip(seen, seen[1:]):
        assert after[:len(before)] == before, f"conditions went from {before} to {after}"


def check_final_status(status, replicas):
    """The settled status of a job that succeeded: Created first, Succeeded last, Running (if it
    was seen at all) in between and False; every pod counted once, none active or failed. Workers
    all succeeded (AllWorkers); a PS counts as succeeded if it ran when the job finished, and not
    at all if it was still Pending then (a busy scheduler or KWOK)."""
    conds = condition_types(status)
    types = [t for t, _ in conds]
    assert types in (["Created", "Running", "Succeeded"], ["Created", "Succeeded"]), conds
    assert conds[-1] == ("Succeeded", "True") and conds[0] == ("Created", "True"), conds
    if "Running" in types:
        assert ("Running", "False") in conds, conds
    got = {t: {k: v for k, v in rs.items() if k in ("active", "succeeded", "failed", "restarts") and v}
           for t, rs in status.get("replicaStatuses", {}).items()}
    ps = got.pop("PS", {})
    assert ps in ({}, {"succeeded": replicas.get("PS")}), ps
    assert got == {t: {"succeeded": n} for t, n in replicas.items() if t != "PS"}, got
    assert "startTime" in status and "completionTime" in status, status


def settled(api, ns, name):
    """The job's status once it succeeded; None until then. The write that adds Succeeded has the
    final counts already (D28: a PS still running counts as succeeded at once), so
    check_final_status holds for the first status seen Succeeded."""
    job = api.get(TFJOBS.format(ns=ns) + "/" + name)
    st = (job or {}).get("status", {})
    return st if ("Succeeded", "True") in condition_types(st) else None


def failed(api, ns, name):
    """The job's status once it failed; None until then."""
    st = ((api.get(TFJOBS.format(ns=ns) + "/" + name) or {}).get("status", {}))
    return st if ("Failed", "True") in condition_types(st) else None


# The job that fails in each kill trial: a worker (ExitCode, exit 137, backoffLimit 1) and a PS
# that runs for ever, with the cleanPodPolicy of the trial (by its index): the pass that fails
# the job deletes the running PS (Running, All) and the failed worker (All) as well.
FAIL_LIMIT = 1
CLEAN_POD_POLICIES = ("None", "Running", "All")


def failing_job(name, clean_pod_policy):
    return tfjob(name, {"PS": {"template": container()},
                        "Worker": {"restartPolicy": "ExitCode", "template": container(ends(137, "1s"))}},
                 {"backoffLimit": FAIL_LIMIT, "cleanPodPolicy": clean_pod_policy})


def check_final_failed_status(status, name, clean_pod_policy, disruptions=0):
    """The status of the failing job (D28): Failed last with the backoff message, and the counts
    of its pods as they are: its worker pod Failed, the restarts that the limit allowed (a kill
    between a restart's delete and its status write can cost a recreation, never a count in the
    final status: the job fails only once the count reaches the limit), and `disruptions` (D21)
    if the test bed deleted a worker pod that had not ended (see run_kill_trial). The PS is
    active when None keeps it running, failed when the clean-up of the failing pass deletes it
    (Running, All), and not counted if it was still Pending then. It is never a disruption: the
    Failed status is written before the clean-up deletes (docs/semantics.md 3.11), so an operator
    killed in between leaves a finished job."""
    conds = status["conditions"]
    assert (conds[0]["type"], conds[-1]["type"], conds[-1]["status"]) == ("Created", "Failed", "True"), conds
    assert conds[-1]["message"] == f"Job {name} has failed because it has reached the specified backoff limit", conds
    counts = {"failed": 1, "restarts": FAIL_LIMIT}
    if disruptions:
        counts["disruptions"] = disruptions
    got = dict(status.get("replicaStatuses") or {})
    ps = got.pop("PS", {})
    assert got == {"Worker": counts}, status
    assert ps in ({}, {"active": 1} if clean_pod_policy == "None" else {"failed": 1}), status
    assert "startTime" in status and "completionTime" in status, status


# --- 1. SIGKILL at random points ------------------------------------------------------------

WORKERS = 8
CHAOS_REPLICAS = {"PS": 1, "Worker": WORKERS}
CHILDREN = 2 * sum(CHAOS_REPLICAS.values())  # a service and a pod per replica


def chaos_job(name):
    # AllWorkers: the job succeeds only once every worker did, so every pod and service must be
    # created (a kill cannot hide behind an early success) and the final counts are exact.
    return tfjob(name, {"PS": {"template": container()},
                        "Worker": {"replicas": WORKERS, "template": container(ends(0, "4s"))}},
                 successPolicy="AllWorkers")


def operator_flags(rng):
    flags = ["--workers", str(rng.choice([1, 2, 4]))]
    qps = rng.choice([None, None, 5, 10, 20])  # slow clients: the kill lands mid-creation
    if qps:
        flags += ["--kube-api-qps", str(qps), "--kube-api-burst", str(rng.choice([1, 2, qps]))]
    return flags


def kill_plan(rng):
    """1 to 3 kill points, each: after k children were created, after the n-th change of the job
    (its status writes), after a delay of up to 8 s (reaching the terminal status writes: the
    workers run 4 s), or once the failing job's last worker pod Failed (the pass that fails it:
    its status write and clean-up deletes); then a jitter of up to 50 ms."""
    plan = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choice(["creates", "creates", "status", "delay", "ending"])
        arg = {"creates": lambda: rng.randint(0, CHILDREN - 1), "status": lambda: rng.randint(1, 6),
               "delay": lambda: round(rng.uniform(0, 8), 3), "ending": lambda: None}[kind]()
        plan.append((kind, arg, round(rng.uniform(0, 0.05), 3), operator_flags(rng)))
    return plan


def run_kill_trial(api, kube, seed, index):
    rng = random.Random(f"{seed}/{index}")
    clean_pod_policy = CLEAN_POD_POLICIES[index % len(CLEAN_POD_POLICIES)]
    ns = f"chaos-{index}-{uuid.uuid4().hex[:6]}"
    plan = kill_plan(rng)
    first_flags = operator_flags(rng)
    api.create_namespace(ns)
    watches = {}
    ops = []
    kills = []  # (children created, job changes, the failing job's cleanPodPolicy if it was ending) at each kill

    def start(flags):
        ops.append(OperatorProcess(kube, "--namespace", ns, *flags, name=f"chaos-{index}").start())
        return ops[-1]

    def children():  # the main job's; the failing job's are not counted
        return watches["pods"].added_for("job-") + watches["services"].added_for("job-")

    def last_worker_failed():  # the failing job's last worker pod (of 1 + FAIL_LIMIT) Failed
        w = watches["pods"]
        with w.cond:
            return len({o["metadata"]["uid"] for o in w.history.get("fail-worker-0", [])
                        if o.get("status", {}).get("phase") == "Failed"}) > FAIL_LIMIT

    def fail_ending():  # its last worker Failed, and the job's Failed status not written yet
        with watches["tfjobs"].cond:
            versions = watches["tfjobs"].history.get("fail", [])
            done = bool(versions) and ("Failed", "True") in condition_types(versions[-1].get("status"))
        return last_worker_failed() and not done

    try:
        for r, p in (("pods", PODS), ("services", SERVICES), ("tfjobs", TFJOBS)):
            watches[r] = Watch(api, p.format(ns=ns))
        op = start(first_flags)
        api.create(TFJOBS.format(ns=ns), chaos_job("job"))
        api.create(TFJOBS.format(ns=ns), failing_job("fail", clean_pod_policy))
        start_time = time.time()
        for kind, arg, jitter, flags in plan:
            if kind == "creates":
                # Children are counted on both watches; wait on the pods' condition with a short
                # poll, since a service event does not notify it.
                deadline = time.time() + 60
                while children() < arg and time.time() < deadline:
                    watches["pods"].wait(lambda w: children() >= arg, 0.02)
            elif kind == "status":
                watches["tfjobs"].wait(lambda w: w.versions("job") >= 1 + arg, 60)
            elif kind == "ending":  # (the watch's lock is reentrant)
                watches["pods"].wait(lambda w: last_worker_failed(), 60)
            else:
                time.sleep(max(0.0, start_time + arg - time.time()))
            time.sleep(jitter)
            op.kill()
            ending = clean_pod_policy if fail_ending() else None
            kills.append((children(), watches["tfjobs"].versions("job") - 1, ending))
            op = start(flags)
        st = wait_for(lambda: settled(api, ns, "job"), timeout=180, interval=0.5,
                      what=f"trial {index} ({ns}): the job Succeeded with settled counts")
        for w in watches.values():
            w.check()
        assert not watches["pods"].duplicates("job-"), f"duplicate pods: {watches['pods'].duplicates('job-')}"
        assert not watches["services"].duplicates(), f"duplicate services: {watches['services'].duplicates()}"
        expected = {"job-ps-0"} | {f"job-worker-{i}" for i in range(WORKERS)}
        assert watches["pods"].names("job-") == expected
        assert watches["services"].names("job-") == expected
        check_final_status(st, CHAOS_REPLICAS)
        check_condition_history(watches["tfjobs"].history["job"])
        # The failing job (issue 14 item 7): its final status, then unchanged by later passes.
        fst = wait_for(lambda: failed(api, ns, "fail"), timeout=120, interval=0.5,
                       what=f"trial {index} ({ns}): the failing job Failed")
        # The operator deletes this job's worker pods only once they Failed (to restart them). A
        # worker pod removed before it ended was deleted by the test bed: KWOK deletes and patches
        # pods by name, without a uid precondition, so a stale delete meant for the Failed pod can
        # remove its replacement of the same name. That is a disruption (D21) and must be counted
        # as one. (Its PS is deleted running only by the clean-up of the failed job.)
        ended = ("Failed", "Succeeded")
        external = [o["metadata"]["uid"] for n, o in watches["pods"].deleted
                    if n.startswith("fail-worker-") and o.get("status", {}).get("phase") not in ended]
        check_final_failed_status(fst, "fail", clean_pod_policy, disruptions=len(external))
        assert len(watches["pods"].uids.get("fail-worker-0", ())) >= 1 + FAIL_LIMIT, watches["pods"].uids
        # The PS was never recreated: a failed job is not run again (an operator killed between
        # the clean-up deletes and the status write used to run it again with All).
        assert len(watches["pods"].uids.get("fail-ps-0", ())) == 1, watches["pods"].uids
        assert watches["services"].names("fail-") == {"fail-worker-0", "fail-ps-0"}
        pod = lambda name: api.get(PODS.format(ns=ns) + "/" + name)  # noqa: E731
        if clean_pod_policy == "None":
            assert pod("fail-ps-0") is not None, "None: the PS was deleted"
        else:
            wait_for(lambda: pod("fail-ps-0") is None, timeout=60, what=f"{clean_pod_policy}: the PS cleaned up")
        if clean_pod_policy == "All":  # a kill mid-DELETE stalls it: deleted again after 5 s (semantics 3.4)
            wait_for(lambda: pod("fail-worker-0") is None, timeout=60, what="All: the worker cleaned up")
        else:
            assert "deletionTimestamp" not in pod("fail-worker-0")["metadata"], f"{clean_pod_policy}: worker deleted"
        time.sleep(1)
        assert failed(api, ns, "fail") == fst, "the failing job's status changed after it failed"
        # It may have been started a moment ago: SIGTERM is handled from its first log line on.
        wait_for(lambda: healthz(op), timeout=60, what="the last operator serving /healthz")
        assert op.stop() == 0, "the last operator did not stop cleanly"
        return kills, "Running" in [t for t, _ in condition_types(st)]
    except AssertionError as e:
        # What the operators said about disruptions, to tell a miscount from a real one.
        said = [(o.log_path, l.strip()) for o in ops for l in open(o.log_path, errors="replace") if "disrupt" in l]
        warnings = [ev for name in ("job", "fail") for ev in events_for(api, ns, name) if ev[0] == "Warning"]
        pods = [t for t in watches["pods"].trail if t[1].startswith("fail-")] if "pods" in watches else []
        raise AssertionError(f"trial {index} (seed {seed}, namespace {ns}, plan {plan}, "
                             f"first flags {first_flags}): {e}; Warning events: {warnings}; "
                             f"operator log lines about disruptions: {said}; the failing job's pod events "
                             f"(event, name, uid, resourceVersion, phase, being deleted): {pods}") from e
    finally:
        for o in ops:
            o.kill()
        for w in watches.values():
            w.stop()
        api.delete_namespace(ns)


def test_chaos_kill_at_random_points(kube, tfjob_crd):
    seed = int(os.environ.get("TFJOB_CHAOS_SEED") or random.SystemRandom().randrange(1 << 32))
    trials = int(os.environ.get("TFJOB_CHAOS_TRIALS", "30"))
    parallel = int(os.environ.get("TFJOB_CHAOS_PARALLEL", "5"))
    print(f"\nchaos: seed {seed} ({trials} trials, {parallel} at once); replay with TFJOB_CHAOS_SEED={seed}")
    api = Api(kube.dir)
    started = time.monotonic()
    failures, with_running, kills = [], 0, []
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = [pool.submit(run_kill_trial, api, kube, seed, i) for i in range(trials)]
        for f in futures:
            try:
                k, running = f.result()
                kills += k
                with_running += running
            except AssertionError as e:
                failures.append(str(e))
    mid = sum(1 for c, _, _ in kills if 0 < c < CHILDREN)
    after = collections.Counter(changes for c, changes, _ in kills if c == CHILDREN)
    ending = collections.Counter(policy for _, _, policy in kills if policy)
    print(f"chaos: {trials - len(failures)}/{trials} trials passed in {time.monotonic() - started:.0f}s; {len(kills)} kills: "
          f"{sum(1 for c, _, _ in kills if c == 0)} before the first create, {mid} mid-creation, {sum(after.values())} after "
          f"(by job changes seen: {dict(sorted(after.items()))}); {sum(ending.values())} while the failing job was ending "
          f"(its last worker Failed, no Failed status seen yet; by cleanPodPolicy: {dict(sorted(ending.items()))}); "
          f"{with_running} trials saw Running before Succeeded")
    assert not failures, f"seed {seed}: {len(failures)} of {trials} trials failed:\n" + "\n".join(failures)


# --- 2. Leader failover under load ----------------------------------------------------------

def test_chaos_leader_failover_under_load(kube, namespace, tfjob_crd):
    api = Api(kube.dir)
    jobs = 50
    replicas = {"PS": 1, "Worker": 2}
    lease_name = f"tfjob-chaos-{namespace}"
    # A modest client rate so that the 300 creates take long enough for the kill to land among them.
    args = ("--leader-elect=true", "--leader-election-namespace", "tfjob-system", "--leader-election-id", lease_name,
            "--namespace", namespace, "--kube-api-qps", "30", "--kube-api-burst", "30")
    watches = {r: Watch(api, p.format(ns=namespace)) for r, p in (("pods", PODS), ("services", SERVICES))}
    a = OperatorProcess(kube, *args, name="chaos-leader-a").start()
    b = OperatorProcess(kube, *args, name="chaos-leader-b").start()
    try:
        wait_for(lambda: (kube.get("lease", lease_name, "tfjob-system", check=False) or {}).get("spec", {}).get("holderIdentity"),
                 timeout=60, what="a leader")
        leader, standby = (a, b) if a.metric("leader_election_master_status") == 1 else (b, a)
        assert standby.metric("leader_election_master_status") == 0
        for i in range(jobs):
            api.create(TFJOBS.format(ns=namespace),
                       tfjob(f"load-{i}", {"PS": {"template": container()},
                                           "Worker": {"replicas": 2, "template": container(ends(0, "3s"))}},
                             successPolicy="AllWorkers"))
        total = jobs * 2 * sum(replicas.values())
        assert watches["pods"].wait(lambda w: w.added + watches["services"].added >= total // 4, 120), \
            "the leader did not start creating"
        created_at_kill = watches["pods"].added + watches["services"].added
        leader.kill()
        assert created_at_kill < total, "every child existed before the kill: it landed too late to test anything"
        wait_for(lambda: standby.metric("leader_election_master_status") == 1, timeout=60, what="the takeover")
        try:
            wait_for(lambda: all(settled(api, namespace, f"load-{i}") for i in range(jobs)),
                     timeout=300, interval=1, what="all 50 jobs Succeeded")
        except AssertionError:
            pending = {}
            for i in range(jobs):
                if not settled(api, namespace, f"load-{i}"):
                    job = api.get(TFJOBS.format(ns=namespace) + f"/load-{i}") or {}
                    pending[f"load-{i}"] = (condition_types(job.get("status")), job.get("status", {}).get("replicaStatuses"))
            phases = {p["metadata"]["name"]: p.get("status", {}).get("phase")
                      for p in (api.get(PODS.format(ns=namespace)) or {"items": []})["items"]
                      if p["metadata"]["name"].rsplit("-", 2)[0] in pending}
            raise AssertionError(f"{len(pending)} jobs did not settle: {pending}; their pods: {phases}; "
                                 f"logs: {a.log_path} {b.log_path}")
        for w in watches.values():
            w.check()
        assert not watches["pods"].duplicates(), watches["pods"].duplicates()
        assert not watches["services"].duplicates(), watches["services"].duplicates()
        expected = {f"load-{i}-ps-0" for i in range(jobs)} | {f"load-{i}-worker-{k}" for i in range(jobs) for k in range(2)}
        assert watches["pods"].names() == expected
        assert watches["services"].names() == expected
        for i in range(jobs):
            check_final_status(settled(api, namespace, f"load-{i}"), replicas)
        print(f"\nfailover: {created_at_kill} of {total} children existed at the kill")
        assert standby.stop() == 0
    finally:
        a.kill()
        b.kill()
        for w in watches.values():
            w.stop()


# --- 3. Malformed objects from the API ------------------------------------------------------

def events_for(api, ns, name):
    out = api.get(f"/api/v1/namespaces/{ns}/events") or {"items": []}
    return [(e["type"], e["reason"], e["message"]) for e in out["items"] if e["involvedObject"]["name"] == name]


def healthz(op):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{op.port('health probes')}/healthz", timeout=5) as r:
        return r.status == 200


def raw_job(name, template, **spec):
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
            "spec": dict({"tfReplicaSpecs": {"Worker": {"template": template}}}, **spec)}


def test_chaos_malformed_objects_from_the_api(kube, namespace, tfjob_crd):
    """TFJobs the CRD schema admits (integers, timestamps and sizes within the schema's bounds)
    but that our decoder or validation must reject or tolerate. The operator stays up, reports
    each bad job, and still runs a good one. Wrong types inside a template no longer get that far:
    the CRD types the template in full (docs/semantics.md 1.1), so the API server refuses them."""
    api = Api(kube.dir)
    path = TFJOBS.format(ns=namespace)
    op = OperatorProcess(kube, "--namespace", namespace, name="chaos-malformed").start()
    try:
        wait_for(lambda: healthz(op), what="/healthz before")
        tf = {"name": "tensorflow", "image": "x"}
        # Refused by the API server (the CRD's PodTemplateSpec schema), naming the field.
        for name, template, field in (
                ("types", {"metadata": 7, "spec": {"containers": [
                    dict(tf, env="not-a-list", ports=[{"containerPort": "2222"}])]}},
                 "spec.tfReplicaSpecs.Worker.template.spec.containers[0].ports[0].containerPort"),
                ("nolist", {"spec": {"containers": {"name": "tensorflow"}}}, "spec.tfReplicaSpecs.Worker.template.spec.containers"),
                ("resources5", {"spec": {"containers": [dict(tf, resources=5)]}},
                 "spec.tfReplicaSpecs.Worker.template.spec.containers[0].resources")):
            code, out = api.request("POST", path, raw_job(name, template))
            assert code == 422 and field in json.dumps(out), f"{name}: {code} {out}"
        # Rejected by our validation: a port number the schema (int32) admits.
        api.create(path, raw_job("badport", {"spec": {"containers": [dict(tf, ports=[{"containerPort": 70000}])]}}))
        # Replicas the schema admits (int32) but validation does not.
        toomany = raw_job("toomany", {"spec": {"containers": [tf]}})
        toomany["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 2147483647
        api.create(path, toomany)
        # Valid for the schema and for us, rejected by the API server when the pod is created
        # (requests above limits): reported as such.
        api.create(path, raw_job("podfield", {"spec": {"containers": [
            dict(tf, resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}})]}}))
        # Tolerated: unknown fields in the template (pruned by the API server), a
        # huge annotation on the job and on its pods, integral floats, odd but legal values.
        api.create(path, raw_job("unknown", {"bogus": {"x": [1, 2]}, "metadata": {"annotations": ends(0, "1s")},
                                             "spec": {"containers": [dict(tf, bogusField={"a": None}, args=["\u00e9\u2603", ""],
                                                                          env=[{"name": "E", "value": "x" * 10000}])]}}))
        huge = raw_job("huge", {"metadata": {"annotations": dict(ends(0, "1s"), big="y" * (100 * 1024))},
                                "spec": {"containers": [tf]}})
        huge["metadata"]["annotations"] = {"big": "x" * (250 * 1024)}
        api.create(path, huge)
        api.create(path, {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "floats"},
                          "spec": {"runPolicy": {"backoffLimit": 3.0},
                                   "tfReplicaSpecs": {"Worker": {"replicas": 2.0, "template": {
                                       "metadata": {"annotations": ends(0, "1s")}, "spec": {"containers": [tf]}}}}}})
        # The largest deadline and TTL the schema admits: beyond our time range, so never due.
        api.create(path, raw_job("far", {"metadata": {"annotations": ends(0, "1s")}, "spec": {"containers": [tf]}},
                                 runPolicy={"activeDeadlineSeconds": 9223372036854775807,
                                            "ttlSecondsAfterFinished": 2147483647}))
        # A status another writer left with times the schema admits and we cannot represent
        # (before 1678 or after 2262): the job must not vanish from the operator.
        api.create(path, raw_job("oldtimes", {"metadata": {"annotations": ends(0, "1s")}, "spec": {"containers": [tf]}},
                                 runPolicy={"suspend": True}))
        code, out = api.request("PATCH", path + "/oldtimes/status", {"status": {
            "startTime": "0001-01-01T00:00:00Z", "completionTime": None,
            "conditions": [{"type": "Created", "status": "True", "lastTransitionTime": "9999-12-31T23:59:59Z"}]}},
            content_type="application/merge-patch+json")
        assert code == 200, out
        api.request("PATCH", path + "/oldtimes", {"spec": {"runPolicy": {"suspend": False}}},
                    content_type="application/merge-patch+json")
        good = raw_job("good", {"metadata": {"annotations": ends(0, "1s")}, "spec": {"containers": [tf]}})
        api.create(path, good)

        def failed_validation(name, field):
            st = (api.get(path + "/" + name) or {}).get("status", {})
            last = (st.get("conditions") or [{}])[-1]
            if (last.get("type"), last.get("reason")) != ("Failed", "TFJobFailedValidation"):
                return False
            assert field in last["message"], last["message"]
            assert any(e[0] == "Warning" and e[1] == "TFJobFailedValidation" and field in e[2]
                       for e in events_for(api, namespace, name)), events_for(api, namespace, name)
            return True
        wait_for(lambda: failed_validation("badport", "containerPort: Invalid value: 70000"), timeout=60,
                 what="badport: Failed validation")
        wait_for(lambda: failed_validation("toomany", "spec.tfReplicaSpecs[Worker].replicas: Invalid value: 2147483647"),
                 timeout=60, what="toomany: Failed validation")
        wait_for(lambda: any(e[0] == "Warning" and e[1] == "FailedCreatePod" and "resources" in e[2]
                             for e in events_for(api, namespace, "podfield")),
                 timeout=60, what="podfield: a FailedCreatePod Warning naming the field")
        for name, replicas in (("good", 1), ("unknown", 1), ("huge", 1), ("floats", 2), ("oldtimes", 1), ("far", 1)):
            st = wait_for(lambda: settled(api, namespace, name), timeout=120, interval=0.5, what=f"{name} Succeeded")
            if name != "oldtimes":  # its conditions are partly another writer's
                check_final_status(st, {"Worker": replicas})
        pod = api.get(PODS.format(ns=namespace) + "/huge-worker-0")
        assert len(pod["metadata"]["annotations"]["big"]) == 100 * 1024
        assert "bogusField" not in pod["spec"]["containers"][0]
        st = api.get(path + "/oldtimes")["status"]
        assert not st["startTime"].startswith("0001"), st  # rewritten by the operator
        for name in ("badport", "toomany", "podfield"):
            assert not [p for p in (api.get(PODS.format(ns=namespace)) or {"items": []})["items"]
                        if p["metadata"]["name"].startswith(name + "-")], f"{name}: pods were created"

        # A running job given a status we cannot read, then deleted: the operator must neither
        # keep a stale copy nor recreate its children after the deletion (it did both when such a
        # status made the object undecodable).
        api.create(path, raw_job("gone", {"spec": {"containers": [tf]}}))
        wait_for(lambda: api.get(PODS.format(ns=namespace) + "/gone-worker-0"), timeout=60, what="gone's pod")
        pods_watch = Watch(api, PODS.format(ns=namespace))
        try:
            api.request("PATCH", path + "/gone/status", {"status": {"startTime": "0001-01-01T00:00:00Z"}},
                        content_type="application/merge-patch+json")
            code, _ = api.request("DELETE", path + "/gone")
            assert code == 200
            wait_for(lambda: api.get(PODS.format(ns=namespace) + "/gone-worker-0") is None, timeout=60,
                     what="gone's pod garbage-collected")
            time.sleep(3)
            assert len(pods_watch.uids["gone-worker-0"]) == 1, "the deleted job's pod was recreated"
            assert api.get(PODS.format(ns=namespace) + "/gone-worker-0") is None
        finally:
            pods_watch.stop()

        assert op.proc.poll() is None, "the operator exited"
        assert healthz(op)
        with open(op.log_path, errors="replace") as f:
            log = f.read()
        assert "terminate" not in log and "exception" not in log.lower(), log[-2000:]
        assert op.stop() == 0
    finally:
        op.kill()
