"""Topology-aware scheduling under real Kueue (issue 26 item 2; docs/kueue.md, "Topology-aware
scheduling" and "Admission"), in both modes (tests/e2e/kueue.py MODES; the test ids name the
mode): Kueue's TFJob integration, or `tfjob operator --kueue-mode operator` with it off.

Four KWOK nodes of their own (type=tas; 32 cpu each, tests/e2e/manifests/kwok-stages.yaml) in two
blocks of two racks, a Topology of block, rack and hostname, and a flavour with that topologyName.
A job of 4 workers of 16 cpu that requires one block fills exactly one block: its Workload's
PodSet asks for it (podIndexLabel training.kubeflow.org/replica-index), its pods are created
with Kueue's topology scheduling gate, the podset label and the workload annotation, Kueue's
ungater places each on a node of the one block, and a pod that is deleted is created again with
the same three and lands in the same block."""
import json
import uuid

import pytest

from conftest import OperatorProcess, wait_for
from kueue import MODES, NAMESPACE_LABEL, Kueue
from test_multikueue import Watch
from test_operator import conditions, ends, pods, tfjob

V = "kueue.x-k8s.io/v1beta2"
BLOCK, RACK, HOST = "tas.test/block", "tas.test/rack", "kubernetes.io/hostname"
NODES = {f"tas-{b}-{r}": (b, f"{b}-{r}") for b in ("b1", "b2") for r in ("r1", "r2")}
TOPOLOGY, FLAVOR, QUEUE = "e2e-tas", "e2e-tas", "user-queue"
GATE = "kueue.x-k8s.io/topology"
INDEX_LABEL = "training.kubeflow.org/replica-index"


def node(name, block, rack):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
        "labels": {"type": "tas", BLOCK: block, RACK: rack, HOST: name,
                   "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}}, "spec": {}}


def ready(kube, name):
    n = kube.get("node", name, check=False) or {}
    return any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))


@pytest.fixture(scope="module", params=MODES)
def tas(request, kube, tfjob_crd):
    """Kueue in one mode, our operator in the same, the TAS nodes, Topology and flavour."""
    mode, stack = request.param, []
    try:
        kube.apply({"apiVersion": "v1", "kind": "List", "items": [node(n, b, r) for n, (b, r) in NODES.items()]})
        stack.append(("nodes", None))
        for n in NODES:
            wait_for(lambda: ready(kube, n), timeout=90, what=f"node {n} Ready")
        k = Kueue(kube, mode=mode).start()
        stack.append(("Kueue", k))
        op = OperatorProcess(kube, "--workers", "2", "--kueue-mode", mode, name="tas-operator").start()
        stack.append(("operator", op))
        kube.apply({"apiVersion": V, "kind": "Topology", "metadata": {"name": TOPOLOGY},
                    "spec": {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOST}]}})
        kube.apply({"apiVersion": V, "kind": "ResourceFlavor", "metadata": {"name": FLAVOR},
                    "spec": {"nodeLabels": {"type": "tas"}, "topologyName": TOPOLOGY}})
        yield kube, mode
    finally:
        kube.run("delete", "resourceflavor", FLAVOR, "--ignore-not-found", "--timeout=60s", check=False)
        kube.run("delete", "topology", TOPOLOGY, "--ignore-not-found", "--timeout=60s", check=False)
        codes = []
        for what, thing in reversed(stack):
            if thing is None:
                kube.run("delete", "node", *NODES, "--ignore-not-found", check=False)
            else:
                codes.append((what, thing.stop()))
    assert not [what for what, code in codes if code != 0], codes


def queue(kube):
    ns = "tas-" + uuid.uuid4().hex[:8]
    kube("create", "namespace", ns)
    kube("label", "namespace", ns, f"{NAMESPACE_LABEL}=true")
    kube.apply({"apiVersion": V, "kind": "ClusterQueue", "metadata": {"name": ns},
                "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                         "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                             {"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": "128"},
                                                            {"name": "memory", "nominalQuota": "64Gi"}]}]}]}})
    kube.apply({"apiVersion": V, "kind": "LocalQueue", "metadata": {"name": QUEUE, "namespace": ns},
                "spec": {"clusterQueue": ns}})
    return ns


