"""End-to-end tests of `tfjob operator` against the real control plane: the real binary runs
with the least-privilege kubeconfig (config/rbac), TFJobs go in through kubectl, KWOK steers the
pods through template annotations, and the tests assert what kubectl shows. Tests named R..
are the rows of docs/semantics.md section 7."""
import json
import os
import time

import pytest

from conftest import ROOT, OperatorProcess, api_time, until_by_server_clock, wait_for

@pytest.fixture(scope="module")
def operator(kube, tfjob_crd):
    op = OperatorProcess(kube, "--workers", "4").start()
    yield op
    assert op.stop() == 0, "the operator did not stop cleanly on SIGTERM"


def container(annotations=None, **extra):
    spec = {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1"}]}
    spec.update(extra)
    return {"metadata": {"annotations": annotations or {}}, "spec": spec}


def tfjob(name, replicas, run_policy=None, **spec):
    body = {"tfReplicaSpecs": replicas}
    if run_policy:
        body["runPolicy"] = run_policy
    body.update(spec)
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name}, "spec": body}


def ends(code, run_for="2s"):
    return {"tfjob.test/exit-code": str(code), "tfjob.test/run-for": run_for}


def job_status(kube, ns, name):
    j = kube.get("tfjob", name, ns, check=False)
    return (j or {}).get("status", {})


def conditions(kube, ns, name):
    return [(c["type"], c["status"]) for c in job_status(kube, ns, name).get("conditions", [])]


def has_condition(kube, ns, name, ctype):
    return (ctype, "True") in conditions(kube, ns, name)


def pods(kube, ns, job):
    out = kube.get("pods", None, ns)["items"]
    return {p["metadata"]["name"]: p for p in out
            if p["metadata"].get("labels", {}).get("training.kubeflow.org/job-name") == job
            and not p["metadata"].get("deletionTimestamp")}


def events(kube, ns, name):
    out = kube.get("events", None, ns)["items"]
    return [(e["type"], e["reason"], e["message"]) for e in out if e["involvedObject"]["name"] == name]


