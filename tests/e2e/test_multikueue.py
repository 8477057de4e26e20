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
ttlSecondsAfterFinished the manager's finished job stays (nobody there deletes it)."""
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
from kueue import NAMESPACE_LABEL, Kueue
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


def cluster_queue(admission_check=None, flavor=MANAGER_FLAVOR):
    spec = {"namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: "true"}},
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
        # Polled: `kubectl wait` fails at once while the fresh CRD has no status.conditions yet.
        wait_for(lambda: any(c["type"] == "Established" and c["status"] == "True"
                             for c in (worker.get("crd", "tfjobs.kubeflow.org", check=False) or {})
                             .get("status", {}).get("conditions") or []),
                 timeout=60, what="the worker's TFJob CRD Established")
        yield worker
    finally:
        subprocess.run([script, "down", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)


@pytest.fixture(scope="module")
def multikueue(kube, worker_cluster):
    """Kueue on both clusters, our operator on both, and the MultiKueue objects on the manager.
    Yields (manager Kube, worker Kube, manager operator)."""
    worker = worker_cluster
    stack = []  # (what, undo) in the order made; undone in reverse
    try:
        wk = Kueue(worker).start()
        stack.append(("worker Kueue", wk))
        mk = Kueue(kube, multikueue={"gcInterval": "30s", "origin": "mk-" + uuid.uuid4().hex[:6],
                                     "workerLostTimeout": "2m"}).start()
        stack.append(("manager Kueue", mk))
        worker_op = OperatorProcess(worker, "--workers", "2", name="worker-operator").start()
        stack.append(("worker operator", worker_op))
        manager_op = OperatorProcess(kube, "--workers", "2", name="manager-operator").start()
        stack.append(("manager operator", manager_op))

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
        yield kube, worker, manager_op
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


def managers(obj):
    """(manager, subresource) of every managedFields entry of an object."""
    return {(m.get("manager"), m.get("subresource", "")) for m in obj["metadata"].get("managedFields", [])}


@pytest.mark.parametrize("ttl", [None, 5], ids=["no-ttl", "ttlSecondsAfterFinished"])
def test_multikueue_runs_the_job_on_the_worker_and_the_manager_writes_nothing(multikueue, ttl):
    manager, worker, manager_op = multikueue
    ns = queue_namespace(manager, worker)
    try:
        # From before the job exists: every pod, service and TFJob event in the manager's namespace.
        watches = {kind: Watch(manager, f"{prefix}/namespaces/{ns}/{kind}")
                   for kind, prefix in (("pods", "/api/v1"), ("services", "/api/v1"), ("events", "/api/v1"),
                                        ("tfjobs", "/apis/kubeflow.org/v1"))}
        job = tfjob("mk", {"PS": replica(1, "500m"), "Worker": replica(2, "500m", ends(0, "6s"))},
                    {"ttlSecondsAfterFinished": ttl} if ttl is not None else None)
        job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": QUEUE}
        created = json.loads(manager("create", "-n", ns, "-o", "json", "-f", "-", stdin=json.dumps(job)))
        # Kueue's webhook set managedBy (the ClusterQueue has a MultiKueue admission check) and suspended it.
        assert created["spec"]["runPolicy"]["managedBy"] == MK
        assert created["spec"]["runPolicy"]["suspend"] is True

        # The copy on the worker: no managedBy (Kueue clears it), Kueue's prebuilt-workload and
        # origin labels, run by our operator there on the worker's KWOK nodes.
        copy = wait_for(lambda: worker.get("tfjob", "mk", ns, check=False), timeout=90, what="the copy on the worker")
        assert "managedBy" not in copy["spec"].get("runPolicy", {})
        labels = copy["metadata"]["labels"]
        assert {"kueue.x-k8s.io/prebuilt-workload-name", "kueue.x-k8s.io/multikueue-origin"} <= set(labels)
        wait_for(lambda: len(pods(worker, ns, "mk")) == 3, timeout=90, what="3 pods on the worker")
        for p in pods(worker, ns, "mk").values():
            assert p["spec"]["nodeSelector"] == {"type": "kwok"}  # the worker's flavour
        wait_for(lambda: ("Running", "True") in conditions(worker, ns, "mk"), timeout=60, what="Running on the worker")
        reconciled_before = manager_op.metric(RECONCILED)
        # What our operator there is called in managedFields (kubectl get hides them): every
        # manager of the copy but Kueue (which made it and suspends/unsuspends it).
        copy = worker.server_get(f"/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs/mk")[1]
        operator_fields = {m for m in managers(copy) if m[0] != "kueue"}
        # And the component its events come from (it creates the pods there).
        operator_components = {e["source"].get("component") for e in worker.get("events", None, ns)["items"]
                               if e["involvedObject"]["kind"] == "TFJob" and e["reason"] == "SuccessfulCreatePod"}
        # The status comes back to the manager's object, Running then Succeeded.
        wait_for(lambda: ("Running", "True") in conditions(manager, ns, "mk"), timeout=60,
                 what="Running copied to the manager")
        local = manager.get("tfjob", "mk", ns)
        assert local["spec"]["runPolicy"].get("suspend") is False  # unsuspended by Kueue on admission
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
    # Our operator on the manager wrote nothing: no pod, no service, and every version of the job
    # it ever had carries only kubectl's and Kueue's field managers, never the one our operator
    # uses on the worker.
    assert seen["pods"] == [] and seen["services"] == []
    manager_components = {e["object"]["source"].get("component") for e in seen["events"]}
    assert operator_components and not (operator_components & manager_components), manager_components
    versions = [e["object"] for e in seen["tfjobs"] if e["type"] in ("ADDED", "MODIFIED")]
    assert versions and versions[-1]["status"]["conditions"][-1]["type"] == "Succeeded"
    seen_managers = set().union(*(managers(v) for v in versions))
    assert operator_fields and not (operator_fields & seen_managers), (operator_fields, seen_managers)
    assert {m for m, _ in seen_managers} == {"kubectl-create", "kueue"}, seen_managers
    # Not for want of looking: the manager's operator reconciled the job (and skipped it).
    assert manager_op.proc.poll() is None
    assert reconciled_before > 0 and manager_op.metric(RECONCILED) > reconciled_before
