"""The test bed's real node (scripts/test-cluster up DIR --real-node; docs/test-bed.md): the kubelet
registers and is Ready, `kubectl run` starts real containers, pods resolve cluster names through
CoreDNS, reach each other over the bridge and through Services (kube-proxy), reach the API server
with their in-cluster credentials, and nothing is routed off the machine.

Run by tests/e2e/run --real-node (make test-e2e), which brings the cluster up and takes it down;
its `down` fails the run when anything of the node is left behind."""
import ipaddress
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import ROOT, wait_for

pytestmark = pytest.mark.real_node

POD_CIDR = ipaddress.ip_network("198.18.0.0/24")
SERVICE_CIDR = ipaddress.ip_network("198.18.1.0/24")
BUSYBOX_REF = "localhost/tfjob/busybox:e2e"


@pytest.fixture(scope="module")
def node():
    name = os.environ.get("TFJOB_REAL_NODE")
    if not name:
        pytest.fail("no real node: run through tests/e2e/run --real-node")
    return name


@pytest.fixture(scope="module")
def busybox(kube, node, tmp_path_factory):
    """A small image of our own: Debian's static busybox (every applet linked in /bin), built by
    scripts/oci-image and loaded into the node's containerd (scripts/test-cluster load-image)."""
    base = tmp_path_factory.mktemp("busybox")
    rootfs = base / "rootfs"
    (rootfs / "bin").mkdir(parents=True)
    (rootfs / "tmp").mkdir()
    os.chmod(rootfs / "tmp", 0o1777)
    os.chmod(rootfs, 0o755)
    (rootfs / "www").mkdir()
    (rootfs / "www" / "index.html").write_text("hello from the real node\n")
    shutil.copy2("/bin/busybox", rootfs / "bin" / "busybox")
    applets = subprocess.run(["/bin/busybox", "--list"], check=True, stdout=subprocess.PIPE, text=True).stdout.split()
    for a in applets:
        if a != "busybox":
            os.symlink("busybox", rootfs / "bin" / a)
    archive = base / "busybox.tar"
    subprocess.run([os.path.join(ROOT, "scripts", "oci-image"), "--ref", BUSYBOX_REF, "--out", str(archive),
                    "--layer", str(rootfs), "--env", "PATH=/bin", "--cmd", '["/bin/sh"]'], check=True)
    kube.script("load-image", kube.dir, str(archive))
    return BUSYBOX_REF


def pod(name, image, command, node, labels=None, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"nodeSelector": {"tfjob.test/real-node": "true"}, "restartPolicy": "Never",
                     "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "main", "image": image, "imagePullPolicy": "Never",
                                     "command": command}], **spec}}


def phase(kube, ns, name):
    p = kube.get("pod", name, ns, check=False)
    return p and p["status"].get("phase")


def wait_phase(kube, ns, name, want, timeout=120):
    def check():
        p = phase(kube, ns, name)
        if p in ("Failed", "Succeeded") and p != want:
            raise RuntimeError(f"pod {name} ended {p}: {kube('logs', name, '-n', ns, check=False)}")
        return p == want
    wait_for(check, timeout=timeout, what=f"pod {name} {want}")
    return kube.get("pod", name, ns)


def run_to_end(kube, ns, name, image, script, node, **spec):
    """A pod that runs `sh -c script` to Succeeded; returns its log."""
    kube.apply(pod(name, image, ["sh", "-c", script], node, **spec), ns)
    wait_phase(kube, ns, name, "Succeeded")
    return kube("logs", name, "-n", ns)


def test_the_node_registers_ready_with_its_label_beside_kwok(kube, node):
    n = kube.get("node", node)
    ready = [c for c in n["status"]["conditions"] if c["type"] == "Ready"]
    assert ready and ready[0]["status"] == "True", n["status"]["conditions"]
    assert n["metadata"]["labels"]["tfjob.test/real-node"] == "true"
    # KWOK manages only nodes with its annotation; the kubelet's own status says it is real.
    assert "kwok.x-k8s.io/node" not in n["metadata"].get("annotations", {})
    info = n["status"]["nodeInfo"]
    assert info["containerRuntimeVersion"].startswith("containerd://2.")
    assert info["kubeletVersion"] == os.environ["TFJOB_TEST_KUBERNETES"]
    assert {"type": "InternalIP", "address": "198.18.0.1"} in n["status"]["addresses"]
    assert not n["spec"].get("taints")


def test_kubectl_run_starts_real_containers(kube, namespace, node, busybox):
    pause = os.environ["TFJOB_PAUSE_IMAGE"]
    kube("run", "sleeper", "-n", namespace, f"--image={pause}", "--image-pull-policy=Never",
         '--overrides={"spec": {"nodeSelector": {"tfjob.test/real-node": "true"}}}')
    p = wait_phase(kube, namespace, "sleeper", "Running")
    assert p["spec"]["nodeName"] == node
    assert ipaddress.ip_address(p["status"]["podIP"]) in POD_CIDR
    # A container that prints and exits: its log comes from the kubelet through the API server.
    kube("run", "hello", "-n", namespace, f"--image={busybox}", "--image-pull-policy=Never", "--restart=Never",
         '--overrides={"spec": {"nodeSelector": {"tfjob.test/real-node": "true"}}}', "--", "sh", "-c",
         "echo hello from $(hostname); exit 0")
    wait_phase(kube, namespace, "hello", "Succeeded")
    assert kube("logs", "hello", "-n", namespace).strip() == "hello from hello"
    # An exit code is the container's own.
    kube.apply(pod("fails", busybox, ["sh", "-c", "exit 3"], node), namespace)
    p = wait_phase(kube, namespace, "fails", "Failed")
    assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3


