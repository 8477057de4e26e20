"""The hierarchical gang (docs/semantics.md D33) against the real kube-scheduler of v1.37: a
CompositePodGroup over the PodGroups of a TFJob's PS (and Chief) and of its Workers, with the
Evaluator outside the gang. CompositePodGroups are alpha (feature gates CompositePodGroup and
TopologyAwareWorkloadScheduling, runtime-config scheduling.k8s.io/v1alpha3=true): the module brings
up a second control plane of the suite's version with them (scripts/test-cluster
--composite-pod-groups, one KWOK node, ~7 s warm), so the suite's own cluster keeps testing the
flat v1beta1 gang of a cluster without them. Skipped below v1.37 (no CompositePodGroup API)."""
import json
import os
import shutil
import tempfile
import uuid

import pytest

from conftest import Kube, OperatorProcess, wait_for
from test_operator import has_condition, pods, tfjob

CPU = {"PS": "4", "Worker": "12", "Evaluator": "1"}  # a node (cpu 32) holds a PS, two workers and an evaluator
WORKLOADS = "workloads.v1beta1.scheduling.k8s.io"
PODGROUPS = "podgroups.v1beta1.scheduling.k8s.io"
COMPOSITES = "compositepodgroups.v1alpha3.scheduling.k8s.io"


@pytest.fixture(scope="module")
def ckube(kube):
    """A cluster of the suite's version with CompositePodGroups on, for this module only."""
    status, version, _ = kube.server_get("/version")
    assert status == 200, status
    if int(version["minor"].rstrip("+")) < 37:
        pytest.skip("CompositePodGroups exist from Kubernetes v1.37 on")
    d = tempfile.mkdtemp(prefix="tfjob-e2e-composite-")
    os.rmdir(d)
    kube.script("up", d, "--nodes", "1", "--composite-pod-groups",
                "--kubernetes", os.environ.get("TFJOB_K8S_VERSION") or os.environ["TFJOB_TEST_KUBERNETES"])
    try:
        c = Kube(d, os.path.join(d, "kubeconfig"))
        c("apply", "-f", os.path.join(os.path.dirname(__file__), "..", "..", "config", "crd", "kubeflow.org_tfjobs.yaml"))
        c.wait_established("tfjobs.kubeflow.org", timeout=30)
        yield c
    finally:
        if not os.environ.get("TFJOB_E2E_KEEP"):
            kube.script("down", d)
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def cns(ckube):
    name = "e2e-" + uuid.uuid4().hex[:8]
    ckube("create", "namespace", name)
    yield name
    ckube("delete", "namespace", name, "--wait=false")


@pytest.fixture
def operator(ckube, cns):
    op = OperatorProcess(ckube, "--gang-scheduler-name", "kubernetes", "--namespace", cns).start()
    yield op
    assert op.stop() == 0


def node_factory(k):
    """add(labels) creates a KWOK node (cpu 32) of cluster `k`, tainted for one test; done() deletes them."""
    tag, made = uuid.uuid4().hex[:8], []

    def add(extra_labels=None):
        name = f"cpg-{tag}-{len(made)}"
        labels = {"tfjob.test/gang": tag, "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
        labels.update(extra_labels or {})
        k.apply({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": labels},
            "spec": {"taints": [{"key": "tfjob.test/gang", "value": tag, "effect": "NoSchedule"}]}})
        made.append(name)
        wait_for(lambda: any(c["type"] == "Ready" and c["status"] == "True"
                             for c in k.get("node", name)["status"].get("conditions", [])),
                 timeout=60, what=f"KWOK node {name} Ready")
        return name

    def done():
        for name in made:
            k("delete", "node", name, "--wait=false", check=False)

    add.tag, add.made, add.done = tag, made, done
    return add


@pytest.fixture
def nodes(ckube):
    add = node_factory(ckube)
    yield add
    add.done()


def replica(rtype, n, tag, selector=None):
    t = {"spec": {
        "nodeSelector": dict({"tfjob.test/gang": tag}, **(selector or {})),
        "tolerations": [{"key": "tfjob.test/gang", "operator": "Equal", "value": tag, "effect": "NoSchedule"}],
        "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1",
                        "resources": {"requests": {"cpu": CPU[rtype], "memory": "1Gi"}}}]}}
    return {"replicas": n, "template": t}


