"""The generic device's queue policy (device.queue_policy,
crates/flashpath/src/device/queue.rs), through the simulator as
`flashpath calibrate` drives it: `reads-first` lets a read pass the
writes waiting on its server (mq-deadline's rule), `fifo` (the default)
is the device as it was."""

from __future__ import annotations

from flashpath import calibrate

PROFILE = "profiles/virtio-vda-fitted.toml"


def _mix(depth: int) -> str:
    return (
        "[mix]\nrw=randrw\nrwmixread=50\nbs=4k\nioengine=libaio\ndirect=1\n"
        f"iodepth={depth}\nsize=2g\nnorandommap=1\ntime_based=1\nruntime=500ms\n"
    )


def _run(depth: int, overrides: list[str]) -> dict[str, calibrate.Figures]:
    return calibrate.simulate(_mix(depth), "mix", PROFILE, overrides)


def test_reads_first_serves_a_deep_mixs_reads_ahead_of_its_writes() -> None:
    fifo = _run(16, [])
    first = _run(16, ["device.queue_policy=reads-first", "device.writes_starved=2"])
    # Arrival order: both directions wait in the same queues, so they
    # differ by their service times alone (this profile's writes take
    # 82.5 us, its reads 44.3 us).
    r, w = fifo["read"].lat_mean_ns, fifo["write"].lat_mean_ns
    # Reads first: the reads wait less than in arrival order, the writes
    # more (the same servers, the same work, another order).
    assert first["read"].lat_mean_ns < 0.9 * r, (first["read"], fifo["read"])
    assert first["write"].lat_mean_ns > 1.05 * w, (first["write"], fifo["write"])
    assert first["read"].lat_mean_ns / first["write"].lat_mean_ns < 0.8 * r / w
    # A bound of 0 takes a waiting write first: the writes then lead.
    writes_first = _run(16, ["device.queue_policy=reads-first", "device.writes_starved=0"])
    assert writes_first["write"].lat_mean_ns < writes_first["read"].lat_mean_ns


def test_the_policy_changes_nothing_where_nothing_waits() -> None:
    # At iodepth 1 no command waits for another, so the order a server
    # takes them in cannot matter: the same figures to the nanosecond.
    assert _run(1, []) == _run(1, ["device.queue_policy=reads-first"])


def test_fifo_is_the_profile_without_the_key() -> None:
    assert _run(16, []) == _run(16, ["device.queue_policy=fifo", "device.writes_starved=7"])
