"""The operator under faults (docs/semantics.md section 7): killed mid-creation (R01), foreground deletion
(R03), a writer racing the status (R10), the API server gone for 30 s (R13), a job recreated
while its old pods still terminate (R17), and finished jobs costing nothing (R20)."""
import json
import subprocess
import threading
import time

import pytest

from conftest import OperatorProcess, api_time, wait_for, wait_for_server_time
from test_operator import (container, deadline_failure, ends, has_condition, job_status, pods, tfjob,
                           ttl_deletion)
from test_operator_chaos import PODS, TFJOBS, Api, Watch, check_condition_history


def all_pods(kube, ns):
    return kube.get("pods", None, ns)["items"]


def test_R01_operator_killed_mid_creation_no_duplicates(kube, namespace, tfjob_crd):
    # Every pod of the namespace from before the first operator starts, from a real watch: a
    # second pod of one name, even one deleted again, is a second uid.
    watch = Watch(Api(kube.dir), PODS.format(ns=namespace))
    op = OperatorProcess(kube, "--workers", "2", "--kube-api-qps", "5", "--kube-api-burst", "5").start()
    try:
        kube.apply(tfjob("burst", {"Worker": {"replicas": 30, "template": container()}}), namespace)
        wait_for(lambda: 3 <= len(all_pods(kube, namespace)) < 30, timeout=30, interval=0.05,
                 what="the operator to be part-way through the creates")
        op.kill()  # SIGKILL: no chance to write anything else
        created_before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in all_pods(kube, namespace)}
    finally:
        op.kill()
    op2 = OperatorProcess(kube, "--workers", "2").start()
    try:
        wait_for(lambda: len(all_pods(kube, namespace)) == 30, timeout=60, what="all 30 pods")
        wait_for(lambda: has_condition(kube, namespace, "burst", "Running"), timeout=30, what="Running")
        names = [p["metadata"]["name"] for p in all_pods(kube, namespace)]
        assert sorted(names) == sorted(f"burst-worker-{i}" for i in range(30))
        after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in all_pods(kube, namespace)}
        for name, uid in created_before.items():
            assert after[name] == uid, f"{name} was recreated"
        assert len(kube.get("services", None, namespace)["items"]) == 30
        # The count of the last pods to run may follow the condition by a second (D30).
        wait_for(lambda: job_status(kube, namespace, "burst")["replicaStatuses"]["Worker"].get("active") == 30,
                 timeout=30, what="active 30")
        assert watch.wait(lambda w: all(uid in w.uids.get(n, ()) for n, uid in after.items()), 30), "watch behind"
        watch.check()
        assert watch.duplicates() == {}, f"duplicate pods: {watch.duplicates()}"
        assert watch.names() == set(after)
    finally:
        watch.stop()
        assert op2.stop() == 0


# R04 and R05 across a restart, each with two jobs and the operator down in between: one whose
# time runs out while it is down (acted on at once after the restart: a clock that restarted
# with the operator would wait its whole TTL or deadline again, so it must happen before the
# restart's server time + that TTL or deadline), and one whose time runs out after the restart
# (acted on then: on time, not never). Every time is the API server's (tests/e2e/conftest.py).
OVERDUE, LATER = 15, 20  # seconds


def test_R04_ttl_holds_across_an_operator_restart(kube, namespace, tfjob_crd):
    op = OperatorProcess(kube, "--namespace", namespace).start()
    try:
        for name, ttl in (("overdue", OVERDUE), ("later", LATER)):
            kube.apply(tfjob(name, {"Worker": {"template": container(ends(0, "1s"))}}, {"ttlSecondsAfterFinished": ttl}),
                       namespace)
        wait_for(lambda: all(has_condition(kube, namespace, n, "Succeeded") for n in ("overdue", "later")), timeout=60,
                 what="Succeeded")
    finally:
        op.kill()  # nothing else happens to the jobs from here on
    done = {n: job_status(kube, namespace, n)["completionTime"] for n in ("overdue", "later")}
    wait_for_server_time(kube, api_time(done["overdue"]) + OVERDUE)  # overdue while no operator runs
    assert kube.get("tfjob", "overdue", namespace, check=False) is not None
    restart = kube.server_now()
    op2 = OperatorProcess(kube, "--namespace", namespace).start()
    try:
        ttl_deletion(kube, namespace, "overdue", OVERDUE, done["overdue"], not_after=restart + OVERDUE)
        ttl_deletion(kube, namespace, "later", LATER, done["later"])
    finally:
        assert op2.stop() == 0


