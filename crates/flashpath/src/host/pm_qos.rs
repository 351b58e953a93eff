//! PM QoS requests as the kernel's PM QoS framework keeps them
//! (kernel/power/qos.c): the CPU latency request the cpuidle governor
//! reads when a core goes idle (`cpu_latency_qos_limit`), and the
//! device-frequency request the block layer's dev_freq_timeout_ms work
//! adds to the disk's device (`freq_qos_add_request` with
//! `FREQ_QOS_MIN`).

use crate::sim::Ns;

/// Who holds CPU latency requests: the cpuidle governor asks the limit on
/// `cpu` at `now` (`None` = no request) before it picks a state.
pub trait CpuLatencyQos {
    fn cpu_latency_limit(&self, cpu: u32, now: Ns) -> Option<Ns>;
}

/// The state of seed 3's per-queue frequency request (patch 2/3:
/// `blk_mq_submit_bio` records `last_active`; `dev_freq_work` adds the
/// MIN_FREQUENCY request at FREQ_QOS_MAX_DEFAULT_VALUE when idle, and
/// removes it once `timeout` has passed without I/O, re-arming otherwise).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DevFreqQos {
    pub timeout: Ns,
    /// PM_QOS_ACTIVE (false: idle) / FREQ_SET (true).
    pub set: bool,
    pub last_active: Ns,
    /// When `dev_freq_work` is queued to run.
    pub work_at: Option<Ns>,
    pub adds: u64,
    pub removes: u64,
    /// (time, last_active) of every add and removal, for tests and plots.
    pub added: Vec<(Ns, Ns)>,
    pub removed: Vec<(Ns, Ns)>,
}

/// What `dev_freq_work` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QosAction {
    Add,
    Remove,
    Rearm,
}

impl DevFreqQos {
    /// Off unless `timeout` > 0.
    pub fn new(timeout: Ns) -> DevFreqQos {
        DevFreqQos {
            timeout,
            ..DevFreqQos::default()
        }
    }

    /// A REQ_SYNC or READ bio is submitted at `now`: returns when the work
    /// must run if it has to be queued now (state idle, not queued).
    pub fn submit(&mut self, now: Ns) -> Option<Ns> {
        if self.timeout == 0 {
            return None;
        }
        self.last_active = now;
        if !self.set && self.work_at.is_none() {
            self.work_at = Some(now);
            return Some(now);
        }
        None
    }

    /// `dev_freq_work` runs at `now`; on `Rearm` and `Add` it is queued
    /// again at `work_at`.
    pub fn work(&mut self, now: Ns) -> QosAction {
        self.work_at = None;
        if !self.set {
            self.set = true;
            self.adds += 1;
            self.added.push((now, self.last_active));
            self.work_at = Some(self.last_active + self.timeout);
            return QosAction::Add;
        }
        let expiry = self.last_active + self.timeout;
        if now >= expiry {
            self.set = false;
            self.removes += 1;
            self.removed.push((now, self.last_active));
            QosAction::Remove
        } else {
            self.work_at = Some(expiry);
            QosAction::Rearm
        }
    }

    /// The queued `dev_freq_work` fires at `now` (its caller arms one
    /// queue timer for it, so only the live expiry fires): it adds or drops
    /// the disk's MIN_FREQUENCY request (at FREQ_QOS_MAX_DEFAULT_VALUE kHz)
    /// and tells the device through `notify` (the driver's hook today).
    /// Returns when it runs next.
    pub fn dev_freq_work(&mut self, now: Ns, notify: impl FnOnce(Option<u64>)) -> Option<Ns> {
        debug_assert_eq!(self.work_at, Some(now), "only the armed work fires");
        match self.work(now) {
            QosAction::Add => notify(Some(crate::types::FREQ_QOS_MAX_DEFAULT_VALUE)),
            QosAction::Remove => notify(None),
            QosAction::Rearm => {}
        }
        self.work_at
    }

    /// The `"dev_freq_qos"` counters, when the request is on.
    pub fn counters(&self) -> Option<serde_json::Value> {
        (self.timeout > 0).then(|| {
            serde_json::json!({
                "timeout_ns": self.timeout,
                "adds": self.adds,
                "removes": self.removes,
                "added": self.added,
                "removed": self.removed,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_added_at_once_and_dropped_exactly_timeout_after_last_io() {
        let ms = 1_000_000;
        let mut q = DevFreqQos::new(30 * ms);
        assert_eq!(q.submit(5 * ms), Some(5 * ms));
        assert_eq!(q.work(5 * ms), QosAction::Add);
        assert_eq!(q.work_at, Some(35 * ms));
        // More I/O every 6.25 ms: no new work while the request is set.
        let mut t = 5 * ms;
        for _ in 0..10 {
            t += 6_250_000;
            assert_eq!(q.submit(t), None);
        }
        assert_eq!(q.work(35 * ms), QosAction::Rearm);
        assert_eq!(q.work_at, Some(t + 30 * ms));
        assert_eq!(q.work(t + 30 * ms), QosAction::Remove);
        assert!(!q.set);
        // Off: nothing happens.
        let mut off = DevFreqQos::default();
        assert_eq!(off.submit(1), None);
    }
}
