"""scripts/oci-image and scripts/build-images (docs/images.md): the archives are valid OCI image
layouts (digests, sizes, media types, the name annotation), the same input gives the same bytes,
the pause image's program behaves as a pod sandbox, and the operator image is the Dockerfile's
runtime stage: the same tree (scripts/collect-runtime), user, entrypoint and command."""
import gzip
import hashlib
import io
import json
import os
import re
import shlex
import signal
import subprocess
import tarfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OCI_IMAGE = os.path.join(ROOT, "scripts", "oci-image")
BUILD_IMAGES = os.path.join(ROOT, "scripts", "build-images")
TFJOB = os.environ.get("TFJOB_BIN") or os.path.join(ROOT, "build", "release", "tfjob")

MT = {"index": "application/vnd.oci.image.index.v1+json", "manifest": "application/vnd.oci.image.manifest.v1+json",
      "config": "application/vnd.oci.image.config.v1+json", "layer": "application/vnd.oci.image.layer.v1.tar",
      "layer+gzip": "application/vnd.oci.image.layer.v1.tar+gzip"}


def read_layout(archive):
    """{name: bytes} of the archive's members, after checking the outer tar's own order."""
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
        names = [m.name for m in members]
        files = {m.name: tar.extractfile(m).read() for m in members if m.isfile()}
    assert "oci-layout" in files and "index.json" in files, names
    return files


def check_layout(archive, ref):
    """Checks every descriptor against its blob; returns (config, [layer tar bytes])."""
    files = read_layout(archive)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    for name, data in files.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1], f"{name}: content does not match its name"

    def blob(desc, media_type):
        assert desc["mediaType"] == media_type
        data = files["blobs/sha256/" + desc["digest"].split(":", 1)[1]]
        assert desc["digest"].startswith("sha256:") and len(data) == desc["size"]
        return data

    index = json.loads(files["index.json"])
    assert index["schemaVersion"] == 2 and index["mediaType"] == MT["index"] and len(index["manifests"]) == 1
    desc = index["manifests"][0]
    assert desc["annotations"]["org.opencontainers.image.ref.name"] == ref
    assert desc["annotations"]["io.containerd.image.name"] == ref
    assert desc["platform"] == {"architecture": "amd64", "os": "linux"}
    manifest = json.loads(blob(desc, MT["manifest"]))
    assert manifest["schemaVersion"] == 2 and manifest["mediaType"] == MT["manifest"]
    config = json.loads(blob(manifest["config"], MT["config"]))
    assert config["os"] == "linux" and config["architecture"] == "amd64" and config["rootfs"]["type"] == "layers"
    layers = []
    for ldesc, diff_id in zip(manifest["layers"], config["rootfs"]["diff_ids"], strict=True):
        data = blob(ldesc, ldesc["mediaType"])
        if ldesc["mediaType"] == MT["layer+gzip"]:
            data = gzip.decompress(data)
        else:
            assert ldesc["mediaType"] == MT["layer"]
        assert "sha256:" + hashlib.sha256(data).hexdigest() == diff_id, "diff_id is not the uncompressed layer's digest"
        layers.append(data)
    return config, layers


def layer_entries(data):
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return tar.getmembers()


@pytest.fixture
def sample_tree(tmp_path):
    root = tmp_path / "tree"
    (root / "usr/bin").mkdir(parents=True)
    (root / "etc").mkdir()
    (root / "usr/bin/tool").write_text("#!/bin/sh\necho hi\n")
    (root / "usr/bin/tool").chmod(0o755)
    os.link(root / "usr/bin/tool", root / "usr/bin/tool-again")
    (root / "usr/bin/alias").symlink_to("tool")
    (root / "etc/owned").write_text("x")
    if os.geteuid() == 0:
        os.chown(root / "etc/owned", 65532, 65532)
    return root


def oci_image(tmp_path, name, *args):
    out = tmp_path / name
    subprocess.run([OCI_IMAGE, "--ref", "localhost/t/sample:1", "--out", str(out)] + list(args), check=True,
                   stderr=subprocess.PIPE)
    return out


def test_layout_digests_sizes_and_media_types(tmp_path, sample_tree):
    out = oci_image(tmp_path, "a.tar", "--layer", str(sample_tree), "--entrypoint", '["/usr/bin/tool"]',
                    "--cmd", '["x"]', "--user", "65532:65532", "--env", "A=1", "--workdir", "/etc")
    config, (layer,) = check_layout(out, "localhost/t/sample:1")
    assert config["config"] == {"Entrypoint": ["/usr/bin/tool"], "Cmd": ["x"], "User": "65532:65532", "Env": ["A=1"],
                                "WorkingDir": "/etc"}
    entries = layer_entries(layer)
    names = [e.name for e in entries]
    assert names == ["etc", "etc/owned", "usr", "usr/bin", "usr/bin/alias", "usr/bin/tool", "usr/bin/tool-again"]
    by_name = {e.name: e for e in entries}
    assert all(e.mtime == 0 and e.uname == "" and e.gname == "" for e in entries)
    assert by_name["usr/bin/alias"].issym() and by_name["usr/bin/alias"].linkname == "tool"
    assert by_name["usr/bin/tool"].mode & 0o777 == 0o755
    assert by_name["usr/bin/tool-again"].islnk() and by_name["usr/bin/tool-again"].linkname == "usr/bin/tool"
    if os.geteuid() == 0:
        assert (by_name["etc/owned"].uid, by_name["etc/owned"].gid) == (65532, 65532)