def workload(kube, ns, job):
    for w in kube.get("workloads.kueue.x-k8s.io", None, ns)["items"]:
        if any(o["kind"] == "TFJob" and o["name"] == job for o in w["metadata"].get("ownerReferences", [])):
            return w
    return None


def admitted(kube, ns, job):
    w = workload(kube, ns, job) or {}
    return any(c["type"] == "Admitted" and c["status"] == "True" for c in w.get("status", {}).get("conditions", []))


def placed(kube, ns, job, n):
    """The job's n pods, each ungated and bound to a node; None until then."""
    ps = pods(kube, ns, job)
    if len(ps) != n or any(p["spec"].get("schedulingGates") or not p["spec"].get("nodeName") for p in ps.values()):
        return None
    return ps


def test_kueue_tas_places_a_job_that_requires_one_block_in_one_block(tas):
    kube, mode = tas
    ns = queue(kube)
    try:
        watch = Watch(kube, f"/api/v1/namespaces/{ns}/pods")
        job = tfjob("tas", {"Worker": {"replicas": 4, "template": {
            "metadata": {"annotations": dict(ends(0, "600s"), **{"kueue.x-k8s.io/podset-required-topology": BLOCK})},
            "spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1",
                                     "resources": {"requests": {"cpu": "16", "memory": "1Gi"},
                                                   "limits": {"cpu": "16", "memory": "1Gi"}}}]}}}},
                    {"suspend": True} if mode == "operator" else None)  # no Kueue webhook suspends it there
        job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": QUEUE}
        kube("create", "-n", ns, "-f", "-", stdin=json.dumps(job))
        wait_for(lambda: admitted(kube, ns, "tas"), timeout=60, what="the Workload admitted")
        wl = workload(kube, ns, "tas")
        assert wl["spec"]["podSets"][0]["topologyRequest"] == {"required": BLOCK, "podIndexLabel": INDEX_LABEL}
        assert wl["status"]["admission"]["podSetAssignments"][0].get("topologyAssignment")
        ps = wait_for(lambda: placed(kube, ns, "tas", 4), timeout=90, what="4 pods ungated and bound")
        blocks = {NODES[p["spec"]["nodeName"]][0] for p in ps.values()}
        assert len(blocks) == 1, {p["metadata"]["name"]: p["spec"]["nodeName"] for p in ps.values()}
        for p in ps.values():
            # Kueue's ungater chose the node (the topology's lowest level), not the scheduler alone.
            assert p["spec"]["nodeSelector"].get(HOST) == p["spec"]["nodeName"], p["spec"]["nodeSelector"]
            assert p["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "worker"
            assert p["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == wl["metadata"]["name"]
        wait_for(lambda: ("Running", "True") in conditions(kube, ns, "tas"), timeout=60, what="Running")

        # A pod deleted under the job is created again with the gate, and Kueue puts it back in
        # the same block (the other block's nodes are free: only the topology keeps it there).
        victim = sorted(ps)[0]
        old_uid = ps[victim]["metadata"]["uid"]
        kube("delete", "pod", victim, "-n", ns, "--wait=false")
        again = wait_for(lambda: (lambda q: q if q and q[victim]["metadata"]["uid"] != old_uid else None)(
            placed(kube, ns, "tas", 4)), timeout=90, what="the deleted pod created again and placed")
        assert NODES[again[victim]["spec"]["nodeName"]][0] in blocks
        seen, watch = watch.stop(), None
        created = [e["object"] for e in seen if e["type"] == "ADDED"]
        # 4, then the one deleted; KWOK deletes by name without a uid precondition, so its late
        # delete can take the new pod of the same name too, which the operator creates once more
        # (tests/e2e/manifests/kwok-stages.yaml): seen in 2 of 4 runs.
        names = [o["metadata"]["name"] for o in created]
        assert len(created) >= 5 and set(names[4:]) == {victim}, names
        for o in created:  # every pod, the new one too, as the operator created it
            assert {"name": GATE} in o["spec"].get("schedulingGates", []), o["metadata"]["name"]
            assert o["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "worker"
            assert o["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == wl["metadata"]["name"]
    finally:
        if locals().get("watch"):
            watch.stop()
        kube.run("delete", "tfjobs", "--all", "-n", ns, "--timeout=60s", check=False)
        kube.run("delete", "namespace", ns, "--timeout=90s", check=False)
        kube.run("delete", "clusterqueue", ns, "--timeout=60s", check=False)
