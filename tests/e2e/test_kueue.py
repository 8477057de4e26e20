"""The Kueue contract (issues 8, 16 and 26; docs/semantics.md 3.12 and section 6; regressions R07-R09;
docs/kueue.md) against real Kueue (tests/e2e/kueue.py: scripts/build-kueue's manager, its CRDs, its
webhooks by URL, waitForPodsReady on), in both modes, each scenario once per mode (the test id
names it): "integration", Kueue's kubeflow.org/tfjob integration owns the Workloads and our
operator only honours suspend; "operator", that integration is off (TFJob an external framework)
and `tfjob operator --kueue-mode operator` creates and follows the Workloads itself, with its
mutating webhook suspending a queued job on create. A TFJob with the queue-name label is
suspended on create, admitted in order of quota with the flavour's node selector, runs,
finishes and releases its quota; a higher-priority workload preempts it (with and without
ttlSecondsAfterFinished, trainer#2239); a job whose pods never start is evicted by Kueue's
PodsReady timeout. What Kueue reads of ours in the integration mode: Running (PodsReady),
Succeeded/Failed (Finished) and replicaStatuses[*].active (still active while suspended).
One control plane for both modes; Kueue and the operator are restarted once, between them."""
import base64
import contextlib
import json
import os
import subprocess
import time
import uuid

import pytest

from conftest import ROOT, OperatorProcess, api_time, wait_for
from kueue import MODES, NAMESPACE_LABEL, PODS_READY_TIMEOUT_S, Kueue, free_port, yaml_objects
from test_operator import conditions, ends, job_status, pods, tfjob

FLAVOR = "e2e-kwok"
# The flavour's node labels: every KWOK node of scripts/test-cluster carries type=kwok and has
# cpu 32, memory 256Gi, pods 110 allocatable (tests/e2e/manifests/kwok-stages.yaml).
FLAVOR_LABELS = {"type": "kwok"}
QUEUE = "user-queue"


@pytest.fixture(scope="module", params=MODES)
def mode(request):
    """Who owns the Workloads (tests/e2e/kueue.py MODES); module-scoped, so pytest runs every
    scenario of one mode before switching Kueue and the operator to the other."""
    return request.param


class KueueOperator:
    """The operator of one mode: `tfjob operator --kueue-mode MODE`; in the operator mode with its
    webhook served on 127.0.0.1 and registered by URL as a mutating webhook for the namespaces
    Kueue manages (config/webhook/kueue-defaulter.yaml), as Kueue's own TFJob webhook is in the
    integration mode."""

    def __init__(self, kube, kueue_mode):
        self.kube, self.kueue_mode, self.proc, self.webhook_config = kube, kueue_mode, None, None

    def start(self):
        args = ["--workers", "4", "--kueue-mode", self.kueue_mode]
        if self.kueue_mode == "operator":
            certs = subprocess.run([os.path.join(ROOT, "config", "webhook", "generate-cert"), "--out",
                                    os.path.join(self.kube.dir, "tfjob-webhook-" + uuid.uuid4().hex[:6]),
                                    "--ip", "127.0.0.1"], check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
            port = free_port()
            args += ["--webhook-port", str(port), "--webhook-host", "127.0.0.1", "--webhook-cert-dir", certs]
        self.proc = OperatorProcess(self.kube, *args).start()
        # Up (its signal handling too: a SIGTERM right after the start would kill it otherwise).
        self.proc.port("health probes")
        if self.kueue_mode == "operator":
            self.proc.port("webhook")
            self.register_webhook(certs, port)
        return self

    def register_webhook(self, certs, port):
        [config] = yaml_objects(self.kube, os.path.join(ROOT, "config", "webhook", "kueue-defaulter.yaml"))
        with open(os.path.join(certs, "ca.crt"), "rb") as f:
            ca = base64.b64encode(f.read()).decode()
        config["metadata"] = {"name": "tfjob-kueue-defaulter-" + uuid.uuid4().hex[:6]}
        for hook in config["webhooks"]:
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{hook['clientConfig']['service']['path']}",
                                    "caBundle": ca}
            hook["namespaceSelector"] = {"matchLabels": {NAMESPACE_LABEL: "true"}}
        self.kube.apply(config)
        self.webhook_config = config["metadata"]["name"]
        # The API server picks up a new webhook configuration within a second or so.
        probe_ns = "kueue-probe-" + uuid.uuid4().hex[:6]
        self.kube("create", "namespace", probe_ns)
        self.kube("label", "namespace", probe_ns, f"{NAMESPACE_LABEL}=true")
        probe = queued_job("probe", {"Worker": replica(1, "1")})

        def defaulted():
            r = self.kube.run("create", "--dry-run=server", "-n", probe_ns, "-o", "json", "-f", "-",
                              stdin=json.dumps(probe), check=False)
            return r.returncode == 0 and json.loads(r.stdout)["spec"].get("runPolicy", {}).get("suspend") is True
        try:
            wait_for(defaulted, timeout=30, what="the API server to call the operator's mutating webhook")
        finally:
            self.kube.run("delete", "namespace", probe_ns, "--wait=false", check=False)

    def stop(self):
        if self.webhook_config:
            self.kube.run("delete", "mutatingwebhookconfiguration", self.webhook_config, "--ignore-not-found",
                          check=False)
            self.webhook_config = None
        return self.proc.stop()