@pytest.mark.every_version
def test_ps_worker_job_runs_and_succeeds(kube, namespace, operator):
    kube.apply(tfjob("dist", {"PS": {"replicas": 2, "template": container()},
                              "Worker": {"replicas": 3, "template": container(ends(0, "4s"))}}), namespace)
    wait_for(lambda: len(pods(kube, namespace, "dist")) == 5, what="5 pods")
    wait_for(lambda: has_condition(kube, namespace, "dist", "Running"), what="Running")
    p = pods(kube, namespace, "dist")["dist-worker-1"]
    labels = p["metadata"]["labels"]
    assert labels["training.kubeflow.org/operator-name"] == "tfjob-controller"
    assert labels["training.kubeflow.org/replica-type"] == "worker"
    assert labels["training.kubeflow.org/replica-index"] == "1"
    owner = p["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("TFJob", "dist", True)
    env = {e["name"]: e["value"] for e in p["spec"]["containers"][0]["env"]}
    tf_config = json.loads(env["TF_CONFIG"])
    assert tf_config == {"cluster": {"ps": [f"dist-ps-{i}.{namespace}.svc:2222" for i in range(2)],
                                     "worker": [f"dist-worker-{i}.{namespace}.svc:2222" for i in range(3)]},
                         "task": {"type": "worker", "index": 1}, "environment": "cloud"}
    svc = kube.get("service", "dist-worker-1", namespace)
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["spec"]["ports"][0]["port"] == 2222
    wait_for(lambda: has_condition(kube, namespace, "dist", "Succeeded"), timeout=60, what="Succeeded")
    st = job_status(kube, namespace, "dist")
    assert [c["type"] for c in st["conditions"]] == ["Created", "Running", "Succeeded"]  # R11: terminal last
    assert ("Running", "False") in conditions(kube, namespace, "dist")
    assert st["replicaStatuses"]["Worker"]["succeeded"] == 3
    # D28: the terminal write itself has the final counts (the PS still running counts as
    # succeeded, 3.3 step 3), and nothing changes them afterwards.
    assert st["replicaStatuses"] == {"PS": {"succeeded": 2}, "Worker": {"succeeded": 3}}, st["replicaStatuses"]
    assert "completionTime" in st
    assert kube("get", "tfjob", "dist", "-n", namespace, "--no-headers").split()[1] == "Succeeded"
    # Worker 0's exit 0 is on record (once, when the job ended); workers 1 and 2 too if they had
    # ended by then.
    exits = [e[2] for e in events(kube, namespace, "dist") if e[:2] == ("Normal", "ExitedWithCode")]
    assert f"Pod: {namespace}.dist-worker-0 exited with code 0" in exits, exits
    assert len(exits) == len(set(exits)) and set(exits) <= {
        f"Pod: {namespace}.dist-worker-{i} exited with code 0" for i in range(3)}, exits
    time.sleep(2)
    assert job_status(kube, namespace, "dist")["replicaStatuses"] == st["replicaStatuses"]


def test_R19_chief_succeeds_running_pods_cleaned(kube, namespace, operator):
    kube.apply(tfjob("chief", {"Chief": {"template": container(ends(0, "3s"))},
                               "PS": {"template": container()}, "Worker": {"replicas": 2, "template": container()}},
                     {"cleanPodPolicy": "Running"}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "chief", "Succeeded"), timeout=60, what="Succeeded")
    wait_for(lambda: set(pods(kube, namespace, "chief")) == {"chief-chief-0"}, what="only the succeeded chief left")
    assert not has_condition(kube, namespace, "chief", "Failed")
    # D28: the running pods deleted by cleanPodPolicy count as succeeded in the terminal write.
    assert job_status(kube, namespace, "chief")["replicaStatuses"] == {
        "Chief": {"succeeded": 1}, "PS": {"succeeded": 1}, "Worker": {"succeeded": 2}}


def test_R06_exit_code_137_restarts_then_fails_on_backoff(kube, namespace, operator):
    kube.apply(tfjob("retry", {"Worker": {"restartPolicy": "ExitCode", "template": container(ends(137, "1s"))}},
                     {"backoffLimit": 2}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "retry", "Failed"), timeout=90, what="Failed")
    st = job_status(kube, namespace, "retry")
    assert st["conditions"][-1]["message"] == "Job retry has failed because it has reached the specified backoff limit"
    assert st["replicaStatuses"]["Worker"]["restarts"] == 2
    reasons = [e[1] for e in events(kube, namespace, "retry")]
    assert "TFJobRestarting" in reasons
    # D28 (issue 14 item 7): the final counts are the pods as they are: the one pod Failed, none
    # active, and they stay so.
    assert kube.get("pod", "retry-worker-0", namespace)["status"]["phase"] == "Failed"
    assert st["replicaStatuses"] == {"Worker": {"failed": 1, "restarts": 2}}, st["replicaStatuses"]
    time.sleep(2)
    assert job_status(kube, namespace, "retry")["replicaStatuses"] == {"Worker": {"failed": 1, "restarts": 2}}


def test_exit_code_1_fails_with_the_exact_message(kube, namespace, operator):
    kube.apply(tfjob("noretry", {"Worker": {"restartPolicy": "ExitCode", "template": container(ends(1, "1s"))}}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "noretry", "Failed"), timeout=60, what="Failed")
    assert job_status(kube, namespace, "noretry")["conditions"][-1]["message"] == \
        'job "noretry" is failing because "Worker" replica(s) failed.'


def test_backoff_limit_0_failure_has_upstreams_backoff_message(kube, namespace, operator):
    """Issue 14 item 4 (docs/semantics.md 3.8): with backoffLimit 0 a failure nobody restarts ends
    with upstream's backoff message (what the SDK and dashboards read), not the replica message."""
    kube.apply(tfjob("bo0", {"Worker": {"template": container(ends(1, "1s"))}}, {"backoffLimit": 0}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "bo0", "Failed"), timeout=60, what="Failed")
    last = job_status(kube, namespace, "bo0")["conditions"][-1]
    assert (last["reason"], last["message"]) == \
        ("TFJobFailed", "Job bo0 has failed because it has reached the specified backoff limit")


def test_R18_invalid_job_fails_validation_and_others_still_run(kube, namespace, operator):
    bad = tfjob("bad", {"Worker": {"replicas": -1, "template": container()},
                        "Trainer": {"template": {"spec": {"containers": [{"name": "main", "image": "x"}]}}}})
    kube.apply(bad, namespace)
    wait_for(lambda: has_condition(kube, namespace, "bad", "Failed"), what="Failed")
    last = job_status(kube, namespace, "bad")["conditions"][-1]
    assert last["reason"] == "TFJobFailedValidation"
    assert 'spec.tfReplicaSpecs[Trainer]: Unsupported value: "Trainer"' in last["message"]
    assert "spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1" in last["message"]
    assert "spec.tfReplicaSpecs[Trainer].template.spec.containers: Required value" in last["message"]
    assert pods(kube, namespace, "bad") == {}
    kube.apply(tfjob("good", {"Worker": {"template": container(ends(0, "1s"))}}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "good", "Succeeded"), timeout=60, what="the next job still runs")


def namespace_watches(kube, ns, *kinds):
    """Real watches of the namespace's collections from now on (test_operator_chaos.Watch: a list,
    then a watch from its resourceVersion), so what is created and deleted again is seen too.
    Imported here: that module imports this one."""
    import test_operator_chaos as chaos
    paths = {"tfjobs": chaos.TFJOBS, "pods": chaos.PODS, "services": chaos.SERVICES}
    api = chaos.Api(kube.dir)
    return {k: chaos.Watch(api, paths[k].format(ns=ns)) for k in kinds}


def stop_watches(watches):
    for w in watches.values():
        w.stop()
    for w in watches.values():
        w.check()


def field_managers(obj):
    return {m.get("manager") for m in obj["metadata"].get("managedFields", [])}


def succeeded_after(kube, ns, name, watches):
    """Positive evidence that the operator is alive and has handled everything before now: a job
    created now, which it runs, reaches Succeeded. Its informers deliver events in order (one
    watch per kind) and its queue is FIFO, so a job or pod event from before this job's creation
    was enqueued before the events that lead to its Succeeded status (its pod's phase), and was
    reconciled before that status was written; a stalled operator fails here."""
    kube.apply(tfjob(name, {"Worker": {"template": container(ends(0, "1s"))}}), ns)
    wait_for(lambda: has_condition(kube, ns, name, "Succeeded"), timeout=60, what=f"{name} Succeeded")
    if "tfjobs" in watches:  # the watch has caught up with that status too
        assert watches["tfjobs"].wait(lambda w: any(has_condition_in(o, "Succeeded") for o in w.history.get(name, [])),
                                      30), f"the watch never saw {name} Succeeded"
    if "pods" in watches:
        assert watches["pods"].wait(lambda w: any(o.get("status", {}).get("phase") == "Succeeded"
                                                  for o in w.history.get(f"{name}-worker-0", [])), 30), \
            f"the watch never saw {name}-worker-0 Succeeded"


def test_R09_managed_by_multikueue_writes_nothing(kube, namespace, operator):
    watches = namespace_watches(kube, namespace, "tfjobs", "pods", "services")
    try:
        kube.apply(tfjob("mk", {"Worker": {"template": container()}}, {"managedBy": "kueue.x-k8s.io/multikueue"}),
                   namespace)
        succeeded_after(kube, namespace, "after-mk", watches)
    finally:
        stop_watches(watches)
    # Every version mk ever had: no status and none of the field managers of the operator's
    # writes to the job it did run.
    mk = watches["tfjobs"].history["mk"]
    after = watches["tfjobs"].history["after-mk"]
    operator_managers = set().union(*(field_managers(v) for v in after)) - field_managers(after[0])
    assert operator_managers, "the operator's writes to after-mk carry no field manager"
    assert all(v.get("status", {}) == {} for v in mk), [v.get("status") for v in mk]
    assert not (set().union(*(field_managers(v) for v in mk)) & operator_managers)
    for kind in ("pods", "services"):
        assert watches[kind].names("mk-") == set(), f"{kind} of mk: {watches[kind].names('mk-')}"


@pytest.mark.every_version
def test_R07_R08_suspend_then_resume_with_new_template(kube, namespace, operator):
    kube.apply(tfjob("susp", {"Worker": {"replicas": 2, "template": container()}}, {"ttlSecondsAfterFinished": 60}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "susp", "Running"), what="Running")
    start = job_status(kube, namespace, "susp")["startTime"]
    kube("patch", "tfjob", "susp", "-n", namespace, "--type=merge", "-p", '{"spec":{"runPolicy":{"suspend":true}}}')
    wait_for(lambda: has_condition(kube, namespace, "susp", "Suspended"), what="Suspended")
    wait_for(lambda: pods(kube, namespace, "susp") == {}, what="pods deleted")
    st = job_status(kube, namespace, "susp")
    assert ("Running", "False") in conditions(kube, namespace, "susp")
    assert all(rs.get("active", 0) == 0 for rs in st["replicaStatuses"].values())
    assert st["startTime"] == start
    # What Kueue does on admission: change the template, then unsuspend.
    kube("patch", "tfjob", "susp", "-n", namespace, "--type=merge", "-p", json.dumps({"spec": {
        "runPolicy": {"suspend": False},
        "tfReplicaSpecs": {"Worker": {"template": {"metadata": {"labels": {"kueue.x-k8s.io/podset": "workers"}},
                                                   "spec": {"nodeSelector": {"type": "kwok"}}}}}}}))
    wait_for(lambda: len(pods(kube, namespace, "susp")) == 2, what="pods recreated")
    for p in pods(kube, namespace, "susp").values():
        assert p["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "workers"
        assert p["spec"]["nodeSelector"] == {"type": "kwok"}
    wait_for(lambda: ("Suspended", "False") in conditions(kube, namespace, "susp"), what="Resumed")


TFJOB = "/apis/kubeflow.org/v1/namespaces/{ns}/tfjobs/{name}"
LATE = 30  # how late the operator may be, in seconds: generous, for a loaded 2-core machine


def has_condition_in(obj, ctype):
    return any(c["type"] == ctype and c["status"] == "True" for c in (obj or {}).get("status", {}).get("conditions", []))


def ttl_deletion(kube, ns, name, ttl, completion, not_after=None):
    """Waits for the TTL deletion and checks it by the API server's clock: not before
    completionTime + ttl (1 s slack for second precision), and by not_after (default: LATE s after
    it was due). Returns the server time at which the job was seen gone."""
    due = api_time(completion) + ttl
    gone_at, _ = until_by_server_clock(kube, TFJOB.format(ns=ns, name=name), lambda obj: obj is None,
                                       not_before=due - 1, not_after=not_after or due + LATE,
                                       what=f"{name} deleted by its TTL of {ttl}s")
    return gone_at


def deadline_failure(kube, ns, name, deadline, start, not_after=None):
    """Waits for Failed by activeDeadlineSeconds and checks it by the API server's clock: not
    before startTime + deadline (1 s slack), and by not_after (default: LATE s after it was due);
    the condition's own time is not before it either. Returns the job."""
    due = api_time(start) + deadline
    _, job = until_by_server_clock(kube, TFJOB.format(ns=ns, name=name), lambda obj: has_condition_in(obj, "Failed"),
                                   not_before=due - 1, not_after=not_after or due + LATE,
                                   what=f"{name} Failed by its activeDeadlineSeconds of {deadline}s")
    failed = job["status"]["conditions"][-1]
    assert failed["type"] == "Failed" and api_time(failed["lastTransitionTime"]) >= due - 1, failed
    assert failed["message"] == f"Job {name} has failed because it was active longer than specified deadline"
    return job


def test_R04_ttl_deletes_the_finished_job(kube, namespace, operator):
    kube.apply(tfjob("ttl", {"Worker": {"template": container(ends(0, "1s"))}}, {"ttlSecondsAfterFinished": 3}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "ttl", "Succeeded"), timeout=60, what="Succeeded")
    ttl_deletion(kube, namespace, "ttl", 3, job_status(kube, namespace, "ttl")["completionTime"])


def test_R05_active_deadline_fails_the_job_on_time(kube, namespace, operator):
    kube.apply(tfjob("deadline", {"Worker": {"template": container()}}, {"activeDeadlineSeconds": 4, "cleanPodPolicy": "All"}),
               namespace)
    wait_for(lambda: has_condition(kube, namespace, "deadline", "Running"), what="Running")
    deadline_failure(kube, namespace, "deadline", 4, job_status(kube, namespace, "deadline")["startTime"])
    wait_for(lambda: pods(kube, namespace, "deadline") == {}, what="cleanPodPolicy All")


def test_R14_pod_of_another_owner_is_left_alone(kube, namespace, operator):
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other-owner"}}, namespace)
    uid = kube.get("configmap", "other-owner", namespace)["metadata"]["uid"]
    foreign = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "own-worker-7", "labels": {"training.kubeflow.org/operator-name": "tfjob-controller",
                                           "training.kubeflow.org/job-name": "own",
                                           "training.kubeflow.org/replica-type": "worker",
                                           "training.kubeflow.org/replica-index": "7"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "other-owner", "uid": uid, "controller": True}]},
        "spec": {"containers": [{"name": "tensorflow", "image": "x"}]}}
    kube.apply(foreign, namespace)
    kube.apply(tfjob("own", {"Worker": {"template": container()}}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "own", "Running"), what="Running")
    time.sleep(2)
    assert "own-worker-7" in pods(kube, namespace, "own")  # not deleted as a scale-down
    assert job_status(kube, namespace, "own")["replicaStatuses"]["Worker"].get("active") == 1


