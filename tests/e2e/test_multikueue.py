"""MultiKueue (issue 16 item 3; docs/semantics.md 3.2 step 2, regression R09) against real Kueue on two
real clusters: the suite's cluster is the manager, this module starts a second one (the worker,
scripts/test-cluster on free ports of its own) and takes it down again. Kueue runs on both
(tests/e2e/kueue.py, one instance per cluster), the manager's with a MultiKueueCluster whose
kubeconfig Secret points at the worker, a MultiKueueConfig, an AdmissionCheck of
kueue.x-k8s.io/multikueue and a ClusterQueue using it; the worker's with a ClusterQueue and a
LocalQueue of the same names. Our operator runs on both clusters.

A TFJob created on the manager with the queue-name label gets `managedBy:
kueue.x-k8s.io/multikueue` from Kueue's webhook (the user does not set it); our operator on the
manager writes nothing to it (no pod, no service, no status write: watched on the manager from
before the job exists), Kueue copies it to the worker without managedBy, our operator there runs
it on KWOK, and Kueue copies its status back to the manager's object until Succeeded. With
ttlSecondsAfterFinished the manager's finished job stays (nobody there deletes it).

Every scenario runs in both modes (docs/kueue.md; the test ids name the mode): "integration",
Kueue's kubeflow.org/tfjob integration on both clusters, as above; and "operator", that
integration off and `tfjob operator --kueue-mode operator` on both clusters, with TFJob in
Kueue's multiKueue.externalFrameworks (docs/semantics.md D32). There the job names MultiKueue in
runPolicy.managedBy itself (and is created suspended: no Kueue webhook defaults either), our
operator on the manager owns the Workload, repeats managedBy in spec.managedBy for Kueue's generic
adapter and never runs the job; the adapter copies the job to the worker without spec.managedBy
(runPolicy.managedBy stays) with its origin and prebuilt-workload labels, and our operator there
runs the copy once it has proved MultiKueue made it. Deletion and preemption on the manager reach
the worker's copy in both modes."""
import http.client
import json
import os
import ssl
import subprocess
import tempfile
import threading
import urllib.parse
import uuid

import pytest

from conftest import ROOT, Kube, OperatorProcess, api_time, wait_for, wait_for_server_time
from kueue import MODES, NAMESPACE_LABEL, Kueue
from test_kueue import replica
from test_operator import conditions, ends, job_status, pods, tfjob

QUEUE = "user-queue"
CLUSTER_QUEUE = "mk-cq"
# The worker's flavour places pods on its KWOK nodes (type=kwok); the manager's has no node
# labels: nothing runs there.
WORKER_FLAVOR, MANAGER_FLAVOR = "mk-kwok", "mk-manager"
MK = "kueue.x-k8s.io/multikueue"
V = "kueue.x-k8s.io/v1beta2"
RECONCILED = 'controller_runtime_reconcile_total{controller="tfjob-controller",result="success"}'
PRIORITIES = {"mk-low": 10, "mk-high": 1000}
# What only a job's own controller records: creating its pods and services.
CHILD_EVENTS = {"SuccessfulCreatePod", "SuccessfulCreateService", "FailedCreatePod", "FailedCreateService"}


def cluster_queue(admission_check=None, flavor=MANAGER_FLAVOR):
    spec = {"namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: "true"}},
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "4"},
                                               {"name": "memory", "nominalQuota": "16Gi"}]}]}]}
    if admission_check:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": admission_check}]}
    return {"apiVersion": V, "kind": "ClusterQueue", "metadata": {"name": CLUSTER_QUEUE}, "spec": spec}


def condition_true(kube, kind, name, ctype, namespace=None):
    obj = kube.get(kind, name, namespace, check=False) or {}
    return any(c["type"] == ctype and c["status"] == "True" for c in obj.get("status", {}).get("conditions", []))


