"""The Kueue contract (issue 8; spec 3.12 and section 6; regressions R07-R09), tested without
Kueue by doing with kubectl what Kueue's TFJob integration does: create the job suspended, admit it
by writing each replica template's nodeSelector, tolerations, labels and annotations and then
setting suspend false, preempt it by setting suspend true (and restoring the templates), and read
back what Kueue reads: the Succeeded/Failed conditions and replicaStatuses[*].active."""
import json
import time

from conftest import wait_for
from test_operator import conditions, container, ends, job_status, operator, pods, tfjob  # noqa: F401

QUEUE = {"kueue.x-k8s.io/queue-name": "user-queue"}


def kueue_job(name, worker_template):
    job = tfjob(name, {"PS": {"template": container()}, "Worker": {"replicas": 2, "template": worker_template}},
                {"suspend": True})
    job["metadata"]["labels"] = dict(QUEUE)
    return job


def admit(kube, ns, name, flavor):
    """Kueue's RunWithPodSetsInfo: one pod set per replica type, then unsuspend, in one update."""
    job = kube.get("tfjob", name, ns)
    for rtype, spec in job["spec"]["tfReplicaSpecs"].items():
        t = spec["template"]
        t.setdefault("metadata", {}).setdefault("labels", {})["kueue.x-k8s.io/podset"] = rtype.lower()
        t["metadata"].setdefault("annotations", {})["kueue.x-k8s.io/workload"] = f"tfjob-{name}"
        t["spec"]["nodeSelector"] = {"flavor": flavor}
        t["spec"]["tolerations"] = [{"key": "flavor", "operator": "Equal", "value": flavor, "effect": "NoSchedule"}]
    job["spec"]["runPolicy"]["suspend"] = False
    kube("replace", "-f", "-", stdin=json.dumps(job))


def preempt(kube, ns, name):
    """Kueue's stop: suspend, then RestorePodSetsInfo (the templates as they were before admission)."""
    job = kube.get("tfjob", name, ns)
    job["spec"]["runPolicy"]["suspend"] = True
    for spec in job["spec"]["tfReplicaSpecs"].values():
        t = spec["template"]
        t["metadata"]["labels"].pop("kueue.x-k8s.io/podset")
        t["metadata"]["annotations"].pop("kueue.x-k8s.io/workload")
        t["spec"].pop("nodeSelector")
        t["spec"].pop("tolerations")
    kube("replace", "-f", "-", stdin=json.dumps(job))


def services(kube, ns):
    return [s["metadata"]["name"] for s in kube.get("services", None, ns)["items"]]


def active(kube, ns, name):
    return {t: rs.get("active", 0) for t, rs in job_status(kube, ns, name).get("replicaStatuses", {}).items()}


def label_flavor_nodes(kube):
    """Kueue's ResourceFlavors select nodes by label: give two KWOK nodes one flavour each."""
    nodes = sorted(n["metadata"]["name"] for n in kube.get("nodes")["items"])
    for node, flavor in zip(nodes, ["spot", "on-demand"]):
        kube("label", "node", node, f"flavor={flavor}", "--overwrite")


def test_kueue_admission_preemption_and_completion(kube, namespace, operator):
    label_flavor_nodes(kube)
    kube.apply(kueue_job("queued", container(ends(0, "6s"))), namespace)
    # Created suspended: nothing at all, and Kueue sees Suspended.
    wait_for(lambda: ("Suspended", "True") in conditions(kube, namespace, "queued"), what="Suspended")
    time.sleep(2)
    assert pods(kube, namespace, "queued") == {} and services(kube, namespace) == []
    assert conditions(kube, namespace, "queued") == [("Created", "True"), ("Suspended", "True")]
    assert "startTime" not in job_status(kube, namespace, "queued")

    admit(kube, namespace, "queued", "spot")
    wait_for(lambda: len(pods(kube, namespace, "queued")) == 3, what="3 pods after admission")
    for p in pods(kube, namespace, "queued").values():
        rtype = p["metadata"]["labels"]["training.kubeflow.org/replica-type"]
        assert p["metadata"]["labels"]["kueue.x-k8s.io/podset"] == rtype
        assert p["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == "tfjob-queued"
        assert p["spec"]["nodeSelector"] == {"flavor": "spot"}
        assert {"key": "flavor", "operator": "Equal", "value": "spot", "effect": "NoSchedule"} in p["spec"]["tolerations"]
    wait_for(lambda: ("Running", "True") in conditions(kube, namespace, "queued"), what="Running")
    assert active(kube, namespace, "queued") == {"PS": 1, "Worker": 2}

    # Preemption: every pod and service goes, every active is 0, Running False, Suspended True.
    preempt(kube, namespace, "queued")
    wait_for(lambda: pods(kube, namespace, "queued") == {} and services(kube, namespace) == [], timeout=60,
             what="pods and services deleted on preemption")
    wait_for(lambda: active(kube, namespace, "queued") == {"PS": 0, "Worker": 0}, what="active 0")
    cond = conditions(kube, namespace, "queued")
    assert ("Running", "False") in cond and ("Suspended", "True") in cond
    assert cond[-1] == ("Suspended", "True")

    # Re-admitted on another flavour: new pods carry the new placement; the job then finishes.
    admit(kube, namespace, "queued", "on-demand")
    wait_for(lambda: len(pods(kube, namespace, "queued")) == 3, what="3 pods after re-admission")
    assert {p["spec"]["nodeSelector"]["flavor"] for p in pods(kube, namespace, "queued").values()} == {"on-demand"}
    wait_for(lambda: ("Succeeded", "True") in conditions(kube, namespace, "queued"), timeout=90, what="Succeeded")
    st = job_status(kube, namespace, "queued")
    assert conditions(kube, namespace, "queued")[-1] == ("Succeeded", "True")
    assert ("Suspended", "False") in conditions(kube, namespace, "queued")
    assert all(rs.get("active", 0) == 0 for rs in st["replicaStatuses"].values())
    assert st["replicaStatuses"]["Worker"]["succeeded"] == 2
    assert "completionTime" in st


def test_kueue_reads_failed(kube, namespace, operator):
    label_flavor_nodes(kube)
    kube.apply(kueue_job("doomed", container(ends(3, "2s"))), namespace)
    wait_for(lambda: ("Suspended", "True") in conditions(kube, namespace, "doomed"), what="Suspended")
    admit(kube, namespace, "doomed", "spot")
    wait_for(lambda: ("Failed", "True") in conditions(kube, namespace, "doomed"), timeout=60, what="Failed")
    st = job_status(kube, namespace, "doomed")
    assert conditions(kube, namespace, "doomed")[-1] == ("Failed", "True")
    assert st["replicaStatuses"]["Worker"]["failed"] >= 1
    assert "completionTime" in st
