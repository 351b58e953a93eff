//! Built-in C-state tables of `drivers/idle/intel_idle.c`.
//!
//! Values (exit latency / target residency, microseconds) are the driver's
//! `*_cstates[]` arrays as read at `linux:drivers/idle/intel_idle.c@00433ea`
//! (KERNEL-NOTES 3(c)). Each table gets the cpuidle core's POLL state as
//! state 0 (`cpuidle_poll_state_init()`, `drivers/cpuidle/poll_state.c`),
//! as on every x86 system, so `intel_idle`'s C1 is state 1.
//!
//! These are references and test fixtures; a profile normally gives its
//! table explicitly, with its own sources.

use super::{CState, CStateTable};

/// The `intel_idle` tables flashpath ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntelIdleTable {
    /// Haswell client, `hsw_cstates[]`.
    Hsw,
    /// Broadwell client, `bdw_cstates[]`.
    Bdw,
    /// Skylake client, `skl_cstates[]`.
    Skl,
    /// Skylake-X / Cascade Lake server, `skx_cstates[]`.
    Skx,
    /// Ice Lake-X server, `icx_cstates[]`.
    Icx,
    /// Sapphire Rapids server, `spr_cstates[]`.
    Spr,
    /// Alder Lake client, `adl_cstates[]`. C1 carries
    /// `CPUIDLE_FLAG_UNUSABLE` (C1 requests are promoted to C1E when C1E
    /// is on), so it is `disabled` here.
    Adl,
}

impl IntelIdleTable {
    pub const ALL: [IntelIdleTable; 7] = [
        IntelIdleTable::Hsw,
        IntelIdleTable::Bdw,
        IntelIdleTable::Skl,
        IntelIdleTable::Skx,
        IntelIdleTable::Icx,
        IntelIdleTable::Spr,
        IntelIdleTable::Adl,
    ];