def test_pasted_template_metadata_gives_valid_pods_that_run(kube, namespace, operator):
    """Issue 14 item 2: a template whose metadata was pasted from `kubectl get pod -o yaml` (name,
    namespace, uid, resourceVersion, generation, creationTimestamp, selfLink, ownerReferences,
    managedFields) gives pods the API server accepts: only labels and annotations are copied."""
    template = container(ends(0, "1s"))
    template["metadata"].update({
        "name": "trainer-7d9f8b6c5d-x2k4q", "generateName": "trainer-7d9f8b6c5d-", "namespace": "sandbox",
        "uid": "9b2e4c1a-3f5d-4e6a-8b7c-0d1e2f3a4b5c", "resourceVersion": "4815162342", "generation": 1,
        "creationTimestamp": "2026-11-30T09:14:07Z", "selfLink": "/api/v1/namespaces/sandbox/pods/trainer",
        "labels": {"app": "trainer"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "trainer-7d9f8b6c5d",
                             "uid": "1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b", "controller": True,
                             "blockOwnerDeletion": True}],
        "managedFields": [{"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}},
                           "manager": "kube-controller-manager", "operation": "Update",
                           "time": "2026-11-30T09:14:07Z"}]})
    kube.apply(tfjob("pasted", {"Worker": {"replicas": 2, "template": template}}), namespace)
    wait_for(lambda: len(pods(kube, namespace, "pasted")) == 2, what="2 pods created")
    p = pods(kube, namespace, "pasted")["pasted-worker-1"]
    assert p["metadata"]["namespace"] == namespace
    assert p["metadata"]["labels"]["app"] == "trainer"
    assert [(o["kind"], o["name"]) for o in p["metadata"]["ownerReferences"]] == [("TFJob", "pasted")]
    assert p["metadata"]["uid"] != "9b2e4c1a-3f5d-4e6a-8b7c-0d1e2f3a4b5c"
    assert not [e for e in events(kube, namespace, "pasted") if e[1] == "FailedCreatePod"]
    wait_for(lambda: has_condition(kube, namespace, "pasted", "Succeeded"), timeout=60, what="Succeeded")


