"""Hostile kubeconfigs, through the real binary: `tfjob operator --kubeconfig F` (and $KUBECONFIG).
Each case must exit 2 with a message naming the file and the field or cause, within bounded
memory and without hanging. The byte caps are in docs/operator.md (section 1)."""
import base64
import os
import stat

import pytest

from conftest import MiB, run_measured

PEM_CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
B64_CA = base64.b64encode(PEM_CA.encode()).decode()


def config(cluster="{server: 'https://127.0.0.1:1'}", user="{token: t}", context="{cluster: c, user: u}",
           current="x"):
    return (f"apiVersion: v1\nkind: Config\ncurrent-context: {current}\n"
            f"contexts: [{{name: x, context: {context}}}]\n"
            f"clusters: [{{name: c, cluster: {cluster}}}]\n"
            f"users: [{{name: u, user: {user}}}]\n")


def alias_bomb():
    lines = ["a0: &a0 [x,x,x,x,x,x,x,x,x,x]"]
    for i in range(1, 12):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("kubeconfig")
    (d / "cadir").mkdir()
    (d / "huge-token").write_bytes(b"a" * (1 * MiB))
    (d / "unreadable-ca").write_text(PEM_CA)
    os.chmod(d / "unreadable-ca", 0)
    with open(d / "huge", "wb") as f:  # 100 MB: sparse, so the test itself stays cheap
        f.truncate(100 * 1000 * 1000)
    return d


# (case, kubeconfig text or a path to use as-is, substrings the error must contain, memory bound MiB)
CASES = [
    ("100 MB file", "@huge", ["huge is larger than the limit of 4 MiB"], 128),
    ("/dev/zero", "/dev/zero", ["/dev/zero is larger than the limit of 4 MiB"], 128),
    # The node cap of the manifest loader (src/api/manifest.cc) governs this one's memory.
    ("alias bomb", alias_bomb(), ["more than 2,000,000 nodes"], 320),
    ("deep nesting (flow)", "[" * 100000 + "]" * 100000, ["nesting deeper than"], 128),
    ("deep nesting (block)", "".join("  " * i + f"k{i}:\n" for i in range(600)), ["nesting deeper than"], 128),
    ("binary garbage", bytes(range(256)) * 64, ["kubeconfig:"], 128),
    ("missing current-context", config(current="''"), ["no current-context"], 128),
    ("context names a missing cluster", config(context="{cluster: gone, user: u}"),
     ['cluster "gone" of context "x" not found'], 128),
    ("context names a missing user", config(context="{cluster: c, user: nobody}"),
     ['user "nobody" of context "x" not found'], 128),
    ("CA path is a directory", config(cluster="{server: 'https://h:1', certificate-authority: cadir}"),
     ["certificate-authority", "cadir is a directory"], 128),
    ("CA path is missing", config(cluster="{server: 'https://h:1', certificate-authority: no-such-ca}"),
     ["certificate-authority", "no-such-ca"], 128),
    ("CA path is /dev/zero", config(cluster="{server: 'https://h:1', certificate-authority: /dev/zero}"),
     ["certificate-authority", "/dev/zero is larger than the limit of 1 MiB"], 128),
    ("CA data is not base64", config(cluster="{server: 'https://h:1', certificate-authority-data: '!!!%%%'}"),
     ["certificate-authority-data", "not valid base64"], 128),
    ("CA data is base64 of garbage",
     config(cluster="{server: 'https://h:1', certificate-authority-data: " +
                    base64.b64encode(os.urandom(600)).decode() + "}"),
     ["certificate-authority-data", "is not PEM"], 128),
    ("exec plugin", config(user="{exec: {command: aws, apiVersion: client.authentication.k8s.io/v1}}"),
     ["exec/auth-provider", "does not run"], 128),
    ("auth-provider plugin", config(user="{auth-provider: {name: gcp}}"), ["exec/auth-provider"], 128),
    ("server is not a URL", config(cluster="{server: 'not a url'}"), ['server "not a url"'], 128),
    ("server URL without a host", config(cluster="{server: 'https://:6443'}"), ["no host"], 128),
    ("server URL with a bad port", config(cluster="{server: 'https://h:0'}"), ["the port is not a number"], 128),
    ("huge token file", config(user="{tokenFile: huge-token}"),
     ["tokenFile", "huge-token is larger than the limit of 64 KiB"], 128),
    ("token with a line break", config(user='{token: "a\\r\\nX-Injected: 1"}'), ["control character"], 128),
    ("client key file is /dev/zero",
     config(user="{client-certificate-data: " + B64_CA + ", client-key: /dev/zero}"),
     ["client-key", "/dev/zero is larger than the limit of 1 MiB"], 128),
]


def operator_args(tfjob, path):
    return [tfjob, "operator", "--kubeconfig", path, "--metrics-bind-address", "0",
            "--health-probe-bind-address", "0"]


@pytest.mark.parametrize("case,content,expect,max_rss", CASES, ids=[c[0] for c in CASES])
def test_hostile_kubeconfig(tfjob, files, case, content, expect, max_rss):
    if isinstance(content, str) and content.startswith("@"):
        path = str(files / content[1:])
    elif isinstance(content, str) and content.startswith("/dev/"):
        path = content
    else:
        path = str(files / (case.replace(" ", "-").replace("/", "_") + ".yaml"))
        with open(path, "wb") as f:
            f.write(content if isinstance(content, bytes) else content.encode())
    out = run_measured(operator_args(tfjob, path), "kubeconfig", case, timeout=30, max_rss_mib=max_rss)
    assert out.returncode == 2, out.output
    assert path in out.output or os.path.basename(path) in out.output, out.output
    text = out.output.replace('\\"', '"')  # logfmt escapes the quotes inside a field
    for want in expect:
        assert want in text, f"{case}: {want!r} not in {out.output!r}"


def test_unreadable_ca_file(tfjob, files):
    if os.geteuid() == 0:
        pytest.skip("root reads a mode-000 file")
    path = files / "unreadable.yaml"
    path.write_text(config(cluster="{server: 'https://h:1', certificate-authority: unreadable-ca}"))
    out = run_measured(operator_args(tfjob, str(path)), "kubeconfig", "CA file unreadable", timeout=30,
                       max_rss_mib=128)
    assert out.returncode == 2
    assert "unreadable-ca" in out.output and "Permission denied" in out.output


def test_kubeconfig_from_environment_is_bounded_too(tfjob, files):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_SERVICE")}
    env["KUBECONFIG"] = "/dev/zero"
    out = run_measured([tfjob, "operator", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"],
                       "kubeconfig", "$KUBECONFIG=/dev/zero", timeout=30, max_rss_mib=128, env=env)
    assert out.returncode == 2
    assert "/dev/zero is larger than the limit of 4 MiB" in out.output
