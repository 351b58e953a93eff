//! An eMMC card's front end over the translation layer the profile names
//! (the shared seam of [`super::ftl::layer`]; the page FTL by default, a
//! zoned layer refused: the eMMC command set has no zones): the card
//! firmware that decodes
//! each command, its sequential read-ahead into the card cache, the commit
//! of received write data, and the readiness of queued tasks (eMMC 5.1
//! command queuing, JESD84-B51). The host side (the mmc block driver, the
//! SDHCI controller, the command queue it keeps) is in
//! [`crate::driver::mmc`]; the bus between them in [`crate::link::emmc`].
//!
//! Read-ahead (a card property: KERNEL-NOTES 1(e) 4): a read of at least
//! `mmc.card.ra_min` bytes makes the card read the following
//! `mmc.card.ra_bytes` into its cache once the CMD line has been idle
//! `mmc.card.ra_idle` after the read's data phase. A command before then
//! cancels the read-ahead (the card gives host commands priority); one
//! after finds it started, and its NAND reads run to completion (a random
//! read waits for them).
//!
//! A queued read task is ready when its data is in the card cache (the
//! card starts its NAND reads when it is queued); a queued write task
//! `mmc.card.wr_task_ready` after it was queued, and not before the card's
//! write engine has room.

use super::ftl::layer::{layer_from_profile, FrontEnd, TranslationLayer};
use super::UNIT;
use crate::error::Result;
use crate::profile::limits::COST;
use crate::profile::{range, Profile, Range};
use crate::sim::Ns;

/// The card's front end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CardParams {
    /// Card firmware from a command's response to NAND work.
    pub fw_cmd: Ns,
    /// Queue depth (tasks), 3..=32.
    pub cmdq_depth: u32,
    /// Legacy sequential read-ahead: bytes read after a read, 0 = off.
    pub ra_bytes: u64,
    /// Smallest read that triggers read-ahead.
    pub ra_min: u64,
    /// The read-ahead starts only after the card has seen no command for
    /// this long after the read's data phase; a command arriving earlier
    /// cancels it, and once started it runs to completion.
    pub ra_idle: Ns,
    /// A queued write task is ready this long after CMD45 (and not before
    /// the card's write engine has room).
    pub wr_task_ready: Ns,
    /// Card firmware per write command before its data is committed
    /// (the commit then moves the data over a NAND channel).
    pub wr_fw: Ns,
    /// The card has a volatile cache (eMMC 4.5+, EXT_CSD CACHE_SIZE > 0),
    /// which the mmc core turns on (CACHE_CTRL = 1, mmc_init_card in
    /// drivers/mmc/core/mmc.c): a write ends once in it, and only a
    /// FLUSH_CACHE (CMD6) or a reliable write puts the data on NAND.
    pub cache: bool,
    /// The card takes reliable writes (EXT_CSD WR_REL_PARAM EN_REL_WR or
    /// REL_WR_SEC_C): with CMD23, REQ_FUA becomes a reliable write.
    pub reliable_write: bool,
}

/// A card read-ahead size.
const RA: Range = range(
    0.0,
    (1u32 << 20) as f64,
    "a card read-ahead size, at most 1 MiB",
);

crate::params! {
    /// The eMMC card's front end (`mmc.card.*`).
    pub struct CardKeys {
        /// Card firmware from a command's response to NAND work.
        fw_cmd: Ns = required ns("mmc.card.fw_cmd", COST),
        /// Command queue depth (tasks).
        cmdq_depth: u32 = required count_u32(
            "mmc.card.cmdq_depth",
            range(
                3.0,
                32.0,
                "EXT_CSD_CMDQ_DEPTH + 1: at most 32 tasks, and the mmc core refuses \
                 depths of 2 or less",
            )
        ),
        /// Legacy sequential read-ahead: bytes read after a read, 0 = off.
        ra_bytes: u64 = required bytes("mmc.card.ra_bytes", RA),
        /// Smallest read that triggers read-ahead.
        ra_min: u64 = required bytes("mmc.card.ra_min", RA),
        /// The read-ahead starts only after the card has seen no command
        /// for this long after the read's data phase.
        ra_idle: Ns = required ns("mmc.card.ra_idle", COST),
        /// A queued write task is ready this long after CMD45 (and not
        /// before the card's write engine has room).
        wr_task_ready: Ns = required ns("mmc.card.wr_task_ready", COST),
        /// Card firmware per write command before its data is committed.
        wr_fw: Ns = required ns("mmc.card.wr_fw", COST),
        /// The card has a volatile cache (eMMC 4.5+: EXT_CSD CACHE_SIZE
        /// > 0) that the mmc core turns on (CACHE_CTRL): writes end once
        /// in the card's write buffer, and the block layer sends flushes
        /// (CMD6 SWITCH FLUSH_CACHE). Its size is the FTL's write buffer.
        /// false: no cache (before eMMC 4.5, or CACHE_SIZE 0).
        cache: bool = default(false) flag("mmc.card.cache"),
        /// The card takes reliable writes (EXT_CSD WR_REL_PARAM
        /// EN_REL_WR): with CMD23 the mmc block driver turns REQ_FUA into
        /// one (CMD23 bit 31), which ends once the data is on NAND.
        reliable_write: bool = default(false) flag("mmc.card.reliable_write"),
    }
}

