"""Disrupted pods (docs/semantics.md D21, issue 14 item 6), with real evictions: `kubectl drain`
of a KWOK node goes through the Eviction API, a PodDisruptionBudget refuses one of them, and
the job still succeeds with backoffLimit 0 untouched. Upstream fails such a job (trainer#999).

Each test brings its own KWOK nodes (tainted, so no other pod lands there) and removes them."""
import json
import uuid

from conftest import OperatorProcess, wait_for
from test_operator import container, ends, events, job_status, namespace_watches, stop_watches, tfjob

POOL_LABEL = "tfjob.test/pool"


def kwok_node(name, pool):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
        "labels": {POOL_LABEL: pool, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                   "kubernetes.io/hostname": name}},
        "spec": {"taints": [{"key": POOL_LABEL, "value": pool, "effect": "NoSchedule"}]}}


def node_ready(kube, name):
    n = kube.get("node", name, check=False) or {}
    return any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))


def add_node(kube, name, pool):
    kube.apply(kwok_node(name, pool))
    wait_for(lambda: node_ready(kube, name), timeout=60, what=f"node {name} Ready")


def pinned(annotations, pool):
    """A template whose pods go only to the pool's nodes."""
    return container(annotations, nodeSelector={POOL_LABEL: pool},
                     tolerations=[{"key": POOL_LABEL, "operator": "Equal", "value": pool, "effect": "NoSchedule"}])


def job_pods(kube, ns, job):
    return {p["metadata"]["name"]: p for p in kube.get("pods", None, ns)["items"]
            if p["metadata"].get("labels", {}).get("training.kubeflow.org/job-name") == job}


def running_on(kube, ns, job, names, node, phases=("Running",)):
    ps = job_pods(kube, ns, job)
    return all(n in ps and not ps[n]["metadata"].get("deletionTimestamp") and ps[n].get("status", {}).get("phase") in phases
               and ps[n]["spec"].get("nodeName") == node for n in names)


def replacements_deleted(pods_watch, job, originals):
    """The job's pods created during the test (uid not in `originals`) that were deleted before
    they ended. Nothing in these tests deletes a replacement, but KWOK does at times: it deletes
    by name, without the uid precondition a kubelet sends, so a pod-delete stage it had queued for
    the disrupted pod can land on the replacement the operator has just created under the same
    name (seen under load: the new pod deleted 30 ms after its create, while still Pending). That
    is a real deletion by someone else, which the operator rightly counts as one more disruption
    (DeletedExternally); the tests count it in, from this pod watch."""
    return sorted((name, obj["metadata"]["uid"]) for name, obj in pods_watch.deleted
                  if name.startswith(job + "-") and obj["metadata"]["uid"] not in originals
                  and obj.get("status", {}).get("phase") not in ("Succeeded", "Failed"))


