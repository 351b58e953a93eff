//! The block layer (blk-mq): per-CPU software queues map to hardware
//! queues; a request needs a tag of its hardware queue (the queue depth)
//! before it reaches the driver, and waits on the hardware queue when none
//! is free (blk_mq_get_tag sleeping on the tag wait queue). Queue settings
//! are named as /sys/block/<dev>/queue names them.

use crate::profile::Profile;
use std::collections::VecDeque;

/// /sys/block/<dev>/queue settings that change the simulated path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSettings {
    /// io_poll: polled completion allowed for REQ_POLLED submissions.
    pub io_poll: bool,
    /// io_poll_delay: -1 classic polling, 0 adaptive hybrid, N>0 sleep N us
    /// then poll (block/blk-mq.c, v4.10 to v6.3).
    pub io_poll_delay: i64,
    /// nr_requests: tags per hardware queue the block layer will use (the
    /// driver's depth caps it).
    pub nr_requests: u32,
}

impl QueueSettings {
    pub fn from_profile(p: &Profile) -> crate::Result<QueueSettings> {
        let delay = p.signed("block.io_poll_delay")?;
        if delay < -1 {
            return Err(crate::InputError::new(
                "--set",
                None,
                format!(
                    "block.io_poll_delay must be -1, 0 or a positive number of us, not {delay}"
                ),
            ));
        }
        Ok(QueueSettings {
            io_poll: p.flag("block.io_poll")?,
            io_poll_delay: delay,
            nr_requests: p.count("block.nr_requests")? as u32,
        })
    }
}

struct Hctx {
    free_tags: u32,
    /// Requests waiting for a tag, in arrival order.
    waiting: VecDeque<u32>,
}

/// Tags and hardware queues.
pub struct BlkMq {
    hctxs: Vec<Hctx>,
    pub tag_waits: u64,
}

impl BlkMq {
    pub fn new(hw_queues: u32, depth: u32) -> BlkMq {
        BlkMq {
            hctxs: (0..hw_queues.max(1))
                .map(|_| Hctx {
                    free_tags: depth,
                    waiting: VecDeque::with_capacity(depth as usize * 4),
                })
                .collect(),
            tag_waits: 0,
        }
    }

    /// blk_mq_map_queues: CPUs spread over hardware queues in order.
    pub fn hctx_of_cpu(&self, cpu: u32) -> usize {
        cpu as usize % self.hctxs.len()
    }

    /// Take a tag for request `rq` on `hctx`; false means it now waits.
    pub fn get_tag(&mut self, hctx: usize, rq: u32) -> bool {
        let h = &mut self.hctxs[hctx];
        if h.free_tags > 0 && h.waiting.is_empty() {
            h.free_tags -= 1;
            true
        } else {
            h.waiting.push_back(rq);
            self.tag_waits += 1;
            false
        }
    }

    /// Give a tag back; if a request was waiting, it takes the tag and is
    /// returned, to be dispatched.
    pub fn put_tag(&mut self, hctx: usize) -> Option<u32> {
        let h = &mut self.hctxs[hctx];
        match h.waiting.pop_front() {
            Some(rq) => Some(rq),
            None => {
                h.free_tags += 1;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_wait_for_tags_in_order() {
        let mut b = BlkMq::new(1, 2);
        assert!(b.get_tag(0, 10));
        assert!(b.get_tag(0, 11));
        assert!(!b.get_tag(0, 12));
        assert!(!b.get_tag(0, 13));
        assert_eq!(b.put_tag(0), Some(12));
        assert_eq!(b.put_tag(0), Some(13));
        assert_eq!(b.put_tag(0), None);
        assert_eq!(b.put_tag(0), None);
        assert!(b.get_tag(0, 14));
        assert!(b.get_tag(0, 15));
        assert!(!b.get_tag(0, 16));
    }
}
