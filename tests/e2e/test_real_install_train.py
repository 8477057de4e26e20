"""Real pods on the test bed's real node (tests/e2e/run --real-node, which brings up the cluster
with `scripts/test-cluster up DIR --real-node` and loads the images of scripts/build-images;
docs/images.md):

- The install of docs/install.md, step by step as written, with the operator image that
  scripts/build-images made: the overlay, `kubectl apply -k`, the certificate step, the checks
  of step 4; the two replicas run in pods on the real node, their probes pass, one leads; the
  webhook refuses an invalid TFJob through the API server (step 5); the leader's pod is deleted
  while a job runs, the other replica takes over and the job ends Succeeded.
- Training for real: README's quick start as written (`tfjob submit examples/ps-worker.yaml
  --wait --follow`), a MultiWorkerMirroredStrategy job, a ParameterServerStrategy job with a
  chief whose worker's container is killed mid-run (restartPolicy OnFailure), and ExitCode jobs
  (137: restarted; 1: failed). Every replica resolves the others from its TF_CONFIG through the
  job's headless Services and cluster DNS, and trains over the pod network.

The operator installed here stays installed for the rest of the real-node session."""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import uuid

import pytest

from conftest import ROOT, Kube, wait_for

pytestmark = pytest.mark.real_node
TFJOB = os.environ.get("TFJOB_BIN") or os.path.join(ROOT, "build", "release", "tfjob")
TEST_CLUSTER = os.path.join(ROOT, "scripts", "test-cluster")
TF_IMAGE_IN_EXAMPLES = "localhost/tfjob/tensorflow:2.20.0"


