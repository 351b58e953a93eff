//! ufs-qcom's per-request CPU PM QoS vote (Qualcomm's Android vendor
//! `drivers/ufs/host/ufs-qcom.c`, not in mainline).
//!
//! The vendor driver reads CPU groups from the UFS node's `qcom,qos`
//! children (`mask`, `vote`). For each request, `ufs_qcom_qos()` finds the
//! group of the CPU that issued it (`blk_mq_rq_cpu()`) and, unless that
//! group already voted, queues `ufs_qcom_vote_work()`, which adds a
//! `DEV_PM_QOS_RESUME_LATENCY` request of `votes[QOS_PERF]` us on every CPU
//! of the group. `ufs_qcom_setup_clocks(hba, false, POST_CHANGE)` (clock
//! gating) calls `ufs_qcom_unvote_qos_all()`, which sets every voted group
//! back to `S32_MAX` ("no constraint"). While a group is voted the cpuidle
//! governor may only pick states whose exit latency (entry + exit for DT
//! states) is within the vote.
//!
//! Simplification: the vote takes effect when the request is issued; the
//! kernel applies it from a work item a little later.

use crate::error::{InputError, Result};
use crate::profile::limits::DELAY;
use crate::profile::{range, Profile};
use crate::sim::Ns;

#[derive(Clone, Debug)]
pub struct QcomQos {
    /// CPU masks of the `qcom,qos` groups.
    pub groups: Vec<u64>,
    /// `votes[QOS_PERF]`: the resume-latency limit while voted.
    pub vote: Ns,
    /// CPUs whose group is voted.
    pub voted: u64,
    /// Votes cast (groups that were not voted when a request came).
    pub votes_cast: u64,
}

crate::params! {
    /// Qualcomm's ufs-qcom CPU PM QoS vote (vendor kernels'
    /// drivers/scsi/ufs/ufs-qcom.c), read when `ufs.qcom_qos.groups` is
    /// given.
    pub struct QcomQosParams {
        /// CPU masks of the `qcom,qos` device-tree groups: a request on a
        /// CPU votes for its whole group. Absent: no vendor vote.
        groups: Vec<f64> = required list(
            "ufs.qcom_qos.groups",
            "count",
            range(
                1.0,
                u64::MAX as f64,
                "a CPU mask of a 64-CPU SoC, not empty (ufs_qcom_qos_init: \"Invalid group \
                 mask\")",
            ),
            64
        ),
        /// `votes[QOS_PERF]`: the resume-latency limit while voted.
        vote: Ns = required ns("ufs.qcom_qos.vote", DELAY),
    }
}

impl QcomQos {
    /// `ufs.qcom_qos.*`, absent from profiles without the vendor driver.
    pub fn from_profile(p: &Profile) -> Result<Option<QcomQos>> {
        if !p.has("ufs.qcom_qos.groups") {
            return Ok(None);
        }
        let q = QcomQosParams::read(p)?;
        let groups: Vec<u64> = q.groups.iter().map(|m| *m as u64).collect();
        if groups.is_empty() {
            return Err(InputError::new(
                p.file_of("ufs.qcom_qos.groups"),
                None,
                "ufs.qcom_qos.groups needs non-empty CPU masks (ufs_qcom_qos_init: \"Invalid group mask\")",
            ));
        }
        Ok(Some(QcomQos {
            groups,
            vote: q.vote,
            voted: 0,
            votes_cast: 0,
        }))
    }

    /// `ufs_qcom_qos()` for a request issued on `cpu`.
    pub fn on_request(&mut self, cpu: u32) {
        let bit = 1u64 << (cpu % 64);
        if let Some(&mask) = self.groups.iter().find(|m| *m & bit != 0) {
            if self.voted & mask == 0 {
                self.votes_cast += 1;
            }
            self.voted |= mask;
        }
    }

    /// `ufs_qcom_unvote_qos_all()` when the clocks are gated.
    pub fn unvote_all(&mut self) {
        self.voted = 0;
    }

    /// The limit on `cpu` (`None` = no request).
    pub fn limit(&self, cpu: u32) -> Option<Ns> {
        (self.voted & (1u64 << (cpu % 64)) != 0).then_some(self.vote)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qos() -> QcomQos {
        // Two groups: CPUs 0-1 and CPUs 2-7.
        QcomQos {
            groups: vec![0x03, 0xfc],
            vote: 44_000,
            voted: 0,
            votes_cast: 0,
        }
    }

    #[test]
    fn a_request_votes_its_cpus_group_only() {
        let mut q = qos();
        assert_eq!(q.limit(3), None);
        q.on_request(3);
        for c in 2..8 {
            assert_eq!(q.limit(c), Some(44_000), "cpu {c}");
        }
        assert_eq!(q.limit(0), None);
        assert_eq!(q.limit(1), None);
        // Already voted: no new vote.
        q.on_request(5);
        assert_eq!(q.votes_cast, 1);
        q.unvote_all();
        assert_eq!(q.limit(3), None);
        q.on_request(0);
        assert_eq!((q.limit(1), q.limit(2)), (Some(44_000), None));
        assert_eq!(q.votes_cast, 2);
    }

    #[test]
    fn a_cpu_in_no_group_is_never_constrained() {
        let mut q = QcomQos {
            groups: vec![0x0c],
            ..qos()
        };
        q.on_request(0);
        assert_eq!(q.voted, 0);
        assert_eq!(q.limit(0), None);
    }
}
