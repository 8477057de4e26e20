"""Leader election end to end: two operators, one leads; kill it; the other takes over and
finishes the work with no duplicates."""
import time

from conftest import OperatorProcess, wait_for
from test_operator import container, ends, has_condition, tfjob


def test_leader_failover(kube, namespace, tfjob_crd):
    # The Lease lives where config/rbac lets the operator write leases: tfjob-system.
    lease_name = f"tfjob-operator-{namespace}"
    args = ("--leader-elect=true", "--leader-election-namespace", "tfjob-system", "--leader-election-id", lease_name,
            "--namespace", namespace)
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
        start = time.time()
        wait_for(lambda: standby.metric("leader_election_master_status") == 1, timeout=30, what="the takeover")
        assert time.time() - start < 25
        holder = kube.get("lease", lease_name, "tfjob-system")["spec"]["holderIdentity"]
        assert holder and holder != lease
        kube("patch", "tfjob", "lead", "-n", namespace, "--type=merge", "-p", '{"spec":{"tfReplicaSpecs":{"Worker":{"replicas":4}}}}')
        wait_for(lambda: len(kube.get("pods", None, namespace)["items"]) == 4, what="the new leader acts")
        names = sorted(p["metadata"]["name"] for p in kube.get("pods", None, namespace)["items"])
        assert names == [f"lead-worker-{i}" for i in range(4)]
    finally:
        a.kill()
        b.kill()
