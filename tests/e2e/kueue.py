"""Real Kueue (scripts/build-kueue, pinned in scripts/versions.env) as a process against the test
cluster: its CRDs and webhook manifests come from its Go module, its webhooks are registered by
URL on 127.0.0.1 with a CA made by config/webhook/generate-cert (as test_webhook.py does for ours).
Two modes (docs/kueue.md): "integration" enables Kueue's kubeflow.org/tfjob integration (README.md,
"Kueue in the test bed"); "operator" leaves it off and names TFJob.v1.kubeflow.org an external
framework, for `tfjob operator --kueue-mode operator`, which owns the Workloads itself."""
import base64
import json
import os
import signal
import socket
import ssl
import subprocess
import urllib.request
import uuid

from conftest import ROOT, wait_for

MODES = ("integration", "operator")
# Kueue only manages jobs in namespaces with this label, and its TFJob webhooks are scoped to
# them, so the other e2e suites never meet Kueue.
NAMESPACE_LABEL = "tfjob.test/kueue"
# The waitForPodsReady timeout: an admitted TFJob must reach Running=True within it.
PODS_READY_TIMEOUT_S = 20
# Webhooks of Kueue that serve Kueue's own kinds; of the job-framework ones only TFJob's are kept,
# in the integration mode (the other frameworks' paths answer as no-ops, batch/job's are not
# needed here).
KUEUE_GROUP = "kueue.x-k8s.io"
# The CRDs Kueue's kustomization patches with a conversion webhook (v1beta1 <-> v1beta2).
METRICS_CERTS = "/etc/kueue/metrics/certs"
CONVERTED = {"localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters"}