@pytest.fixture(scope="module")
def operator(kube, tfjob_crd, mode, kueue):
    """The operator of the mode. `operator.switch(kueue_mode)` runs a block with another one in its
    place (the misconfiguration test), then the mode's own again."""
    class Holder:
        def __init__(self):
            self.current = KueueOperator(kube, mode).start()

        @contextlib.contextmanager
        def switch(self, kueue_mode):
            assert self.current.stop() == 0, "the operator did not stop cleanly on SIGTERM"
            self.current = KueueOperator(kube, kueue_mode).start()
            try:
                yield self.current
            finally:
                code = self.current.stop()
                self.current = KueueOperator(kube, mode).start()
            assert code == 0, "the operator did not stop cleanly on SIGTERM"

    holder = Holder()
    yield holder
    assert holder.current.stop() == 0, "the operator did not stop cleanly on SIGTERM"


@pytest.fixture(scope="module")
def kueue(kube, tfjob_crd, mode):
    k = Kueue(kube, mode=mode).start()
    try:
        kube.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": FLAVOR},
                    "spec": {"nodeLabels": FLAVOR_LABELS}})
        for name, value in (("low", 100), ("high", 1000)):
            kube.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                        "metadata": {"name": f"e2e-{name}"}, "value": value})
        yield k
    finally:
        code = k.stop()
    assert code == 0, f"Kueue did not stop cleanly on SIGTERM; log:\n{k.tail()}"


@pytest.fixture
def queue(kube, kueue, operator):
    """A namespace Kueue manages, with a LocalQueue on its own ClusterQueue. Call it with the
    ClusterQueue's cpu quota (and preemption policy) to create them; returns the namespace."""
    made = []

    def make(cpu, preemption=None, labelled=True):
        ns = "kueue-" + uuid.uuid4().hex[:8]
        kube("create", "namespace", ns)
        if labelled:  # else no webhook (Kueue's or the operator's) sees the namespace's jobs
            kube("label", "namespace", ns, f"{NAMESPACE_LABEL}=true")
        cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": ns},
              "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                       "queueingStrategy": "StrictFIFO",
                       "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [
                           {"name": FLAVOR, "resources": [{"name": "cpu", "nominalQuota": cpu},
                                                          {"name": "memory", "nominalQuota": "64Gi"}]}]}]}}
        if preemption:
            cq["spec"]["preemption"] = preemption
        kube.apply(cq)
        made.append(ns)
        kube.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                    "metadata": {"name": QUEUE, "namespace": ns}, "spec": {"clusterQueue": ns}})
        wait_for(lambda: active_cq(kube, ns), what=f"ClusterQueue {ns} Active")
        return ns

    yield make
    # While Kueue still runs, so that its finalizers are removed and nothing is left behind.
    for ns in made:
        kube.run("delete", "tfjobs", "--all", "-n", ns, "--timeout=60s", check=False)
        kube.run("delete", "namespace", ns, "--timeout=90s", check=False)
        kube.run("delete", "clusterqueue", ns, "--timeout=60s", check=False)


