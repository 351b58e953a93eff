"""The io-poll scenario under v4.4's intel_pstate: for one P-state range
and tick setting, fit each NVMe device's read time to its polled row,
then run the interrupt row (docs/io-poll.md, "The P-state range swept").

    python sweep.py NOHZ MIN NOMINAL TURBO [KEY=VALUE ...]

NOHZ is 1 for NO_HZ_IDLE (`host.idle.nohz`), 0 for a tick that runs on
idle cores. Writes the host and device copies under a temporary folder
and prints one JSON line: per device the fitted read time (ns), dd's
latency (us) in both modes and the mean MHz of CPUs 0 (dd) and 1 (the
interrupt's). Needs the flashpath package (maturin develop --release).
"""

import json
import pathlib
import sys
import tempfile

from flashpath import api
from flashpath.reproduce import _dd_stat

REPO = pathlib.Path(__file__).resolve().parents[2]
PROFILES = REPO / "profiles"
SCENARIO = REPO / "scenarios" / "io-poll" / "scenario.toml"
# (interrupt, polled) dd latency in us, SEEDS.md section 3.
PUBLISHED = {"nvme-dram": (19.5, 10.5), "nvme-samsung": (28.8, 15.4), "nvme-intel": (None, 6.4)}
START_NS = {"nvme-dram": 5000, "nvme-samsung": 9470, "nvme-intel": 470}


def dd_job() -> str:
    text = SCENARIO.read_text()
    return text.split("job = '''", 1)[1].split("'''", 1)[0]


def write_profiles(folder: pathlib.Path, nohz: bool, lo: int, nominal: int, turbo: int) -> None:
    (folder / "hosts").mkdir(parents=True, exist_ok=True)
    host = (PROFILES / "hosts" / "intel-2015.toml").read_text()
    old = 'freq = { value = 3000, unit = "MHz"'
    assert old in host
    host = host.replace(old, f'freq = {{ value = {nominal * 100}, unit = "MHz"')
    if nohz:
        host = host.replace(
            "[host.idle]\n",
            '[host.idle]\nnohz = { value = true, unit = "bool", source = "sweep" }\n',
        )
    host += f"""
[host.cpufreq]
governor = {{ value = "intel_pstate", unit = "name", source = "sweep" }}
min_pstate = {{ value = {lo}, unit = "count", source = "sweep" }}
max_pstate = {{ value = {nominal}, unit = "count", source = "sweep" }}
turbo_pstate = {{ value = {turbo}, unit = "count", source = "sweep" }}
"""
    (folder / "hosts" / "intel-2015.toml").write_text(host)
    for dev in PUBLISHED:
        (folder / f"{dev}.toml").write_text((PROFILES / f"{dev}.toml").read_text())


def run(folder: pathlib.Path, dev: str, poll: int, read_ns: int, sets: list[str]):
    overrides = [f"block.io_poll={poll}", f"device.read_latency={read_ns}", *sets]
    doc = api.run(dd_job(), str(folder / f"{dev}.toml"), overrides).fio_json()
    mhz = [c["cpufreq"]["mhz_mean"] for c in doc["flashpath"]["cpus"][:2]]
    return _dd_stat(doc, "latency_us"), mhz


def main() -> None:
    nohz = sys.argv[1] == "1"
    lo, nominal, turbo = (int(a) for a in sys.argv[2:5])
    sets = sys.argv[5:]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        write_profiles(folder, nohz, lo, nominal, turbo)
        for dev, (_, polled) in PUBLISHED.items():
            read_ns = START_NS[dev]
            # The polled latency moves 1:1 with the read time (device time
            # is not scaled by the clock): a few Newton steps fit it.
            for _ in range(3):
                lat_poll, mhz_poll = run(folder, dev, 1, read_ns, sets)
                err_us = polled - lat_poll
                if abs(err_us) < 0.005:
                    break
                read_ns = max(1, round(read_ns + err_us * 1000))
            lat_irq, mhz_irq = run(folder, dev, 0, read_ns, sets)
            out[dev] = {
                "read_ns": read_ns,
                "irq_us": round(lat_irq, 2),
                "poll_us": round(lat_poll, 2),
                "mhz_irq": mhz_irq,
                "mhz_poll": mhz_poll,
            }
    print(json.dumps({"nohz": nohz, "pstates": [lo, nominal, turbo], "devices": out}))


if __name__ == "__main__":
    main()
