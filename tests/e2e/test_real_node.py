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
    # busybox's own resolver (nslookup) asks CoreDNS; nc speaks HTTP to the address it found (the
    # static busybox's wget crashes in glibc's NSS without its modules in the image).
    get = "printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc -w 10"
    script = "\n".join([
        "set -e",
        "addr() { nslookup \"$1\" | awk '/^Address: /{print $2}' | tail -n 1; }",
        "nslookup kubernetes.default.svc.cluster.local",
        f"nslookup web.{fq}",
        f"nslookup web-1.web.{fq}",
        # A pod by its hostname under the headless Service, as TF_CONFIG names replicas.
        f"{get} $(addr web-0.web.{fq}) 8080",
        f"{get} {ips[1]} 8080",
        # The ClusterIP Service: kube-proxy's translation to one of the pods.
        f"{get} $(addr web-vip.{fq}) 80",
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


IN_CLUSTER = """
import json, os, socket, ssl, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
print("host=%s port=%s" % (os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]))
print(open(sa + "/namespace").read())
print(socket.gethostbyname("kubernetes.default.svc"))
ctx = ssl.create_default_context(cafile=sa + "/ca.crt")
body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).encode()
req = urllib.request.Request("https://kubernetes.default.svc/apis/authentication.k8s.io/v1/selfsubjectreviews",
                             data=body, headers={"Authorization": "Bearer " + open(sa + "/token").read(),
                                                 "Content-Type": "application/json"})
print(urllib.request.urlopen(req, context=ctx, timeout=20).read().decode())
"""


def test_a_pod_reaches_the_api_server_with_its_in_cluster_credentials(kube, namespace, node):
    # What an in-cluster client does (the operator in its pod): the `kubernetes` Service's
    # variables, the name through glibc's resolver and CoreDNS, TLS checked against the
    # ServiceAccount's CA, its token. Python of the TensorFlow image (docs/images.md).
    image = os.environ.get("TFJOB_TF_IMAGE")
    if not image:
        pytest.skip("the cluster has no TensorFlow image (TFJOB_REAL_NODE_IMAGES without tensorflow)")
    kube.apply(pod("incluster", image, ["python3", "-c", IN_CLUSTER], node), namespace)
    wait_phase(kube, namespace, "incluster", "Succeeded", timeout=300)
    lines = kube("logs", "incluster", "-n", namespace).splitlines()
    assert lines[0] == "host=198.18.1.1 port=443", lines
    assert lines[1] == namespace
    assert lines[2] == "198.18.1.1"
    review = json.loads(lines[3])
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
