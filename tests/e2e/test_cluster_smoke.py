"""Smoke test of the test cluster itself (scripts/test-cluster): the CRD, KWOK's pod stages,
garbage collection, the operator's least-privilege identity, an API server restart, and a
clean `down`."""
import json
import os
import subprocess
import tempfile
import time

import pytest

from conftest import ROOT, wait_for


def pod(name, annotations=None, containers=("tensorflow",)):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"containers": [{"name": c, "image": "busybox"} for c in containers]}}


def running(pid):
    """True while the process exists and is not a zombie waiting for init to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def phase(kube, ns, name):
    p = kube.get("pod", name, ns, check=False)
    return p and p["status"].get("phase")


@pytest.mark.every_version
def test_crd_applies_and_kubectl_lists_tfjobs(kube, namespace):
    kube("apply", "-f", os.path.join(ROOT, "config", "crd", "kubeflow.org_tfjobs.yaml"))
    kube.wait_established("tfjobs.kubeflow.org", timeout=30)
    kube.apply({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "smoke"},
                "spec": {"runPolicy": {}, "tfReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [
                    {"name": "tensorflow", "image": "tf"}]}}}}}}, namespace)
    out = kube("get", "tfjobs", "-n", namespace)
    assert out.splitlines()[0].split() == ["NAME", "STATE", "AGE"]
    assert out.splitlines()[1].startswith("smoke")
    job = kube.get("tfjob", "smoke", namespace)
    assert job["spec"]["runPolicy"]["suspend"] is False  # the CRD's structural default (runPolicy present)


def test_exit_code_annotations_end_pods(kube, namespace):
    kube.apply(pod("ok", {"tfjob.test/exit-code": "0", "tfjob.test/run-for": "1s"}, ("tensorflow", "sidecar")), namespace)
    kube.apply(pod("bad", {"tfjob.test/exit-code": "3"}), namespace)
    kube.apply(pod("runs"), namespace)
    wait_for(lambda: phase(kube, namespace, "ok") == "Succeeded", what="pod ok Succeeded")
    wait_for(lambda: phase(kube, namespace, "bad") == "Failed", what="pod bad Failed")
    ok = kube.get("pod", "ok", namespace)
    assert [c["state"]["terminated"]["exitCode"] for c in ok["status"]["containerStatuses"]] == [0, 0]
    bad = kube.get("pod", "bad", namespace)
    assert bad["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    runs = kube.get("pod", "runs", namespace)
    assert runs["status"]["phase"] == "Running"
    assert runs["status"]["podIP"].startswith("10.244.")


def test_restart_in_place_annotation_sets_restart_count(kube, namespace):
    kube.apply(pod("restarts", {"tfjob.test/restart-in-place": "2"}), namespace)
    wait_for(lambda: phase(kube, namespace, "restarts") == "Running", what="pod Running")
    p = kube.get("pod", "restarts", namespace)
    assert p["status"]["containerStatuses"][0]["restartCount"] == 2


def test_owned_children_are_garbage_collected(kube, namespace):
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}, namespace)
    uid = kube.get("configmap", "owner", namespace)["metadata"]["uid"]
    child = pod("child")
    child["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid,
                                             "controller": True, "blockOwnerDeletion": True}]
    kube.apply(child, namespace)
    wait_for(lambda: phase(kube, namespace, "child") == "Running", what="child Running")
    kube("delete", "configmap", "owner", "-n", namespace)
    wait_for(lambda: kube.get("pod", "child", namespace, check=False) is None, timeout=60,
             what="the garbage collector to delete the child pod")


@pytest.mark.every_version
def test_podgroup_crds_are_installed(kube, namespace):
    kube.apply({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "v"},
                "spec": {"minMember": 2, "queue": "default"}}, namespace)
    kube.apply({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "s"},
                "spec": {"minMember": 2}}, namespace)
    assert kube.get("podgroups.scheduling.volcano.sh", "v", namespace)["spec"]["minMember"] == 2
    assert kube.get("podgroups.scheduling.x-k8s.io", "s", namespace)["spec"]["minMember"] == 2


@pytest.mark.every_version
def test_operator_identity_has_least_privilege(kube, namespace):
    op = os.path.join(kube.dir, "operator.kubeconfig")
    r = kube.run("apply", "-n", namespace, "-f", "-", stdin=json.dumps(pod("made-by-operator")), kubeconfig=op)
    assert r.returncode == 0
    assert kube.run("auth", "can-i", "delete", "pods", "-n", namespace, kubeconfig=op, check=False).stdout.strip() == "yes"
    assert kube.run("auth", "can-i", "patch", "tfjobs.kubeflow.org", "--subresource=status", "-n", namespace, kubeconfig=op,
                    check=False).stdout.strip() == "yes"
    denied = kube.run("get", "secrets", "-n", namespace, kubeconfig=op, check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr
    assert kube.run("auth", "can-i", "create", "deployments", "-n", namespace, kubeconfig=op,
                    check=False).stdout.strip() == "no"


def test_apiserver_restart_keeps_the_data(kube, namespace):
    kube("create", "configmap", "survivor", "-n", namespace, "--from-literal=k=v")
    kube.script("stop-apiserver", kube.dir)
    assert kube.run("get", "configmap", "survivor", "-n", namespace, check=False).returncode != 0
    kube.script("start-apiserver", kube.dir)
    assert kube.get("configmap", "survivor", namespace)["data"] == {"k": "v"}
    # The rest of the cluster carries on: a new pod still runs.
    kube.apply(pod("after-restart"), namespace)
    # The scheduler, KWOK and the controller-manager find the API server again through client-go's
    # reflectors, which back off while it is away: up to 30 s, and jitter can double that. On a
    # busy machine the restart takes long enough for that backoff to be reached, so the wait allows
    # for it and, when it runs out all the same, says where the pod stopped.
    try:
        wait_for(lambda: phase(kube, namespace, "after-restart") == "Running", timeout=150,
                 what="pod Running after restart")
    except AssertionError as e:
        raise AssertionError(f"{e}\n{restart_diagnostics(kube, namespace, 'after-restart')}") from None


def restart_diagnostics(kube, ns, name):
    """Where a pod stands and what the components that should move it last logged."""
    lines = []
    p = kube.get("pod", name, ns, check=False) or {}
    status = p.get("status", {})
    lines.append(f"pod {name}: phase={status.get('phase')} node={p.get('spec', {}).get('nodeName')} "
                 f"conditions={json.dumps(status.get('conditions', []))}")
    nodes = kube.run("get", "nodes", "-o", "json", check=False)
    if nodes.returncode == 0:
        for n in json.loads(nodes.stdout)["items"]:
            ready = [c.get("status") for c in n["status"].get("conditions", []) if c["type"] == "Ready"]
            lines.append(f"node {n['metadata']['name']}: Ready={ready} taints={n['spec'].get('taints', [])}")
    for component in ("kube-scheduler", "kwok", "kube-controller-manager"):
        path = os.path.join(kube.dir, "logs", component + ".log")
        try:
            with open(path, errors="replace") as f:
                tail = f.readlines()[-15:]
        except OSError as err:
            tail = [f"(cannot read {path}: {err})\n"]
        lines.append(f"--- last lines of {component}.log:\n" + "".join(tail))
    return "\n".join(lines)


def test_up_and_down_leave_no_process_behind(kube):
    d = tempfile.mkdtemp(prefix="tfjob-e2e-updown-")
    os.rmdir(d)
    t0 = time.monotonic()
    up = subprocess.run([os.path.join(ROOT, "scripts", "test-cluster"), "up", d, "--nodes", "1"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    up_seconds = time.monotonic() - t0
    assert up.returncode == 0, up.stderr
    pids = []
    for f in os.listdir(os.path.join(d, "pids")):
        with open(os.path.join(d, "pids", f)) as fh:
            pids.append(int(fh.read()))
    assert len(pids) == 5
    t0 = time.monotonic()
    down = subprocess.run([os.path.join(ROOT, "scripts", "test-cluster"), "down", d], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    down_seconds = time.monotonic() - t0
    assert down.returncode == 0, down.stderr
    alive = [p for p in pids if running(p)]
    assert alive == [], f"processes left behind: {alive}"
    assert not os.path.exists(d)
    again = subprocess.run([os.path.join(ROOT, "scripts", "test-cluster"), "down", d], stdout=subprocess.PIPE, text=True)
    assert again.returncode == 0  # idempotent
    print(f"\nwarm up: {up_seconds:.1f}s, down: {down_seconds:.1f}s")