def ps_job(name, tag, ps_selector=None, min_available=None):
    return tfjob(name, {"PS": replica("PS", 1, tag, ps_selector), "Worker": replica("Worker", 2, tag),
                        "Evaluator": replica("Evaluator", 1, tag)},
                 {"schedulingPolicy": {"minAvailable": min_available}} if min_available else None)


def bound(pod_map):
    return {n for n, p in pod_map.items() if p["spec"].get("nodeName")}


def hierarchy(ckube, ns, name):
    """The job's Workload, CompositePodGroup and member PodGroups as the API server has them (None: missing)."""
    return {"workload": ckube.get(WORKLOADS, name, ns, check=False),
            "composite": ckube.get(COMPOSITES, name, ns, check=False),
            "leaders": ckube.get(PODGROUPS, f"{name}.leaders", ns, check=False),
            "workers": ckube.get(PODGROUPS, f"{name}.workers", ns, check=False)}


@pytest.mark.every_version
def test_composite_gang_that_fits_is_bound(ckube, cns, operator, nodes):
    nodes()
    ckube.apply(ps_job("fit", nodes.tag), cns)
    wait_for(lambda: all(hierarchy(ckube, cns, "fit").values()), timeout=60, what="the hierarchy")
    h = hierarchy(ckube, cns, "fit")
    [composite] = h["workload"]["spec"]["compositePodGroupTemplates"]
    assert (composite["name"], composite["schedulingPolicy"], composite["disruptionMode"]) == \
        ("tfjob", {"gang": {"minGroupCount": 2}}, {"all": {}}), json.dumps(composite)
    assert [(t["name"], t["schedulingPolicy"]) for t in composite["podGroupTemplates"]] == \
        [("leaders", {"gang": {"minCount": 1}}), ("workers", {"gang": {"minCount": 2}})]
    assert h["composite"]["spec"]["workloadRef"] == {"workloadName": "fit", "templateName": "tfjob"}
    assert h["composite"]["spec"]["disruptionMode"] == {"all": {}}
    assert h["composite"]["metadata"]["ownerReferences"][0]["kind"] == "TFJob"
    for member, count in (("leaders", 1), ("workers", 2)):
        spec = h[member]["spec"]
        assert spec["parentCompositePodGroupName"] == "fit", json.dumps(spec)
        assert spec["workloadRef"] == {"workloadName": "fit", "templateName": member}
        assert spec["schedulingPolicy"] == {"gang": {"minCount": count}}
    assert ckube.get(PODGROUPS, "fit", cns, check=False) is None  # no flat PodGroup
    wait_for(lambda: len(bound(pods(ckube, cns, "fit"))) == 4, timeout=90, what="every pod bound")
    groups = {n: p["spec"].get("schedulingGroup") for n, p in pods(ckube, cns, "fit").items()}
    assert groups == {"fit-ps-0": {"podGroupName": "fit.leaders"}, "fit-worker-0": {"podGroupName": "fit.workers"},
                      "fit-worker-1": {"podGroupName": "fit.workers"}, "fit-evaluator-0": None}, groups
    wait_for(lambda: has_condition(ckube, cns, "fit", "Running"), timeout=60, what="fit Running")