def active_cq(kube, name):
    cq = kube.get("clusterqueue", name)
    return any(c["type"] == "Active" and c["status"] == "True" for c in cq.get("status", {}).get("conditions", []))


def replica(n, cpu, annotations=None, **spec):
    """A replica spec of n pods, each asking for cpu (and 1Gi of memory)."""
    container = {"name": "tensorflow", "image": "tensorflow/tensorflow:2.16.1",
                 "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"cpu": cpu, "memory": "1Gi"}}}
    return {"replicas": n, "template": {"metadata": {"annotations": annotations or {}},
                                        "spec": dict({"containers": [container]}, **spec)}}


def queued_job(name, replicas, priority=None, **run_policy):
    """A TFJob as a user submits it to Kueue: the queue-name label, not suspended."""
    job = tfjob(name, replicas, run_policy or None)
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": QUEUE}
    if priority:
        job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = f"e2e-{priority}"
    return job


def submit(kube, ns, job):
    """Creates the job; returns the object as stored (after Kueue's mutating webhook)."""
    r = kube.run("create", "-n", ns, "-o", "json", "-f", "-", stdin=json.dumps(job))
    return json.loads(r.stdout)


def workload(kube, ns, job):
    """The Workload Kueue made for the TFJob (owned by it)."""
    for w in kube.get("workloads.kueue.x-k8s.io", None, ns)["items"]:
        if any(o["kind"] == "TFJob" and o["name"] == job for o in w["metadata"].get("ownerReferences", [])):
            return w
    return None


def wl_condition(kube, ns, job, ctype):
    w = workload(kube, ns, job)
    for c in (w or {}).get("status", {}).get("conditions", []):
        if c["type"] == ctype:
            return c
    return None


def wl_true(kube, ns, job, ctype, reason=None):
    c = wl_condition(kube, ns, job, ctype)
    return c is not None and c["status"] == "True" and (reason is None or c["reason"] == reason)


def suspended(kube, ns, name):
    return kube.get("tfjob", name, ns)["spec"]["runPolicy"].get("suspend") is True


def active(kube, ns, name):
    return {t: rs.get("active", 0) for t, rs in job_status(kube, ns, name).get("replicaStatuses", {}).items()}


def cq_usage(kube, ns):
    """(reserving workloads, admitted workloads, cpu in use) of the ClusterQueue."""
    st = kube.get("clusterqueue", ns).get("status", {})
    cpu = [r.get("total", "0") for f in st.get("flavorsReservation", []) for r in f["resources"] if r["name"] == "cpu"]
    return st.get("reservingWorkloads", 0), st.get("admittedWorkloads", 0), cpu[0] if cpu else "0"


def services(kube, ns, job):
    return [s["metadata"]["name"] for s in kube.get("services", None, ns)["items"]
            if s["metadata"].get("labels", {}).get("training.kubeflow.org/job-name") == job]


def assert_placed_by_kueue(kube, ns, job):
    """Every pod carries what Kueue's admission wrote into the templates: the flavour's node
    selector and its pod-set label; the scheduler bound it to a node of that flavour."""
    ps = pods(kube, ns, job)
    assert ps
    for p in ps.values():
        rtype = p["metadata"]["labels"]["training.kubeflow.org/replica-type"]
        assert p["metadata"]["labels"]["kueue.x-k8s.io/podset"] == rtype
        assert p["spec"]["nodeSelector"] == FLAVOR_LABELS


@pytest.mark.every_version
def test_kueue_suspends_admits_in_quota_order_and_releases(kube, queue):
    ns = queue("2")
    # PS 0.5 + 2 workers x 0.5 = 1.5 cpu each: one job at a time fits the quota of 2.
    previous = None
    for name in ["first", "second", "third"]:
        if previous:  # StrictFIFO orders by creation time, which has a resolution of 1 s
            wait_for(lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) > previous, timeout=5, interval=0.1,
                     what="the next second")
        created = submit(kube, ns, queued_job(name, {"PS": replica(1, "500m"),
                                                     "Worker": replica(2, "500m", ends(0, "5s"))}))
        # Kueue's mutating webhook suspended it on create.
        assert created["spec"]["runPolicy"]["suspend"] is True
        previous = created["metadata"]["creationTimestamp"]
        wait_for(lambda: workload(kube, ns, name), what=f"the Workload of {name}")
    w = workload(kube, ns, "first")
    assert [(p["name"], p["count"]) for p in w["spec"]["podSets"]] == [("ps", 1), ("worker", 2)]

    wait_for(lambda: wl_true(kube, ns, "first", "Admitted"), what="first admitted")
    wait_for(lambda: len(pods(kube, ns, "first")) == 3, what="3 pods of first")
    assert_placed_by_kueue(kube, ns, "first")
    wait_for(lambda: ("Running", "True") in conditions(kube, ns, "first"), what="first Running")
    wait_for(lambda: wl_true(kube, ns, "first", "PodsReady"), what="Kueue reads PodsReady from Running")
    # Over quota: the other two wait, suspended, with nothing created. On a busy machine first may
    # already have finished (and second been admitted) by the time we look: the snapshot counts
    # only if first's Workload was still unfinished after it was taken. The order itself is
    # checked below by the API's own timestamps, whatever the machine's speed.
    snapshot = {name: (suspended(kube, ns, name), pods(kube, ns, name), services(kube, ns, name),
                       conditions(kube, ns, name), job_status(kube, ns, name),
                       wl_true(kube, ns, name, "QuotaReserved")) for name in ("second", "third")}
    usage = cq_usage(kube, ns)
    if not wl_true(kube, ns, "first", "Finished"):
        for name, (is_suspended, its_pods, its_services, its_conditions, st, reserved) in snapshot.items():
            assert is_suspended and its_pods == {} and its_services == [], name
            # Created suspended: the operator made nothing and says so, and the job never started.
            assert its_conditions == [("Created", "True"), ("Suspended", "True")], name
            assert "startTime" not in st, name
            assert not reserved, name
        assert usage == (1, 1, "1500m")

    # first finishes and releases its quota to second (the head of the queue), not third.
    wait_for(lambda: ("Succeeded", "True") in conditions(kube, ns, "first"), timeout=60, what="first Succeeded")
    wait_for(lambda: wl_true(kube, ns, "first", "Finished", "Succeeded"), what="first's Workload Finished")
    wait_for(lambda: len(pods(kube, ns, "second")) == 3, timeout=60, what="second admitted after first")
    assert_placed_by_kueue(kube, ns, "second")
    # As above: on a busy machine second's 5 s may be over (and third admitted) by the time we
    # look; the snapshot counts only if second's Workload was still unfinished after it.
    third_waits = suspended(kube, ns, "third") and pods(kube, ns, "third") == {}
    if not wl_true(kube, ns, "second", "Finished"):
        assert third_waits
    wait_for(lambda: ("Succeeded", "True") in conditions(kube, ns, "second"), timeout=60, what="second Succeeded")
    wait_for(lambda: ("Succeeded", "True") in conditions(kube, ns, "third"), timeout=90, what="third Succeeded")
    wait_for(lambda: cq_usage(kube, ns) == (0, 0, "0"), what="all quota released")
    for name in ("first", "second", "third"):
        st = job_status(kube, ns, name)
        assert conditions(kube, ns, name)[-1] == ("Succeeded", "True")
        assert st["replicaStatuses"]["Worker"]["succeeded"] == 2 and "completionTime" in st
        assert wl_true(kube, ns, name, "Finished", "Succeeded")
    # One at a time, in order, by the API's clocks: each job got its quota, and its pods and
    # services were created, no earlier than the job before it finished (whole seconds).
    for before, after in (("first", "second"), ("second", "third")):
        finished = api_time(wl_condition(kube, ns, before, "Finished")["lastTransitionTime"])
        assert api_time(wl_condition(kube, ns, after, "QuotaReserved")["lastTransitionTime"]) >= finished, after
        for obj in list(pods(kube, ns, after).values()):
            assert api_time(obj["metadata"]["creationTimestamp"]) >= finished, obj["metadata"]["name"]


