"""Real TensorFlow (tensorflow-cpu from PyPI in a cached venv, scripts/tf-venv) through `tfjob run`.
If the wheel cannot be installed the test fails with pip's error; it is never skipped."""
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def tf_python():
    r = subprocess.run([os.path.join(ROOT, "scripts", "tf-venv")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0, f"installing tensorflow-cpu failed:\n{r.stderr}"
    return r.stdout.strip().splitlines()[-1]


def run_job(tf_python, path):
    env = dict(os.environ, TFJOB_TF_PYTHON=tf_python)
    return subprocess.run([os.path.join(ROOT, "build", "release", "tfjob"), "run", path], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)


def resolved(stdout, replica):
    for line in stdout.splitlines():
        if f"{replica}: TFConfigClusterResolver cluster=" in line:
            return json.loads(line.split("cluster=", 1)[1])
    raise AssertionError(f"{replica} printed no resolved cluster:\n{stdout[-3000:]}")


def test_multi_worker_mirrored_strategy(tf_python):
    r = run_job(tf_python, "tests/tensorflow/mwms.yaml")
    print(r.stdout[-4000:])
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr
    for w in ("worker-0", "worker-1"):
        cluster = resolved(r.stdout, w)
        assert len(cluster["worker"]) == 2 and all(h.startswith("127.0.0.1:") for h in cluster["worker"])
    assert "trained with 2 replicas in sync" in r.stdout
    assert "TFJob mwms Succeeded" in r.stdout


def test_parameter_server_strategy(tf_python):
    r = run_job(tf_python, "tests/tensorflow/ps-strategy.yaml")
    print(r.stdout[-4000:])
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr
    cluster = resolved(r.stdout, "chief-0")
    assert set(cluster) == {"chief", "ps", "worker"} and len(cluster["worker"]) == 2
    for replica in ("worker-0", "worker-1", "ps-0"):
        assert resolved(r.stdout, replica) == cluster
    assert "chief-0: trained with" in r.stdout
    assert "TFJob psstrategy Succeeded" in r.stdout
