"""The real node of `scripts/test-cluster up DIR --real-node` (docs/test-bed.md, "The real node").

A kubelet with containerd, runc, the CNI plugins, kube-proxy and CoreDNS on this machine, beside
the KWOK nodes, so pods really run. What it may touch, and nothing else:

- addresses: pods in POD_CIDR on the bridge BRIDGE (its host side NODE_IP), Services in
  SERVICE_CIDR; both inside 198.18.0.0/15, the benchmark range, which nothing else on the
  machine uses (checked before start). The API server, the kubelet's server, CoreDNS and the
  NodePorts listen on NODE_IP. A blackhole route for all of 198.18.0.0/15 keeps every other of its
  addresses on the machine, pods get no default route, nothing is masqueraded, and the machine's
  own interfaces forward nothing: forwarding is on for BRIDGE alone, and the nftables table
  NFT_TABLE drops whatever would cross between BRIDGE and another interface.
- netfilter: NFT_TABLE (ours), kube-proxy's nftables tables (`ip kube-proxy`, `ip6 kube-proxy`)
  and the CNI portmap plugin's (`ip cni_hostport`, `ip6 cni_hostport`); all deleted by `down`.
- sysctls: net.ipv4.conf.BRIDGE.forwarding (goes with the bridge) and
  net.bridge.bridge-nf-call-iptables (set to 1, its old value restored by `down`).
- mounts, files: under DIR (containerd's root and state, the kubelet's root with its
  self-bind-mount, pod volumes, network namespaces), the cgroup CGROUP_ROOT in every hierarchy,
  and /run/containerd/s (the runc shim's sockets, a fixed path in containerd).
- processes: containerd, the kubelet, kube-proxy and CoreDNS (PIDs in DIR/pids) and the runc
  shims containerd starts for DIR's containerd socket (found by that socket).
"""
import glob
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import time

BRIDGE = "tfjob0"
RANGE = "198.18.0.0/15"
POD_CIDR = "198.18.0.0/24"
NODE_IP = "198.18.0.1"
SERVICE_CIDR = "198.18.1.0/24"
KUBERNETES_SERVICE_IP = "198.18.1.1"
DNS_SERVICE_IP = "198.18.1.10"
NODE_NAME = "tfjob-real-node"
NODE_LABEL = "tfjob.test/real-node"
NFT_TABLE = "tfjob_real_node"
CGROUP_ROOT = "/tfjob-real-node"
SHIM_SOCKETS = "/run/containerd/s"
# containerd's CNI library keeps each attachment's result here (a fixed path): one file per pod
# and network, named after the network (CNI_NETWORK) or cni-loopback, and the container's ID.
CNI_CACHE = "/var/lib/cni/results"
CNI_NETWORK = "tfjob-pods"
# The kubelet links every container's log here (a fixed path in the kubelet), to podLogsDir.
CONTAINER_LOG_LINKS = "/var/log/containers"
# The kubelet's device manager serves its socket at a fixed path whatever its root dir is.
KUBELET_FIXED = "/var/lib/kubelet"
# The netfilter tables down deletes: ours, kube-proxy's (nftables mode) and the portmap plugin's.
NFT_TABLES = [("inet", NFT_TABLE), ("ip", "kube-proxy"), ("ip6", "kube-proxy"), ("ip", "cni_hostport"),
              ("ip6", "cni_hostport")]
COMPONENTS = ["containerd", "coredns", "kube-proxy", "kubelet"]
BRIDGE_NF = "/proc/sys/net/bridge/bridge-nf-call-iptables"

# Forwarding only within the bridge; our addresses only through the bridge or the loopback.
GUARD_RULES = f"""
table inet {NFT_TABLE} {{
  chain forward {{
    type filter hook forward priority -10; policy accept;
    iifname "{BRIDGE}" oifname != "{BRIDGE}" drop
    oifname "{BRIDGE}" iifname != "{BRIDGE}" drop
  }}
  chain input {{
    type filter hook input priority -10; policy accept;
    iifname != {{ "{BRIDGE}", "lo" }} ip daddr {RANGE} drop
    iifname "{BRIDGE}" fib daddr type local ip daddr != {NODE_IP} drop
  }}
  chain output {{
    type filter hook output priority 10; policy accept;
    ip daddr {RANGE} oifname != {{ "{BRIDGE}", "lo" }} drop
    ct original ip daddr {RANGE} oifname != {{ "{BRIDGE}", "lo" }} drop
  }}
}}
"""