def test_odd_but_runnable_spec_runs_with_a_warning_event(kube, namespace, operator):
    """Issue 14 item 3 (docs/semantics.md D22): an unknown cleanPodPolicy runs, as upstream, with
    one Warning event saying so, and cleans up like All when the job finishes."""
    kube.apply(tfjob("odd", {"Worker": {"replicas": 2, "template": container(ends(0, "2s"))}},
                     {"cleanPodPolicy": "none"}), namespace)
    wait_for(lambda: [e for e in events(kube, namespace, "odd") if e[1] == "TFJobSpecWarning"], what="the warning")
    [warning] = [e for e in events(kube, namespace, "odd") if e[1] == "TFJobSpecWarning"]
    assert warning[0] == "Warning"
    assert warning[2].startswith(f'TFJob {namespace}/odd runs with warnings: spec.runPolicy.cleanPodPolicy: '
                                 'unsupported value "none"')
    wait_for(lambda: has_condition(kube, namespace, "odd", "Succeeded"), timeout=60, what="Succeeded")
    wait_for(lambda: pods(kube, namespace, "odd") == {}, what="every pod deleted, as with All")


def test_R02_deleted_pod_of_a_finished_job_is_not_recreated(kube, namespace, operator):
    kube.apply(tfjob("fin", {"Worker": {"template": container(ends(0, "1s"))}}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "fin", "Succeeded"), timeout=60, what="Succeeded")
    watches = namespace_watches(kube, namespace, "pods")
    try:
        kube("delete", "pod", "fin-worker-0", "-n", namespace, "--wait=true")
        # The pod's deletion comes before the next job's pods on the operator's pod watch.
        succeeded_after(kube, namespace, "after-fin", watches)
    finally:
        stop_watches(watches)
    pod_watch = watches["pods"]
    assert pod_watch.added_by_name["fin-worker-0"] == 1, "fin-worker-0 was created again"  # the list's only
    assert len(pod_watch.uids["fin-worker-0"]) == 1
    assert pods(kube, namespace, "fin") == {}
    assert has_condition(kube, namespace, "fin", "Succeeded")


