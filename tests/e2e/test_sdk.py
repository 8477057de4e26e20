"""Compatibility with Kubeflow's Python SDK: kubeflow-training (pinned in scripts/sdk-venv, installed
in a cached venv) creates, waits for, reads and deletes TFJobs served by our operator, unchanged.
The SDK runs in the venv's python (tests/e2e/sdk_client.py); these tests assert what it printed,
then check with kubectl that the job and its children are gone."""
import json
import os
import subprocess

import pytest

from conftest import ROOT, OperatorProcess, wait_for


@pytest.fixture(scope="module")
def sdk_python():
    # A no-op when `make test` (or an earlier run) has installed it already.
    r = subprocess.run([os.path.join(ROOT, "scripts", "sdk-venv")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=900)
    assert r.returncode == 0, f"installing kubeflow-training failed:\n{r.stderr}"
    return r.stdout.strip().splitlines()[-1]


@pytest.fixture
def operator(kube, namespace, tfjob_crd):
    op = OperatorProcess(kube, "--namespace", namespace).start()
    yield op
    assert op.stop() == 0, "the operator did not stop cleanly on SIGTERM"


def run_sdk(sdk_python, kube, namespace, scenario):
    """Runs one scenario of sdk_client.py; returns its `SDK {json}` lines by step."""
    r = subprocess.run([sdk_python, os.path.join(ROOT, "tests", "e2e", "sdk_client.py"), kube.kubeconfig, namespace,
                        scenario], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1200)
    assert r.returncode == 0, f"the SDK failed (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
    steps = {}
    for line in r.stdout.splitlines():
        if line.startswith("SDK "):
            record = json.loads(line[4:])
            steps[record.pop("step")] = record
    return steps


def children_gone(kube, namespace, job):
    """The garbage collector has removed the job's pods and services (they carry our ownerReference)."""
    selector = f"training.kubeflow.org/job-name={job}"
    return kube("get", "pods,services", "-n", namespace, "-l", selector, "-o", "name").strip() == ""


def test_sdk_model_job_succeeds_and_is_deleted(kube, namespace, operator, sdk_python):
    s = run_sdk(sdk_python, kube, namespace, "model")
    name = "sdk-model"
    assert s["waited"] == {"name": name, "last": ["Succeeded", "True"]}
    job = s["job"]
    assert (job["kind"], job["api_version"]) == ("TFJob", "kubeflow.org/v1")
    assert [c[:2] for c in job["conditions"]] == [["Created", "True"], ["Running", "False"], ["Succeeded", "True"]]
    assert job["conditions"][-1][2] == "TFJobSucceeded"
    assert (job["created"], job["running"], job["restarting"], job["succeeded"], job["failed"]) == \
        (True, False, False, True, False)
    # As upstream: on success the still-active replicas (the PS) are counted as succeeded.
    counts = {t: {k: v for k, v in rs.items() if k in ("active", "succeeded", "failed") and v}
              for t, rs in job["replica_statuses"].items()}
    assert counts == {"PS": {"succeeded": 1}, "Worker": {"succeeded": 2}}, job["replica_statuses"]
    assert job["start_time"] and job["completion_time"] and job["times_are_datetimes"]
    pods = s["pods"]
    assert pods["names"] == [f"{name}-ps-0", f"{name}-worker-0", f"{name}-worker-1"]
    assert pods["phases"] == {f"{name}-ps-0": "Running", f"{name}-worker-0": "Succeeded",
                              f"{name}-worker-1": "Succeeded"}
    assert pods["master"] == [f"{name}-worker-0"]  # no Chief: worker 0 has job-role=master
    assert pods["by_type"] == {"ps": [f"{name}-ps-0"], "chief": [], "worker": [f"{name}-worker-0", f"{name}-worker-1"]}
    assert pods["worker_1"] == [f"{name}-worker-1"]
    assert name not in s["deleted"]["listed"]
    assert kube.get("tfjob", name, namespace, check=False) is None
    wait_for(lambda: children_gone(kube, namespace, name), timeout=120, what="the pods and services to be collected")


def test_sdk_template_job_runs_and_is_deleted(kube, namespace, operator, sdk_python):
    s = run_sdk(sdk_python, kube, namespace, "template")
    name = "sdk-template"
    job = s["job"]
    assert ["Running", "True"] in [c[:2] for c in job["conditions"]]
    assert job["conditions"][-1][:3] == ["Running", "True", "TFJobRunning"]
    assert (job["created"], job["running"], job["succeeded"], job["failed"]) == (True, True, False, False)
    pods = s["pods"]
    assert pods["names"] == [f"{name}-chief-0", f"{name}-ps-0", f"{name}-worker-0", f"{name}-worker-1"]
    assert pods["master"] == [f"{name}-chief-0"]
    assert pods["by_type"] == {"ps": [f"{name}-ps-0"], "chief": [f"{name}-chief-0"],
                               "worker": [f"{name}-worker-0", f"{name}-worker-1"]}
    assert name not in s["deleted"]["listed"]
    assert kube.get("tfjob", name, namespace, check=False) is None
    wait_for(lambda: children_gone(kube, namespace, name), timeout=120, what="the pods and services to be collected")