def test_R05_deadline_holds_across_an_operator_restart(kube, namespace, tfjob_crd):
    op = OperatorProcess(kube, "--namespace", namespace).start()
    try:
        for name, deadline in (("overdue", OVERDUE), ("later", LATER)):
            kube.apply(tfjob(name, {"Worker": {"template": container()}}, {"activeDeadlineSeconds": deadline}), namespace)
        wait_for(lambda: all(has_condition(kube, namespace, n, "Running") for n in ("overdue", "later")), what="Running")
    finally:
        op.kill()
    started = {n: job_status(kube, namespace, n)["startTime"] for n in ("overdue", "later")}
    wait_for_server_time(kube, api_time(started["overdue"]) + OVERDUE)
    assert not has_condition(kube, namespace, "overdue", "Failed")
    restart = kube.server_now()
    op2 = OperatorProcess(kube, "--namespace", namespace).start()
    try:
        deadline_failure(kube, namespace, "overdue", OVERDUE, started["overdue"], not_after=restart + OVERDUE)
        deadline_failure(kube, namespace, "later", LATER, started["later"])
    finally:
        assert op2.stop() == 0


@pytest.fixture(scope="module")
def operator(kube, tfjob_crd):
    op = OperatorProcess(kube, "--workers", "4").start()
    yield op
    assert op.stop() == 0


def test_R03_foreground_deletion_recreates_nothing(kube, namespace, operator):
    kube.apply(tfjob("fg", {"Worker": {"replicas": 3, "template": container()}}), namespace)
    wait_for(lambda: len(pods(kube, namespace, "fg")) == 3, what="3 pods")
    uids = {p["metadata"]["uid"] for p in all_pods(kube, namespace)}
    # Every pod of the namespace from here on, from a real watch (a list, then a watch from its
    # resourceVersion): a pod created and deleted again during the deletion is seen too.
    watch = Watch(Api(kube.dir), PODS.format(ns=namespace))
    try:
        kube("delete", "tfjob", "fg", "-n", namespace, "--cascade=foreground", "--wait=false")
        wait_for(lambda: kube.get("tfjob", "fg", namespace, check=False) is None, timeout=60, what="the job gone")
        # The pods' deletions reached the watch: it is caught up with the deletion.
        assert watch.wait(lambda w: sum(1 for h in w.history.values() for o in h
                                        if o["metadata"].get("deletionTimestamp")) >= 3, 30), "pod deletions"
        time.sleep(1)
    finally:
        watch.stop()
    watch.check()
    seen = set().union(*watch.uids.values()) if watch.uids else set()
    assert seen == uids, "a child was created during the foreground deletion"


def test_R10_status_survives_a_writer_patching_the_job(kube, namespace, operator):
    # Every version of the job, from a real watch: no transition may be lost on the way.
    versions = Watch(Api(kube.dir), TFJOBS.format(ns=namespace))
    kube.apply(tfjob("race", {"Worker": {"replicas": 2, "template": container(ends(0, "4s"))}}), namespace)
    stop = threading.Event()

    def storm():
        i = 0
        while not stop.is_set():
            kube.run("patch", "tfjob", "race", "-n", namespace, "--type=merge", "-p",
                     json.dumps({"metadata": {"labels": {"storm": str(i)}, "annotations": {"storm": "x" * (i % 50)}}}),
                     check=False)
            i += 1
    threads = [threading.Thread(target=storm) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: has_condition(kube, namespace, "race", "Succeeded"), timeout=60, what="Succeeded")
    finally:
        stop.set()
        for t in threads:
            t.join()
        versions.stop()
    versions.check()
    st = job_status(kube, namespace, "race")
    assert [(c["type"], c["status"]) for c in st["conditions"]] == [("Created", "True"), ("Running", "False"),
                                                                  ("Succeeded", "True")]
    assert st["replicaStatuses"]["Worker"]["succeeded"] == 2
    history = versions.history["race"]
    assert sum(1 for v in history if "storm" in v["metadata"].get("labels", {})) > 0, "the storm never landed"
    check_condition_history(history)  # conditions only appended, in order
    # Running=True was written (and later turned False), not skipped.
    seen = {(c["type"], c["status"]) for v in history for c in v.get("status", {}).get("conditions", [])}
    assert ("Running", "True") in seen, "the Running transition was never written"