def test_pods_resolve_cluster_names_and_reach_each_other(kube, namespace, node, busybox):
    # Two servers behind a headless Service (as the operator makes for each replica) and a
    # ClusterIP Service over both.
    for i in range(2):
        kube.apply(pod(f"web-{i}", busybox, ["httpd", "-f", "-p", "8080", "-h", "/www"], node,
                       labels={"app": "web"}, hostname=f"web-{i}", subdomain="web"), namespace)
    kube.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 8080}]}}, namespace)
    kube.apply({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web-vip"},
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}, namespace)
    ips = sorted(wait_phase(kube, namespace, f"web-{i}", "Running")["status"]["podIP"] for i in range(2))
    vip = kube.get("service", "web-vip", namespace)["spec"]["clusterIP"]
    assert ipaddress.ip_address(vip) in SERVICE_CIDR

    def endpoints_ready():
        slices = kube.get("endpointslices", None, namespace)["items"]
        return sorted(a for s in slices if s["metadata"]["labels"].get("kubernetes.io/service-name") == "web"
                      for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready")
                      for a in e["addresses"]) == ips
    wait_for(endpoints_ready, timeout=60, what="the headless Service's endpoints")

    fq = f"{namespace}.svc.cluster.local"
    script = "\n".join([
        "set -e",
        "nslookup kubernetes.default.svc.cluster.local",
        f"nslookup web.{fq}",
        f"nslookup web-1.web.{fq}",
        # Short names through the search path the kubelet wrote.
        "wget -q -O - -T 10 http://web-0.web:8080/",
        f"wget -q -O - -T 10 http://{ips[1]}:8080/",
        "wget -q -O - -T 10 http://web-vip/",
        "cat /etc/resolv.conf",
    ])
    out = run_to_end(kube, namespace, "client", busybox, script, node)
    # busybox nslookup prints "Address: IP" for each answer (and "Address: IP:53" for the server).
    answers = set()
    for line in out.splitlines():
        if line.startswith("Address:"):
            try:
                answers.add(str(ipaddress.ip_address(line.split()[-1])))
            except ValueError:
                pass
    assert "198.18.1.1" in answers, out  # the `kubernetes` Service
    assert set(ips) <= answers, out  # the headless Service: both pods
    assert out.count("hello from the real node") == 3, out
    assert "nameserver 198.18.1.10" in out and f"search {fq} svc.cluster.local cluster.local" in out, out


def test_a_pod_reaches_the_api_server_with_its_in_cluster_credentials(kube, namespace, node, busybox):
    # The `kubernetes` Service's endpoint is the API server on the bridge's address; the
    # ServiceAccount token and the variables are what in-cluster clients read.
    sa = "/var/run/secrets/kubernetes.io/serviceaccount"
    body = '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}'
    script = "\n".join([
        "set -e",
        "echo host=$KUBERNETES_SERVICE_HOST port=$KUBERNETES_SERVICE_PORT",
        f"test -s {sa}/token && test -s {sa}/ca.crt && cat {sa}/namespace && echo",
        f"wget -q -O - -T 10 --no-check-certificate --header \"Authorization: Bearer $(cat {sa}/token)\" "
        f"--header 'Content-Type: application/json' --post-data '{body}' "
        "https://kubernetes.default.svc/apis/authentication.k8s.io/v1/selfsubjectreviews",
    ])
    out = run_to_end(kube, namespace, "incluster", busybox, script, node)
    lines = out.splitlines()
    assert lines[0] == "host=198.18.1.1 port=443", out
    assert lines[1] == namespace
    review = json.loads("\n".join(lines[2:]))
    assert review["status"]["userInfo"]["username"] == f"system:serviceaccount:{namespace}:default"


def test_nothing_is_routed_off_the_machine(kube, namespace, node, busybox):
    # A pod's routes: its bridge subnet and the Services, no default route.
    out = run_to_end(kube, namespace, "routes", busybox, "ip -4 route", node)
    routes = sorted(line.split()[0] for line in out.splitlines() if line.strip())
    assert routes == ["198.18.0.0/24", "198.18.1.0/24"], out
    # The machine forwards nothing of its own interfaces: only the bridge forwards.
    with open("/proc/sys/net/ipv4/ip_forward") as f:
        assert f.read().strip() == "0"
    for iface in os.listdir("/sys/class/net"):
        if iface not in ("tfjob0", "lo") and os.path.exists(f"/proc/sys/net/ipv4/conf/{iface}/forwarding"):
            with open(f"/proc/sys/net/ipv4/conf/{iface}/forwarding") as f:
                assert f.read().strip() == "0", iface
    # No masquerading anywhere in the rules the node made.
    ruleset = subprocess.run(["nft", "list", "ruleset"], check=True, stdout=subprocess.PIPE, text=True).stdout
    tables = {}
    current = None
    for line in ruleset.splitlines():
        if line.startswith("table "):
            current = line.split()[2]
            tables[current] = ""
        elif current:
            tables[current] += line + "\n"
    assert "tfjob_real_node" in tables and "kube-proxy" in tables
    for name in ("tfjob_real_node", "cni_hostport"):
        assert "masquerade" not in tables.get(name, ""), tables.get(name)
