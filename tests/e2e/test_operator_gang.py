"""Gang scheduling end to end: PodGroups of both flavours, Volcano's wait for the group."""
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
