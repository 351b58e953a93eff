//! What the block layer's flush machinery (block/blk-flush.c) makes of a
//! request that asks for durability: REQ_PREFLUSH (flush the cache
//! before), REQ_FUA (this write on stable media at completion), on a
//! queue with the driver's write-cache flags (QUEUE_FLAG_WC, _FUA).

use crate::driver::WriteCache;

/// The steps of one request (blk-flush.c's REQ_FSEQ_PREFLUSH, _DATA,
/// _POSTFLUSH), and whether the data goes to the driver with REQ_FUA.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlushSeq {
    pub preflush: bool,
    pub data: bool,
    pub fua: bool,
    pub postflush: bool,
}

impl FlushSeq {
    /// Nothing to do: blk_insert_flush ends the request at once
    /// (blk_mq_end_request), before any driver sees it.
    pub fn is_empty(&self) -> bool {
        !(self.preflush || self.data || self.postflush)
    }
}

/// blk_flush_policy with blk_insert_flush's flag handling: without a
/// volatile cache REQ_PREFLUSH and REQ_FUA are dropped (nothing to flush);
/// with one, a preflush is a flush request first, and a FUA write goes to
/// the driver with REQ_FUA when the device honours it, else it is
/// followed by a flush (the postflush).
pub fn flush_policy(wc: WriteCache, has_data: bool, preflush: bool, fua: bool) -> FlushSeq {
    if !wc.volatile {
        return FlushSeq {
            data: has_data,
            ..FlushSeq::default()
        };
    }
    FlushSeq {
        preflush,
        data: has_data,
        fua: has_data && fua && wc.fua,
        postflush: has_data && fua && !wc.fua,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: WriteCache = WriteCache {
        volatile: false,
        fua: false,
    };
    const WC: WriteCache = WriteCache {
        volatile: true,
        fua: false,
    };
    const WC_FUA: WriteCache = WriteCache {
        volatile: true,
        fua: true,
    };

    #[test]
    fn an_empty_flush_reaches_only_a_volatile_cache() {
        // blkdev_issue_flush: an empty REQ_PREFLUSH bio.
        assert!(flush_policy(NONE, false, true, false).is_empty());
        for wc in [WC, WC_FUA] {
            let s = flush_policy(wc, false, true, false);
            assert!(s.preflush && !s.data && !s.postflush);
        }
    }

    #[test]
    fn a_fua_write_is_fua_postflushed_or_plain_as_the_queue_allows() {
        let plain = flush_policy(NONE, true, false, true);
        assert!(plain.data && !plain.fua && !plain.postflush);
        let fua = flush_policy(WC_FUA, true, false, true);
        assert!(fua.data && fua.fua && !fua.postflush && !fua.preflush);
        let post = flush_policy(WC, true, false, true);
        assert!(post.data && !post.fua && post.postflush);
        // A write without either flag is the data alone everywhere.
        for wc in [NONE, WC, WC_FUA] {
            let s = flush_policy(wc, true, false, false);
            assert_eq!(
                s,
                FlushSeq {
                    data: true,
                    ..FlushSeq::default()
                }
            );
        }
    }
}
