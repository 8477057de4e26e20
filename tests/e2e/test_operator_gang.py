"""Gang scheduling end to end: PodGroups of both flavours, Volcano's wait for the group, the
PriorityClass order of a computed minResources and Volcano's queue precedence
(docs/semantics.md 2.8), and kube-scheduler's own gang scheduling (the Workload API) with real
scheduling onto KWOK nodes."""
import json
import uuid

import pytest

from conftest import OperatorProcess, api_time, wait_for
from test_operator import container, has_condition, pods, tfjob


def gang_job(name):
    return tfjob(name, {"PS": {"template": container()}, "Worker": {"replicas": 2, "template": container()}},
                 {"schedulingPolicy": {"minAvailable": 3, "queue": "research"}})


def test_volcano_podgroup_gates_the_pods(kube, namespace, tfjob_crd):
    op = OperatorProcess(kube, "--gang-scheduler-name", "volcano", "--namespace", namespace).start()
    try:
        kube.apply(gang_job("vj"), namespace)
        pg = wait_for(lambda: kube.get("podgroups.scheduling.volcano.sh", "vj", namespace, check=False), what="the PodGroup")
        assert pg["spec"]["minMember"] == 3 and pg["spec"]["queue"] == "research"
        assert pg["metadata"]["ownerReferences"][0]["kind"] == "TFJob"
        import time
        time.sleep(2)
        assert pods(kube, namespace, "vj") == {}  # Pending PodGroup: no pods yet
        kube("patch", "podgroups.scheduling.volcano.sh", "vj", "-n", namespace, "--subresource=status", "--type=merge",
             "-p", '{"status":{"phase":"Inqueue"}}')
        wait_for(lambda: len(pods(kube, namespace, "vj")) == 3, what="pods once the group is admitted")
        for p in pods(kube, namespace, "vj").values():
            assert p["spec"]["schedulerName"] == "volcano"
            assert p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "vj"
    finally:
        assert op.stop() == 0


