"""Upstream's CRD left in place (docs/semantics.md D29, issue 14 item 8): a status schema without
replicaStatuses.<type>.restarts makes the API server prune it, so the backoff count would start
again from 0 after every operator restart. The operator says so at start-up (a log line and
tfjob_crd_status_schema_ok 0), keeps the counts in an annotation, and backoffLimit holds across a
restart. The test installs such a CRD (this repo's, minus our two fields) and restores ours."""
import copy
import json
import os

import yaml

from conftest import ROOT, OperatorProcess, wait_for
from test_operator import container, ends, job_status, tfjob
from test_operator_chaos import PODS, Api, Watch

CRD_FILE = os.path.join(ROOT, "config", "crd", "kubeflow.org_tfjobs.yaml")
ANNOTATION = "tfjob.kubeflow.org/replica-counters"


def crd_without_our_status_fields():
    with open(CRD_FILE) as f:
        crd = yaml.safe_load(f)
    crd = copy.deepcopy(crd)
    for v in crd["spec"]["versions"]:
        props = (v["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["replicaStatuses"]
                 ["additionalProperties"]["properties"])
        props.pop("restarts", None)
        props.pop("disruptions", None)
    return crd


def pruned(kube, ns):
    """True once the API server prunes restarts from a status write (the new schema is in force)."""
    kube("patch", "tfjob", "probe", "-n", ns, "--subresource=status", "--type=merge", "-p",
         json.dumps({"status": {"replicaStatuses": {"Worker": {"restarts": 1, "active": 1}}}}))
    rs = job_status(kube, ns, "probe").get("replicaStatuses", {}).get("Worker", {})
    return rs.get("active") == 1 and "restarts" not in rs


def test_D29_backoff_limit_holds_across_a_restart_with_upstreams_crd(kube, namespace, tfjob_crd):
    api = Api(kube.dir)
    ops = []
    try:
        kube.apply(crd_without_our_status_fields())
        kube.apply(tfjob("probe", {"Worker": {"template": container()}}, {"suspend": True}), namespace)
        wait_for(lambda: pruned(kube, namespace), timeout=30, what="the CRD without restarts in force")
        kube("delete", "tfjob", "probe", "-n", namespace)

        pods = Watch(api, PODS.format(ns=namespace))
        op = OperatorProcess(kube, "--namespace", namespace, name="upstream-crd").start()
        ops.append(op)
        assert op.metric("tfjob_crd_status_schema_ok") == 0
        with open(op.log_path, errors="replace") as f:
            log = f.read()
        assert "status schema drops replicaStatuses fields" in log and "pruned=restarts,disruptions" in log, log[-2000:]

        # ExitCode 137 with backoffLimit 2: exactly 2 restarts (3 pods) in all, though the operator
        # is killed after the first one and its status has no restarts at all.
        kube.apply(tfjob("retry", {"Worker": {"restartPolicy": "ExitCode", "template": container(ends(137, "2s"))}},
                         {"backoffLimit": 2}), namespace)

        def annotated(n):
            j = kube.get("tfjob", "retry", namespace)
            return json.loads(j["metadata"].get("annotations", {}).get(ANNOTATION, "{}")).get("Worker", {}).get("restarts") == n
        wait_for(lambda: annotated(1), timeout=60, what="the first restart counted in the annotation")
        assert "restarts" not in job_status(kube, namespace, "retry").get("replicaStatuses", {}).get("Worker", {})
        wait_for(lambda: len(pods.uids.get("retry-worker-0", ())) == 2, timeout=30, what="the pod recreated")
        op.kill()
        op = OperatorProcess(kube, "--namespace", namespace, name="upstream-crd-2").start()
        ops.append(op)
        wait_for(lambda: ("Failed", "True") in [(c["type"], c["status"]) for c in
                                                job_status(kube, namespace, "retry").get("conditions", [])],
                 timeout=90, what="Failed on the backoff limit")
        st = job_status(kube, namespace, "retry")
        assert st["conditions"][-1]["message"] == "Job retry has failed because it has reached the specified backoff limit"
        assert st["replicaStatuses"] == {"Worker": {"failed": 1}}, st  # restarts pruned by the CRD
        assert annotated(2)
        assert len(pods.uids["retry-worker-0"]) == 3, pods.uids  # 1 + backoffLimit, not reset by the restart
        import urllib.request
        with urllib.request.urlopen(f"http://127.0.0.1:{op.port('health probes')}/readyz", timeout=5) as r:
            assert r.status == 200
        assert op.metric("tfjob_crd_status_schema_ok") == 0
        assert op.stop() == 0
        pods.stop()
    finally:
        for o in ops:
            o.kill()
        kube("apply", "-f", CRD_FILE)  # ours again, for the other tests
        kube.wait_established("tfjobs.kubeflow.org", timeout=30)


def test_D29_our_crd_is_reported_ok(kube, namespace, tfjob_crd):
    op = OperatorProcess(kube, "--namespace", namespace, name="our-crd").start()
    try:
        assert op.metric("tfjob_crd_status_schema_ok") == 1
        with open(op.log_path, errors="replace") as f:
            assert "the TFJob CRD keeps replicaStatuses.<type>.restarts and .disruptions" in f.read()
        assert op.stop() == 0
    finally:
        op.kill()