def test_scale_up_and_down_of_workers(kube, namespace, operator):
    kube.apply(tfjob("scale", {"Worker": {"replicas": 2, "template": container()}}), namespace)
    wait_for(lambda: len(pods(kube, namespace, "scale")) == 2, what="2 workers")
    kube("patch", "tfjob", "scale", "-n", namespace, "--type=merge", "-p", '{"spec":{"tfReplicaSpecs":{"Worker":{"replicas":4}}}}')
    wait_for(lambda: len(pods(kube, namespace, "scale")) == 4, what="4 workers")
    kube("patch", "tfjob", "scale", "-n", namespace, "--type=merge", "-p", '{"spec":{"tfReplicaSpecs":{"Worker":{"replicas":1}}}}')
    wait_for(lambda: set(pods(kube, namespace, "scale")) == {"scale-worker-0"}, what="1 worker")
    wait_for(lambda: kube.get("service", "scale-worker-3", namespace, check=False) is None, what="service removed")


def test_R12_unschedulable_pod_is_reported(kube, namespace, operator):
    big = container()
    big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1000"}}
    kube.apply(tfjob("huge", {"Worker": {"template": big}}), namespace)
    wait_for(lambda: any(e[0] == "Warning" and "huge-worker-0" in e[2] and "nodes are available" in e[2]
                         for e in events(kube, namespace, "huge")), timeout=60, what="a Warning naming the pod and reason")