impl CardParams {
    /// `mmc.card.*`.
    pub fn from_profile(p: &Profile) -> Result<CardParams> {
        let k = CardKeys::read(p)?;
        Ok(CardParams {
            fw_cmd: k.fw_cmd,
            cmdq_depth: k.cmdq_depth,
            ra_bytes: k.ra_bytes,
            ra_min: k.ra_min,
            ra_idle: k.ra_idle,
            wr_task_ready: k.wr_task_ready,
            wr_fw: k.wr_fw,
            cache: k.cache,
            reliable_write: k.reliable_write,
        })
    }
}

/// What the card's cache did, for the driver's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CardStats {
    pub ra_hits: u64,
    pub ra_reads: u64,
    pub ra_cancelled: u64,
    /// FLUSH_CACHE switches the card carried out.
    pub cache_flushes: u64,
    /// Reliable writes (a write that ended once on NAND).
    pub reliable_writes: u64,
}

pub struct EmmcCard {
    pub p: CardParams,
    /// The back end: a translation layer over NAND.
    layer: Box<dyn TranslationLayer>,
    /// Units (LPNs) the host can address.
    user_lpns: u64,
    /// Read-ahead window in the card cache: [start, end) LPN, ready at.
    ra: Option<(u64, u64, Ns)>,
    /// Read-ahead the card will start if it stays idle: (first LPN,
    /// units, start time). Settled by the next command.
    ra_plan: Option<(u64, u32, Ns)>,
    /// The card's write engine (commit of received write data) is free at.
    wr_free: Ns,
    pub stats: CardStats,
}

impl EmmcCard {
    pub fn new(p: CardParams, layer: Box<dyn TranslationLayer>) -> EmmcCard {
        EmmcCard {
            p,
            user_lpns: layer.user_bytes() / UNIT,
            layer,
            ra: None,
            ra_plan: None,
            wr_free: 0,
            stats: CardStats::default(),
        }
    }

    /// `mmc.card.*` over the translation layer `device.flash.*` names,
    /// fresh (an eMMC card's FTL is not preconditioned).
    pub fn from_profile(p: &Profile, seed: u64) -> Result<EmmcCard> {
        let layer = layer_from_profile(p, seed, FrontEnd::Emmc)?;
        Ok(EmmcCard::new(CardParams::from_profile(p)?, layer))
    }

    pub fn capacity(&self) -> u64 {
        self.layer.user_bytes()
    }

    /// The translation layer.
    pub fn layer(&self) -> &dyn TranslationLayer {
        self.layer.as_ref()
    }