def test_R17_recreated_job_waits_only_for_the_old_pods(kube, namespace, operator):
    kube.apply(tfjob("again", {"Worker": {"template": container()}}), namespace)
    wait_for(lambda: len(pods(kube, namespace, "again")) == 1, what="the first pod")
    # The old pod lingers in Terminating (a finalizer) after its job is deleted.
    kube("patch", "pod", "again-worker-0", "-n", namespace, "--type=merge", "-p",
         '{"metadata":{"finalizers":["tfjob.test/hold"]}}')
    old_uid = kube.get("pod", "again-worker-0", namespace)["metadata"]["uid"]
    kube("delete", "tfjob", "again", "-n", namespace, "--wait=false")
    wait_for(lambda: kube.get("tfjob", "again", namespace, check=False) is None, what="the old job gone")
    kube.apply(tfjob("again", {"Worker": {"template": container()}}), namespace)
    new_uid = wait_for(lambda: (kube.get("tfjob", "again", namespace, check=False) or {}).get("metadata", {}).get("uid"))
    time.sleep(2)
    kube("patch", "pod", "again-worker-0", "-n", namespace, "--type=merge", "-p", '{"metadata":{"finalizers":null}}')

    def replaced():
        p = kube.get("pod", "again-worker-0", namespace, check=False)
        return p and p["metadata"]["uid"] != old_uid and p["metadata"]["ownerReferences"][0]["uid"] == new_uid
    wait_for(replaced, timeout=30, what="the new job's pod, well before a 5-minute expectation timeout")


def test_R20_finished_jobs_cost_no_api_traffic(kube, namespace, tfjob_crd):
    # Scoped to this namespace, so that only these jobs count.
    operator = OperatorProcess(kube, "--namespace", namespace).start()
    for i in range(20):
        kube.apply(tfjob(f"done-{i}", {"Worker": {"template": container(ends(0, "1s"))}}), namespace)
    wait_for(lambda: all(has_condition(kube, namespace, f"done-{i}", "Succeeded") for i in range(20)),
             timeout=120, what="20 jobs Succeeded")
    time.sleep(3)  # let the last status writes and events land
    writes = lambda: sum(operator.metric(f'rest_client_requests_total{{verb="{v}"') for v in ("create", "patch", "update", "delete"))
    before = writes()
    events_before = len(kube.get("events", None, namespace)["items"])
    time.sleep(10)
    assert writes() == before, "the operator kept writing for finished jobs"
    assert len(kube.get("events", None, namespace)["items"]) == events_before
    assert operator.stop() == 0


# Last in this module: after an outage KWOK (our stand-in kubelet) and the controller-manager
# also take a while to reconnect, which would slow the tests that follow.
def test_R13_api_server_outage(kube, namespace, operator):
    kube.apply(tfjob("outage", {"Worker": {"replicas": 2, "template": container()}}), namespace)
    wait_for(lambda: has_condition(kube, namespace, "outage", "Running"), what="Running")
    uids = {p["metadata"]["uid"] for p in all_pods(kube, namespace)}
    kube.script("stop-apiserver", kube.dir)
    time.sleep(30)
    assert operator.proc.poll() is None, "the operator exited while the API server was down"
    kube.script("start-apiserver", kube.dir)
    # Watches resume: a change after the outage is acted on.
    wait_for(lambda: kube.run("patch", "tfjob", "outage", "-n", namespace, "--type=merge", "-p",
                              '{"spec":{"tfReplicaSpecs":{"Worker":{"replicas":3}}}}', check=False).returncode == 0,
             timeout=60, what="the API server back")
    wait_for(lambda: len(pods(kube, namespace, "outage")) == 3, timeout=90, what="the third worker")
    after = {p["metadata"]["uid"] for p in all_pods(kube, namespace)}
    assert uids <= after and len(after) == 3  # no duplicates, nothing recreated
    assert operator.proc.poll() is None