def test_kueue_reads_failed(kube, queue):
    ns = queue("2")
    submit(kube, ns, queued_job("doomed", {"Worker": replica(2, "500m", ends(3, "2s"))}))
    wait_for(lambda: ("Failed", "True") in conditions(kube, ns, "doomed"), timeout=60, what="Failed")
    wait_for(lambda: wl_true(kube, ns, "doomed", "Finished", "Failed"), what="the Workload Finished as Failed")
    st = job_status(kube, ns, "doomed")
    assert conditions(kube, ns, "doomed")[-1] == ("Failed", "True")
    assert st["replicaStatuses"]["Worker"]["failed"] >= 1 and "completionTime" in st
    wait_for(lambda: cq_usage(kube, ns) == (0, 0, "0"), what="quota released")


@pytest.mark.parametrize("ttl", [None, 5], ids=["no-ttl", "ttlSecondsAfterFinished"])
def test_kueue_preempts_a_running_tfjob_for_a_higher_priority_one(kube, queue, ttl):
    ns = queue("2", {"withinClusterQueue": "LowerPriority"})
    run_policy = {"ttlSecondsAfterFinished": ttl} if ttl is not None else {}
    submit(kube, ns, queued_job("low", {"PS": replica(1, "500m"), "Worker": replica(2, "500m", ends(0, "15s"))},
                                priority="low", **run_policy))
    wait_for(lambda: ("Running", "True") in conditions(kube, ns, "low"), timeout=60, what="low Running")
    assert len(pods(kube, ns, "low")) == 3
    # A change of active counts alone may be written up to a second after the condition (D30).
    wait_for(lambda: active(kube, ns, "low") == {"PS": 1, "Worker": 2}, timeout=30, what="low active 1 PS + 2 Workers")
    first_uids = {p["metadata"]["uid"] for p in pods(kube, ns, "low").values()}

    # 2 cpu: it fits only if low's 1.5 are released.
    submit(kube, ns, queued_job("high", {"Worker": replica(2, "1", ends(0, "3s"))}, priority="high"))
    wait_for(lambda: wl_true(kube, ns, "low", "Evicted", "Preempted"), timeout=60, what="low preempted")
    # Every pod and service of low goes, active drops to 0, and only then is its quota released.
    wait_for(lambda: suspended(kube, ns, "low"), what="low suspended by Kueue")
    wait_for(lambda: pods(kube, ns, "low") == {} and services(kube, ns, "low") == [], timeout=60,
             what="low's pods and services deleted")
    wait_for(lambda: active(kube, ns, "low") == {"PS": 0, "Worker": 0}, what="low active 0")
    cond = conditions(kube, ns, "low")
    assert ("Running", "False") in cond and cond[-1] == ("Suspended", "True")
    wait_for(lambda: not wl_true(kube, ns, "low", "QuotaReserved"), what="low's quota released")
    assert "admission" not in workload(kube, ns, "low").get("status", {})
    assert kube.get("tfjob", "low", ns, check=False) is not None, "the suspended job must not be deleted (TTL)"

    wait_for(lambda: wl_true(kube, ns, "high", "Admitted"), timeout=60, what="high admitted")
    wait_for(lambda: ("Succeeded", "True") in conditions(kube, ns, "high"), timeout=60, what="high Succeeded")
    # low is re-queued and admitted again: new pods, then it finishes.
    wait_for(lambda: wl_true(kube, ns, "low", "Admitted"), timeout=60, what="low admitted again")
    wait_for(lambda: len(pods(kube, ns, "low")) == 3, timeout=60, what="low's pods again")
    assert not first_uids & {p["metadata"]["uid"] for p in pods(kube, ns, "low").values()}
    assert_placed_by_kueue(kube, ns, "low")
    wait_for(lambda: ("Succeeded", "True") in conditions(kube, ns, "low"), timeout=90, what="low Succeeded")
    wait_for(lambda: cq_usage(kube, ns) == (0, 0, "0"), what="all quota released")
    if ttl is not None:  # then the TTL deletes it, its Workload with it
        wait_for(lambda: kube.get("tfjob", "low", ns, check=False) is None, timeout=60, what="low deleted by TTL")
        wait_for(lambda: workload(kube, ns, "low") is None, timeout=60, what="low's Workload deleted")