    /// The translation layer as its concrete type, if it is one: for
    /// tests and reports that need its own view.
    pub fn layer_as<L: 'static>(&self) -> Option<&L> {
        self.layer.as_any().downcast_ref::<L>()
    }

    /// A read of `n` units from `lpn` at `t` on the layer.
    #[inline]
    fn layer_read(&mut self, t: Ns, lpn: u64, n: u32) -> Ns {
        self.layer
            .read(t, lpn * UNIT, (u64::from(n) * UNIT) as u32)
            .done
            .at
    }

    /// When the card's firmware has decoded a command whose response was
    /// at `t` and starts its NAND work.
    pub fn decoded(&self, t: Ns) -> Ns {
        t + self.p.fw_cmd
    }

    /// A command reaches the card at `at`: a pending read-ahead that has
    /// not started by then is cancelled (the card was not idle long enough);
    /// one that has started is booked on the NAND and runs to completion.
    pub fn command_arrives(&mut self, at: Ns) {
        if let Some((lpn, n, start)) = self.ra_plan.take() {
            if start <= at {
                self.stats.ra_reads += 1;
                let r = self.layer_read(start, lpn, n);
                self.ra = Some((lpn, lpn + u64::from(n), r));
            } else {
                self.stats.ra_cancelled += 1;
            }
        }
    }

    /// A write or trim of [lpn, lpn + n) makes cached read-ahead data stale.
    fn invalidate_ra(&mut self, lpn: u64, n: u32) {
        let end = lpn + u64::from(n);
        if let Some((s, e, _)) = self.ra {
            if lpn < e && s < end {
                self.ra = None;
            }
        }
    }

    /// After a read of [lpn, lpn + n) whose data phase ended at
    /// `data_end`, plan the read-ahead of the following `ra_bytes`.
    pub fn plan_ra(&mut self, data_end: Ns, lpn: u64, n: u32) {
        if self.p.ra_bytes == 0 || u64::from(n) * UNIT < self.p.ra_min {
            return;
        }
        let end = lpn + u64::from(n);
        let ra_n = self.p.ra_bytes.div_ceil(UNIT);
        if end + ra_n <= self.user_lpns {
            self.ra_plan = Some((end, ra_n as u32, data_end + self.p.ra_idle));
        }
    }

    /// The card commits `n` units of write data received at `at`: firmware,
    /// then the data over a NAND channel into the FTL's write buffer.
    /// Returns when the card can signal the write done (end of R1b busy).
    pub fn commit_write(&mut self, at: Ns, lpn: u64, n: u32) -> Ns {
        self.invalidate_ra(lpn, n);
        let start = at.max(self.wr_free);
        let bytes = u64::from(n) * UNIT;
        let xfer = self.layer.nand().xfer_ns(bytes);
        let buffered = self
            .layer
            .write(start + self.p.wr_fw, lpn * UNIT, bytes as u32)
            .at;
        let end = buffered.max(start + self.p.wr_fw + xfer);
        self.wr_free = end;
        end
    }

    /// CMD6 SWITCH FLUSH_CACHE decoded at `t`: the card's busy lasts
    /// until the write in commit and everything in its cache is on NAND
    /// (JESD84-B51 6.6.31: the flush ends when the cached data is
    /// written to the non-volatile storage).
    pub fn flush_cache(&mut self, t: Ns) -> Ns {
        self.stats.cache_flushes += 1;
        self.layer.flush(t.max(self.wr_free))
    }

    /// A reliable write's data committed by `committed`: it ends once the
    /// data is on NAND (JESD84-B51 6.6.8.2: the write is not done until
    /// the new data is programmed), which drains the write buffer.
    pub fn reliable_commit(&mut self, committed: Ns) -> Ns {
        self.stats.reliable_writes += 1;
        self.layer.flush(committed)
    }

    /// A read decoded at `t`: from the read-ahead cache, else NAND.
    pub fn read(&mut self, t: Ns, lpn: u64, n: u32) -> Ns {
        let end = lpn + u64::from(n);
        match self.ra {
            Some((s, e, rdy)) if lpn >= s && end <= e => {
                self.stats.ra_hits += 1;
                t.max(rdy)
            }
            _ => self.layer_read(t, lpn, n),
        }
    }

    /// A read task queued and decoded at `t`: the card starts its NAND
    /// reads at once; returns when its data is in the card cache.
    pub fn queue_read(&mut self, t: Ns, lpn: u64, n: u32) -> Ns {
        self.layer_read(t, lpn, n)
    }

    /// A write task queued and decoded at `t` of [lpn, lpn + n): it makes
    /// read-ahead data stale; returns when it is ready at the earliest
    /// (see [`Self::task_ready`] for the write engine).
    pub fn queue_write(&mut self, t: Ns, lpn: u64, n: u32) -> Ns {
        self.invalidate_ra(lpn, n);
        t + self.p.wr_task_ready
    }

    /// When a queued task shows ready in the QSR: a read when its data is
    /// in the cache, a write once the write engine also has room.
    pub fn task_ready(&self, write: bool, ready: Ns) -> Ns {
        if write {
            ready.max(self.wr_free)
        } else {
            ready
        }
    }

    /// A discard of [lpn, lpn + n) at `t` (CMD38 after CMD35/36).
    pub fn trim(&mut self, t: Ns, lpn: u64, n: u32) -> Ns {
        self.invalidate_ra(lpn, n);
        self.layer
            .trim(t, lpn * UNIT, (u64::from(n) * UNIT) as u32)
            .at
    }
}