def test_D21_drain_evicts_workers_pdb_keeps_ps_job_succeeds(kube, namespace, tfjob_crd):
    pool = "drain-" + uuid.uuid4().hex[:6]
    node_a, node_b = f"{pool}-a", f"{pool}-b"
    op = OperatorProcess(kube, "--namespace", namespace, name="disruptions").start()
    watches = namespace_watches(kube, namespace, "pods")
    try:
        add_node(kube, node_a, pool)  # only node a at first: every pod starts there
        # Workers with restartPolicy Never and backoffLimit 0: upstream counts an evicted running
        # pod as failed and fails the job; here the evictions are neither failures nor restarts.
        kube.apply(tfjob("drained", {"PS": {"template": pinned(None, pool)},
                                     "Worker": {"replicas": 2, "restartPolicy": "Never",
                                                "template": pinned(ends(0, "10s"), pool)}},
                         {"backoffLimit": 0}), namespace)
        kube.apply({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "keep-ps"},
                    "spec": {"minAvailable": 1, "selector": {"matchLabels": {
                        "training.kubeflow.org/job-name": "drained", "training.kubeflow.org/replica-type": "ps"}}}},
                   namespace)
        names = ["drained-ps-0", "drained-worker-0", "drained-worker-1"]
        wait_for(lambda: running_on(kube, namespace, "drained", names, node_a), timeout=60, what="3 pods Running on node a")
        # The disruption controller must have seen the PS before the drain, or the PDB allows it.
        wait_for(lambda: (kube.get("pdb", "keep-ps", namespace).get("status", {}).get("currentHealthy") == 1),
                 timeout=60, what="the PDB counting the running PS")
        before = {n: p["metadata"]["uid"] for n, p in job_pods(kube, namespace, "drained").items()}
        add_node(kube, node_b, pool)

        r = kube.run("drain", node_a, "--pod-selector", "training.kubeflow.org/job-name=drained",
                     "--ignore-daemonsets", "--timeout=6s", check=False)
        print(f"\nkubectl drain exit {r.returncode}:\n{r.stdout}{r.stderr}")
        out = r.stdout + r.stderr
        # Real evictions: both workers evicted, the PS refused by its PodDisruptionBudget.
        assert r.returncode != 0, out
        assert "pod/drained-worker-0 evicted" in out and "pod/drained-worker-1 evicted" in out, out
        assert "Cannot evict pod as it would violate the pod's disruption budget" in out, out
        assert 'evicting pods/"drained-ps-0"' in out or "drained-ps-0" in out, out

        # Recreated on node b (node a is cordoned), new pods, the PS untouched.
        # (They run 10 s, so they may have finished already.)
        wait_for(lambda: running_on(kube, namespace, "drained", ["drained-worker-0", "drained-worker-1"], node_b,
                                    ("Running", "Succeeded")),
                 timeout=60, what="both workers recreated on node b")
        after = {n: p["metadata"]["uid"] for n, p in job_pods(kube, namespace, "drained").items()}
        assert after["drained-ps-0"] == before["drained-ps-0"]
        assert job_pods(kube, namespace, "drained")["drained-ps-0"]["spec"]["nodeName"] == node_a
        assert all(after[w] != before[w] for w in ("drained-worker-0", "drained-worker-1")), (before, after)
        st = job_status(kube, namespace, "drained")
        assert not [c for c in st["conditions"] if c["type"] in ("Failed", "Restarting")], st
        assert "restarts" not in st["replicaStatuses"]["Worker"], st

        # The job then succeeds, with backoffLimit 0 untouched (no restarts, no failure).
        wait_for(lambda: ("Succeeded", "True") in [(c["type"], c["status"]) for c in
                                                   job_status(kube, namespace, "drained").get("conditions", [])],
                 timeout=90, what="Succeeded")
        st = job_status(kube, namespace, "drained")
        assert [c["type"] for c in st["conditions"]] == ["Created", "Running", "Succeeded"], st["conditions"]
        # The two evictions, each counted once, plus any replacement KWOK deleted (printed).
        extra = replacements_deleted(watches["pods"], "drained", set(before.values()))
        print(f"replacement pods deleted by KWOK: {extra}")
        assert st["replicaStatuses"] == {"PS": {"succeeded": 1},
                                         "Worker": {"succeeded": 2, "disruptions": 2 + len(extra)}}, (st, extra)
        ev = [e for e in events(kube, namespace, "drained") if e[1] == "EvictionByEvictionAPI"]
        assert sorted(e[2].split(" was ")[0] for e in ev) == [f"Pod {namespace}/drained-worker-0",
                                                             f"Pod {namespace}/drained-worker-1"], ev
        assert all(e[0] == "Warning" and "not counted against backoffLimit" in e[2] for e in ev), ev
        external = {f"Pod {namespace}/{name}" for name, _ in extra}
        wait_for(lambda: {e[2].split(" was ")[0] for e in events(kube, namespace, "drained")
                          if e[1] == "DeletedExternally"} == external, timeout=10, what=f"DeletedExternally events {external}")
        assert not [e for e in events(kube, namespace, "drained") if e[1] in ("TFJobRestarting", "TFJobFailed")]
        assert op.metric(f'tfjob_pod_disruptions_total{{job_namespace="{namespace}",replica_type="worker",'
                         f'reason="EvictionByEvictionAPI"}}') == 2
        assert op.stop() == 0
    finally:
        op.kill()
        stop_watches(watches)
        for n in (node_a, node_b):
            kube.run("delete", "node", n, "--wait=false", check=False)


