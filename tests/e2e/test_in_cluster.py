"""In-cluster mode (issue 8): `tfjob operator` started with nothing but what a pod has — the
KUBERNETES_SERVICE_HOST/PORT variables and the service account's token, CA and namespace files
at /var/run/secrets/kubernetes.io/serviceaccount — and the RBAC of config/rbac (the test
cluster's tfjob-system/tfjob-operator ServiceAccount). The files are mounted as in a pod, in a
private mount namespace (unshare) so the host's /run is untouched."""
import base64
import json
import os
import subprocess

from conftest import OperatorProcess, wait_for
from test_operator import container, ends, has_condition, tfjob

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def service_account_files(kube, dest):
    with open(os.path.join(kube.dir, "operator.kubeconfig")) as f:
        config = json.load(f)
    cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
    os.makedirs(dest)
    with open(os.path.join(dest, "token"), "w") as f:
        f.write(user["token"])
    with open(os.path.join(dest, "ca.crt"), "wb") as f:
        f.write(base64.b64decode(cluster["certificate-authority-data"]))
    with open(os.path.join(dest, "namespace"), "w") as f:
        f.write("tfjob-system")
    host, port = cluster["server"].removeprefix("https://").rsplit(":", 1)
    return host, port


def test_operator_runs_with_only_the_in_cluster_environment(kube, namespace, tfjob_crd, tmp_path):
    host, port = service_account_files(kube, str(tmp_path / "sa"))
    lease = f"tfjob-in-cluster-{namespace}"
    op = OperatorProcess(kube, "--namespace", namespace, "--leader-election-id", lease, name="in-cluster")
    binary_and_flags = [a for a in op.args if a != "--leader-elect=false"]
    i = binary_and_flags.index("--kubeconfig")
    del binary_and_flags[i:i + 2]
    mount = (f'mount -t tmpfs tmpfs /run && mkdir -p {SA_DIR} && cp "$0"/token "$0"/ca.crt "$0"/namespace {SA_DIR}/ '
             '&& exec "$@"')
    op.args = (["unshare", "--mount", "--", "sh", "-c", mount, str(tmp_path / "sa"), "env", "-i",
                f"KUBERNETES_SERVICE_HOST={host}", f"KUBERNETES_SERVICE_PORT={port}"] + binary_and_flags)
    op.start()
    try:
        wait_for(lambda: "config=in-cluster" in open(op.log_path).read(), what="the in-cluster configuration")
        # In a cluster leader election is on by default, with the Lease in the pod's namespace.
        holder = wait_for(lambda: (kube.get("lease", lease, "tfjob-system", check=False) or {})
                          .get("spec", {}).get("holderIdentity"), timeout=60, what="the Lease in tfjob-system")
        assert holder
        kube.apply(tfjob("inside", {"PS": {"template": container()},
                                    "Worker": {"replicas": 2, "template": container(ends(0, "2s"))}}), namespace)
        wait_for(lambda: has_condition(kube, namespace, "inside", "Succeeded"), timeout=90, what="Succeeded")
        assert len(kube.get("services", None, namespace)["items"]) == 3
        events = kube.get("events", None, namespace)["items"]
        assert any(e["reason"] == "SuccessfulCreatePod" for e in events)
    finally:
        code = op.stop()
        with open(op.log_path) as f:
            log = f.read()
    assert code == 0, log
    assert "forbidden" not in log.lower(), log