def test_scheduler_plugins_podgroup(kube, namespace, tfjob_crd):
    op = OperatorProcess(kube, "--gang-scheduler-name", "scheduler-plugins-scheduler", "--namespace", namespace).start()
    try:
        kube.apply(gang_job("sp"), namespace)
        pg = wait_for(lambda: kube.get("podgroups.scheduling.x-k8s.io", "sp", namespace, check=False), what="the PodGroup")
        assert pg["spec"]["minMember"] == 3
        wait_for(lambda: len(pods(kube, namespace, "sp")) == 3, what="pods (scheduler-plugins never waits)")
        for p in pods(kube, namespace, "sp").values():
            assert p["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
            assert p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "sp"
    finally:
        assert op.stop() == 0


def test_min_resources_follow_the_priority_class_order(kube, namespace, tfjob_crd):
    """minAvailable 2 of PS x1 (class low, 1 cpu) + Worker x2 (class high, 100m each): the two
    workers come first, so minResources is 200m; in key order (classes unread) it would be 1100m.
    The operator reads the classes with config/rbac's permissions (the e2e operator identity)."""
    high, low = f"{namespace}-high", f"{namespace}-low"
    for name, value in ((high, 100000), (low, 10)):
        kube.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                    "value": value})
    op = OperatorProcess(kube, "--gang-scheduler-name", "scheduler-plugins-scheduler", "--namespace", namespace).start()
    try:
        def replica(n, pc, cpu):
            t = container(priorityClassName=pc)
            t["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
            return {"replicas": n, "template": t}
        kube.apply(tfjob("prio", {"PS": replica(1, low, "1"), "Worker": replica(2, high, "100m")},
                         {"schedulingPolicy": {"minAvailable": 2}}), namespace)
        pg = wait_for(lambda: kube.get("podgroups.scheduling.x-k8s.io", "prio", namespace, check=False),
                      what="the PodGroup")
        assert pg["spec"]["minMember"] == 2
        assert pg["spec"]["minResources"] == {"cpu": "200m"}, json.dumps(pg["spec"])
    finally:
        assert op.stop() == 0
        kube("delete", "priorityclass", high, low, "--wait=false")


def test_volcano_keeps_an_existing_podgroups_queue(kube, namespace, tfjob_crd):
    """As upstream: a PodGroup that already exists keeps its non-empty queue, even when the job's
    schedulingPolicy.queue names another; the rest of its spec is the job's."""
    kube.apply({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": "vq"}, "spec": {"minMember": 1, "queue": "team-existing"}}, namespace)
    op = OperatorProcess(kube, "--gang-scheduler-name", "volcano", "--namespace", namespace).start()
    try:
        kube.apply(gang_job("vq"), namespace)
        pg = wait_for(lambda: (lambda g: g if g and g["spec"].get("minMember") == 3 else None)(
            kube.get("podgroups.scheduling.volcano.sh", "vq", namespace, check=False)), what="the PodGroup synced")
        assert pg["spec"]["queue"] == "team-existing", json.dumps(pg["spec"])
    finally:
        assert op.stop() == 0


# --- Kubernetes' own gang scheduling (--gang-scheduler-name kubernetes; docs/semantics.md D27, D31) -
# scripts/test-cluster turns the Workload API on with the gates of the cluster's version: on v1.36
# GenericWorkload and GangScheduling, scheduling.k8s.io/v1alpha2 served; on v1.37 GenericWorkload
# alone, scheduling.k8s.io/v1beta1 served. The operator finds the version by discovery; the
# tests expect each release's shape from the cluster's own version (GET /version), not from what
# the operator chose. The jobs below are scheduled by the real kube-scheduler onto KWOK nodes of
# their own (cpu 32 each, from tests/e2e/manifests/kwok-stages.yaml), tainted so that no other
# suite's pod lands on them.
CPU_PER_POD = "12"  # two pods fit on one node, three do not


class GangApi:
    """What one Kubernetes minor version serves and writes (docs/semantics.md D31's table)."""

    def __init__(self, minor):
        self.v1beta1 = minor >= 37
        version = "v1beta1" if self.v1beta1 else "v1alpha2"
        # kubectl's resource.version.group form: read in exactly the version the operator must write.
        self.workloads = f"workloads.{version}.scheduling.k8s.io"
        self.podgroups = f"podgroups.{version}.scheduling.k8s.io"
        self.scheduled = "PodGroupInitiallyScheduled" if self.v1beta1 else "PodGroupScheduled"

    def template_ref(self, workload):
        if self.v1beta1:
            return "workloadRef", {"workloadName": workload, "templateName": "tfjob"}
        return "podGroupTemplateRef", {"workload": {"workloadName": workload, "podGroupTemplateName": "tfjob"}}

    def disruption_mode(self, kind):
        """A gang is disrupted whole on v1beta1 (the operator writes `all`). On v1alpha2 the
        operator writes none (the field is behind an alpha gate): the Workload's template shows
        none, the PodGroup the API server's default, `Pod`."""
        if self.v1beta1:
            return {"all": {}}
        return "Pod" if kind == "PodGroup" else None


@pytest.fixture(scope="module")
def gang_api(kube):
    status, version, _ = kube.server_get("/version")
    assert status == 200, status
    return GangApi(int(version["minor"].rstrip("+")))


@pytest.fixture
def gang_nodes(kube):
    """add_node() creates one more KWOK node for this test; all are deleted afterwards."""
    tag, made = uuid.uuid4().hex[:8], []

    def add_node():
        name = f"gang-{tag}-{len(made)}"
        kube.apply({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {"tfjob.test/gang": tag, "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
            "spec": {"taints": [{"key": "tfjob.test/gang", "value": tag, "effect": "NoSchedule"}]}})
        made.append(name)
        wait_for(lambda: any(c["type"] == "Ready" and c["status"] == "True"
                             for c in kube.get("node", name)["status"].get("conditions", [])),
                 timeout=60, what=f"KWOK node {name} Ready")
        return name

    add_node.tag = tag
    yield add_node
    for name in made:
        kube("delete", "node", name, "--wait=false", check=False)


def native_job(name, tag, workers, run_policy=None):
    template = {"spec": {
        "nodeSelector": {"tfjob.test/gang": tag},
        "tolerations": [{"key": "tfjob.test/gang", "operator": "Equal", "value": tag, "effect": "NoSchedule"}],
        "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1",
                        "resources": {"requests": {"cpu": CPU_PER_POD, "memory": "1Gi"}}}]}}
    return tfjob(name, {"Worker": {"replicas": workers, "template": template}}, run_policy)


def bound(pod_map):
    return {n for n, p in pod_map.items() if p["spec"].get("nodeName")}


def scheduled_times(pod_map):
    """The PodScheduled=True transition time of every pod, as the API server recorded it."""
    out = {}
    for n, p in pod_map.items():
        for c in p.get("status", {}).get("conditions", []):
            if c["type"] == "PodScheduled" and c["status"] == "True":
                out[n] = api_time(c["lastTransitionTime"])
    return out


@pytest.fixture
def native_operator(kube, namespace, tfjob_crd):
    op = OperatorProcess(kube, "--gang-scheduler-name", "kubernetes", "--namespace", namespace).start()
    yield op
    assert op.stop() == 0


@pytest.mark.every_version
def test_kubernetes_gang_that_fits_is_bound_at_once(kube, namespace, native_operator, gang_nodes, gang_api):
    gang_nodes()
    kube.apply(native_job("fit", gang_nodes.tag, 2), namespace)
    wl = wait_for(lambda: kube.get(gang_api.workloads, "fit", namespace, check=False), what="the Workload")
    # (v1.36.3 and v1.37.2 serve schedulingConstraints: null, its JSON tag has no omitempty)
    assert [(t["name"], t["schedulingPolicy"], t.get("disruptionMode")) for t in wl["spec"]["podGroupTemplates"]] == \
        [("tfjob", {"gang": {"minCount": 2}}, gang_api.disruption_mode("Workload"))]
    assert wl["metadata"]["ownerReferences"][0]["kind"] == "TFJob"
    if gang_api.v1beta1:
        assert wl["spec"]["controllerRef"] == {"apiGroup": "kubeflow.org", "kind": "TFJob", "name": "fit"}
    pg = wait_for(lambda: kube.get(gang_api.podgroups, "fit", namespace, check=False), what="the PodGroup")
    assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    ref_field, ref = gang_api.template_ref("fit")
    assert pg["spec"][ref_field] == ref, json.dumps(pg["spec"])
    assert pg["spec"].get("disruptionMode") == gang_api.disruption_mode("PodGroup"), json.dumps(pg["spec"])
    wait_for(lambda: len(bound(pods(kube, namespace, "fit"))) == 2, timeout=90, what="both pods bound")
    placed = pods(kube, namespace, "fit")
    for p in placed.values():
        assert p["spec"]["schedulingGroup"] == {"podGroupName": "fit"}
        assert p["spec"]["schedulerName"] == "default-scheduler"
    # Permit released the gang together: the API server stamped both bindings in the same second
    # (its conditions have whole-second precision; one tick of slack for a second boundary).
    times = scheduled_times(placed)
    assert len(times) == 2 and max(times.values()) - min(times.values()) <= 1, times
    wait_for(lambda: has_condition(kube, namespace, "fit", "Running"), timeout=60, what="fit Running")


@pytest.mark.every_version
def test_kubernetes_gang_that_does_not_fit_binds_nothing_until_a_node_is_added(kube, namespace, native_operator,
                                                                              gang_nodes, gang_api):
    gang_nodes()  # room for two of the three pods
    kube.apply(native_job("big", gang_nodes.tag, 3), namespace)
    wait_for(lambda: len(pods(kube, namespace, "big")) == 3, timeout=60, what="the three pods")

    def scheduler_gave_up():
        pg = kube.get(gang_api.podgroups, "big", namespace, check=False) or {}
        if any(c["type"] == gang_api.scheduled and c["status"] == "False"
               for c in pg.get("status", {}).get("conditions", [])):
            return True
        return any(c["type"] == "PodScheduled" and c["status"] == "False"
                   for p in pods(kube, namespace, "big").values() for c in p.get("status", {}).get("conditions", []))

    wait_for(scheduler_gave_up, timeout=90, what="kube-scheduler to find the gang unschedulable")
    assert bound(pods(kube, namespace, "big")) == set()  # all or nothing: not the two that fit
    gang_nodes()
    wait_for(lambda: len(bound(pods(kube, namespace, "big"))) == 3, timeout=120,
             what="all three pods bound once a second node exists")
    wait_for(lambda: has_condition(kube, namespace, "big", "Running"), timeout=60, what="big Running")
    if gang_api.v1beta1:  # terminal once True (D31's table)
        wait_for(lambda: any(c["type"] == gang_api.scheduled and c["status"] == "True" for c in
                             kube.get(gang_api.podgroups, "big", namespace)["status"].get("conditions", [])),
                 timeout=60, what=f"{gang_api.scheduled}=True on the PodGroup")


def gone(kube, namespace, name, gang_api):
    return kube.get(gang_api.workloads, name, namespace, check=False) is None and \
        kube.get(gang_api.podgroups, name, namespace, check=False) is None


@pytest.mark.every_version
def test_kubernetes_gang_suspended_or_deleted_leaves_no_workload(kube, namespace, native_operator, gang_nodes,
                                                                 gang_api):
    gang_nodes()
    for name in ("sus", "del"):
        kube.apply(native_job(name, gang_nodes.tag, 1), namespace)
    for name in ("sus", "del"):
        wait_for(lambda: len(bound(pods(kube, namespace, name))) == 1, timeout=90, what=f"{name}'s pod bound")
        assert kube.get(gang_api.workloads, name, namespace, check=False) is not None
    kube("patch", "tfjob", "sus", "-n", namespace, "--type=merge", "-p", '{"spec":{"runPolicy":{"suspend":true}}}')
    kube("delete", "tfjob", "del", "-n", namespace, "--wait=false")
    wait_for(lambda: gone(kube, namespace, "sus", gang_api) and pods(kube, namespace, "sus") == {}, timeout=90,
             what="the suspended job's pods, Workload and PodGroup deleted")
    assert kube.get("tfjob", "sus", namespace) is not None
    wait_for(lambda: gone(kube, namespace, "del", gang_api), timeout=90,
             what="the garbage collector to delete the deleted job's Workload and PodGroup")
    # Resumed: a new Workload and PodGroup, and the pod bound again.
    kube("patch", "tfjob", "sus", "-n", namespace, "--type=merge", "-p", '{"spec":{"runPolicy":{"suspend":false}}}')
    wait_for(lambda: not gone(kube, namespace, "sus", gang_api) and len(bound(pods(kube, namespace, "sus"))) == 1, timeout=90,
             what="the resumed job's Workload, PodGroup and bound pod")
