"""The Dockerfile's runtime stage is `FROM scratch` plus what scripts/collect-runtime gathers. No
container engine runs here, so this checks that tree directly: the collected binary runs in a
chroot of it (nothing from the host visible) as the image's user 65532."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# TFJOB_BIN=/path/to/tfjob runs the cases against another build (the default: this checkout's).
TFJOB = os.environ.get("TFJOB_BIN") or os.path.join(ROOT, "build", "release", "tfjob")


@pytest.fixture(scope="module")
def rootfs(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("chroot needs root")
    root = tmp_path_factory.mktemp("rootfs")
    subprocess.run([os.path.join(ROOT, "scripts", "collect-runtime"), TFJOB, str(root)], check=True)
    return root


def in_image(root, *args):
    return subprocess.run(["chroot", "--userspec=65532:65532", str(root), "/usr/local/bin/tfjob"] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)


def test_binary_runs_from_the_collected_tree_alone(rootfs):
    assert (rootfs / "usr/local/bin/tfjob").stat().st_size < 20 * 2**20, "the binary was not stripped"
    r = in_image(rootfs, "version")
    assert r.returncode == 0 and r.stdout.startswith("tfjob "), r.stdout
    shutil.copy(os.path.join(ROOT, "examples", "ps-worker.yaml"), rootfs / "tmp")
    r = in_image(rootfs, "validate", "/tmp/ps-worker.yaml")
    assert r.returncode == 0, r.stdout
    r = in_image(rootfs, "render", "/tmp/ps-worker.yaml", "-o", "json")
    assert r.returncode == 0 and '"kind": "List"' in r.stdout


def test_operator_in_the_image_names_what_is_missing(rootfs):
    # No kubeconfig and no service account in the image: a clear start-up error, exit 2.
    r = in_image(rootfs, "operator")
    assert r.returncode == 2
    assert "no Kubernetes configuration" in r.stdout