class Watch:
    """A watch on an API collection from a resourceVersion taken before anything of the test
    exists in it, read on a thread: every event from then on, none missed by a late start."""

    def __init__(self, kube, path):
        with open(kube.kubeconfig) as f:
            u = urllib.parse.urlparse(json.load(f)["clusters"][0]["cluster"]["server"])
        pki = os.path.join(kube.dir, "pki")
        ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        status, listed, _ = kube.server_get(path)
        assert status == 200, f"GET {path}: HTTP {status}"
        self.events, self.path = [], path
        self.conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=600)
        self.conn.request("GET", f"{path}?watch=1&allowWatchBookmarks=false&timeoutSeconds=600"
                                 f"&resourceVersion={listed['metadata']['resourceVersion']}")
        self.response = self.conn.getresponse()
        assert self.response.status == 200, f"watch {path}: HTTP {self.response.status}"
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()

    def read(self):
        try:
            for line in self.response:
                if line.strip():
                    self.events.append(json.loads(line))
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            pass  # closed by stop()

    def stop(self):
        try:
            self.conn.sock.shutdown(2)
        except OSError:
            pass
        self.conn.close()
        self.thread.join(timeout=10)
        return self.events


@pytest.fixture(scope="module")
def worker_cluster(kube, tfjob_crd):
    """A second test cluster (the MultiKueue worker): own folder, own free ports, own PKI."""
    d = tempfile.mkdtemp(prefix="tfjob-e2e-worker.")
    os.rmdir(d)  # test-cluster up makes it
    script = os.path.join(ROOT, "scripts", "test-cluster")
    try:
        r = subprocess.run([script, "up", d, "--nodes", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=300)
        assert r.returncode == 0, f"the worker cluster did not come up: {r.stderr[-2000:]}"
        worker = Kube(d, os.path.join(d, "kubeconfig"))
        worker("apply", "-f", os.path.join(ROOT, "config", "crd", "kubeflow.org_tfjobs.yaml"))
        worker.wait_established("tfjobs.kubeflow.org")
        yield worker
    finally:
        subprocess.run([script, "down", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)


@pytest.fixture(scope="module", params=MODES)
def multikueue(request, kube, worker_cluster):
    """Kueue on both clusters, our operator on both, and the MultiKueue objects on the manager, in
    one mode (the parameter). Yields (manager Kube, worker Kube, manager operator, mode)."""
    worker, mode = worker_cluster, request.param
    stack = []  # (what, undo) in the order made; undone in reverse
    try:
        wk = Kueue(worker, mode=mode).start()
        stack.append(("worker Kueue", wk))
        mk = Kueue(kube, multikueue={"gcInterval": "30s", "origin": "mk-" + uuid.uuid4().hex[:6],
                                     "workerLostTimeout": "2m"}, mode=mode).start()
        stack.append(("manager Kueue", mk))
        worker_op = OperatorProcess(worker, "--workers", "2", "--kueue-mode", mode, name="worker-operator").start()
        stack.append(("worker operator", worker_op))
        manager_op = OperatorProcess(kube, "--workers", "2", "--kueue-mode", mode, name="manager-operator").start()
        stack.append(("manager operator", manager_op))
        for k in (kube, worker):  # the priorities of the preemption test, on both (the remote Workload names it)
            for name, value in PRIORITIES.items():
                k.apply({"apiVersion": V, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value})

        # The worker: a plain Kueue queue of the same names, on its KWOK nodes.
        worker.apply({"apiVersion": V, "kind": "ResourceFlavor", "metadata": {"name": WORKER_FLAVOR},
                      "spec": {"nodeLabels": {"type": "kwok"}}})
        worker.apply(cluster_queue(flavor=WORKER_FLAVOR))
        # The manager: the worker's admin kubeconfig (certificate data inline, as MultiKueue's
        # kubeconfig check demands: no file paths, no insecure TLS) in a Secret of Kueue's namespace.
        with open(worker.kubeconfig) as f:
            kubeconfig = f.read()
        kube.apply({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "mk-worker", "namespace": "kueue-system"},
                    "stringData": {"kubeconfig": kubeconfig}})
        kube.apply({"apiVersion": V, "kind": "MultiKueueCluster", "metadata": {"name": "mk-worker"},
                    "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "mk-worker"}}}})
        kube.apply({"apiVersion": V, "kind": "MultiKueueConfig", "metadata": {"name": "mk-config"},
                    "spec": {"clusters": ["mk-worker"]}})
        kube.apply({"apiVersion": V, "kind": "AdmissionCheck", "metadata": {"name": "mk-check"},
                    "spec": {"controllerName": MK, "parameters": {
                        "apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mk-config"}}})
        kube.apply({"apiVersion": V, "kind": "ResourceFlavor", "metadata": {"name": MANAGER_FLAVOR}, "spec": {}})
        kube.apply(cluster_queue("mk-check"))
        wait_for(lambda: condition_true(kube, "multikueuecluster", "mk-worker", "Active"), timeout=60,
                 what="MultiKueueCluster Active (the manager's Kueue reaches the worker)")
        wait_for(lambda: condition_true(kube, "admissioncheck", "mk-check", "Active"), timeout=60,
                 what="AdmissionCheck Active")
        for k, where in ((kube, "manager"), (worker, "worker")):
            wait_for(lambda: condition_true(k, "clusterqueue", CLUSTER_QUEUE, "Active"), timeout=60,
                     what=f"the {where}'s ClusterQueue Active")
        yield kube, worker, manager_op, mode
    finally:
        # While Kueue still runs on the manager, so that its finalizers go; the worker goes whole.
        for kind, name in (("clusterqueue", CLUSTER_QUEUE), ("admissioncheck", "mk-check"),
                           ("multikueueconfig", "mk-config"), ("multikueuecluster", "mk-worker"),
                           ("resourceflavor", MANAGER_FLAVOR)):
            kube.run("delete", kind, name, "--ignore-not-found", "--timeout=60s", check=False)
        kube.run("delete", "secret", "mk-worker", "-n", "kueue-system", "--ignore-not-found", check=False)
        codes = [(what, thing.stop()) for what, thing in reversed(stack)]
    bad = [what for what, code in codes if code != 0]
    assert not bad, f"did not stop cleanly on SIGTERM: {bad}"


def queue_namespace(manager, worker):
    """The same namespace, labelled for Kueue, with the LocalQueue, on both clusters (MultiKueue
    creates the copy in the namespace of the same name)."""
    ns = "mk-" + uuid.uuid4().hex[:8]
    for k in (manager, worker):
        k("create", "namespace", ns)
        k("label", "namespace", ns, f"{NAMESPACE_LABEL}=true")
        k.apply({"apiVersion": V, "kind": "LocalQueue", "metadata": {"name": QUEUE, "namespace": ns},
                 "spec": {"clusterQueue": CLUSTER_QUEUE}})
    return ns


def mk_job(name, replicas, mode, ttl=None, priority=None):
    """A TFJob submitted to the MultiKueue queue on the manager. In mode "operator" the job itself
    names MultiKueue in runPolicy.managedBy and is suspended: Kueue's TFJob webhook, which
    defaults both in mode "integration", is not there (docs/kueue.md)."""
    job = tfjob(name, replicas, {"ttlSecondsAfterFinished": ttl} if ttl is not None else None)
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": QUEUE}
    if priority:
        job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = priority
    if mode == "operator":
        job["spec"].setdefault("runPolicy", {}).update({"managedBy": MK, "suspend": True})
    return job


def assert_copy(copy, mode):
    """The copy MultiKueue made on the worker: Kueue's two labels; the managedBy Kueue clears."""
    labels = copy["metadata"]["labels"]
    assert {"kueue.x-k8s.io/prebuilt-workload-name", "kueue.x-k8s.io/multikueue-origin"} <= set(labels)
    if mode == "integration":  # the built-in adapter clears runPolicy.managedBy
        assert "managedBy" not in copy["spec"].get("runPolicy", {})
    else:  # the generic one clears spec.managedBy only; runPolicy.managedBy still says MultiKueue
        assert "managedBy" not in copy["spec"] and copy["spec"]["runPolicy"]["managedBy"] == MK


def managers(obj):
    """(manager, subresource) of every managedFields entry of an object."""
    return {(m.get("manager"), m.get("subresource", "")) for m in obj["metadata"].get("managedFields", [])}


@pytest.mark.parametrize("ttl", [None, 5], ids=["no-ttl", "ttlSecondsAfterFinished"])
def test_multikueue_runs_the_job_on_the_worker_and_the_manager_writes_nothing(multikueue, ttl):
    manager, worker, manager_op, mode = multikueue
    ns = queue_namespace(manager, worker)
    try:
        # From before the job exists: every pod, service and TFJob event in the manager's namespace.
        watches = {kind: Watch(manager, f"{prefix}/namespaces/{ns}/{kind}")
                   for kind, prefix in (("pods", "/api/v1"), ("services", "/api/v1"), ("events", "/api/v1"),
                                        ("tfjobs", "/apis/kubeflow.org/v1"))}
        job = mk_job("mk", {"PS": replica(1, "500m"), "Worker": replica(2, "500m", ends(0, "6s"))}, mode, ttl)
        created = json.loads(manager("create", "-n", ns, "-o", "json", "-f", "-", stdin=json.dumps(job)))
        # Integration: Kueue's webhook set managedBy (the ClusterQueue has a MultiKueue admission
        # check) and suspended it. Operator: the job says so itself.
        assert created["spec"]["runPolicy"]["managedBy"] == MK
        assert created["spec"]["runPolicy"]["suspend"] is True
        if mode == "operator":
            # Our operator on the manager repeats it where Kueue's generic adapter reads it (D32).
            wait_for(lambda: manager.get("tfjob", "mk", ns)["spec"].get("managedBy") == MK, timeout=30,
                     what="spec.managedBy on the manager's job")

        # The copy on the worker: Kueue's prebuilt-workload and origin labels, run by our operator
        # there on the worker's KWOK nodes.
        copy = wait_for(lambda: worker.get("tfjob", "mk", ns, check=False), timeout=90, what="the copy on the worker")
        assert_copy(copy, mode)
        wait_for(lambda: len(pods(worker, ns, "mk")) == 3, timeout=90, what="3 pods on the worker")
        for p in pods(worker, ns, "mk").values():
            assert p["spec"]["nodeSelector"] == {"type": "kwok"}  # the worker's flavour
        wait_for(lambda: ("Running", "True") in conditions(worker, ns, "mk"), timeout=60, what="Running on the worker")
        reconciled_before = manager_op.metric(RECONCILED)
        # What our operator there is called in managedFields (kubectl get hides them): every
        # manager of the copy but Kueue (which made it) and, in mode integration, suspends and
        # unsuspends it.
        copy = worker.server_get(f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs/mk")[1]
        operator_fields = {m for m in managers(copy) if m[0] != "kueue"}
        # Kueue's generic adapter (mode operator) creates the copy with the manager's object's
        # managedFields: there our operator is the one that writes the copy's status.
        operator_names = {m for m, sub in managers(copy) if sub == "status" and m != "kueue"}
        # And the component its events come from (it creates the pods there).
        operator_components = {e["source"].get("component") for e in worker.get("events", None, ns)["items"]
                               if e["involvedObject"]["kind"] == "TFJob" and e["reason"] == "SuccessfulCreatePod"}
        # The status comes back to the manager's object, Running then Succeeded.
        wait_for(lambda: ("Running", "True") in conditions(manager, ns, "mk"), timeout=60,
                 what="Running copied to the manager")
        # Unsuspended on admission by the manager's job controller (Kueue's, or our operator's
        # Kueue mode): that is all it does to the job there. Kueue's copy of the worker's status and
        # that unsuspend are two writers reacting to the same admission, in no fixed order (a cold
        # CI run under load saw Running copied first), so the test waits for it.
        wait_for(lambda: manager.get("tfjob", "mk", ns)["spec"]["runPolicy"].get("suspend") is False, timeout=60,
                 what="the manager's job unsuspended on admission")
        wait_for(lambda: ("Succeeded", "True") in conditions(manager, ns, "mk"), timeout=90,
                 what="Succeeded copied to the manager")
        st = job_status(manager, ns, "mk")
        assert st["replicaStatuses"]["Worker"]["succeeded"] == 2 and "completionTime" in st
        assert conditions(manager, ns, "mk")[-1] == ("Succeeded", "True")
        wl = [w for w in manager.get("workloads.kueue.x-k8s.io", None, ns)["items"]
              if any(o["name"] == "mk" for o in w["metadata"].get("ownerReferences", []))]
        assert len(wl) == 1 and any(c["type"] == "Finished" and c["status"] == "True" and c["reason"] == "Succeeded"
                                    for c in wl[0]["status"]["conditions"])
        # After the manager's Workload finished, Kueue removes the copy from the worker.
        wait_for(lambda: worker.get("tfjob", "mk", ns, check=False) is None, timeout=90,
                 what="the worker's copy removed")
        if ttl is not None:
            # Nobody deletes the manager's job by its TTL: our operator skips it (R09) and Kueue
            # deletes only the copy (README, "Kueue in the test bed"). Nor is the copy made again.
            wait_for_server_time(manager, api_time(st["completionTime"]) + ttl + 10)
            assert ("Succeeded", "True") in conditions(manager, ns, "mk")
            assert worker.get("tfjob", "mk", ns, check=False) is None
        # It ran once on the worker: three pods created there, no more.
        pod_creates = [e for e in worker.get("events", None, ns)["items"]
                       if e["involvedObject"]["kind"] == "TFJob" and e["reason"] == "SuccessfulCreatePod"]
        assert sum(e.get("count", 1) for e in pod_creates) == 3
    finally:
        seen = {kind: w.stop() for kind, w in watches.items()} if "watches" in locals() else {}
        for k in (manager, worker):  # while Kueue still runs on both, so that its finalizers go
            k.run("delete", "namespace", ns, "--wait=false", check=False)
    # Our operator on the manager ran nothing: no pod, no service, no event of a job's own
    # controller, and it never wrote the job's status (the status there is the worker's, copied
    # by Kueue).
    assert seen["pods"] == [] and seen["services"] == []
    manager_events = [e["object"] for e in seen["events"]]
    assert not [e for e in manager_events if e["reason"] in CHILD_EVENTS]
    versions = [e["object"] for e in seen["tfjobs"] if e["type"] in ("ADDED", "MODIFIED")]
    assert versions and versions[-1]["status"]["conditions"][-1]["type"] == "Succeeded"
    seen_managers = set().union(*(managers(v) for v in versions))
    assert operator_names and not {(m, "status") for m in operator_names} & seen_managers, seen_managers
    if mode == "integration":
        # Kueue is the manager's job controller: our operator wrote nothing at all, no event either.
        manager_components = {e["source"].get("component") for e in manager_events}
        assert operator_components and not (operator_components & manager_components), manager_components
        assert not (operator_fields & seen_managers), (operator_fields, seen_managers)
        assert {m for m, _ in seen_managers} == {"kubectl-create", "kueue"}, seen_managers
    else:
        # Our operator is the manager's job controller for Kueue: it wrote the job's spec
        # (spec.managedBy, suspend) and nothing else; Kueue wrote the status.
        assert {m for m, _ in seen_managers} == {"kubectl-create", "kueue"} | operator_names, seen_managers
        assert ("kueue", "status") in seen_managers
    # Not for want of looking: the manager's operator reconciled the job (and skipped it).
    assert manager_op.proc.poll() is None
    assert reconciled_before > 0 and manager_op.metric(RECONCILED) > reconciled_before


def test_multikueue_deleting_the_managers_job_deletes_the_copy(multikueue):
    manager, worker, _, mode = multikueue
    ns = queue_namespace(manager, worker)
    try:
        manager("create", "-n", ns, "-f", "-",
                stdin=json.dumps(mk_job("del", {"Worker": replica(2, "500m", ends(0, "600s"))}, mode)))
        wait_for(lambda: worker.get("tfjob", "del", ns, check=False), timeout=90, what="the copy on the worker")
        assert_copy(worker.get("tfjob", "del", ns), mode)
        wait_for(lambda: len(pods(worker, ns, "del")) == 2, timeout=90, what="2 pods on the worker")
        wait_for(lambda: ("Running", "True") in conditions(manager, ns, "del"), timeout=60,
                 what="Running copied to the manager")
        manager("delete", "tfjob", "del", "-n", ns, "--wait=false")
        # The manager's job and its Workload go (its finalizer released by the job's controller),
        # and MultiKueue deletes the copy and the Workload on the worker; the copy's pods go with it.
        wait_for(lambda: manager.get("tfjob", "del", ns, check=False) is None, timeout=60,
                 what="the manager's job gone")
        wait_for(lambda: manager.get("workloads.kueue.x-k8s.io", None, ns)["items"] == [], timeout=60,
                 what="the manager's Workload gone")
        wait_for(lambda: worker.get("tfjob", "del", ns, check=False) is None, timeout=60,
                 what="the copy deleted on the worker")
        wait_for(lambda: worker.get("workloads.kueue.x-k8s.io", None, ns)["items"] == [], timeout=60,
                 what="the worker's Workload gone")
        wait_for(lambda: pods(worker, ns, "del") == {}, timeout=60, what="the copy's pods gone")
    finally:
        for k in (manager, worker):
            k.run("delete", "namespace", ns, "--wait=false", check=False)


def test_multikueue_preemption_on_the_manager_stops_the_copy(multikueue):
    manager, worker, _, mode = multikueue
    ns = queue_namespace(manager, worker)

    def create(job):
        manager("create", "-n", ns, "-f", "-", stdin=json.dumps(job))

    try:
        # 3 of the ClusterQueue's 4 cpu, on both clusters; it would run for 10 minutes.
        create(mk_job("low", {"PS": replica(1, "1"), "Worker": replica(2, "1", ends(0, "600s"))}, mode,
                      priority="mk-low"))
        wait_for(lambda: len(pods(worker, ns, "low")) == 3, timeout=90, what="low's 3 pods on the worker")
        wait_for(lambda: ("Running", "True") in conditions(manager, ns, "low"), timeout=60,
                 what="low Running copied to the manager")
        low_wl = manager.get("workloads.kueue.x-k8s.io", None, ns)["items"][0]["metadata"]["name"]
        # 2 cpu: it fits only if low's 3 are released, on the manager and then on the worker.
        create(mk_job("high", {"Worker": replica(2, "1", ends(0, "8s"))}, mode, priority="mk-high"))

        def low_evicted():
            w = manager.get("workloads.kueue.x-k8s.io", low_wl, ns)
            return any(c["type"] == "Evicted" and c["status"] == "True" and c["reason"] == "Preempted"
                       for c in w.get("status", {}).get("conditions", []))
        wait_for(low_evicted, timeout=60, what="low's Workload preempted on the manager")
        # The manager's job controller stops low there; MultiKueue removes its copy from the
        # worker, and the copy's pods go with it.
        wait_for(lambda: manager.get("tfjob", "low", ns)["spec"]["runPolicy"].get("suspend") is True, timeout=60,
                 what="low suspended on the manager")
        wait_for(lambda: worker.get("tfjob", "low", ns, check=False) is None, timeout=90,
                 what="low's copy deleted on the worker")
        wait_for(lambda: pods(worker, ns, "low") == {}, timeout=60, what="low's pods gone on the worker")
        # high runs on the worker in low's place, and its status comes back.
        copy = wait_for(lambda: worker.get("tfjob", "high", ns, check=False), timeout=90,
                        what="high's copy on the worker")
        assert_copy(copy, mode)
        wait_for(lambda: ("Succeeded", "True") in conditions(manager, ns, "high"), timeout=120,
                 what="high Succeeded, copied to the manager")
        assert manager.get("tfjob", "low", ns, check=False) is not None, "the preempted job stays, queued again"
    finally:
        for k in (manager, worker):
            k.run("delete", "namespace", ns, "--wait=false", check=False)
