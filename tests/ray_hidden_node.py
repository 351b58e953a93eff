"""A sweep on a two-node Ray cluster whose worker node cannot see the
spec's folder (issue 31): the check docs/sweeps.md reports. It needs root
(a mount namespace), so it is a script, not part of the suite; the suite's
tests/test_robustness.py runs a shipped point with the folder renamed away.

    python3 tests/ray_hidden_node.py

The head node has no CPUs, so every point runs on the worker node, which
is started in its own mount namespace (`unshare -m`) with an empty tmpfs
mounted over the spec's folder. The sweep (a device profile given by path
that includes another file, a job that includes a file and replays an
iolog beside it) must run there and give the local backend's bytes. Every
Ray process started here is found by this run's own temporary folder in
its command line and stopped by its id."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TRACE = REPO / "tests" / "fixtures" / "traces" / "fio-iolog-randrw" / "trace.iolog"


def write_spec(folder: Path) -> Path:
    (folder / "profiles").mkdir(parents=True)
    (folder / "jobs").mkdir()
    (folder / "profiles" / "base.toml").write_text(
        '[profile]\nname = "base"\ninclude = ["nullblk.toml"]\n'
        '[device]\ncompletion_nsec = { value = 30000, unit = "ns", source = "test" }\n'
    )
    (folder / "profiles" / "dev.toml").write_text(
        '[profile]\nname = "dev"\ndescription = "test"\ninclude = ["base.toml"]\n'
    )
    (folder / "jobs" / "common.fio").write_text("ioengine=psync\ndirect=1\n")
    (folder / "jobs" / "trace.iolog").write_bytes(TRACE.read_bytes())
    (folder / "jobs" / "base.fio").write_text("[r]\ninclude common.fio\nread_iolog=trace.iolog\n")
    spec = folder / "s.toml"
    spec.write_text(
        'job = "jobs/base.fio"\ndevice = "profiles/dev.toml"\n[grid]\nseed = [1, 2, 3]\n'
    )
    return spec


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ours(mark: str) -> list[int]:
    """The processes whose command line holds `mark` (this run's folder)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if mark.encode() in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def flashpath(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flashpath.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="flashpath-ray-"))
    ray_tmp = root / "ray"
    spec_dir = root / "spec"
    write_spec(spec_dir)
    from ray.util import get_node_ip_address

    # Ray 2.5x enables token authentication for a cluster started by `ray
    # start`; these nodes and drivers are this machine's own.
    os.environ["RAY_AUTH_MODE"] = "disabled"
    port = free_port()
    address = f"{get_node_ip_address()}:{port}"
    # This interpreter's Ray, so that the nodes' workers import this
    # interpreter's flashpath.
    ray = f"{sys.executable} -m ray.scripts.scripts"
    started: list[subprocess.Popen[bytes]] = []
    status = 1
    try:
        started.append(
            subprocess.Popen(
                [*ray.split(), "start", "--head", f"--port={port}", "--num-cpus=0", "--block"]
                + ["--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={ray_tmp}"],
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        hide = f"mount -t tmpfs tmpfs {spec_dir} && ls -A {spec_dir} | wc -l"
        node = (
            f"{hide} && exec {ray} start --address={address} --num-cpus=1 --block "
            f"--disable-usage-stats"
        )
        time.sleep(15)
        started.append(
            subprocess.Popen(
                ["unshare", "-m", "--propagation", "private", "sh", "-c", node],
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        probe = (
            "import ray, time, os\n"
            f"ray.init(address={address!r}, log_to_driver=False)\n"
            "for _ in range(120):\n"
            "    if ray.cluster_resources().get('CPU', 0) >= 1: break\n"
            "    time.sleep(1)\n"
            "@ray.remote(num_cpus=1)\n"
            "def sees(p): return os.path.exists(p)\n"
            f"print(ray.get(sees.remote({str(spec_dir / 's.toml')!r})))\n"
        )
        r = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300
        )
        print(f"worker node sees the spec: {r.stdout.strip()} {r.stderr.strip()[-300:]}")
        if r.stdout.strip() != "False":
            print("the worker node was not isolated: no result")
            return 1
        local = flashpath("sweep", "s.toml", "--out", "local.parquet", "--jobs", "1", cwd=spec_dir)
        assert local.returncode == 0, local.stderr
        r = flashpath(
            "sweep",
            "s.toml",
            "--out",
            "ray.parquet",
            "--backend",
            "ray",
            "--address",
            address,
            cwd=spec_dir,
        )
        print(r.stderr.strip())
        if r.returncode != 0:
            return 1
        same = (spec_dir / "ray.parquet").read_bytes() == (spec_dir / "local.parquet").read_bytes()
        log = [json.loads(x) for x in (spec_dir / "ray.parquet.log").read_text().splitlines()]
        points = [x for x in log if x["event"] == "point"]
        print(f"{len(points)} points ran on Ray workers {sorted({x['worker'] for x in points})}")
        print(f"the table's bytes equal the local backend's: {same}")
        status = 0 if same and len(points) == 3 else 1
    finally:
        for p in started:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        time.sleep(3)
        for pid in ours(str(root)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in started:
            p.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