def tree(top):
    """top and every path under it, if it exists."""
    if not os.path.lexists(top):
        return []
    paths = [top]
    for d, dirs, files in os.walk(top):
        paths += [os.path.join(d, n) for n in dirs + files]
    return paths


class NodeFailure(Exception):
    pass


def sh(cmd, check=True, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if check and r.returncode != 0:
        raise NodeFailure(f"{' '.join(cmd[:5])}... failed: {r.stderr.strip() or r.stdout.strip()}")
    return r


def overlaps(cidr):
    """Addresses and routes of this machine (any namespace we can see: the root one) in cidr."""
    net = ipaddress.ip_network(cidr)
    found = []
    for a in json.loads(sh(["ip", "-4", "-j", "addr"]).stdout):
        for info in a.get("addr_info", []):
            if ipaddress.ip_network(f"{info['local']}/{info['prefixlen']}", strict=False).overlaps(net):
                found.append(f"address {info['local']} on {a['ifname']}")
    for r in json.loads(sh(["ip", "-4", "-j", "route", "show", "table", "all"]).stdout):
        dst = r.get("dst", "")
        if dst and dst != "default" and "/" not in dst:
            dst += "/32"
        if dst and dst != "default" and ipaddress.ip_network(dst, strict=False).overlaps(net):
            found.append(f"route {dst} {r.get('dev', r.get('type', ''))}")
    return found


class RealNode:
    def __init__(self, cluster):
        self.c = cluster
        self.root = os.path.join(cluster.dir, "node")

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    @property
    def st(self):
        return self.c.state.setdefault("real_node", {})

    @property
    def socket(self):
        return self.path("containerd", "containerd.sock")

    # --- before the control plane --------------------------------------------------------
    def preflight(self):
        if os.geteuid() != 0:
            raise NodeFailure("--real-node needs root (bridge, network namespaces, mounts, cgroups)")
        if os.path.exists(f"/sys/class/net/{BRIDGE}"):
            raise NodeFailure(f"the bridge {BRIDGE} exists: another real node runs (test-cluster down its DIR)")
        busy = overlaps(RANGE)
        if busy:
            raise NodeFailure(f"{RANGE} is in use on this machine ({'; '.join(busy)}); the real node needs it alone")
        for family, table in NFT_TABLES:
            if sh(["nft", "list", "table", family, table], check=False).returncode == 0:
                raise NodeFailure(f"the nftables table {family} {table} exists; the real node would own it")
        if len(self.c.dir) > 60:
            raise NodeFailure(f"DIR {self.c.dir} is too long for the sockets under it (60 characters at most)")

    def build(self, images):
        """The node's programs (scripts/build-node) and the images (scripts/build-images)."""
        r = subprocess.run([os.path.join(self.c.root_dir, "scripts", "build-node")], stdout=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise NodeFailure("building the node's programs failed (see the build-node output above)")
        self.st["bin"] = r.stdout.strip().splitlines()[-1]
        names = ["pause"] + [n for n in images if n != "pause"]
        r = subprocess.run([os.path.join(self.c.root_dir, "scripts", "build-images")] + names,
                           stdout=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise NodeFailure(f"building the images {' '.join(names)} failed (see the build-images output above)")
        built = {}
        for line in r.stdout.splitlines():
            if "=" in line and " " in line:
                name, rest = line.split("=", 1)
                ref, archive = rest.split(" ", 1)
                built[name.strip()] = {"ref": ref.strip(), "archive": archive.strip()}
        if "pause" not in built:
            raise NodeFailure(f"build-images printed no pause image: {r.stdout!r}")
        self.st["images"] = built
        self.c.save()

    def network_up(self):
        st = self.st
        st["bridge_nf_before"] = open(BRIDGE_NF).read().strip()
        st["shim_dirs_before"] = [d for d in ("/run/containerd", SHIM_SOCKETS) if os.path.isdir(d)]
        st["cni_cache_before"] = [d for d in (CNI_CACHE, os.path.dirname(CNI_CACHE)) if os.path.isdir(d)]
        st["log_links_before"] = os.path.isdir(CONTAINER_LOG_LINKS)
        st["kubelet_fixed_before"] = sorted(tree(KUBELET_FIXED))
        self.c.save()
        sh(["ip", "link", "add", BRIDGE, "type", "bridge"])
        st["bridge"] = True
        self.c.save()
        sh(["ip", "addr", "add", f"{NODE_IP}/24", "dev", BRIDGE])
        sh(["ip", "link", "set", BRIDGE, "up"])
        # The Services' addresses go to the bridge (kube-proxy's rules catch them before), and
        # no other address of the benchmark range ever leaves the machine.
        sh(["ip", "route", "add", SERVICE_CIDR, "dev", BRIDGE, "src", NODE_IP])
        sh(["ip", "route", "add", "blackhole", RANGE])
        st["blackhole"] = True
        self.c.save()
        sh(["nft", "-f", "-"], input=GUARD_RULES)
        st["nft"] = True
        self.c.save()
        # Forwarding for packets that come in on the bridge only (pod -> Service -> pod); the
        # machine's other interfaces keep theirs (off), and the table above drops any crossing.
        with open(f"/proc/sys/net/ipv4/conf/{BRIDGE}/forwarding", "w") as f:
            f.write("1")
        # Bridged pod-to-pod packets through netfilter, so a Service's replies are translated back.
        with open(BRIDGE_NF, "w") as f:
            f.write("1")

    # --- PKI and kubeconfigs ---------------------------------------------------------------
    def make_pki(self):
        ext = "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        self.c.leaf("kubelet-client", f"/O=system:nodes/CN=system:node:{NODE_NAME}", ext + "extendedKeyUsage=clientAuth\n")
        self.c.leaf("kubelet-server", f"/CN={NODE_NAME}",
                    ext + f"extendedKeyUsage=serverAuth\nsubjectAltName=IP:{NODE_IP},DNS:{NODE_NAME}\n")
        self.c.leaf("kube-proxy", "/CN=system:kube-proxy", ext + "extendedKeyUsage=clientAuth\n")
        for user, leaf in (("kubelet", "kubelet-client"), ("kube-proxy", "kube-proxy")):
            b64 = self.c.write_kubeconfig(self.path(f"{user}.kubeconfig"), {"name": user, "auth": {}})
            cfg = json.load(open(self.path(f"{user}.kubeconfig")))
            cfg["users"][0]["user"] = {"client-certificate-data": b64(leaf + ".crt"),
                                       "client-key-data": b64(leaf + ".key")}
            with open(self.path(f"{user}.kubeconfig"), "w") as f:
                json.dump(cfg, f, indent=2)

    # --- containerd ------------------------------------------------------------------------
    def containerd_config(self):
        bin_ = self.st["bin"]
        pause = self.st["images"]["pause"]["ref"]
        cni = self.path("cni")
        return f"""version = 4
root = "{self.path('containerd', 'root')}"
state = "{self.path('containerd', 'state')}"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp",
                    "io.containerd.internal.v1.tracing"]

[plugins."io.containerd.server.v1.grpc"]
  address = "{self.socket}"

[plugins."io.containerd.server.v1.ttrpc"]
  address = "{self.socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{self.path('containerd', 'opt')}"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "{self.st['snapshotter']}"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{pause}"

[plugins."io.containerd.cri.v1.runtime"]
  netns_mounts_under_state_dir = true
  # This sandbox gives root no CAP_SYS_RESOURCE: no oom_score_adj below containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "{os.path.join(bin_, 'runc')}"
        Root = "{self.path('runc')}"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["{os.path.join(bin_, 'cni')}"]
    conf_dir = "{os.path.join(cni, 'net.d')}"
    max_conf_num = 1

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""

    def cni_config(self):
        os.makedirs(self.path("cni", "net.d"), exist_ok=True)
        conf = {"cniVersion": "1.0.0", "name": CNI_NETWORK, "plugins": [
            # isGateway false: the plugin would turn on forwarding for every interface
            # (net.ipv4.ip_forward); the bridge's address is ours, set in network_up.
            {"type": "bridge", "bridge": BRIDGE, "isGateway": False, "ipMasq": False, "hairpinMode": True,
             "ipam": {"type": "host-local", "dataDir": self.path("cni", "ipam"),
                      "ranges": [[{"subnet": POD_CIDR, "rangeStart": "198.18.0.2", "rangeEnd": "198.18.0.254",
                                   "gateway": NODE_IP}]],
                      # No default route: only the Services, through the bridge's address.
                      "routes": [{"dst": SERVICE_CIDR}]}},
            # hostPort on the bridge's address only, without masquerading.
            {"type": "portmap", "capabilities": {"portMappings": True}, "backend": "nftables", "snat": False,
             "conditionsV4": ["ip", "daddr", NODE_IP]}]}
        with open(self.path("cni", "net.d", "10-tfjob-pods.conflist"), "w") as f:
            json.dump(conf, f, indent=2)

    def choose_snapshotter(self):
        """overlayfs when this kernel mounts it on DIR's file system, else native (copies)."""
        probe = self.path("overlay-probe")
        for d in ("lower", "upper", "work", "merged"):
            os.makedirs(os.path.join(probe, d), exist_ok=True)
        r = sh(["mount", "-t", "overlay", "overlay", "-o",
                f"lowerdir={probe}/lower,upperdir={probe}/upper,workdir={probe}/work", f"{probe}/merged"], check=False)
        if r.returncode == 0:
            sh(["umount", f"{probe}/merged"])
            self.st["snapshotter"] = "overlayfs"
        else:
            self.st["snapshotter"] = "native"
            self.st["overlay_error"] = r.stderr.strip()
        subprocess.run(["rm", "-rf", probe])
        self.c.save()

    def node_env(self):
        """The node's programs see no iptables: the kubelet would add its KUBE-FIREWALL chains to the
        machine's iptables tables, and nothing of the node uses iptables (kube-proxy and portmap
        run on nftables). Their PATH: the node's programs, nft (linked alone) and /usr/bin, /bin."""
        links = self.path("path")
        os.makedirs(links, exist_ok=True)
        nft = shutil.which("nft") or "/usr/sbin/nft"
        if not os.path.lexists(os.path.join(links, "nft")):
            os.symlink(nft, os.path.join(links, "nft"))
        return dict(os.environ, PATH=f"{self.st['bin']}:{links}:/usr/local/bin:/usr/bin:/bin")

    def ctr(self, *args, check=True):
        return sh([os.path.join(self.st["bin"], "ctr"), "--address", self.socket, "-n", "k8s.io"] + list(args),
                  check=check)

    def start_containerd(self):
        os.makedirs(self.path("containerd"), exist_ok=True)
        self.choose_snapshotter()
        self.cni_config()
        with open(self.path("containerd", "config.toml"), "w") as f:
            f.write(self.containerd_config())
        env = self.node_env()
        self.c.start("containerd", ["--config", self.path("containerd", "config.toml"), "--log-level", "warn"],
                     binary=os.path.join(self.st["bin"], "containerd"), env=env)
        self.c.wait("containerd", lambda: self.ctr("version", check=False).returncode == 0, 60)
        for name, image in self.st["images"].items():
            self.load_image(image["archive"])

    def load_image(self, archive):
        # Unpacked into the CRI's snapshotter; the pause image pinned so the kubelet's image GC keeps it.
        self.ctr("images", "import", "--snapshotter", self.st["snapshotter"], "--label", "io.cri-containerd.pinned=pinned",
                 archive)

    # --- the kubelet -----------------------------------------------------------------------
    def kubelet_config(self):
        pki = self.c.pki
        ports = self.c.state["ports"]
        return {
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            # This machine runs cgroup v1, which the kubelet refuses unless told.
            "failCgroupV1": False, "cgroupDriver": "cgroupfs", "cgroupRoot": CGROUP_ROOT, "cgroupsPerQOS": True,
            # No CAP_SYS_RESOURCE here: the kubelet cannot lower its own OOM score (-999 by default).
            "oomScoreAdj": 0,
            "containerRuntimeEndpoint": f"unix://{self.socket}", "imageServiceEndpoint": f"unix://{self.socket}",
            "address": NODE_IP, "port": ports["kubelet"], "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1", "healthzPort": ports["kubelet_healthz"],
            "tlsCertFile": f"{pki}/kubelet-server.crt", "tlsPrivateKeyFile": f"{pki}/kubelet-server.key",
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                               "x509": {"clientCAFile": f"{pki}/ca.crt"}},
            "authorization": {"mode": "Webhook"},
            "clusterDomain": "cluster.local", "clusterDNS": [DNS_SERVICE_IP],
            # No host resolver in pods: cluster names only, nothing asked off the machine.
            "resolvConf": "",
            "podLogsDir": self.path("pod-logs"), "volumePluginDir": self.path("volume-plugins"),
            "failSwapOn": False, "serializeImagePulls": False, "maxPods": 110,
            "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                             "nodefs.inodesFree": "1%"},
            "imageGCHighThresholdPercent": 99, "imageGCLowThresholdPercent": 98,
            "nodeStatusReportFrequency": "10s", "syncFrequency": "10s", "fileCheckFrequency": "10s",
        }

    def make_cgroup_root(self):
        """The kubelet's cgroupRoot in every cgroup v1 hierarchy (it refuses a root that does not
        exist); a new cpuset cgroup starts with no CPUs and no memory nodes, so it gets its parent's."""
        for hierarchy in sorted(glob.glob("/sys/fs/cgroup/*")):
            if os.path.basename(hierarchy) == "unified" or not os.path.isfile(os.path.join(hierarchy, "cgroup.procs")):
                continue
            top = hierarchy + CGROUP_ROOT
            os.makedirs(top, exist_ok=True)
            for f in ("cpuset.cpus", "cpuset.mems"):
                if os.path.exists(os.path.join(top, f)):
                    with open(os.path.join(hierarchy, f)) as src, open(os.path.join(top, f), "w") as dst:
                        dst.write(src.read().strip())
        self.st["cgroups"] = True
        self.c.save()

    def start_kubelet(self):
        self.make_cgroup_root()
        with open(self.path("kubelet.yaml"), "w") as f:
            json.dump(self.kubelet_config(), f, indent=2)
        env = self.node_env()
        self.c.start("kubelet", [f"--config={self.path('kubelet.yaml')}", f"--kubeconfig={self.path('kubelet.kubeconfig')}",
                                 f"--root-dir={self.path('kubelet')}", f"--cert-dir={self.path('kubelet', 'pki')}",
                                 f"--hostname-override={NODE_NAME}",
                                 f"--node-ip={NODE_IP}", f"--node-labels={NODE_LABEL}=true", "--v=1"],
                     binary=os.path.join(self.st["bin"], "kubelet"), env=env)

        def ready():
            out = self.c.kubectl("get", "node", NODE_NAME, "-o",
                                 "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
            return out.strip() == "True"
        self.c.wait("kubelet", ready, 120)

    # --- kube-proxy and CoreDNS ------------------------------------------------------------
    def start_kube_proxy(self):
        ports = self.c.state["ports"]
        cfg = {"apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
               "mode": "nftables", "clientConnection": {"kubeconfig": self.path("kube-proxy.kubeconfig")},
               "hostnameOverride": NODE_NAME, "clusterCIDR": POD_CIDR, "oomScoreAdj": 0,
               # NodePorts on the bridge's address only, never on the machine's own interfaces.
               "nodePortAddresses": [f"{NODE_IP}/32"],
               "healthzBindAddress": f"127.0.0.1:{ports['kube_proxy_healthz']}",
               "metricsBindAddress": f"127.0.0.1:{ports['kube_proxy_metrics']}",
               # Zero: leave the machine's conntrack sysctls as they are.
               "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"}}
        with open(self.path("kube-proxy.yaml"), "w") as f:
            json.dump(cfg, f, indent=2)
        self.c.start("kube-proxy", [f"--config={self.path('kube-proxy.yaml')}", "--v=1"],
                     binary=os.path.join(self.st["bin"], "kube-proxy"), env=self.node_env())

        def healthy():
            import urllib.request
            with urllib.request.urlopen(f"http://127.0.0.1:{ports['kube_proxy_healthz']}/healthz", timeout=2) as r:
                return r.status == 200
        self.c.wait("kube-proxy", healthy, 60)

    def start_coredns(self):
        ports = self.c.state["ports"]
        corefile = f"""cluster.local:53 in-addr.arpa:53 {{
    bind {NODE_IP}
    errors
    health 127.0.0.1:{ports['coredns_health']}
    ready 127.0.0.1:{ports['coredns_ready']}
    kubernetes cluster.local in-addr.arpa {{
        kubeconfig {os.path.join(self.c.dir, 'kubeconfig')} tfjob-e2e
        pods insecure
        fallthrough in-addr.arpa
    }}
    cache 5
    loadbalance
}}
"""
        with open(self.path("Corefile"), "w") as f:
            f.write(corefile)
        self.c.start("coredns", ["-conf", self.path("Corefile")], binary=os.path.join(self.st["bin"], "coredns"))

        def ready():
            import urllib.request
            with urllib.request.urlopen(f"http://127.0.0.1:{ports['coredns_ready']}/ready", timeout=2) as r:
                return r.status == 200
        self.c.wait("coredns", ready, 60)
        # The cluster's DNS Service, as users know it (kube-system/kube-dns), to CoreDNS on the bridge.
        self.c.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kube-dns", "namespace": "kube-system",
                                                                 "labels": {"k8s-app": "kube-dns"}},
             "spec": {"clusterIP": DNS_SERVICE_IP, "ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                                                             {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}},
            {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
             "metadata": {"name": "kube-dns-host", "namespace": "kube-system",
                          "labels": {"kubernetes.io/service-name": "kube-dns",
                                     "endpointslice.kubernetes.io/managed-by": "test-cluster.tfjob"}},
             "addressType": "IPv4", "endpoints": [{"addresses": [NODE_IP], "conditions": {"ready": True}}],
             "ports": [{"name": "dns", "port": 53, "protocol": "UDP"},
                       {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}]}))

    # --- the whole node --------------------------------------------------------------------
    def start(self):
        os.makedirs(self.root, exist_ok=True)
        for name in ("kubelet", "kubelet_healthz", "kube_proxy_healthz", "kube_proxy_metrics", "coredns_health",
                     "coredns_ready"):
            self.c.state["ports"][name] = self.c.free_port()
        self.c.save()
        self.make_pki()
        self.start_containerd()
        # kube-proxy waits for its Node (it reads the node's addresses); CoreDNS comes last, behind
        # the kube-dns Service that kube-proxy translates.
        self.start_kubelet()
        self.start_kube_proxy()
        self.start_coredns()

    def env_lines(self):
        images = self.st.get("images", {})
        lines = [f"export TFJOB_REAL_NODE={NODE_NAME}", f"export TFJOB_NODE_BIN={self.st['bin']}",
                 f"export TFJOB_CONTAINERD_SOCK={self.socket}", f"export CONTAINER_RUNTIME_ENDPOINT=unix://{self.socket}"]
        for name, var in (("pause", "TFJOB_PAUSE_IMAGE"), ("operator", "TFJOB_OPERATOR_IMAGE"),
                          ("tensorflow", "TFJOB_TF_IMAGE")):
            if name in images:
                lines.append(f"export {var}={images[name]['ref']}")
        return lines

    # --- down ------------------------------------------------------------------------------
    def down(self, log):
        """Everything up made, in reverse; each step runs even when an earlier one failed."""
        st = self.c.state.get("real_node")
        if st is None:
            return
        problems = []
        steps = [("kubelet", lambda: self.c.stop("kubelet")),
                 ("pods", self.remove_pods),
                 ("kube-proxy", lambda: self.c.stop("kube-proxy")),
                 ("coredns", lambda: self.c.stop("coredns")),
                 ("containerd", lambda: self.c.stop("containerd", grace=20)),
                 ("shims", self.stop_shims),
                 ("cni cache", self.clear_cni_cache),
                 ("log links", self.clear_log_links),
                 (KUBELET_FIXED, self.clear_kubelet_fixed),
                 ("mounts", self.unmount_all),
                 ("cgroups", self.remove_cgroups),
                 ("network", self.network_down)]
        for name, step in steps:
            try:
                step()
            except Exception as e:  # noqa: BLE001 - go on tearing down, report at the end
                problems.append(f"{name}: {e}")
        problems += self.leftovers()
        for p in problems:
            log(f"real node tear-down: {p}")
        return problems

    def leftovers(self):
        """What of the node is still there after down: nothing, or the reasons down fails."""
        left = []
        for name in COMPONENTS:
            if self.c.alive(self.c.pid(name)):
                left.append(f"{name} still runs (pid {self.c.pid(name)})")
        if self.shims():
            left.append(f"runc shims still run: {self.shims()}")
        if self.mounts():
            left.append(f"still mounted: {', '.join(self.mounts())}")
        if os.path.exists(f"/sys/class/net/{BRIDGE}"):
            left.append(f"the bridge {BRIDGE} is still there")
        if self.st.get("nft"):
            for family, table in NFT_TABLES:
                if sh(["nft", "list", "table", family, table], check=False).returncode == 0:
                    left.append(f"the nftables table {family} {table} is still there")
        if self.st.get("blackhole") and sh(["ip", "route", "show", "type", "blackhole", RANGE]).stdout.strip():
            left.append(f"the blackhole route {RANGE} is still there")
        if self.kubelet_fixed_new():
            left.append(f"still there: {', '.join(self.kubelet_fixed_new())}")
        if self.log_links():
            left.append(f"container log links still there: {', '.join(self.log_links())}")
        if self.cni_cache_files():
            left.append(f"CNI results still there: {', '.join(self.cni_cache_files())}")
        cgroups = [h + CGROUP_ROOT for h in glob.glob("/sys/fs/cgroup/*") if os.path.isdir(h + CGROUP_ROOT)]
        if cgroups:
            left.append(f"cgroups still there: {', '.join(cgroups)}")
        return left

    def remove_pods(self):
        """Every pod sandbox through the CRI, so the CNI plugins release their veths and addresses."""
        if not self.c.alive(self.c.pid("containerd")):
            return
        crictl = [os.path.join(self.st["bin"], "crictl"), "--runtime-endpoint", f"unix://{self.socket}",
                  "--image-endpoint", f"unix://{self.socket}", "--timeout", "30s"]
        # Their IDs first: the loopback's CNI results are named after them (clear_cni_cache).
        ids = sh(crictl + ["pods", "-q"], check=False).stdout.split()
        self.st["sandboxes"] = sorted(set(self.st.get("sandboxes", []) + ids))
        self.c.save()
        sh(crictl + ["rmp", "-f", "-a"], check=False)

    def shims(self):
        """PIDs of the runc shims started by DIR's containerd (their command line names its socket)."""
        pids = []
        for d in glob.glob("/proc/[0-9]*"):
            try:
                with open(os.path.join(d, "cmdline"), "rb") as f:
                    args = f.read().split(b"\0")
            except OSError:
                continue
            if args and args[0].endswith(b"containerd-shim-runc-v2") and self.socket.encode() in args:
                pids.append(int(os.path.basename(d)))
        return pids

    def stop_shims(self):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            pids = self.shims()
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
            deadline = time.time() + 5
            while pids and time.time() < deadline and any(self.c.alive(p) for p in pids):
                time.sleep(0.1)
        # The shims' sockets live in a fixed folder; it goes if it was not there before.
        for d in (SHIM_SOCKETS, "/run/containerd"):
            if d not in self.st.get("shim_dirs_before", []) and os.path.isdir(d):
                try:
                    os.rmdir(d)
                except OSError:
                    pass

    def cni_cache_files(self):
        """The CNI results of our pods: our network's, and the loopback's of our sandboxes."""
        ids = set(self.st.get("sandboxes", []))
        try:
            names = os.listdir(CNI_CACHE)
        except OSError:
            return []
        return [os.path.join(CNI_CACHE, n) for n in names
                if n.startswith(CNI_NETWORK + "-") or (n.startswith("cni-loopback-") and n.split("-")[2] in ids)]

    def clear_cni_cache(self):
        for f in self.cni_cache_files():
            os.remove(f)
        for d in (CNI_CACHE, os.path.dirname(CNI_CACHE)):
            if d not in self.st.get("cni_cache_before", []) and os.path.isdir(d):
                try:
                    os.rmdir(d)
                except OSError:
                    pass

    def kubelet_fixed_new(self):
        """What under KUBELET_FIXED was not there before up (deepest first)."""
        before = set(self.st.get("kubelet_fixed_before", []))
        return sorted((p for p in tree(KUBELET_FIXED) if p not in before), key=lambda p: (-p.count("/"), p))

    def clear_kubelet_fixed(self):
        for p in self.kubelet_fixed_new():
            if os.path.isdir(p) and not os.path.islink(p):
                os.rmdir(p)
            else:
                os.remove(p)

    def log_links(self):
        """The kubelet's links in CONTAINER_LOG_LINKS to our pods' logs."""
        try:
            names = os.listdir(CONTAINER_LOG_LINKS)
        except OSError:
            return []
        ours = self.path("pod-logs") + "/"
        links = [os.path.join(CONTAINER_LOG_LINKS, n) for n in names]
        return [link for link in links if os.path.islink(link) and os.readlink(link).startswith(ours)]

    def clear_log_links(self):
        for link in self.log_links():
            os.remove(link)
        if not self.st.get("log_links_before", True) and os.path.isdir(CONTAINER_LOG_LINKS):
            try:
                os.rmdir(CONTAINER_LOG_LINKS)
            except OSError:
                pass

    def mounts(self):
        """Mount points under DIR, deepest first (from /proc/self/mountinfo)."""
        prefix = self.c.dir.rstrip("/") + "/"
        points = []
        with open("/proc/self/mountinfo") as f:
            for line in f:
                point = line.split()[4].encode().decode("unicode_escape")
                if point.startswith(prefix):
                    points.append(point)
        return sorted(set(points), key=lambda p: (-p.count("/"), p))

    def unmount_all(self):
        for _ in range(5):
            points = self.mounts()
            if not points:
                return
            for p in points:
                if sh(["umount", p], check=False).returncode != 0:
                    sh(["umount", "-l", p], check=False)
        left = self.mounts()
        if left:
            raise NodeFailure(f"still mounted: {', '.join(left)}")

    def remove_cgroups(self):
        for hierarchy in glob.glob("/sys/fs/cgroup/*"):
            top = hierarchy + CGROUP_ROOT
            if not os.path.isdir(top):
                continue
            dirs = [d for d, _, _ in os.walk(top)]
            for d in sorted(dirs, key=lambda p: -p.count("/")):
                try:
                    os.rmdir(d)
                except OSError as e:
                    raise NodeFailure(f"cannot remove the cgroup {d}: {e}")

    def network_down(self):
        st = self.st
        if os.path.exists(f"/sys/class/net/{BRIDGE}"):
            # The pods' veths normally went with their namespaces; any left are ours.
            for port in os.listdir(f"/sys/class/net/{BRIDGE}/brif"):
                sh(["ip", "link", "del", port], check=False)
            if st.get("bridge"):
                sh(["ip", "link", "del", BRIDGE])
        if st.get("blackhole"):
            sh(["ip", "route", "del", "blackhole", RANGE], check=False)
        for family, table in NFT_TABLES:
            if family == "inet" and not st.get("nft"):
                continue
            sh(["nft", "delete", "table", family, table], check=False)
        before = st.get("bridge_nf_before")
        if before is not None and os.path.exists(BRIDGE_NF):
            with open(BRIDGE_NF, "w") as f:
                f.write(before)