def test_same_input_same_bytes_and_gzip_layers(tmp_path, sample_tree):
    a = oci_image(tmp_path, "a.tar", "--layer", str(sample_tree))
    os.utime(sample_tree / "usr/bin/tool", (1, 1))  # mtimes do not matter
    b = oci_image(tmp_path, "b.tar", "--layer", str(sample_tree))
    assert a.read_bytes() == b.read_bytes()
    z = oci_image(tmp_path, "z.tar", "--layer", str(sample_tree), "--layer", str(sample_tree / "etc"), "--gzip")
    config, layers = check_layout(z, "localhost/t/sample:1")
    assert len(layers) == 2 and [e.name for e in layer_entries(layers[1])] == ["owned"]


def test_bad_options_are_named(tmp_path, sample_tree):
    for args, word in ((["--entrypoint", "/x"], "--entrypoint"), (["--env", "NOEQUALS"], "NOEQUALS"),
                       (["--layer", str(tmp_path / "missing")], "missing")):
        r = subprocess.run([OCI_IMAGE, "--ref", "localhost/t/x:1", "--out", str(tmp_path / "o.tar"),
                            "--layer", str(sample_tree)] + args, stderr=subprocess.PIPE, text=True)
        assert r.returncode != 0 and word in r.stderr, r.stderr


def build_images(*names, **env):
    r = subprocess.run([BUILD_IMAGES] + list(names), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, **env), timeout=600)
    assert r.returncode == 0, r.stderr
    lines = dict(line.split("=", 1) for line in r.stdout.splitlines())
    return {name: tuple(value.split(" ", 1)) for name, value in lines.items()}


def extract(layers, dest):
    dest.mkdir()
    for data in layers:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            if hasattr(tarfile, "fully_trusted_filter"):  # Python >= 3.11.4 asks for a filter
                tar.extractall(dest, numeric_owner=True, filter="fully_trusted")
            else:
                tar.extractall(dest, numeric_owner=True)
    return dest


def test_pause_image_waits_for_sigterm_as_pid_1(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("a PID namespace needs root")
    ref, archive = build_images("pause")["pause"]
    config, layers = check_layout(archive, ref)
    assert config["config"]["Entrypoint"] == ["/pause"]
    root = extract(layers, tmp_path / "pause")
    # PID 1 of a new PID namespace, as in a pod: runs until SIGTERM, then exits 0.
    p = subprocess.Popen(["unshare", "--fork", "--pid", "--kill-child", str(root / "pause")], stderr=subprocess.PIPE)
    time.sleep(0.5)
    assert p.poll() is None, "pause exited on its own"
    child = subprocess.run(["pgrep", "-P", str(p.pid)], stdout=subprocess.PIPE, text=True).stdout.split()
    assert len(child) == 1
    pause = int(child[0])
    # An orphan of the namespace is re-parented to pause, which reaps it when it exits.
    subprocess.run(["nsenter", "--target", str(pause), "--pid", "--", "sh", "-c", "sleep 0.3 & exit 0"], check=True)

    def children():
        out = subprocess.run(["ps", "-o", "stat=", "--ppid", str(pause)], stdout=subprocess.PIPE, text=True).stdout
        return out.split()

    assert children(), "the orphan was not re-parented to pause"
    deadline = time.time() + 30
    while children() and time.time() < deadline:
        time.sleep(0.1)
    assert children() == [], "pause left its exited child a zombie"
    os.kill(pause, signal.SIGTERM)
    assert p.wait(timeout=10) == 0


def dockerfile_runtime_stage():
    """The Dockerfile's last stage and the collect-runtime call of the stage it copies from."""
    with open(os.path.join(ROOT, "Dockerfile")) as fh:
        text = re.sub(r"\\\n", " ", fh.read())
    steps = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    last_from = max(i for i, s in enumerate(steps) if s.upper().startswith("FROM "))
    final = {}
    for s in steps[last_from:]:
        word, _, rest = s.partition(" ")
        final.setdefault(word.upper(), []).append(rest.strip())
    collect = [shlex.split(s.split("scripts/collect-runtime", 1)[1].split("&&")[0]) for s in steps[:last_from]
               if "scripts/collect-runtime" in s]
    return final, collect


def tree_listing(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                what = "-> " + os.readlink(path)
            elif os.path.isfile(path):
                with open(path, "rb") as fh:
                    what = hashlib.sha256(fh.read()).hexdigest()
            else:
                what = "dir"
            out[rel] = (oct(st.st_mode), st.st_uid, st.st_gid, what)
    return out


def test_operator_image_is_the_dockerfiles_runtime_stage(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("owners and chroot need root")
    final, collect = dockerfile_runtime_stage()
    assert final["FROM"] == ["scratch"]
    # The runtime stage is the collected tree of the build stage, nothing else.
    assert len(final["COPY"]) == 1
    src = final["COPY"][0].split()
    assert src[0].startswith("--from=") and src[-1] == "/"
    assert collect and collect[0][-1].rstrip("/") == src[1].rstrip("/"), (collect, src)
    ref, archive = build_images("operator", TFJOB_BIN=TFJOB)["operator"]
    config, layers = check_layout(archive, ref)
    cfg = config["config"]
    assert cfg["User"] == final["USER"][-1]
    assert cfg["Entrypoint"] == json.loads(final["ENTRYPOINT"][-1])
    assert cfg["Cmd"] == json.loads(final["CMD"][-1])
    image = extract(layers, tmp_path / "image")
    expected = tmp_path / "dockerfile-rootfs"
    subprocess.run([os.path.join(ROOT, "scripts", "collect-runtime"), TFJOB, str(expected)], check=True,
                   stderr=subprocess.PIPE)
    assert tree_listing(image) == tree_listing(expected)
    user = cfg["User"]
    r = subprocess.run(["chroot", f"--userspec={user}", str(image)] + cfg["Entrypoint"] + ["version"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("tfjob "), r.stdout
