//! The FTL's and NAND's counters as the run's JSON shows them (the
//! `"flashpath"` section's `ftl` and `nand` objects), one shape for every
//! front end over the FTL (the UFS device, the NVMe flash SSD).

use super::FlashDevice;

fn per(a: u64, n: u64) -> f64 {
    if n > 0 {
        a as f64 / n as f64
    } else {
        0.0
    }
}

impl FlashDevice {
    /// Map cache, write amplification and GC: the `ftl` object.
    pub fn ftl_counters(&self) -> serde_json::Value {
        let s = self.stats();
        let mut v = serde_json::json!({
            "map_hits": s.map_hits,
            "map_misses": s.map_misses,
            "map_hit_ratio": s.map_hit_ratio(),
            "nand_reads_data": s.nand_reads_data,
            "nand_reads_map": s.nand_reads_map,
            "hpb_reads": s.hpb_reads,
            "hpb_stale": s.hpb_stale,
            "waf": s.waf(),
            "gc_runs": s.gc_runs,
            "model_bytes": self.model_bytes().to_json(),
        });
        // Only a device with an SLC cache shows it (the others' JSON stays).
        if let Some(c) = self.slc_stats() {
            v["slc"] = serde_json::json!({
                "slc_rows": c.slc_rows,
                "direct_rows": c.direct_rows,
                "folded_idle_rows": c.folded_idle_rows,
                "folded_foreground_rows": c.folded_foreground_rows,
                "resident_rows": (0..self.dies).map(|d| u64::from(self.slc_rows(d))).sum::<u64>(),
            });
        }
        v
    }

    /// Die and channel waits of reads: the `nand` object; `read_bytes` is
    /// the front end's usual read size (its transfer time is shown).
    pub fn nand_counters(&self, read_bytes: u64) -> serde_json::Value {
        let nand = self.nand();
        serde_json::json!({
            "reads": nand.waits.reads,
            "die_wait_ns_per_read": per(nand.waits.die_wait_ns, nand.waits.reads),
            "channel_wait_ns_per_read": per(nand.waits.channel_wait_ns, nand.waits.reads),
            "t_read_ns": nand.timing.t_read,
            "read_xfer_ns": nand.xfer_ns(read_bytes),
        })
    }
}