    /// The short name `intel_idle` uses for the array (`hsw`, `skl`, ...).
    pub fn short_name(self) -> &'static str {
        match self {
            IntelIdleTable::Hsw => "hsw",
            IntelIdleTable::Bdw => "bdw",
            IntelIdleTable::Skl => "skl",
            IntelIdleTable::Skx => "skx",
            IntelIdleTable::Icx => "icx",
            IntelIdleTable::Spr => "spr",
            IntelIdleTable::Adl => "adl",
        }
    }

    /// Parse a short name (`"skl"`).
    pub fn from_short_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.short_name() == name)
    }

    /// `(name, exit_latency_us, target_residency_us, unusable)` rows of the
    /// driver array, shallowest first, without POLL.
    fn rows(self) -> &'static [(&'static str, u64, u64, bool)] {
        match self {
            // hsw_cstates[]
            IntelIdleTable::Hsw => &[
                ("C1", 2, 2, false),
                ("C1E", 10, 20, false),
                ("C3", 33, 100, false),
                ("C6", 133, 400, false),
                ("C7s", 166, 500, false),
                ("C8", 300, 900, false),
                ("C9", 600, 1800, false),
                ("C10", 2600, 7700, false),
            ],
            // bdw_cstates[]
            IntelIdleTable::Bdw => &[
                ("C1", 2, 2, false),
                ("C1E", 10, 20, false),
                ("C3", 40, 100, false),
                ("C6", 133, 400, false),
                ("C7s", 166, 500, false),
                ("C8", 300, 900, false),
                ("C9", 600, 1800, false),
                ("C10", 2600, 7700, false),
            ],
            // skl_cstates[]
            IntelIdleTable::Skl => &[
                ("C1", 2, 2, false),
                ("C1E", 10, 20, false),
                ("C3", 70, 100, false),
                ("C6", 85, 200, false),
                ("C7s", 124, 800, false),
                ("C8", 200, 800, false),
                ("C9", 480, 5000, false),
                ("C10", 890, 5000, false),
            ],
            // skx_cstates[]
            IntelIdleTable::Skx => &[
                ("C1", 2, 2, false),
                ("C1E", 10, 20, false),
                ("C6", 133, 600, false),
            ],
            // icx_cstates[]
            IntelIdleTable::Icx => &[
                ("C1", 1, 1, false),
                ("C1E", 4, 4, false),
                ("C6", 170, 600, false),
            ],
            // spr_cstates[]
            IntelIdleTable::Spr => &[
                ("C1", 1, 1, false),
                ("C1E", 2, 4, false),
                ("C6", 290, 800, false),
            ],
            // adl_cstates[]: C1 is CPUIDLE_FLAG_UNUSABLE.
            IntelIdleTable::Adl => &[
                ("C1", 1, 1, true),
                ("C1E", 2, 4, false),
                ("C6", 220, 600, false),
                ("C8", 280, 800, false),
                ("C10", 680, 2000, false),
            ],
        }
    }

    /// The table with POLL as state 0.
    pub fn table(self) -> CStateTable {
        let mut states = Vec::with_capacity(self.rows().len() + 1);
        states.push(CState::poll());
        for &(name, exit_us, residency_us, unusable) in self.rows() {
            let mut s = CState::from_us(name, exit_us, residency_us);
            s.disabled = unusable;
            states.push(s);
        }
        CStateTable::new(&format!("intel_idle:{}", self.short_name()), states)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_has_poll_first_and_validates() {
        for t in IntelIdleTable::ALL {
            let tab = t.table();
            assert!(tab.validate().is_ok(), "{}", tab.name);
            let s0 = &tab.states[0];
            assert!(s0.polling);
            assert_eq!(s0.name, "POLL");
            assert_eq!(s0.exit_latency_ns, 0);
            assert_eq!(s0.target_residency_ns, 0);
            assert_eq!(IntelIdleTable::from_short_name(t.short_name()), Some(t));
        }
    }

    #[test]
    fn spot_values_from_intel_idle_c() {
        // KERNEL-NOTES 3(c) table, checked against intel_idle.c@00433ea.
        let hsw = IntelIdleTable::Hsw.table();
        assert_eq!(hsw.len(), 9);
        let c10 = &hsw.states[hsw.find("C10").unwrap()];
        assert_eq!(
            (c10.exit_latency_ns, c10.target_residency_ns),
            (2_600_000, 7_700_000)
        );
        let bdw = IntelIdleTable::Bdw.table();
        let c3 = &bdw.states[bdw.find("C3").unwrap()];
        assert_eq!(
            (c3.exit_latency_ns, c3.target_residency_ns),
            (40_000, 100_000)
        );
        let skl = IntelIdleTable::Skl.table();
        let c6 = &skl.states[skl.find("C6").unwrap()];
        assert_eq!(
            (c6.exit_latency_ns, c6.target_residency_ns),
            (85_000, 200_000)
        );
        let skx = IntelIdleTable::Skx.table();
        assert_eq!(skx.len(), 4);
        let icx = IntelIdleTable::Icx.table();
        let c1e = &icx.states[icx.find("C1E").unwrap()];
        assert_eq!(
            (c1e.exit_latency_ns, c1e.target_residency_ns),
            (4_000, 4_000)
        );
        let spr = IntelIdleTable::Spr.table();
        let c6 = &spr.states[spr.find("C6").unwrap()];
        assert_eq!(
            (c6.exit_latency_ns, c6.target_residency_ns),
            (290_000, 800_000)
        );
        let adl = IntelIdleTable::Adl.table();
        assert!(adl.states[adl.find("C1").unwrap()].disabled);
        assert!(!adl.states[adl.find("C1E").unwrap()].disabled);
        let c8 = &adl.states[adl.find("C8").unwrap()];
        assert_eq!(
            (c8.exit_latency_ns, c8.target_residency_ns),
            (280_000, 800_000)
        );
    }
}
