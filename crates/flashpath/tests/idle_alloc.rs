//! A core's idle entries and exits allocate nothing once the core is made:
//! the governors' select and reflect read the state table converted once
//! (`menu::StateTimes`) and fixed-size histories. Every governor and
//! variant the profiles use (menu v4.4 and modern, qcom-lpm, a POLL-only
//! core), with and without NOHZ idle, the idle path and a PM QoS limit, so
//! that the re-selections (`settle`) run too. Counted with a global
//! allocator that counts this thread's allocations while a flag is set.

mod common;

use common::counting_alloc::{allocations_in, Counting};

use flashpath::host::idle::{
    CState, CStateTable, CoreIdle, IdleConfig, IntelIdleTable, MenuVariant,
};
use flashpath::sim::rng::RngStream;
use flashpath::sim::Ns;

#[global_allocator]
static GLOBAL: Counting = Counting;

fn config(table: CStateTable, variant: MenuVariant, nohz: bool, lpm: bool) -> IdleConfig {
    IdleConfig {
        table,
        variant,
        tick_ns: 4_000_000,
        c1e_auto_promotion: true,
        load_avg: 0.5,
        per_cpu: Vec::new(),
        nohz_idle: nohz,
        qcom_lpm: lpm,
        entry_path_ns: 1_500,
    }
}

/// `n` idle periods of random length (1 us to 5 ms), each entered from a
/// task or from the idle loop, with or without a timer and a latency
/// limit; returns how many went to a state other than 0.
fn cycles(core: &mut CoreIdle, rng: &mut RngStream, n: u32) -> u32 {
    let mut at: Ns = 1_000_000;
    let mut deep = 0;
    for i in 0..n {
        let timer = (i % 3 != 0).then(|| at + 1_000 + rng.below(3_000_000));
        let limit = (i % 5 == 0).then_some(50_000);
        let idx = if i % 2 == 0 {
            core.enter_from_task(at, timer, i % 2, limit)
        } else {
            core.enter_limited(at, timer, 0, limit)
        };
        deep += u32::from(idx > 0);
        at += 1_000 + rng.below(5_000_000);
        let _ = core.powered_down(at - 500, 0);
        core.exit(at, timer.is_some_and(|t| t <= at), 0);
        at += rng.below(20_000);
    }
    deep
}

#[test]
fn idle_entries_and_exits_allocate_nothing() {
    let psci = CStateTable::new(
        "psci",
        vec![CState::arm_wfi(), CState::psci("cpu-pc", 550, 750, 6_700)],
    );
    let cases = [
        (
            "hsw v4.4",
            config(
                IntelIdleTable::Hsw.table(),
                MenuVariant::Linux44,
                false,
                false,
            ),
        ),
        (
            "skl modern nohz",
            config(
                IntelIdleTable::Skl.table(),
                MenuVariant::Modern,
                true,
                false,
            ),
        ),
        (
            "psci qcom-lpm",
            config(psci, MenuVariant::Modern, true, true),
        ),
        ("poll only", IdleConfig::poll_only()),
    ];
    for (name, cfg) in cases {
        let mut core = CoreIdle::new(&cfg);
        let mut rng = RngStream::new(27, name);
        // Warm: every state visited and every history filled.
        cycles(&mut core, &mut rng, 2_000);
        let (deep, allocs) = allocations_in(|| cycles(&mut core, &mut rng, 20_000));
        assert_eq!(
            allocs, 0,
            "{name}: {allocs} allocations in 20,000 idle periods"
        );
        // The periods reach deep states where the table has them (the
        // loop is not trivially idling in state 0).
        if cfg.table.len() > 1 {
            assert!(
                deep > 1_000,
                "{name}: {deep} of 20,000 periods left state 0"
            );
        }
    }
}
