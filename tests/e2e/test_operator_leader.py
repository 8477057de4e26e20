"""Leader election end to end: two operators, one leads; kill it; the other takes over and
finishes the work with no duplicates."""
from conftest import OperatorProcess, api_time, wait_for
from test_operator import LATE, container, has_condition, tfjob
from test_operator_chaos import Api, Watch

LEASES = "/apis/coordination.k8s.io/v1/namespaces/tfjob-system/leases"


def test_leader_failover(kube, namespace, tfjob_crd):
    # The Lease lives where config/rbac lets the operator write leases: tfjob-system.
    lease_name = f"tfjob-operator-{namespace}"
    args = ("--leader-elect=true", "--leader-election-namespace", "tfjob-system", "--leader-election-id", lease_name,
            "--namespace", namespace)
    leases = Watch(Api(kube.dir), LEASES)  # every version of the Lease, with the times its holders wrote
    a = OperatorProcess(kube, *args, name="leader-a").start()
    b = OperatorProcess(kube, *args, name="leader-b").start()
    try:
        lease = wait_for(lambda: (kube.get("lease", lease_name, "tfjob-system", check=False) or {}).get("spec", {}).get("holderIdentity"),
                         what="a leader")
        leader, standby = (a, b) if a.metric("leader_election_master_status") == 1 else (b, a)
        assert leader.metric("leader_election_master_status") == 1
        assert standby.metric("leader_election_master_status") == 0
        kube.apply(tfjob("lead", {"Worker": {"replicas": 3, "template": container()}}), namespace)
        # Generous: earlier suites restart the API server, and KWOK (our kubelet) and the scheduler
        # take up to 30 s to reconnect after that.
        wait_for(lambda: has_condition(kube, namespace, "lead", "Running"), timeout=90, what="Running")
        leader.kill()
        wait_for(lambda: standby.metric("leader_election_master_status") == 1, timeout=120, what="the takeover")
        holder = kube.get("lease", lease_name, "tfjob-system")["spec"]["holderIdentity"]
        assert holder and holder != lease
        # When, by the Lease's own times: not before the dead leader's last renewal + the lease
        # duration (the standby waits for the record to stand still that long), nor much after.
        assert leases.wait(lambda w: any(v["spec"].get("holderIdentity") == holder for v in w.history.get(lease_name, [])),
                           timeout=30), "the watch never saw the new holder"
        with leases.cond:
            history = [v["spec"] for v in leases.history[lease_name]]
        old = [v for v in history if v.get("holderIdentity") == lease][-1]
        new = next(v for v in history if v.get("holderIdentity") == holder)
        due = api_time(old["renewTime"]) + old["leaseDurationSeconds"]
        acquired = api_time(new["acquireTime"])
        assert due - 1 <= acquired < due + LATE, f"took over {acquired - due:+.1f}s after the lease expired"
        kube("patch", "tfjob", "lead", "-n", namespace, "--type=merge", "-p", '{"spec":{"tfReplicaSpecs":{"Worker":{"replicas":4}}}}')
        wait_for(lambda: len(kube.get("pods", None, namespace)["items"]) == 4, what="the new leader acts")
        names = sorted(p["metadata"]["name"] for p in kube.get("pods", None, namespace)["items"])
        assert names == [f"lead-worker-{i}" for i in range(4)]
    finally:
        a.kill()
        b.kill()
        leases.stop()