def test_D21_kubelet_eviction_and_kubectl_delete_are_disruptions(kube, namespace, tfjob_crd):
    """The two other kinds: a pod the kubelet evicted (phase Failed with a DisruptionTarget
    condition, written here as a kubelet would), and a pod deleted by a user."""
    op = OperatorProcess(kube, "--namespace", namespace, name="disruptions-2").start()
    watches = namespace_watches(kube, namespace, "pods")
    try:
        kube.apply(tfjob("evict", {"Worker": {"replicas": 2, "restartPolicy": "Never", "template": container()}},
                         {"backoffLimit": 0}), namespace)
        wait_for(lambda: len([p for p in job_pods(kube, namespace, "evict").values()
                              if p.get("status", {}).get("phase") == "Running"]) == 2, timeout=60, what="2 pods Running")
        uid0 = job_pods(kube, namespace, "evict")["evict-worker-0"]["metadata"]["uid"]
        uid1 = job_pods(kube, namespace, "evict")["evict-worker-1"]["metadata"]["uid"]
        kube("patch", "pod", "evict-worker-0", "-n", namespace, "--subresource=status", "--type=merge", "-p",
             json.dumps({"status": {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory.",
                                    "conditions": [{"type": "DisruptionTarget", "status": "True",
                                                    "reason": "TerminationByKubelet",
                                                    "message": "The node was low on resource: memory."}],
                                    "containerStatuses": [{"name": "tensorflow", "image": "x", "ready": False,
                                                           "restartCount": 0,
                                                           "state": {"terminated": {"exitCode": 137, "reason": "Error"}}}]}}))
        kube("delete", "pod", "evict-worker-1", "-n", namespace, "--wait=false")

        def recreated():
            ps = job_pods(kube, namespace, "evict")
            return (all(ps.get(n, {}).get("status", {}).get("phase") == "Running" for n in ("evict-worker-0", "evict-worker-1"))
                    and ps["evict-worker-0"]["metadata"]["uid"] != uid0 and ps["evict-worker-1"]["metadata"]["uid"] != uid1)
        wait_for(recreated, timeout=60, what="both pods recreated")
        # Both disruptions counted and both new pods active (that count may follow by a second: D30),
        # plus any replacement KWOK deleted (replacements_deleted).
        originals = {uid0, uid1}

        def counted():
            extra = replacements_deleted(watches["pods"], "evict", originals)
            st = job_status(kube, namespace, "evict")
            return (st, extra) if st.get("replicaStatuses", {}).get("Worker") == {"active": 2,
                                                                                   "disruptions": 2 + len(extra)} else None
        st, extra = wait_for(counted, timeout=30, what="2 disruptions (and KWOK's) counted, 2 pods active")
        print(f"replacement pods deleted by KWOK: {extra}")
        assert [(c["type"], c["status"]) for c in st["conditions"]] == [("Created", "True"), ("Running", "True")], st
        external = {f"Pod {namespace}/evict-worker-1"} | {f"Pod {namespace}/{name}" for name, _ in extra}
        wait_for(lambda: {e[2].split(" was ")[0] for e in events(kube, namespace, "evict")
                          if e[1] == "DeletedExternally"} == external, timeout=10, what=f"DeletedExternally events {external}")
        reasons = {e[1]: e for e in events(kube, namespace, "evict")}
        assert "TerminationByKubelet" in reasons, reasons
        assert "The node was low on resource: memory." in reasons["TerminationByKubelet"][2]
        assert op.metric(f'tfjob_pod_disruptions_total{{job_namespace="{namespace}",replica_type="worker",'
                         f'reason="TerminationByKubelet"}}') == 1
        assert op.metric(f'tfjob_pod_disruptions_total{{job_namespace="{namespace}",replica_type="worker",'
                         f'reason="DeletedExternally"}}') == 1 + len(extra)
        assert op.stop() == 0
    finally:
        op.kill()
        stop_watches(watches)