class RealCluster:
    """The session's cluster (tests/e2e/run sourced its DIR/env) and helpers to run as a user would."""

    def __init__(self, kube):
        self.dir = kube.dir
        self.env = dict(os.environ)
        self.kube = kube
        self.node = self.env["TFJOB_REAL_NODE"]

    def sh(self, script, cwd=None, timeout=300, check=True):
        """Runs a shell snippet (a block of the docs) with the cluster's environment, as `bash -e`
        (no pipefail: `... | head` is how the docs read)."""
        r = subprocess.run(["bash", "-e", "-c", script], cwd=cwd or ROOT, env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
        if check:
            assert r.returncode == 0, f"{script}\nexit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
        return r

    def tfjob(self, *args, timeout=600):
        r = subprocess.run([TFJOB] + list(args), env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout)
        print(r.stdout[-6000:], r.stderr[-3000:])
        return r


@pytest.fixture(scope="module")
def real(kube):
    return RealCluster(kube)


def create_namespace(kube, name):
    """As a user would (`kubectl create namespace`), then wait for its default ServiceAccount:
    pods of a namespace are admitted only once it exists."""
    kube.run("create", "namespace", name, check=False)
    wait_for(lambda: kube.get("serviceaccount", "default", name, check=False), timeout=60,
             what=f"the default ServiceAccount of {name}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def doc_blocks(path, heading):
    """The ```sh blocks of the section of the Markdown file `path` whose heading starts with `heading`."""
    with open(os.path.join(ROOT, path)) as fh:
        text = fh.read()
    start = text.index("\n" + heading)
    end = text.find("\n## ", start + 1)
    return re.findall(r"```sh\n(.*?)```", text[start:end if end > 0 else None], re.S)


def job_state(kube, name, namespace):
    job = kube.get("tfjob", name, namespace, check=False) or {}
    conds = [c for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
    return conds[-1]["type"] if conds else None


def pods_of(kube, job, namespace):
    return kube.get("pods", None, namespace)["items"] if job is None else [
        p for p in kube.get("pods", None, namespace)["items"]
        if p["metadata"].get("labels", {}).get("training.kubeflow.org/job-name") == job]


def lease_holder(kube):
    lease = kube.get("lease", "tfjob-operator", "tfjob-system", check=False) or {}
    holder = (lease.get("spec") or {}).get("holderIdentity") or ""
    return holder.rsplit("_", 1)[0] if holder else None


def operator_pods(kube):
    return kube.get("pods", None, "tfjob-system")["items"]


def ready(pod):
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions") or [])


@pytest.fixture(scope="module")
def installed(real, tmp_path_factory):
    """docs/install.md steps 1 to 4 as written, in a folder beside the project's config/ and
    examples/ (the overlay names ../config/default), the image being the one scripts/build-images
    made (step 1's `docker build` and `push` are what it replaces). Returns the outputs."""
    image = real.env["TFJOB_OPERATOR_IMAGE"]
    name, tag = image.rsplit(":", 1)
    project = tmp_path_factory.mktemp("project")
    for d in ("config", "examples"):
        os.symlink(os.path.join(ROOT, d), project / d)
    out = {}
    overlay = next(b for b in doc_blocks("docs/install.md", "## 1.") if "my-install/kustomization.yaml" in b)
    assert "registry.example.com/ml/tfjob-operator" in overlay and "newTag: 0.1.0" in overlay
    overlay = overlay.replace("registry.example.com/ml/tfjob-operator", name).replace("newTag: 0.1.0",
                                                                                       f"newTag: {tag}")
    out["kustomize"] = real.sh(overlay, cwd=project).stdout
    (install,) = doc_blocks("docs/install.md", "## 2.")
    out["apply"] = real.sh(install, cwd=project).stdout
    cert = doc_blocks("docs/install.md", "## 3.")[0]
    assert cert.strip() == "config/webhook/generate-cert --apply"
    out["cert"] = real.sh(cert, cwd=project)
    verify, logs, port_forward = doc_blocks("docs/install.md", "## 4.")
    r = real.sh(verify, cwd=project, timeout=300, check=False)
    if r.returncode != 0:  # say why the pods are not ready
        diag = real.sh("kubectl -n tfjob-system describe pods; kubectl -n tfjob-system logs -l "
                       "app.kubernetes.io/name=tfjob-operator --tail=30 --prefix", check=False)
        pytest.fail(f"step 4 failed:\n{r.stdout}\n{r.stderr}\n{diag.stdout[-8000:]}\n{diag.stderr[-2000:]}")
    out["verify"] = r.stdout
    out["logs"] = real.sh(logs, cwd=project).stdout
    # The machine is shared: free local ports instead of 8080 and 8081 (the pods' ports stay).
    metrics, health = free_port(), free_port()
    port_forward = (port_forward.replace("8080 8081", f"{metrics}:8080 {health}:8081")
                    .replace("localhost:8081", f"localhost:{health}").replace("localhost:8080", f"localhost:{metrics}"))
    out["port-forward"] = real.sh(port_forward, cwd=project, timeout=60).stdout
    out["project"] = project
    return out


def test_install_as_written_two_replicas_on_the_real_node_one_leads(real, installed):
    kube = real.kube
    # grep also finds the CRD schema's `image:` fields; the Deployment's line comes last.
    assert installed["kustomize"].splitlines()[-1].strip() == f"image: {real.env['TFJOB_OPERATOR_IMAGE']}"
    assert "deployment.apps/tfjob-operator created" in installed["apply"]
    assert "successfully rolled out" in installed["verify"]
    pods = operator_pods(kube)
    assert len(pods) == 2 and all(p["spec"]["nodeName"] == real.node for p in pods)
    assert all(p["status"]["phase"] == "Running" and ready(p) for p in pods)
    for p in pods:
        (c,) = p["status"]["containerStatuses"]
        assert c["image"].endswith(real.env["TFJOB_OPERATOR_IMAGE"].split("/", 1)[1]) and c["restartCount"] == 0
    leader = lease_holder(kube)
    assert leader in {p["metadata"]["name"] for p in pods}
    assert installed["verify"].rstrip().splitlines()[-1].startswith(leader + "_")
    # Step 4's port-forward: the probes and the metrics of the first pod.
    pf = installed["port-forward"]
    assert "[+]informers ok" in pf and "[+]leader-election ok" in pf
    assert re.search(r'^leader_election_master_status\{name="tfjob-system/tfjob-operator"\} [01]$', pf, re.M), pf
    # Step 4's logs: JSON lines, and the leader's "caches synced" and "acquired the lease; leading".
    logs = installed["logs"].splitlines()
    assert all(json.loads(line) for line in logs if line.startswith("{"))
    assert any("caches synced" in line for line in logs) and any("acquired the lease; leading" in line for line in logs)


def test_webhook_refuses_an_invalid_job_through_the_api_server(real, installed):
    blocks = doc_blocks("docs/install.md", "## 5.")
    refuse = next(b for b in blocks if "examples/invalid/no-containers.yaml" in b)
    create_namespace(real.kube, "kubeflow")
    r = real.sh(refuse, cwd=installed["project"], check=False)
    assert r.returncode != 0
    assert 'admission webhook "validator.tfjob.training-operator.kubeflow.org" denied the request' in r.stderr, r.stderr
    assert "must have at least one container with name tensorflow" in r.stderr


def tf_job(name, replicas, command, restart_policy="OnFailure", run_policy=None, volumes=None, mounts=None):
    specs = {}
    for rtype, n in replicas.items():
        container = {"name": "tensorflow", "image": TF_IMAGE_IN_EXAMPLES, "command": command,
                     "resources": {"requests": {"cpu": "50m", "memory": "256Mi"}}}
        if mounts:
            container["volumeMounts"] = mounts
        pod = {"containers": [container]}
        if volumes:
            pod["volumes"] = volumes
        specs[rtype] = {"replicas": n, "restartPolicy": restart_policy, "template": {"spec": pod}}
    spec = {"runPolicy": run_policy or {"activeDeadlineSeconds": 900}, "tfReplicaSpecs": specs}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name}, "spec": spec}


def write_job(real, obj):
    path = os.path.join(real.dir, f"job-{uuid.uuid4().hex[:8]}.json")
    with open(path, "w") as fh:
        json.dump(obj, fh)
    return path


def test_leader_pod_deleted_while_a_job_runs_the_other_takes_over(real, installed, namespace):
    kube = real.kube
    job = tf_job("failover", {"Worker": 2}, ["python3", "/opt/tfjob/mwms_keras.py", "--step-sleep", "2"])
    kube.apply(job, namespace)
    wait_for(lambda: job_state(kube, "failover", namespace) == "Running", timeout=300, what="the job Running")
    leader = lease_holder(kube)
    others = {p["metadata"]["name"] for p in operator_pods(kube)} - {leader}
    kube("-n", "tfjob-system", "delete", "pod", leader, "--wait=false")
    # The standby, or the pod the Deployment starts in place of the deleted one (they race for
    # the lease the leader releases), takes over.
    holders = []
    try:
        wait_for(lambda: holders.append(lease_holder(kube)) or holders[-1] not in (None, leader), timeout=180,
                 what=f"another operator pod than {leader} to take the lease (standby {sorted(others)})")
    except AssertionError as e:
        raise AssertionError(f"{e}; holders seen: {sorted(set(h for h in holders if h))}; operator pods: "
                             f"{[(p['metadata']['name'], ready(p)) for p in operator_pods(kube)]}") from None
    wait_for(lambda: job_state(kube, "failover", namespace) in ("Succeeded", "Failed"), timeout=600, what="the job's end")
    assert job_state(kube, "failover", namespace) == "Succeeded"
    # The Deployment replaced the deleted pod; both replicas are ready again.
    wait_for(lambda: sum(ready(p) for p in operator_pods(kube)
                         if not p["metadata"].get("deletionTimestamp")) == 2, timeout=180, what="two ready replicas")


def test_readme_quick_start_trains_over_the_pod_network(real, installed):
    kube = real.kube
    with open(os.path.join(ROOT, "examples", "ps-worker.yaml")) as fh:
        assert f"image: {TF_IMAGE_IN_EXAMPLES}" in fh.read()
    assert real.env["TFJOB_TF_IMAGE"] == TF_IMAGE_IN_EXAMPLES
    (block,) = [b for b in doc_blocks("README.md", "## Quick start on a cluster") if "tfjob submit" in b][:1]
    assert "tfjob submit examples/ps-worker.yaml --wait --follow" in block
    create_namespace(real.kube, "kubeflow")
    r = real.tfjob("submit", os.path.join(ROOT, "examples", "ps-worker.yaml"), "--wait", "--follow", timeout=900)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "TFJob kubeflow/dist-mnist created" in lines
    assert lines[-1].startswith("TFJob kubeflow/dist-mnist Succeeded")
    # Every replica resolved the same cluster, by the headless Services' DNS names.
    resolved = {m.group(1): json.loads(m.group(2)) for m in
                re.finditer(r"^\[\S+\] (\S+): TFConfigClusterResolver cluster=(.*)$", r.stdout, re.M)}
    assert set(resolved) == {"worker-0", "worker-1", "worker-2", "worker-3", "ps-0", "ps-1"}, resolved.keys()
    cluster = resolved["worker-0"]
    assert cluster["ps"] == ["dist-mnist-ps-0.kubeflow.svc:2222", "dist-mnist-ps-1.kubeflow.svc:2222"]
    assert all(v == cluster for v in resolved.values())
    assert "[ps-1] ps-1: server started" in lines
    assert "[worker-0] worker-0: epoch 1 step 5/20" in lines
    assert any(re.match(r"\[worker-0\] worker-0: trained with 2 ps shard\(s\) and 3 worker\(s\)", x) for x in lines)


def test_multi_worker_mirrored_strategy(real, installed, namespace):
    kube = real.kube
    job = tf_job("mwms", {"Worker": 2}, ["python3", "/opt/tfjob/mwms_keras.py"])
    r = real.tfjob("submit", write_job(real, job), "-n", namespace, "--wait", "--follow", timeout=900)
    assert r.returncode == 0, r.stderr
    for w in ("worker-0", "worker-1"):
        assert f"[{w}] {w}: epoch 3 step 20/20" in r.stdout
        assert re.search(rf"^\[{w}\] {w}: trained with 2 replicas in sync; loss \d", r.stdout, re.M)
    assert all(p["spec"]["nodeName"] == real.node for p in pods_of(kube, "mwms", namespace))
    assert r.stdout.splitlines()[-1].startswith(f"TFJob {namespace}/mwms Succeeded")


def kill_container(real, pod):
    """SIGKILL to the container's process, through the node's containerd (not through the API)."""
    cid = pod["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
    ctr = os.path.join(real.env["TFJOB_NODE_BIN"], "ctr")
    subprocess.run([ctr, "--address", real.env["TFJOB_CONTAINERD_SOCK"], "-n", "k8s.io", "tasks", "kill", "-s",
                    "SIGKILL", cid], check=True, timeout=30)


def test_parameter_server_strategy_recovers_from_a_killed_worker(real, installed, namespace):
    kube = real.kube
    job = tf_job("pss", {"Chief": 1, "PS": 1, "Worker": 2},
                 ["python3", "/opt/tfjob/ps_strategy.py", "--epochs", "4", "--step-sleep", "2"])
    log = os.path.join(real.dir, f"pss-{namespace}.log")
    with open(log, "w") as fh:
        submit = subprocess.Popen([TFJOB, "submit", write_job(real, job), "-n", namespace, "--wait", "--follow"],
                                  env=real.env, stdout=fh, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: "[chief-0] chief-0: epoch 1 step 5/20" in open(log).read(), timeout=600,
                 what="the chief's first steps")
        (victim,) = [p for p in pods_of(kube, "pss", namespace) if p["metadata"]["name"] == "pss-worker-1"]
        kill_container(real, victim)
        wait_for(lambda: kube.get("pod", "pss-worker-1", namespace)["status"]["containerStatuses"][0]["restartCount"] >= 1,
                 timeout=120, what="pss-worker-1's container restarted in place")
        assert submit.wait(timeout=900) == 0
    finally:
        if submit.poll() is None:
            submit.kill()
    out = open(log).read()
    print(out[-6000:])
    assert "[chief-0] chief-0: epoch 4/4 done" in out
    assert re.search(r"^\[chief-0\] chief-0: trained with 1 ps shard\(s\) and 2 worker\(s\)", out, re.M)
    assert out.rstrip().splitlines()[-1].startswith(f"TFJob {namespace}/pss Succeeded")


def test_exit_code_137_is_restarted_and_1_fails(real, installed, namespace):
    kube = real.kube
    marks = tempfile.mkdtemp(prefix="tfjob-real-node-marks.")  # on the real node: this machine
    try:
        once = ("if [ -e /marks/ran ]; then echo second run; exit 0; fi; touch /marks/ran; "
                "echo first run; exit 137")
        retry = tf_job("retry", {"Worker": 1}, ["sh", "-c", once], restart_policy="ExitCode",
                       volumes=[{"name": "marks", "hostPath": {"path": marks, "type": "Directory"}}],
                       mounts=[{"name": "marks", "mountPath": "/marks"}])
        fail = tf_job("fail", {"Worker": 1}, ["sh", "-c", "echo giving up; exit 1"], restart_policy="ExitCode")
        kube.apply(retry, namespace)
        kube.apply(fail, namespace)
        wait_for(lambda: job_state(kube, "retry", namespace) in ("Succeeded", "Failed"), timeout=300, what="retry's end")
        wait_for(lambda: job_state(kube, "fail", namespace) in ("Succeeded", "Failed"), timeout=300, what="fail's end")
        assert job_state(kube, "retry", namespace) == "Succeeded"
        assert job_state(kube, "fail", namespace) == "Failed"
        events = kube.get("events", None, namespace)["items"]
        restarting = [e for e in events if e["involvedObject"]["name"] == "retry" and e["reason"] == "TFJobRestarting"]
        assert restarting and restarting[0]["type"] == "Warning"
        assert not [e for e in events if e["involvedObject"]["name"] == "fail" and e["reason"] == "TFJobRestarting"]
        failed = kube.get("tfjob", "fail", namespace)["status"]["conditions"][-1]
        assert failed["reason"] == "TFJobFailed" and 'because "Worker" replica(s) failed' in failed["message"]
    finally:
        shutil.rmtree(marks, ignore_errors=True)