def build():
    """The Kueue cache folder (bin/kueue, crd/, webhook/); builds on first use."""
    r = subprocess.run([os.path.join(ROOT, "scripts", "build-kueue")], stdout=subprocess.PIPE, text=True)
    assert r.returncode == 0, "scripts/build-kueue failed (see its output above)"
    return r.stdout.strip().splitlines()[-1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def yaml_objects(kube, path):
    """The objects of a YAML file as JSON (kubectl converts; no YAML library needed)."""
    text, objects, decoder, pos = kube("create", "--dry-run=client", "-o", "json", "-f", path), [], json.JSONDecoder(), 0
    while text[pos:].strip():
        obj, pos = decoder.raw_decode(text, len(text) - len(text[pos:].lstrip()))
        objects += obj["items"] if obj.get("kind") == "List" else [obj]
    return objects


def integrations(mode):
    """Kueue's integrations section for a mode. An absent or empty `frameworks` list is not "none":
    Kueue v0.17.0 defaults it to batch/job alone (apis/config/v1beta2/defaults.go), so the operator
    mode names batch/job, which Kueue then serves, and TFJob only as an external framework (Kueue
    rejects a kind listed in both, pkg/config/validation.go)."""
    assert mode in MODES, mode
    if mode == "integration":
        # Without this list Kueue v0.17.0 enables batch/job only (its built-in default); the TFJob
        # integration must be named. Our operator is the TFJob controller, not Kubeflow's.
        return {"frameworks": ["kubeflow.org/tfjob"]}
    # Kueue starts nothing for an external framework: it only keeps its pod integration off the
    # pods a TFJob owns; the operator creates and follows the Workloads.
    return {"frameworks": ["batch/job"], "externalFrameworks": ["TFJob.v1.kubeflow.org"]}


def configuration(ports, cert_dir, multikueue=None, mode="integration"):
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2 at v0.17.0) for the test bed; with
    `multikueue` (its multiKueue section) a MultiKueue manager; `mode` as for integrations()."""
    cfg = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "namespace": "kueue-system",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['health']}"},
        "metrics": {"bindAddress": f"127.0.0.1:{ports['metrics']}"},
        "webhook": {"port": ports["webhook"], "host": "127.0.0.1", "certDir": cert_dir},
        "leaderElection": {"leaderElect": False},
        # The scripts make the certificates; Kueue's own rotator would want a Secret and a Service.
        "internalCertManagement": {"enable": False},
        # Kueue reads PodsReady from the TFJob's Running condition: an admitted job whose pods do
        # not all start in time is evicted and re-queued (after a backoff of 60 s, doubled each time).
        "waitForPodsReady": {"timeout": f"{PODS_READY_TIMEOUT_S}s", "blockAdmission": False,
                             "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 60}},
        "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": {"matchLabels": {NAMESPACE_LABEL: "true"}},
        "integrations": integrations(mode),
        # The visibility API server would listen on 0.0.0.0:8082; the test bed does not need it.
        "featureGates": {"VisibilityOnDemand": False},
        "clientConnection": {"qps": 50, "burst": 100},
    }
    if multikueue is not None:
        # MultiKueue is beta and on by default at v0.17.0; named so that the manager's role shows.
        cfg["featureGates"]["MultiKueue"] = True
        cfg["multiKueue"] = dict(multikueue)
        if mode == "operator":
            # Kueue's generic adapter for a kind without a built-in one (MultiKueueAdaptersForCustomJobs,
            # beta and on by default at v0.17.0; named likewise): it copies the job to the worker and
            # its status back. It reads and clears .spec.managedBy, which the operator keeps equal
            # to runPolicy.managedBy on the manager (docs/kueue.md, docs/semantics.md D32).
            cfg["featureGates"]["MultiKueueAdaptersForCustomJobs"] = True
            cfg["multiKueue"]["externalFrameworks"] = [{"name": "TFJob.v1.kubeflow.org"}]
    return cfg


class Kueue:
    """One Kueue per test cluster: its folder is under the cluster's, and its ports (webhook,
    health, metrics) are free ones of its own, so a second instance against a second cluster
    (the MultiKueue worker, test_multikueue.py) shares nothing with the first."""

    def __init__(self, kube, multikueue=None, mode="integration"):
        assert mode in MODES, mode
        self.kube = kube
        self.multikueue = multikueue
        self.mode = mode
        self.home = build()
        self.dir = os.path.join(kube.dir, "kueue-" + uuid.uuid4().hex[:6])
        os.makedirs(self.dir)
        self.ports = {n: free_port() for n in ("webhook", "health", "metrics")}
        self.log_path = os.path.join(self.dir, "kueue.log")
        self.proc = None
        self.webhook_configs = []

    def url(self, path):
        return f"https://127.0.0.1:{self.ports['webhook']}{path}"

    def start(self):
        certs = subprocess.run([os.path.join(ROOT, "config", "webhook", "generate-cert"), "--out",
                                os.path.join(self.dir, "certs"), "--service", "kueue-webhook-service",
                                "--namespace", "kueue-system", "--ip", "127.0.0.1"],
                               check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True).stdout.strip()
        with open(os.path.join(certs, "ca.crt"), "rb") as f:
            self.ca_bundle = base64.b64encode(f.read()).decode()
        self.install_crds()
        self.kube.run("create", "namespace", "kueue-system", check=False)  # Kueue's own namespace
        cfg = os.path.join(self.dir, "config.json")  # JSON is YAML; Kueue decodes either
        with open(cfg, "w") as f:
            json.dump(configuration(self.ports, certs, self.multikueue, self.mode), f, indent=2)
        self.log = open(self.log_path, "ab")
        env = dict(os.environ, KUBECONFIG=self.kube.kubeconfig)  # admin: Kueue's own RBAC is not needed
        # With internalCertManagement off, Kueue v0.17.0 reads its metrics serving certificate from
        # the fixed path /etc/kueue/metrics/certs (no option). It gets one there in a private mount
        # namespace, over an overlay of /etc, so the host's /etc is untouched (as test_in_cluster.py
        # does for /run). The certificate is the webhook's (127.0.0.1, our CA).
        upper, work = os.path.join(self.dir, "etc-upper"), os.path.join(self.dir, "etc-work")
        os.makedirs(upper)
        os.makedirs(work)
        mount = (f"mount -t overlay overlay -o lowerdir=/etc,upperdir={upper},workdir={work} /etc && "
                 f"mkdir -p {METRICS_CERTS} && cp \"$0\"/tls.crt \"$0\"/tls.key {METRICS_CERTS}/ && exec \"$@\"")
        self.proc = subprocess.Popen(["unshare", "--mount", "--", "sh", "-c", mount, certs,
                                      os.path.join(self.home, "bin", "kueue"), f"--config={cfg}", "--zap-log-level=3"],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        wait_for(self.ready, timeout=120, interval=0.5, what=f"Kueue's /readyz (log: {self.log_path})")
        self.register_webhooks()
        return self

    def ready(self):
        if self.proc.poll() is not None:  # not an AssertionError: wait_for would keep polling
            raise RuntimeError(f"kueue exited ({self.proc.returncode}); log:\n{self.tail()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ports['health']}/readyz", timeout=2) as r:
                if r.status != 200:
                    return False
            ctx = ssl.create_default_context(cadata=base64.b64decode(self.ca_bundle).decode())
            with socket.create_connection(("127.0.0.1", self.ports["webhook"]), timeout=2) as s:
                with ctx.wrap_socket(s, server_hostname="127.0.0.1"):
                    return True
        except OSError:
            return False

    def tail(self, n=40):
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-n:])

    def install_crds(self):
        crds = []
        for name in sorted(os.listdir(os.path.join(self.home, "crd"))):
            for crd in yaml_objects(self.kube, os.path.join(self.home, "crd", name)):
                if crd["spec"]["names"]["plural"] in CONVERTED:
                    crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
                        "clientConfig": {"url": self.url("/convert"), "caBundle": self.ca_bundle},
                        "conversionReviewVersions": ["v1"]}}
                crds.append(crd)
        # Server-side: the CRDs are larger than the last-applied annotation allows.
        self.kube("apply", "--server-side", "--force-conflicts", "--field-manager=tfjob-e2e", "-f", "-",
                  stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": crds}))
        for crd in crds:
            self.kube.wait_established(crd['metadata']['name'], timeout=60)

    def register_webhooks(self):
        suffix = uuid.uuid4().hex[:6]
        for cfg in yaml_objects(self.kube, os.path.join(self.home, "webhook", "manifests.yaml")):
            keep = []
            for hook in cfg["webhooks"]:
                groups = {g for rule in hook["rules"] for g in rule["apiGroups"]}
                resources = {r for rule in hook["rules"] for r in rule["resources"]}
                if groups == {KUEUE_GROUP}:
                    pass
                elif groups == {"kubeflow.org"} and resources == {"tfjobs"} and self.mode == "integration":
                    # In the operator mode Kueue still serves these paths, but as no-ops
                    # (jobframework/setup.go: WithNoopWebhook for a framework not enabled): they
                    # would neither suspend nor validate, only add a call. The operator's own
                    # mutating webhook suspends instead (test_kueue.py).
                    hook["namespaceSelector"] = {"matchLabels": {NAMESPACE_LABEL: "true"}}
                else:
                    continue
                hook["clientConfig"] = {"url": self.url(hook["clientConfig"]["service"]["path"]),
                                        "caBundle": self.ca_bundle}
                keep.append(hook)
            cfg["metadata"] = {"name": f"kueue-{cfg['metadata']['name']}-{suffix}"}
            cfg["webhooks"] = keep
            self.kube.apply(cfg)
            self.webhook_configs.append((cfg["kind"].lower(), cfg["metadata"]["name"]))
        # The API server picks up new webhook configurations within a second or so: a ClusterQueue
        # with no resource groups is defaulted by Kueue's mutating webhook (spec.queueingStrategy).
        probe = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "probe-" + suffix},
                 "spec": {"namespaceSelector": {}}}

        def webhook_answers():
            r = self.kube.run("create", "--dry-run=server", "-o", "json", "-f", "-", stdin=json.dumps(probe),
                              check=False)
            return r.returncode == 0 and "finalizers" in json.loads(r.stdout)["metadata"]
        wait_for(webhook_answers, timeout=30, what="the API server to call Kueue's webhooks")

    def stop(self):
        """Removes the webhook configurations first (so nothing calls a stopped Kueue), then SIGTERM."""
        for kind, name in self.webhook_configs:
            self.kube.run("delete", kind, name, "--ignore-not-found", check=False)
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        return self.proc.returncode if self.proc else None
