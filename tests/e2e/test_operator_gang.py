"""Gang scheduling end to end: PodGroups of both flavours, Volcano's wait for the group, the
PriorityClass order of a computed minResources and Volcano's queue precedence
(docs/semantics.md 2.8)."""
import json

import pytest

from conftest import OperatorProcess, wait_for
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
