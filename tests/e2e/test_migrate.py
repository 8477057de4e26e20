"""Switching from training-operator to tfjob on a running cluster (docs/migrate.md): the TFJob CRD
stays, the old controller stops, ours starts and adopts the running jobs. Two cases: the pods and
services were made by a previous `tfjob operator` process (stopped while its job ran), and by the
upstream controller (made here with kubectl exactly as it would: `tfjob render` gives the same
names, labels and TF_CONFIG, owned by the job, with the status it had written). Either way
nothing is created twice and the job finishes with its status continued, not restarted."""
import json
import os
import subprocess

from conftest import ROOT, OperatorProcess, wait_for
from test_operator import conditions, container, ends, job_status, pods, tfjob
from test_operator_chaos import PODS, SERVICES, Api, Watch


class CreationWatch:
    """Every pod and service uid of the namespace from before the operator starts to its end,
    from real watches (test_operator_chaos.Watch: a list, then a watch from the list's
    resourceVersion, resumed after a dropped connection), so a child created and deleted again
    is seen too; a duplicate is a second uid for one name."""

    def __init__(self, kube, ns):
        self.api, self.ns, self.watches = Api(kube.dir), ns, {}
        self.seen = {}

    def __enter__(self):
        self.watches = {kind: Watch(self.api, path.format(ns=self.ns)) for kind, path in (("pods", PODS),
                                                                                          ("services", SERVICES))}
        return self

    def __exit__(self, *exc):
        for kind, w in self.watches.items():
            # Caught up: every child there is now has been seen (nothing is missed at the end).
            now = {o["metadata"]["name"]: o["metadata"]["uid"]
                   for o in self.api.get(w.path)["items"]}
            w.wait(lambda w: all(uid in w.uids.get(name, ()) for name, uid in now.items()), 30)
            w.stop()
            assert w.error is None, w.error
            self.seen.update({(kind, name): set(uids) for name, uids in w.uids.items()})

    def duplicates(self):
        return {k: v for k, v in self.seen.items() if len(v) > 1}


def take_over(kube, ns, job, name):
    """Starts our operator for `ns` under a creation watch, waits for `job` to succeed, stops it."""
    with CreationWatch(kube, ns) as watch:
        op = OperatorProcess(kube, "--namespace", ns, name=name).start()
        try:
            wait_for(lambda: ("Succeeded", "True") in conditions(kube, ns, job), timeout=90,
                     what=f"{job} Succeeded under {name}")
        finally:
            assert op.stop() == 0
    assert watch.duplicates() == {}
    return watch


def uids(kube, ns):
    return {(kind, o["metadata"]["name"]): o["metadata"]["uid"]
            for kind in ("pods", "services") for o in kube.get(kind, None, ns)["items"]}


def test_adopts_the_children_of_a_previous_operator_process(kube, namespace, tfjob_crd):
    job = tfjob("handover", {"PS": {"template": container()},
                             "Worker": {"replicas": 3, "template": container(ends(0, "10s"))}})
    old = OperatorProcess(kube, "--namespace", namespace, name="old-operator").start()
    try:
        kube.apply(job, namespace)
        wait_for(lambda: ("Running", "True") in conditions(kube, namespace, "handover"), timeout=60, what="Running")
    finally:
        assert old.stop() == 0
    before = uids(kube, namespace)
    assert len(before) == 8
    start_time = job_status(kube, namespace, "handover")["startTime"]
    watch = take_over(kube, namespace, "handover", "new-operator")
    assert {k: v for k, v in watch.seen.items()} == {k: {v} for k, v in before.items()}, "a child was recreated"
    st = job_status(kube, namespace, "handover")
    assert st["startTime"] == start_time
    assert [c for c, s in conditions(kube, namespace, "handover") if s == "True"][-1] == "Succeeded"
    assert st["replicaStatuses"]["Worker"]["succeeded"] == 3


def test_adopts_children_made_by_the_upstream_controller(kube, namespace, tfjob_crd, tmp_path):
    job = tfjob("upstream", {"PS": {"template": container()},
                             "Worker": {"replicas": 2, "template": container(ends(0, "8s"))}})
    job["metadata"]["namespace"] = namespace
    kube.apply(job)  # no operator of ours is running for this namespace
    created = kube.get("tfjob", "upstream", namespace)
    # What training-operator left behind: the children it made, owned by the job...
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    rendered = json.loads(subprocess.run([os.path.join(ROOT, "build", "tfjob"), "render", str(path), "-o", "json"],
                                         check=True, stdout=subprocess.PIPE, text=True).stdout)
    for obj in rendered["items"]:
        obj["metadata"]["ownerReferences"][0]["uid"] = created["metadata"]["uid"]
    kube("create", "-f", "-", stdin=json.dumps(rendered))
    wait_for(lambda: all(p["status"].get("phase") == "Running" for p in pods(kube, namespace, "upstream").values())
             and len(pods(kube, namespace, "upstream")) == 3, what="the upstream-made pods Running")
    # ...and the status it wrote.
    start = "2026-01-01T00:00:00Z"
    status = {"status": {"startTime": start, "conditions": [
        {"type": "Created", "status": "True", "reason": "TFJobCreated", "message": "TFJob upstream is created.",
         "lastUpdateTime": start, "lastTransitionTime": start},
        {"type": "Running", "status": "True", "reason": "TFJobRunning", "message": "TFJob upstream is running.",
         "lastUpdateTime": start, "lastTransitionTime": start}],
        "replicaStatuses": {"PS": {"active": 1}, "Worker": {"active": 2}}}}
    kube("patch", "tfjob", "upstream", "-n", namespace, "--subresource=status", "--type=merge", "-p", json.dumps(status))
    before = uids(kube, namespace)
    assert len(before) == 6
    watch = take_over(kube, namespace, "upstream", "tfjob-takes-over")
    assert set(watch.seen) == set(before), "our operator created children of its own"
    st = job_status(kube, namespace, "upstream")
    assert st["startTime"] == start
    assert [c["type"] for c in st["conditions"]] == ["Created", "Running", "Succeeded"]
    assert st["conditions"][0]["lastTransitionTime"] == start
    assert st["replicaStatuses"]["Worker"]["succeeded"] == 2
