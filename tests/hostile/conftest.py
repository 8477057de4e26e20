"""The hostile-input suite's harness: every case runs an entry point of tfjob (the file reader,
`tfjob run`, the operator's HTTP servers, the kubeconfig reader, the watch stream) on one hostile
input, checks the clear error it must give, and records how long it took and how much memory the
process under test peaked at. The table of every case is printed at the end of the run.

Bounds, not timings: a case fails when the process needs more than its memory bound (peak RSS) or
hangs past its time-out; the time itself is printed, never asserted.

TFJOB_BIN=/path/to/tfjob runs every case against another build (for instance the unfixed one, to
prove that a case fails before its fix); the default is build/release/tfjob of this checkout.

Peak RSS: ru_maxrss of a process counts the high-water mark of the memory image it replaced at
exec, and a child of pytest starts from a copy of pytest (fork) or from pytest's own memory
(vfork, posix_spawn): either way every figure would include pytest's 50-60 MiB. So run_measured
starts the command under GNU time (/usr/bin/time, package `time`), a ~1 MiB process whose child
is the command: time's wait4 reports the command's own peak (and its children's).
"""
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TFJOB = os.environ.get("TFJOB_BIN") or os.path.join(ROOT, "build", "release", "tfjob")
MiB = 1024 * 1024
GNU_TIME = "/usr/bin/time"

_rows = []


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_bytes: int

    @property
    def output(self):
        return self.stdout + self.stderr


def record(entry_point, case, seconds, peak_rss_bytes, result):
    """Adds one row to the table printed at the end (entry point, case, s, peak MiB, result)."""
    _rows.append((entry_point, case, seconds, peak_rss_bytes, result))


def run_measured(args, entry_point, case, stdin=None, timeout=60, max_rss_mib=256, env=None, cwd=ROOT):
    """Runs args to completion and measures its wall time and its own peak RSS (see the module
    docstring). Fails on a hang past `timeout` or a peak over `max_rss_mib`. The return code is
    Popen's: negative for a signal."""
    with tempfile.NamedTemporaryFile(prefix="tfjob-rusage-") as usage:
        wrapped = [GNU_TIME, "-f", "maxrss=%M exit=%x", "-o", usage.name, *args]
        started = time.monotonic()
        # A session of its own, so that a hang kills the command too, not only time.
        proc = subprocess.Popen(wrapped, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                                start_new_session=True)
        try:
            out, err = proc.communicate(input=stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            record(entry_point, case, time.monotonic() - started, 0, "HANG")
            pytest.fail(f"{case}: no answer within {timeout}s (hang)")
        seconds = time.monotonic() - started
        returncode, peak = _time_report(usage.read().decode("utf-8", "replace"), proc.returncode)
    outcome = Outcome(returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), seconds, peak)
    ok = peak <= max_rss_mib * MiB
    record(entry_point, case, seconds, peak, f"rc {returncode}" + ("" if ok else " OVER MEMORY BOUND"))
    assert ok, f"{case}: peak RSS {peak / MiB:.1f} MiB over the bound of {max_rss_mib} MiB"
    return outcome


def _time_report(text, time_rc):
    """(return code, peak RSS bytes) from GNU time's report: its last line is our format, preceded
    by "Command terminated by signal N" when the command died of a signal."""
    lines = text.strip().splitlines()
    last = dict(kv.split("=", 1) for kv in lines[-1].split()) if lines and "maxrss=" in lines[-1] else {}
    if "maxrss" not in last:
        raise AssertionError(f"{GNU_TIME} reported no usage (rc {time_rc}): {text!r}")
    for line in lines[:-1]:
        if line.startswith("Command terminated by signal "):
            return -int(line.rsplit(" ", 1)[1]), int(last["maxrss"]) * 1024
    return int(last["exit"]), int(last["maxrss"]) * 1024


def process_peak_rss(pid):
    """The peak RSS (VmHWM) of a process that is still running, in bytes; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def pytest_terminal_summary(terminalreporter):
    if not _rows:
        return
    tr = terminalreporter
    tr.section("hostile inputs: time and peak memory per case")
    tr.write_line(f"{'entry point':<16} {'case':<52} {'seconds':>8} {'peak MiB':>9}  result")
    for entry_point, case, seconds, peak, result in _rows:
        tr.write_line(f"{entry_point:<16} {case[:52]:<52} {seconds:>8.2f} {peak / MiB:>9.1f}  {result}")


@pytest.fixture(scope="session")
def tfjob():
    if not os.access(TFJOB, os.X_OK):
        pytest.fail(f"{TFJOB} is not built: run make build")
    return TFJOB


def pytest_sessionstart(session):
    if not os.access(GNU_TIME, os.X_OK):
        raise pytest.UsageError(f"{GNU_TIME} is missing: the hostile suite measures peak RSS with GNU time "
                                "(package `time`, scripts/install-deps)")


def pytest_report_header(config):
    return f"tfjob under test: {TFJOB}"


# A kubeconfig of a server that never answers (its port formatted in with %): the servers' and the
# dashboard's cases need one to start.
KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: unreachable
  cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t}
contexts:
- name: c
  context: {cluster: unreachable, user: u}
current-context: c
"""