@pytest.mark.every_version
def test_composite_gang_whose_ps_cannot_be_placed_binds_no_worker(ckube, cns, operator, nodes):
    """The PS selects a node label no node has; the workers' node has room for both of them. With
    minAvailable 3 the workers' PodGroup needs its two pods (3 minus the PS), and the
    CompositePodGroup needs both groups: no worker is bound. (The flat gang binds them: the test
    below.) The Evaluator, outside the gang, is bound. Once a node the PS fits on exists, all are."""
    nodes()
    ckube.apply(ps_job("nops", nodes.tag, {"tfjob.test/ps": "yes"}, min_available=3), cns)
    wait_for(lambda: hierarchy(ckube, cns, "nops")["workers"], timeout=60, what="the workers' PodGroup")
    assert hierarchy(ckube, cns, "nops")["workers"]["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    wait_for(lambda: len(pods(ckube, cns, "nops")) == 4, timeout=60, what="the four pods")

    def ps_unschedulable():
        ps = pods(ckube, cns, "nops").get("nops-ps-0", {})
        return any(c["type"] == "PodScheduled" and c["status"] == "False" for c in ps.get("status", {}).get("conditions", []))

    wait_for(ps_unschedulable, timeout=90, what="kube-scheduler to find the PS unschedulable")
    wait_for(lambda: "nops-evaluator-0" in bound(pods(ckube, cns, "nops")), timeout=60,
             what="the evaluator (outside the gang) bound")
    assert bound(pods(ckube, cns, "nops")) == {"nops-evaluator-0"}, "a worker was bound without its PS"
    nodes({"tfjob.test/ps": "yes"})
    wait_for(lambda: len(bound(pods(ckube, cns, "nops"))) == 4, timeout=120,
             what="every pod bound once the PS has a node")
    placed = pods(ckube, cns, "nops")
    assert placed["nops-ps-0"]["spec"]["nodeName"] == nodes.made[-1]  # the only node it selects
    wait_for(lambda: has_condition(ckube, cns, "nops", "Running"), timeout=60, what="nops Running")


@pytest.mark.every_version
def test_flat_gang_binds_workers_without_their_ps(kube, namespace, tfjob_crd):
    """The contrast, on the suite's own cluster (no CompositePodGroups: the flat gang of D27/D31):
    the same job's one PodGroup needs any 3 of its 4 pods, so the two workers and the evaluator are
    bound while the PS cannot be placed. What the hierarchy above prevents."""
    add = node_factory(kube)
    op = OperatorProcess(kube, "--gang-scheduler-name", "kubernetes", "--namespace", namespace).start()
    try:
        add()
        kube.apply(ps_job("flat", add.tag, {"tfjob.test/ps": "yes"}, min_available=3), namespace)
        wait_for(lambda: len(bound(pods(kube, namespace, "flat"))) == 3, timeout=90,
                 what="the workers and the evaluator bound without the PS")
        assert bound(pods(kube, namespace, "flat")) == {"flat-worker-0", "flat-worker-1", "flat-evaluator-0"}
        assert all(p["spec"]["schedulingGroup"] == {"podGroupName": "flat"} for p in pods(kube, namespace, "flat").values())
    finally:
        assert op.stop() == 0
        add.done()


@pytest.mark.every_version
def test_composite_gang_suspended_or_deleted_leaves_nothing(ckube, cns, operator, nodes):
    nodes()
    nodes()
    for name in ("sus", "del"):
        ckube.apply(ps_job(name, nodes.tag), cns)
    for name in ("sus", "del"):
        wait_for(lambda: len(bound(pods(ckube, cns, name))) == 4, timeout=90, what=f"{name}'s pods bound")
        assert all(hierarchy(ckube, cns, name).values())

    def none_left(name):
        return not any(hierarchy(ckube, cns, name).values())

    ckube("patch", "tfjob", "sus", "-n", cns, "--type=merge", "-p", '{"spec":{"runPolicy":{"suspend":true}}}')
    ckube("delete", "tfjob", "del", "-n", cns, "--wait=false")
    wait_for(lambda: none_left("sus") and pods(ckube, cns, "sus") == {}, timeout=90,
             what="the suspended job's pods, Workload, CompositePodGroup and PodGroups deleted")
    assert ckube.get("tfjob", "sus", cns) is not None
    wait_for(lambda: none_left("del"), timeout=90,
             what="the garbage collector to delete the deleted job's Workload, CompositePodGroup and PodGroups")
    ckube("patch", "tfjob", "sus", "-n", cns, "--type=merge", "-p", '{"spec":{"runPolicy":{"suspend":false}}}')
    wait_for(lambda: all(hierarchy(ckube, cns, "sus").values()) and len(bound(pods(ckube, cns, "sus"))) == 4,
             timeout=90, what="the resumed job's hierarchy and bound pods")