@pytest.mark.parametrize("policy,remaining", [
    ("Running", {"cpe-chief-0", "cpe-evaluator-0"}),  # Evaluator exited 0 too; PS and workers were running
    ("All", set()),
    ("None", {"cpe-chief-0", "cpe-ps-0", "cpe-worker-0", "cpe-worker-1", "cpe-evaluator-0"}),
])
def test_chief_ps_worker_evaluator_clean_pod_policy(kube, namespace, operator, policy, remaining):
    kube.apply(tfjob("cpe", {"Chief": {"template": container(ends(0, "3s"))}, "PS": {"template": container()},
                             "Worker": {"replicas": 2, "template": container()},
                             "Evaluator": {"template": container(ends(0, "1s"))}},
                     {"cleanPodPolicy": policy}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "cpe", "Succeeded"), timeout=60, what="Succeeded")
    wait_for(lambda: set(pods(kube, namespace, "cpe")) == remaining, what=f"pods left by cleanPodPolicy {policy}")
    time.sleep(1)
    assert set(pods(kube, namespace, "cpe")) == remaining


def test_success_policies_worker0_and_all_workers(kube, namespace, operator):
    w0 = {"Worker": {"replicas": 2, "template": container()}}
    kube.apply(tfjob("w0", w0), namespace)
    kube.apply(tfjob("all", w0, successPolicy="AllWorkers"), namespace)
    wait_for(lambda: has_condition(kube, namespace, "w0", "Running") and has_condition(kube, namespace, "all", "Running"),
             what="both Running")
    # Worker 0 ends with exit code 0 in both jobs: a status patch, as a kubelet would report it.
    for job in ("w0", "all"):
        kube("patch", "pod", f"{job}-worker-0", "-n", namespace, "--subresource=status", "--type=merge", "-p",
             json.dumps({"status": {"phase": "Succeeded", "containerStatuses": [
                 {"name": "tensorflow", "image": "x", "ready": False, "restartCount": 0,
                  "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}}))
    wait_for(lambda: has_condition(kube, namespace, "w0", "Succeeded"), what="worker 0 decides the default policy")
    time.sleep(2)
    assert not has_condition(kube, namespace, "all", "Succeeded")  # AllWorkers waits for worker 1


def test_on_failure_recreates_failed_pods_and_never_fails(kube, namespace, operator):
    kube.apply(tfjob("onf", {"Worker": {"restartPolicy": "OnFailure", "template": container(ends(3, "1s"))}},
                     {"backoffLimit": 1}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "onf", "Failed"), timeout=60, what="Failed after a restart")
    st = job_status(kube, namespace, "onf")
    assert st["replicaStatuses"]["Worker"]["restarts"] == 1
    assert st["conditions"][-1]["message"] == "Job onf has failed because it has reached the specified backoff limit"
    kube.apply(tfjob("never", {"Worker": {"restartPolicy": "Never", "template": container(ends(3, "1s"))}}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "never", "Failed"), timeout=60, what="Failed")
    assert job_status(kube, namespace, "never")["conditions"][-1]["message"] == \
        f"TFJob {namespace}/never has failed because 1 Worker replica(s) failed."


def test_backoff_limit_counts_in_place_restarts(kube, namespace, operator):
    kube.apply(tfjob("inplace", {"Worker": {"restartPolicy": "OnFailure",
                                            "template": container({"tfjob.test/restart-in-place": "3"})}},
                     {"backoffLimit": 3}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "inplace", "Failed"), timeout=30, what="Failed")
    assert "backoff limit" in job_status(kube, namespace, "inplace")["conditions"][-1]["message"]


def test_metrics_serve_the_upstream_job_counters(kube, namespace, operator):
    kube.apply(tfjob("counted", {"Worker": {"template": container(ends(0, "1s"))}}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "counted", "Succeeded"), timeout=60, what="Succeeded")
    text = operator.metrics()
    assert f'training_operator_jobs_created_total{{job_namespace="{namespace}",framework="tensorflow"}} 1' in text
    assert f'training_operator_jobs_successful_total{{job_namespace="{namespace}",framework="tensorflow"}} 1' in text
    for family in ("workqueue_depth", "workqueue_adds_total", "rest_client_requests_total",
                   "controller_runtime_reconcile_total", "tfjob_children_total", "tfjob_job_pods_created_seconds",
                   "tfjob_job_pods_running_seconds"):
        assert f"# TYPE {family} " in text
    assert operator.metric("tfjob_job_pods_created_seconds_count") >= 1


@pytest.mark.every_version
def test_kustomize_install_applies(kube):
    r = kube.run("apply", "--dry-run=server", "-k", os.path.join(ROOT, "config", "default"))
    assert "deployment.apps/tfjob-operator created (server dry run)" in r.stdout


def test_R11_condition_order_and_state_column(kube, namespace, operator):
    kube.apply(tfjob("order", {"Worker": {"template": container(ends(0, "2s"))}}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "order", "Succeeded"), timeout=60, what="Succeeded")
    time.sleep(2)  # later reconciles must not reorder or add conditions
    st = job_status(kube, namespace, "order")
    assert [(c["type"], c["status"]) for c in st["conditions"]] == [("Created", "True"), ("Running", "False"),
                                                                  ("Succeeded", "True")]
    assert kube("get", "tfjobs", "-n", namespace, "--no-headers").split()[1] == "Succeeded"


def test_R08_resume_uses_the_templates_changed_while_suspended(kube, namespace, operator):
    kube.apply(tfjob("r08", {"Worker": {"template": container()}}, {"suspend": True}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "r08", "Suspended"), what="Suspended")
    time.sleep(1)
    assert pods(kube, namespace, "r08") == {}  # created suspended: nothing at all
    assert "startTime" not in job_status(kube, namespace, "r08")
    kube("patch", "tfjob", "r08", "-n", namespace, "--type=merge", "-p", json.dumps({"spec": {
        "runPolicy": {"suspend": False},
        "tfReplicaSpecs": {"Worker": {"template": {
            "metadata": {"labels": {"admitted-by": "kueue"}, "annotations": {"kueue.x-k8s.io/workload": "w1"}},
            "spec": {"nodeSelector": {"type": "kwok"},
                     "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]}}}}}}))
    wait_for(lambda: len(pods(kube, namespace, "r08")) == 1, what="the pod")
    p = pods(kube, namespace, "r08")["r08-worker-0"]
    assert p["metadata"]["labels"]["admitted-by"] == "kueue"
    assert p["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == "w1"
    assert p["spec"]["nodeSelector"] == {"type": "kwok"}
    assert {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"} in p["spec"]["tolerations"]


def test_always_restarts_a_failed_pod(kube, namespace, operator):
    kube.apply(tfjob("always", {"Worker": {"restartPolicy": "Always", "template": container(ends(2, "1s"))}},
                     {"backoffLimit": 2}), namespace)
    wait_for(lambda: job_status(kube, namespace, "always").get("replicaStatuses", {}).get("Worker", {}).get("restarts", 0) >= 1,
             timeout=60, what="a restart")
    assert any(e[1] == "TFJobRestarting" for e in events(kube, namespace, "always"))


def test_podgroup_crd_without_the_version_spoken_is_one_clear_startup_error(kube, tfjob_crd):
    """D34: a PodGroup CRD that is installed but does not serve the version the operator speaks
    (Volcano's v1beta1) stops the start with one error naming the group, that version and the
    versions served."""
    kube("patch", "crd", "podgroups.scheduling.volcano.sh", "--type=json", "-p", json.dumps([
        {"op": "add", "path": "/spec/versions/-",
         "value": {"name": "v1alpha1", "served": True, "storage": False,
                   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
        {"op": "replace", "path": "/spec/versions/0/served", "value": False}]))
    try:
        op = OperatorProcess(kube, "--gang-scheduler-name", "volcano").start()
        assert op.proc.wait(timeout=30) == 2
        with open(op.log_path) as f:
            log = f.read()
        assert ("gang scheduling by volcano needs scheduling.volcano.sh/v1beta1; "
                "the API server serves only v1alpha1") in log, log
        assert "crd might be missing" not in log
    finally:
        kube("apply", "-f", os.path.join(ROOT, "tests", "e2e", "manifests", "podgroup-crds.yaml"))
        kube.wait_established("podgroups.scheduling.volcano.sh", timeout=30)


def test_missing_podgroup_crd_is_a_clear_startup_error(kube, tfjob_crd):
    kube("delete", "crd", "podgroups.scheduling.x-k8s.io", "--wait=true")
    try:
        op = OperatorProcess(kube, "--gang-scheduler-name", "scheduler-plugins-scheduler").start()
        assert op.proc.wait(timeout=30) == 2
        with open(op.log_path) as f:
            log = f.read()
        assert "crd might be missing, please install crd" in log
        assert "podgroups.scheduling.x-k8s.io" in log
    finally:
        kube("apply", "-f", os.path.join(ROOT, "tests", "e2e", "manifests", "podgroup-crds.yaml"))
        kube.wait_established("podgroups.scheduling.x-k8s.io", timeout=30)