def test_kueue_evicts_a_tfjob_whose_pods_never_start(kube, queue):
    ns = queue("100")
    # Within quota, but larger than any node (32 cpu): Kueue admits it, the scheduler cannot place it.
    submit(kube, ns, queued_job("stuck", {"Worker": replica(1, "40")}))
    wait_for(lambda: wl_true(kube, ns, "stuck", "Admitted"), what="stuck admitted")
    wait_for(lambda: len(pods(kube, ns, "stuck")) == 1, what="the pod of stuck")
    assert ("Running", "True") not in conditions(kube, ns, "stuck")
    wait_for(lambda: wl_true(kube, ns, "stuck", "Evicted", "PodsReadyTimeout"), timeout=PODS_READY_TIMEOUT_S + 60,
             what="Kueue's PodsReady timeout")
    wait_for(lambda: suspended(kube, ns, "stuck"), what="stuck suspended")
    wait_for(lambda: pods(kube, ns, "stuck") == {}, timeout=60, what="the pod deleted")
    wait_for(lambda: not wl_true(kube, ns, "stuck", "QuotaReserved"), what="quota released")
    w = workload(kube, ns, "stuck")
    assert w["status"]["requeueState"]["count"] == 1  # re-queued, after a backoff
    cond = conditions(kube, ns, "stuck")
    assert cond[-1] == ("Suspended", "True") and ("Succeeded", "True") not in cond and ("Failed", "True") not in cond


def test_kueue_describe_says_why_a_job_waits_for_admission(kube, queue):
    """`tfjob describe` of a job Kueue has not admitted (it asks for more cpu than the
    ClusterQueue's quota) names Kueue, the Workload and Kueue's own message (docs/cli.md); once
    the quota is raised and Kueue admits it, describe no longer says so."""
    import subprocess
    from test_cli import TFJOB
    ns = queue("1")
    submit(kube, ns, queued_job("big", {"Worker": replica(1, "2", ends(0, "60s"))}))
    wait_for(lambda: (wl_condition(kube, ns, "big", "QuotaReserved") or {}).get("status") == "False",
             what="Kueue refuses big's quota")
    w = workload(kube, ns, "big")
    message = wl_condition(kube, ns, "big", "QuotaReserved")["message"]

    def describe():
        r = subprocess.run([TFJOB, "describe", "big", "-n", ns, "--kubeconfig", kube.kubeconfig],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return [line for line in r.stdout.splitlines() if line.startswith("Why not running:")]

    why = describe()
    assert len(why) == 1, why
    assert f'is suspended by Kueue (queue "{QUEUE}"): Workload {w["metadata"]["name"]} is not admitted:' in why[0]
    assert message and message in why[0], (why, message)
    # Free the quota: Kueue admits it, the job resumes and describe no longer blames Kueue.
    kube("patch", "clusterqueue", ns, "--type=json", "-p",
         json.dumps([{"op": "replace", "path": "/spec/resourceGroups/0/flavors/0/resources/0/nominalQuota",
                      "value": "4"}]))
    wait_for(lambda: wl_true(kube, ns, "big", "Admitted"), what="big admitted once the quota is raised")
    wait_for(lambda: not suspended(kube, ns, "big"), what="big resumed")
    wait_for(lambda: not any("Kueue" in line for line in describe()), what="describe no longer blames Kueue")


def workloads_of(kube, ns, job):
    """(name, uid) of every Workload the job owns: a Workload deleted and made again under the same
    name shows as a second uid."""
    return [(w["metadata"]["name"], w["metadata"]["uid"])
            for w in kube.get("workloads.kueue.x-k8s.io", None, ns)["items"]
            if any(o["kind"] == "TFJob" and o["name"] == job for o in w["metadata"].get("ownerReferences", []))]


@pytest.mark.parametrize("mode", ["integration"], indirect=True)
def test_kueue_integration_and_operator_mode_both_on_keep_one_workload_per_job(kube, queue, operator):
    """The misconfiguration (docs/kueue.md): Kueue's TFJob integration on AND `--kueue-mode
    operator`. Both create the Workload under Kueue's deterministic name, so the second create
    collides (AlreadyExists) instead of reserving the quota twice: each job has exactly one
    Workload at every look (the same object throughout: neither deletes the other's), is admitted
    one at a time in the quota, and runs to Succeeded."""
    with operator.switch("operator"):
        ns = queue("2")
        names = ("one", "two")
        for name in names:  # 1.5 cpu each: one at a time fits the quota of 2
            submit(kube, ns, queued_job(name, {"PS": replica(1, "500m"), "Worker": replica(2, "500m", ends(0, "3s"))}))
        seen = {name: set() for name in names}

        def all_succeeded():
            for name in names:
                wls = workloads_of(kube, ns, name)
                assert len(wls) <= 1, f"{name} has {wls}"
                seen[name].update(wls)
            usage = cq_usage(kube, ns)
            assert usage[0] <= 1, f"two Workloads reserve quota at once: {usage}"
            return all(("Succeeded", "True") in conditions(kube, ns, name) for name in names)
        wait_for(all_succeeded, timeout=120, what="both jobs Succeeded")
        for name in names:
            assert len(seen[name]) == 1 and workloads_of(kube, ns, name) == list(seen[name]), (name, seen[name])
            assert wl_true(kube, ns, name, "Finished", "Succeeded"), name
            assert_placed_by_kueue(kube, ns, name)
        wait_for(lambda: cq_usage(kube, ns) == (0, 0, "0"), what="all quota released")


@pytest.mark.parametrize("mode", ["operator"], indirect=True)
def test_kueue_operator_mode_suspends_a_job_no_webhook_suspended(kube, queue):
    """Without the mutating webhook (the namespace is not selected by it), a queued job is created
    running; the operator's mode suspends it before the core may create a pod (docs/kueue.md), so
    every pod it ever gets is made from the admitted templates (the podset label, the flavour's
    node selector), and only once its Workload holds quota."""
    ns = queue("2", labelled=False)
    created = submit(kube, ns, queued_job("bare", {"Worker": replica(2, "500m", ends(0, "3s"))}))
    assert created["spec"].get("runPolicy", {}).get("suspend") is not True  # no webhook defaulted it
    wait_for(lambda: ("Succeeded", "True") in conditions(kube, ns, "bare"), timeout=90, what="bare Succeeded")
    assert wl_true(kube, ns, "bare", "Finished", "Succeeded")
    reserved = api_time(wl_condition(kube, ns, "bare", "QuotaReserved")["lastTransitionTime"])
    made = [e for e in kube.get("events", None, ns)["items"]
            if e["involvedObject"]["name"] == "bare" and e["reason"] == "SuccessfulCreatePod"]
    # No pod before admission, none deleted: two creates in all.
    assert sum(e.get("count", 1) for e in made) == 2 and len(pods(kube, ns, "bare")) == 2, made
    assert_placed_by_kueue(kube, ns, "bare")
    for p in pods(kube, ns, "bare").values():
        assert api_time(p["metadata"]["creationTimestamp"]) >= reserved, p["metadata"]["name"]
