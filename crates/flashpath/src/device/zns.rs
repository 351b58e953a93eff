//! A Zoned Namespace (NVMe ZNS Command Set 1.1) as a translation layer
//! behind the NVMe front end ([`super::nvme_flash`]): the profile's
//! `device.flash.layer = "zns"` puts it where the page-mapping FTL sits.
//!
//! # Zones on NAND
//!
//! A zone is `zone_size` bytes of LBA space (a power of two, as Linux
//! requires of every zoned block device: blk_revalidate_disk_zones) of
//! which the first `zone_capacity` bytes are writable (ZCAP <= ZSZE). Its
//! data goes into erase blocks of its own: the zone's rows (one page on
//! every plane of a die, a multi-plane program) go round every die in
//! turn, so a zone written sequentially programs all dies in parallel,
//! and zone `z` owns blocks `z * bpz .. (z + 1) * bpz` of every die, `bpz`
//! the blocks one die needs for its share of the capacity. There is no
//! page map: unit `u` of a zone is at row `u / row_units`, die `row % dies`,
//! page `(row / dies) % pages_per_block` of block `row / dies /
//! pages_per_block` of the zone's blocks on that die. Nothing is ever
//! moved, so there is no device-side garbage collection: the host resets
//! a zone to reuse it (an erase of the blocks it wrote).
//!
//! # Writes
//!
//! Each zone has a write pointer. A write's data fills the zone's write
//! buffer, `buffer_rows` rows of it (the controller memory that an open
//! zone holds, which is why open zones are a limited resource); a row is
//! programmed as soon as it is full, and a write waits for a buffer row
//! whose previous program has not ended. The controller's buffer is
//! `max_open x buffer_rows` rows in all (every open zone's): a full row
//! holds one of them until its program ends, also once its zone is full
//! and closed for writing, so a full row also waits for one of those to be
//! free (without that bound a stream moving on to a new zone had a fresh
//! buffer while its last zone's rows still drained, and a buffer of a
//! whole zone took any amount of data at the link's speed). A write completes when its data
//! is in the buffer, so the buffer is assumed power-loss protected (the
//! ZN540 is a datacentre drive): a Flush waits for the programs in flight.
//!
//! # The state machine
//!
//! Zone states and their transitions are the spec's (NVMe ZNS 1.1 section
//! 2.1.1, figure 7): Empty, Implicitly Opened, Explicitly Opened, Closed,
//! Full, Read Only, Offline. Open zones (implicitly + explicitly opened)
//! are limited by Maximum Open Resources, active zones (open + closed) by
//! Maximum Active Resources. A write or an Open to a zone that needs an
//! open resource when all are taken implicitly closes an implicitly opened
//! zone if there is one (the one opened longest ago), else fails with Too
//! Many Open Zones; the checks and their order are null_blk's zoned mode
//! (drivers/block/null_blk/zoned.c, null_check_zone_resources,
//! null_close_imp_open_zone) and QEMU's ZNS controller (hw/nvme/ctrl.c,
//! nvme_check_zone_write, nvme_aor_check).
//!
//! Statuses (ZNS 1.1 figure 27, Zoned Namespace Command Set specific
//! status values): a write off the write pointer is Zone Invalid Write
//! (0xBC); one that would pass the zone's capacity, Zone Boundary Error
//! (0xB8); to a full zone, Zone Is Full (0xB9); read-only and offline
//! zones answer 0xBA and 0xBB; resources, Too Many Active Zones (0xBD) and
//! Too Many Open Zones (0xBE); a management action the state does not
//! allow, Invalid Zone State Transition (0xBF). A Zone Append whose start
//! LBA is not a zone's start, or whose size passes ZASL, is Invalid Field
//! in Command (QEMU's nvme_do_write; the spec's section 3.4.1).
//!
//! Finish pads the rest of the zone's capacity: the device programs the
//! rows left (its NAND cost), then the zone is Full. Reset erases the
//! blocks the zone wrote and gives it back Empty with its whole capacity.

use std::any::Any;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::flash::nand_from_profile;
use super::ftl::layer::{BufferCounters, ReadDone, TranslationLayer, ZoneGeometry};
use super::nand::{Geometry, Nand};
use super::{Completion, Op, Status, ZoneAction, ZoneStatus, UNIT};
use crate::error::{InputError, Result};
use crate::profile::{range, Profile, Range};
use crate::sim::Ns;

/// A zone's state (ZNS 1.1 figure 7), with the state's value in a zone
/// descriptor's Zone State field (figure 37).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneState {
    /// A conventional zone (ZBC zone type 1h, condition NOT WRITE POINTER):
    /// written anywhere, no state machine, no resources.
    NotWritePointer,
    Empty,
    ImplicitlyOpened,
    ExplicitlyOpened,
    Closed,
    Full,
    ReadOnly,
    Offline,
}

impl ZoneState {
    /// The Zone State field of a zone descriptor.
    pub fn code(self) -> u8 {
        match self {
            ZoneState::NotWritePointer => 0x0,
            ZoneState::Empty => 0x1,
            ZoneState::ImplicitlyOpened => 0x2,
            ZoneState::ExplicitlyOpened => 0x3,
            ZoneState::Closed => 0x4,
            ZoneState::ReadOnly => 0xD,
            ZoneState::Full => 0xE,
            ZoneState::Offline => 0xF,
        }
    }
    fn open(self) -> bool {
        matches!(
            self,
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened
        )
    }
    fn active(self) -> bool {
        self.open() || self == ZoneState::Closed
    }
}

/// One zone descriptor of the zone report (Zone Management Receive,
/// Report Zones; ZNS 1.1 figure 37), in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneDesc {
    pub start: u64,
    pub capacity: u64,
    /// The write pointer as a byte offset on the device.
    pub wp: u64,
    pub state: ZoneState,
}

/// The zoned namespace's parameters, `device.zns.*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZnsParams {
    pub zone_size: u64,
    pub zone_capacity: u64,
    pub zones: u32,
    /// 0: no limit.
    pub max_open: u32,
    pub max_active: u32,
    pub zasl: u64,
    pub buffer_rows: u32,
    /// Conventional zones at the start of the LBA space (a ZBC device's;
    /// an NVMe Zoned Namespace has none).
    pub conventional: u32,
    /// Zones' worth of blocks the conventional zones' log has beyond their
    /// capacity (its over-provisioning, which its garbage collection works
    /// in).
    pub conventional_spare: u32,
}

/// Whose rules the zones follow: the front end's command set. The zone
/// state machine is the same (ZBC-2 section 4.4.3 and ZNS 1.1 section
/// 2.1.1 share the conditions, the implicit open and close and the open
/// resource); they differ in what a zone may be and in which broken rule
/// a command is failed for first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZoneRules {
    /// NVMe ZNS 1.1: capacity below size, an active limit, Zone Append,
    /// and the checks in QEMU's nvme_check_zone_write order (state, then
    /// write pointer, then capacity).
    #[default]
    Zns,
    /// SCSI ZBC-2, host-managed (behind the UFS front end: JESD220-5
    /// zoned UFS): conventional zones at the start, zone capacity equal to
    /// the zone size, no active limit (sd_zbc sets max_active_zones 0), no
    /// Zone Append (the kernel emulates it with writes), and the checks in
    /// the order of drivers/scsi/scsi_debug.c check_zbc_access_params: a
    /// write crossing its zone's end (WRITE BOUNDARY VIOLATION) before a
    /// full zone (INVALID FIELD IN CDB) before the write pointer
    /// (UNALIGNED WRITE COMMAND).
    Zbc,
}

const ZONE_BYTES: Range = range(
    65536.0,
    (1u64 << 40) as f64,
    "a zone of 64 KiB to 1 TiB: zoned UFS zones are about an erase block (tens of MiB), \
     ZNS SSD zones up to a few GiB",
);
const ZONE_LIMIT: Range = range(
    0.0,
    1_048_576.0,
    "zones that may be open or active at once; 0 means no limit (MOR/MAR of 0xFFFFFFFF)",
);

crate::params! {
    /// The zoned namespace (`device.zns.*`), with `device.flash.layer = "zns"`.
    pub struct ZnsKeys {
        /// Zone Size (ZSZE): the LBA distance between zone starts, a power of two.
        zone_size: u64 = required bytes("device.zns.zone_size", ZONE_BYTES),
        /// Zone Capacity (ZCAP): the writable bytes of each zone.
        zone_capacity: u64 = required bytes("device.zns.zone_capacity", ZONE_BYTES),
        /// Zones of the namespace.
        zones: u32 = required count_u32(
            "device.zns.zones",
            range(1.0, 1_048_576.0, "zones of one namespace: the model keeps a few words per zone")
        ),
        /// Maximum Open Resources: zones implicitly or explicitly open at once (0: no limit).
        max_open: u32 = required count_u32("device.zns.max_open", ZONE_LIMIT),
        /// Maximum Active Resources: zones open or closed at once (0: no limit).
        max_active: u32 = required count_u32("device.zns.max_active", ZONE_LIMIT),
        /// Zone Append Size Limit (ZASL) in bytes.
        zasl: u64 = required bytes(
            "device.zns.zasl",
            range(4096.0, (1u64 << 30) as f64, "ZASL: a 4 KiB page to 1 GiB (at most MDTS)")
        ),
        /// Rows (one page on every plane of a die) of write buffer each open zone holds.
        buffer_rows: u32 = required count_u32(
            "device.zns.buffer_rows",
            range(
                1.0,
                256.0,
                "rows of buffer per open zone: 1 (no overlap of fill and program) to 256; a \
                 zone writes at most buffer_rows rows per tPROG",
            )
        ),
        /// Conventional zones at the start of the LBA space, written anywhere (ZBC only).
        conventional_zones: u32 = default(0) count_u32(
            "device.zns.conventional_zones",
            range(
                0.0,
                1_048_576.0,
                "conventional zones before the sequential ones (zoned UFS puts the file \
                 system's metadata there); an NVMe Zoned Namespace has none",
            )
        ),
        /// Spare zones' worth of blocks behind the conventional zones' log (its garbage collection's room).
        conventional_spare_zones: u32 = default(0) count_u32(
            "device.zns.conventional_spare_zones",
            range(
                0.0,
                1_048_576.0,
                "blocks, in zones' worth, that the conventional zones' page-mapped log has \
                 beyond their capacity (its over-provisioning, after the last zone's blocks); \
                 at least 2 with conventional zones",
            )
        ),
    }
}

/// What the zoned layer did, for the run's JSON.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZnsStats {
    pub host_write_units: u64,
    pub host_read_units: u64,
    /// Reads past the write pointer (no NAND: the data is zeros).
    pub unwritten_reads: u64,
    pub buffer_read_hits: u64,
    pub appends: u64,
    pub resets: u64,
    pub finishes: u64,
    pub opens: u64,
    pub closes: u64,
    pub implicit_closes: u64,
    /// Units a Finish programmed to fill its zone.
    pub units_padded: u64,
    pub rows_programmed: u64,
    pub blocks_erased: u64,
    pub nand_reads: u64,
    /// Commands failed with a zone status.
    pub zone_errors: u64,
    /// The most zones open and active at once.
    pub max_open_seen: u32,
    pub max_active_seen: u32,
    /// Units written to conventional zones, and the blocks their log
    /// erased to reclaim a segment.
    pub conventional_write_units: u64,
    pub conventional_erases: u64,
    /// The conventional log's garbage collection: segments reclaimed and
    /// the valid units it moved out of them first.
    pub conventional_gc_segments: u64,
    pub conventional_gc_units: u64,
}

/// Bytes of the zoned layer's own structures: the capacities of its
/// vectors (what it asked the allocator for), as the page FTL counts its
/// own ([`super::ftl::ModelBytes`]). They are sized when the namespace is
/// made, by its zones, so they grow with the zones and never with the I/O
/// a run makes. Shown in the JSON's `zns` (or `zbc`) object as
/// `model_bytes` and summed into the run's `model_bytes.device`. The NAND
/// timeline's bytes are not counted, as the FTL's count leaves them out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZnsModelBytes {
    /// Each zone's state, write pointer and open order.
    pub zones: usize,
    /// When each zone's buffer rows are free again (`buffer_rows` a zone),
    /// and the controller's rows waiting for or under a program.
    pub write_buffer: usize,
    /// The conventional zones' log: their page map, its reverse map over
    /// the log's positions and per-segment counts (a ZBC device's; empty
    /// on ZNS).
    pub conventional_map: usize,
}

impl ZnsModelBytes {
    pub fn total(&self) -> usize {
        self.zones + self.write_buffer + self.conventional_map
    }

    /// The JSON object (`zns.model_bytes`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "zones": self.zones,
            "write_buffer": self.write_buffer,
            "conventional_map": self.conventional_map,
            "total": self.total(),
        })
    }
}

#[derive(Clone, Copy, Debug)]
struct Zone {
    state: ZoneState,
    /// Units written (the write pointer, from the zone's start).
    wp: u64,
    /// When the zone last became implicitly open (the implicit close
    /// takes the oldest).
    opened_seq: u64,
}

/// The zoned translation layer over NAND.
pub struct Zns {
    p: ZnsParams,
    nand: Nand,
    geo: Geometry,
    dies: u32,
    /// 4 KiB units in one row (a page on every plane of a die).
    row_units: u64,
    /// Units of zone capacity and of zone size.
    cap_units: u64,
    size_units: u64,
    /// Blocks of each die a zone owns.
    bpz: u32,
    zones: Vec<Zone>,
    /// When each zone's buffer row is free again: `buffer_rows` per zone,
    /// row `r` of a zone in slot `r % buffer_rows`.
    row_free: Vec<Ns>,
    /// The controller's buffer rows for data waiting for or under a
    /// program, `max_open x buffer_rows` of them (the write buffer of the
    /// open zones; with no open limit, every zone's): when each is free
    /// again, earliest on top. A zone's rows stay in the buffer until
    /// programmed, also once the zone is full and no longer open, so a full
    /// row takes one of these as well as its zone's slot.
    drain: BinaryHeap<Reverse<Ns>>,
    open: u32,
    active: u32,
    seq: u64,
    stats: ZnsStats,
    rules: ZoneRules,
    /// The conventional zones' page map: where each of their units is in
    /// their log (its position, `UNMAPPED` if never written or trimmed).
    /// Only these zones have a map, which is why it fits the controller's
    /// SRAM.
    conv_map: Vec<u32>,
    /// The log's segments, a zone's worth of blocks each (the
    /// conventional zones' own, then the spare ones' after the last
    /// zone's): position `seg * cap_units + i` is unit `i` of segment
    /// `seg`. Each position's unit (`UNMAPPED`: never written there, or
    /// stale), each segment's valid units, the erased segments (taken
    /// from the end), the segment filling and its units written.
    conv_rev: Vec<u32>,
    conv_valid: Vec<u32>,
    conv_free: Vec<u32>,
    conv_active: u32,
    conv_fill: u64,
    conv_units: u64,
}

const UNMAPPED: u32 = u32::MAX;

impl Zns {
    /// The zoned layer of `p` over `nand`, or the key whose value breaks a
    /// rule and why.
    pub fn new(
        p: ZnsParams,
        nand: Nand,
        rules: ZoneRules,
    ) -> std::result::Result<Zns, (&'static str, String)> {
        let geo = nand.geo;
        let dies = geo.dies();
        let row_bytes = u64::from(geo.planes_per_die) * u64::from(geo.page_bytes);
        let row_units = row_bytes / UNIT;
        if !p.zone_size.is_power_of_two() {
            return Err((
                "device.zns.zone_size",
                format!(
                    "device.zns.zone_size {} is not a power of two (Linux refuses such a zoned \
                 namespace: nvme_update_zone_info)",
                    p.zone_size
                ),
            ));
        }
        if p.zone_capacity > p.zone_size || !p.zone_capacity.is_multiple_of(UNIT) {
            return Err((
                "device.zns.zone_capacity",
                format!(
                    "device.zns.zone_capacity {} must be a multiple of 4 KiB and at most the zone \
                 size {}",
                    p.zone_capacity, p.zone_size
                ),
            ));
        }
        if p.max_active != 0 && p.max_open > p.max_active {
            return Err((
                "device.zns.max_open",
                format!(
                "device.zns.max_open {} is more than device.zns.max_active {}: an open zone is \
                 active (ZNS 1.1 section 2.1.1.4)",
                p.max_open, p.max_active
            ),
            ));
        }
        match rules {
            ZoneRules::Zns if p.conventional != 0 => {
                return Err((
                    "device.zns.conventional_zones",
                    format!(
                        "device.zns.conventional_zones {}: an NVMe Zoned Namespace has only \
                         Sequential Write Required zones (ZNS 1.1, zone type 2h); conventional \
                         zones are a SCSI ZBC device's (zoned UFS)",
                        p.conventional
                    ),
                ))
            }
            ZoneRules::Zbc if p.zone_capacity != p.zone_size => {
                return Err((
                    "device.zns.zone_capacity",
                    format!(
                        "device.zns.zone_capacity {} differs from the zone size {}: a SCSI ZBC \
                         zone is writable up to its end (sd_zbc takes the zone length)",
                        p.zone_capacity, p.zone_size
                    ),
                ))
            }
            ZoneRules::Zbc if p.max_active != 0 => {
                return Err((
                    "device.zns.max_active",
                    format!(
                        "device.zns.max_active {}: SCSI ZBC has no active-zone limit (sd_zbc \
                         sets max_active_zones 0); set 0",
                        p.max_active
                    ),
                ))
            }
            ZoneRules::Zbc if p.conventional >= p.zones => {
                return Err((
                    "device.zns.conventional_zones",
                    format!(
                        "device.zns.conventional_zones {} leaves none of the {} zones \
                         sequential",
                        p.conventional, p.zones
                    ),
                ))
            }
            _ => {}
        }
        let cap_units = p.zone_capacity / UNIT;
        let rows = cap_units.div_ceil(row_units);
        let rows_per_die = rows.div_ceil(u64::from(dies));
        let bpz = rows_per_die.div_ceil(u64::from(geo.pages_per_block));
        if p.conventional > 0 && p.conventional_spare < 2 {
            // One segment is kept erased for the collection to move into;
            // with only that one spare, a full conventional area leaves a
            // victim no stale unit but the one being written (each segment
            // opened moves a segment less a unit).
            return Err((
                "device.zns.conventional_spare_zones",
                format!(
                    "device.zns.conventional_zones {} with device.zns.conventional_spare_zones \
                     {}: the conventional zones' log needs at least two spare zones' blocks (one \
                     kept erased for its garbage collection to move into, one for stale data)",
                    p.conventional, p.conventional_spare
                ),
            ));
        }
        // The spare blocks only serve conventional zones.
        let spare = if p.conventional == 0 {
            0
        } else {
            p.conventional_spare
        };
        let needed = bpz * (u64::from(p.zones) + u64::from(spare));
        if needed > u64::from(geo.blocks_per_plane) {
            return Err((
                "device.zns.zones",
                format!(
                    "device.zns.zones: {} zones and {spare} spare of {} bytes of capacity need \
                     {needed} blocks on each die ({bpz} a zone); the NAND has {}",
                    p.zones, p.zone_capacity, geo.blocks_per_plane
                ),
            ));
        }
        let conv_units = u64::from(p.conventional) * cap_units;
        let segs = if p.conventional == 0 {
            0
        } else {
            p.conventional + spare
        };
        let positions = u64::from(segs) * cap_units;
        if positions >= u64::from(UNMAPPED) {
            return Err((
                "device.zns.conventional_zones",
                format!(
                    "device.zns.conventional_zones {} and {spare} spare: {positions} units of \
                     the conventional log are more than their map's 32-bit entries address",
                    p.conventional
                ),
            ));
        }
        let mut zones = vec![
            Zone {
                state: ZoneState::Empty,
                wp: 0,
                opened_seq: 0,
            };
            p.zones as usize
        ];
        for z in &mut zones[..p.conventional as usize] {
            z.state = ZoneState::NotWritePointer;
        }
        Ok(Zns {
            zones,
            // The spare segments' blocks have buffer rows as a zone's.
            row_free: vec![0; (p.zones + spare) as usize * p.buffer_rows as usize],
            drain: {
                let open = if p.max_open == 0 {
                    p.zones
                } else {
                    p.max_open.min(p.zones)
                };
                let rows = open as usize * p.buffer_rows as usize;
                let mut heap = BinaryHeap::with_capacity(rows);
                heap.extend(std::iter::repeat_n(Reverse(0), rows));
                heap
            },
            nand,
            geo,
            dies,
            row_units,
            cap_units,
            size_units: p.zone_size / UNIT,
            bpz: bpz as u32,
            open: 0,
            active: 0,
            seq: 0,
            stats: ZnsStats::default(),
            rules,
            conv_map: vec![UNMAPPED; conv_units as usize],
            conv_rev: vec![UNMAPPED; positions as usize],
            conv_valid: vec![0; segs as usize],
            // Taken from the end: segment 0 first, then 1, 2, ...
            conv_free: (0..segs).rev().collect(),
            conv_active: 0,
            // Full: the first write opens segment 0.
            conv_fill: cap_units,
            conv_units,
            p,
        })
    }

    /// `device.zns.*` over the NAND of `device.flash.*`, as an NVMe Zoned
    /// Namespace.
    pub fn from_profile(p: &Profile) -> Result<Zns> {
        Zns::from_profile_as(p, ZoneRules::Zns)
    }

    /// `device.zns.*` over the NAND of `device.flash.*`, with the zone
    /// rules of the front end's command set.
    pub fn from_profile_as(p: &Profile, rules: ZoneRules) -> Result<Zns> {
        let (geo, timing, channel) = nand_from_profile(p)?;
        let k = ZnsKeys::read(p)?;
        let params = ZnsParams {
            zone_size: k.zone_size,
            zone_capacity: k.zone_capacity,
            zones: k.zones,
            max_open: k.max_open,
            max_active: k.max_active,
            zasl: k.zasl,
            buffer_rows: k.buffer_rows,
            conventional: k.conventional_zones,
            conventional_spare: k.conventional_spare_zones,
        };
        Zns::new(params, Nand::new(geo, timing, channel), rules)
            .map_err(|(key, m)| InputError::new(p.file_of(key), None, m))
    }

    pub fn params(&self) -> &ZnsParams {
        &self.p
    }

    pub fn stats(&self) -> &ZnsStats {
        &self.stats
    }

    pub fn nand(&self) -> &Nand {
        &self.nand
    }

    /// Bytes of the layer's own structures (see [`ZnsModelBytes`]).
    pub fn model_bytes(&self) -> ZnsModelBytes {
        use std::mem::size_of;
        ZnsModelBytes {
            zones: self.zones.capacity() * size_of::<Zone>(),
            write_buffer: (self.row_free.capacity() + self.drain.capacity()) * size_of::<Ns>(),
            conventional_map: (self.conv_map.capacity() + self.conv_rev.capacity())
                * size_of::<u32>()
                + (self.conv_valid.capacity() + self.conv_free.capacity()) * size_of::<u32>(),
        }
    }

    /// Zones open and active now.
    pub fn open_zones(&self) -> u32 {
        self.open
    }
    pub fn active_zones(&self) -> u32 {
        self.active
    }

    /// The zone report's descriptor of zone `z`.
    pub fn report(&self, z: u32) -> ZoneDesc {
        let zone = &self.zones[z as usize];
        let start = u64::from(z) * self.p.zone_size;
        ZoneDesc {
            start,
            capacity: self.p.zone_capacity,
            wp: start + zone.wp * UNIT,
            state: zone.state,
        }
    }

    /// Take a zone offline or make it read only (a device's media failure;
    /// the host cannot cause either). Its resources are given back.
    pub fn fail_zone(&mut self, z: u32, state: ZoneState) {
        debug_assert!(matches!(state, ZoneState::ReadOnly | ZoneState::Offline));
        self.set_state(z as usize, state);
    }

    #[inline]
    fn zone_of(&self, offset: u64) -> usize {
        (offset / self.p.zone_size) as usize
    }

    /// Move zone `z` to `to`, keeping the open and active counts.
    fn set_state(&mut self, z: usize, to: ZoneState) {
        let from = self.zones[z].state;
        self.open = self.open - u32::from(from.open()) + u32::from(to.open());
        self.active = self.active - u32::from(from.active()) + u32::from(to.active());
        self.zones[z].state = to;
        if to == ZoneState::ImplicitlyOpened && from != to {
            self.seq += 1;
            self.zones[z].opened_seq = self.seq;
        }
        self.stats.max_open_seen = self.stats.max_open_seen.max(self.open);
        self.stats.max_active_seen = self.stats.max_active_seen.max(self.active);
    }

    /// The resources zone `z` needs to become open (null_blk's
    /// null_check_zone_resources: an active one if it is Empty, then an
    /// open one, freed by closing the oldest implicitly opened zone if
    /// every one is taken).
    fn take_open(&mut self, z: usize) -> Status {
        let state = self.zones[z].state;
        if state.open() {
            return Status::Ok;
        }
        if state == ZoneState::Empty && self.p.max_active != 0 && self.active >= self.p.max_active {
            return Status::Zone(ZoneStatus::TooManyActive);
        }
        if self.p.max_open != 0 && self.open >= self.p.max_open {
            let victim = self
                .zones
                .iter()
                .enumerate()
                .filter(|(_, zn)| zn.state == ZoneState::ImplicitlyOpened)
                .min_by_key(|(_, zn)| zn.opened_seq)
                .map(|(i, _)| i);
            match victim {
                Some(v) => {
                    self.stats.implicit_closes += 1;
                    self.close_zone(v);
                }
                None => return Status::Zone(ZoneStatus::TooManyOpen),
            }
        }
        Status::Ok
    }

    /// Close: an open zone becomes Closed, or Empty if nothing was
    /// written (ZNS 1.1 section 2.1.1.3.3).
    fn close_zone(&mut self, z: usize) {
        let to = if self.zones[z].wp == 0 {
            ZoneState::Empty
        } else {
            ZoneState::Closed
        };
        self.set_state(z, to);
    }

    /// The rules of a write of `n` units at unit `at` of zone `z` (no
    /// state change).
    fn check_write(&self, z: usize, at: u64, n: u64) -> Status {
        let zone = &self.zones[z];
        let s = match (self.rules, zone.state) {
            // A conventional zone takes a write anywhere (one crossing into
            // a sequential zone is refused by `admit`).
            (_, ZoneState::NotWritePointer) => None,
            (ZoneRules::Zbc, _) if at + n > self.cap_units => Some(ZoneStatus::BoundaryError),
            (_, ZoneState::Full) => Some(ZoneStatus::Full),
            (_, ZoneState::ReadOnly) => Some(ZoneStatus::ReadOnly),
            (_, ZoneState::Offline) => Some(ZoneStatus::Offline),
            _ if at != zone.wp => Some(ZoneStatus::InvalidWrite),
            _ if at + n > self.cap_units => Some(ZoneStatus::BoundaryError),
            _ => None,
        };
        s.map_or(Status::Ok, Status::Zone)
    }

    /// Whether zone `z` is conventional.
    #[inline]
    fn conventional(&self, z: usize) -> bool {
        z < self.p.conventional as usize
    }

    /// Where unit `u` of zone `z` is: (die, block of the die, page).
    #[inline]
    fn locate(&self, z: usize, u: u64) -> (u32, u32, u32) {
        let row = u / self.row_units;
        let die = (row % u64::from(self.dies)) as u32;
        let die_row = row / u64::from(self.dies);
        let ppb = u64::from(self.geo.pages_per_block);
        let block = z as u32 * self.bpz + (die_row / ppb) as u32;
        (die, block, (die_row % ppb) as u32)
    }

    /// Put `n` units at zone `z`'s write pointer, data in the controller
    /// from `t`: programs each row it fills; returns when the data is in
    /// the buffer (a buffer row whose previous program is still running
    /// is waited for).
    fn fill(&mut self, t: Ns, z: usize, n: u64) -> Ns {
        let wp = self.zones[z].wp;
        let accepted = self.program(t, z, wp, n);
        let end = wp + n;
        self.zones[z].wp = end;
        if end == self.cap_units {
            self.set_state(z, ZoneState::Full);
        }
        accepted
    }

    /// Put `n` units at unit `from` of zone `z`'s blocks through the
    /// zone's buffer rows, data in the controller from `t`: each row is
    /// programmed once full; returns when the data is in the buffer.
    fn program(&mut self, t: Ns, z: usize, from: u64, n: u64) -> Ns {
        self.nand.set_now(t);
        let b = u64::from(self.p.buffer_rows);
        let base = z * self.p.buffer_rows as usize;
        let mut accepted = t;
        let mut wp = from;
        let end = wp + n;
        while wp < end {
            let row = wp / self.row_units;
            let row_end = ((row + 1) * self.row_units).min(self.cap_units);
            let slot = base + (row % b) as usize;
            if wp == row * self.row_units {
                // The row takes its buffer slot: free once the program of
                // the row `buffer_rows` before it has ended.
                accepted = accepted.max(self.row_free[slot]);
            }
            let upto = end.min(row_end);
            if upto == row_end {
                // A full row takes one of the controller's rows until its
                // program ends: the data a device holds for its dies is
                // bounded by its buffer, not by the zones it has filled.
                let Reverse(free) = self.drain.pop().expect("the buffer has rows");
                accepted = accepted.max(free);
                let (die, _, _) = self.locate(z, wp);
                let bytes = (row_end - row * self.row_units) * UNIT;
                let end = self.nand.program(accepted, die, bytes);
                self.row_free[slot] = end;
                self.drain.push(Reverse(end));
                self.stats.rows_programmed += 1;
            }
            wp = upto;
        }
        accepted
    }

    /// Erase the blocks of zone `z` that hold its first `units` units,
    /// from `from` on every die they are on: when the last erase ends.
    fn erase_written(&mut self, t: Ns, from: Ns, units: u64) -> (Ns, u64) {
        self.nand.set_now(t);
        let rows = units.div_ceil(self.row_units);
        let ppb = u64::from(self.geo.pages_per_block);
        let mut done = from;
        let mut erased = 0;
        for die in 0..u64::from(self.dies).min(rows) {
            let die_rows = (rows - die).div_ceil(u64::from(self.dies));
            for _ in 0..die_rows.div_ceil(ppb) {
                done = done.max(self.nand.erase(from, die as u32));
                erased += 1;
            }
        }
        self.stats.blocks_erased += erased;
        (done, erased)
    }

    /// The zone whose blocks the conventional log's segment `seg` is:
    /// the conventional zones' own, then the spare ones' after the last
    /// zone's.
    #[inline]
    fn seg_zone(&self, seg: u32) -> usize {
        if seg < self.p.conventional {
            seg as usize
        } else {
            (self.p.zones + seg - self.p.conventional) as usize
        }
    }

    /// Unit `lu` of the conventional zones is no longer where the map put
    /// it (written again, or unmapped): its position is stale.
    #[inline]
    fn conv_invalidate(&mut self, lu: u64) {
        let old = self.conv_map[lu as usize];
        if old != UNMAPPED {
            self.conv_rev[old as usize] = UNMAPPED;
            self.conv_valid[(u64::from(old) / self.cap_units) as usize] -= 1;
            self.conv_map[lu as usize] = UNMAPPED;
        }
    }

    /// A write of `n` units at unit `u` of the conventional zones (their
    /// units numbered from the device's start), data in the controller
    /// from `t`. Their data goes into a page-mapped log over the
    /// conventional zones' own blocks and the spare ones' (segments of a
    /// zone's worth of blocks, each filled row by row as a sequential zone
    /// is); the map keeps each unit's place. A full segment is followed by
    /// an erased one, and when that leaves none erased the log collects
    /// garbage first ([`Zns::conv_open`]), in the host write's time
    /// (foreground, as the page FTL's GC).
    fn conv_write(&mut self, t: Ns, u: u64, n: u64) -> Ns {
        // The write's units are stale where they were before it goes in
        // (the page FTL invalidates the old copy as it maps the new one):
        // so the collection never moves what this write replaces, and it
        // always finds a victim with a stale unit (see conv_open).
        for lu in u..u + n {
            self.conv_invalidate(lu);
        }
        let mut accepted = t;
        let mut start = t;
        let mut done = 0;
        while done < n {
            if self.conv_fill == self.cap_units {
                // The host's data goes in behind what the collection moved.
                start = start.max(self.conv_open(start));
            }
            let k = (n - done).min(self.cap_units - self.conv_fill);
            let base = u64::from(self.conv_active) * self.cap_units + self.conv_fill;
            for i in 0..k {
                let lu = u + done + i;
                self.conv_map[lu as usize] = (base + i) as u32;
                self.conv_rev[(base + i) as usize] = lu as u32;
            }
            self.conv_valid[self.conv_active as usize] += k as u32;
            let z = self.seg_zone(self.conv_active);
            accepted = accepted.max(self.program(start, z, self.conv_fill, k));
            self.conv_fill += k;
            done += k;
        }
        self.stats.host_write_units += n;
        self.stats.conventional_write_units += n;
        accepted
    }

    /// Open the log's next segment, an erased one, from `t`. If it was the
    /// last erased one, collect one victim into it first: the full segment
    /// with the fewest valid units (greedy, the page FTL's rule); its
    /// valid units are read from NAND (once its own programs have ended),
    /// programmed at the start of the new segment through its buffer
    /// rows, and the victim's blocks erased, so one segment is erased
    /// again. Returns when the moved data is in the buffer.
    ///
    /// Bounded: one victim per segment opened. The victim's valid units
    /// fit, since the new segment is empty. And the host gets room: the
    /// `conventional + spare - 1` full segments hold at most `conventional
    /// x cap` valid units (less the units of the write that opens the
    /// segment, which it made stale), so with 2 spare or more the fewest
    /// any holds is below `cap` by at least `cap / (conventional + 1)`.
    fn conv_open(&mut self, t: Ns) -> Ns {
        let seg = self
            .conv_free
            .pop()
            .expect("the conventional log keeps a segment erased");
        self.conv_active = seg;
        self.conv_fill = 0;
        if !self.conv_free.is_empty() {
            return t;
        }
        let active = self.conv_active;
        let victim = (0..self.conv_valid.len() as u32)
            .filter(|&v| v != active)
            .min_by_key(|&v| (self.conv_valid[v as usize], v))
            .expect("the log has a segment besides the one filling");
        let valid = u64::from(self.conv_valid[victim as usize]);
        debug_assert!(valid < self.cap_units, "a victim with no stale unit");
        let (vz, az) = (self.seg_zone(victim), self.seg_zone(active));
        let from = t.max(self.programs_done(vz));
        self.nand.set_now(from);
        let mut last_row = (u32::MAX, u32::MAX, u32::MAX, 0);
        let mut read_done = from;
        let first = u64::from(victim) * self.cap_units;
        for local in 0..self.cap_units {
            if self.conv_rev[(first + local) as usize] != UNMAPPED {
                read_done = read_done.max(self.read_unit(from, vz, local, &mut last_row));
            }
        }
        let to = u64::from(active) * self.cap_units;
        let mut moved = 0;
        for local in 0..self.cap_units {
            let lu = self.conv_rev[(first + local) as usize];
            if lu == UNMAPPED {
                continue;
            }
            self.conv_rev[(first + local) as usize] = UNMAPPED;
            self.conv_rev[(to + moved) as usize] = lu;
            self.conv_map[lu as usize] = (to + moved) as u32;
            moved += 1;
        }
        let accepted = self.program(read_done, az, 0, moved);
        self.conv_fill = moved;
        self.conv_valid[active as usize] += moved as u32;
        self.conv_valid[victim as usize] = 0;
        self.stats.conventional_gc_units += moved;
        self.stats.conventional_gc_segments += 1;
        // Erased once its data is read out.
        let (_, erased) = self.erase_written(read_done, read_done, self.cap_units);
        self.stats.conventional_erases += erased;
        self.conv_free.push(victim);
        accepted
    }

    /// Whether the conventional log's books agree: each mapped unit's
    /// position names it back, each segment's valid count is its mapped
    /// positions', no erased segment holds data, and one segment is kept
    /// erased (a test aid: it walks the whole log).
    pub fn conventional_log_consistent(&self) -> bool {
        if self.conv_units == 0 {
            return true;
        }
        let mut valid = vec![0u32; self.conv_valid.len()];
        for (lu, &pos) in self.conv_map.iter().enumerate() {
            if pos != UNMAPPED {
                if self.conv_rev[pos as usize] != lu as u32 {
                    return false;
                }
                valid[(u64::from(pos) / self.cap_units) as usize] += 1;
            }
        }
        let rev = self.conv_rev.iter().filter(|&&l| l != UNMAPPED).count();
        let mapped = self.conv_map.iter().filter(|&&p| p != UNMAPPED).count();
        valid == self.conv_valid
            && rev == mapped
            && !self.conv_free.is_empty()
            && self
                .conv_free
                .iter()
                .all(|&f| self.conv_valid[f as usize] == 0)
    }

    /// When every row program of zone `z` has ended.
    fn programs_done(&self, z: usize) -> Ns {
        let base = z * self.p.buffer_rows as usize;
        self.row_free[base..base + self.p.buffer_rows as usize]
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
    }

    fn fail(&mut self, at: Ns, s: Status) -> Completion {
        self.stats.zone_errors += 1;
        Completion::ok(at).with_status(s)
    }

    /// A write or an append of `n` units at unit `u` of zone `z` whose
    /// rules were checked: take the zone's resources, then fill.
    fn write_units(&mut self, t: Ns, z: usize, n: u64) -> Completion {
        let s = self.take_open(z);
        if s != Status::Ok {
            return self.fail(t, s);
        }
        if !self.zones[z].state.open() {
            self.set_state(z, ZoneState::ImplicitlyOpened);
        }
        self.stats.host_write_units += n;
        Completion::ok(self.fill(t, z, n))
    }

    fn reset(&mut self, t: Ns, z: usize) -> Completion {
        match self.zones[z].state {
            ZoneState::ReadOnly | ZoneState::Offline => {
                return self.fail(t, Status::Zone(ZoneStatus::InvalidTransition))
            }
            ZoneState::Empty => return Completion::ok(t),
            _ => {}
        }
        // The blocks holding written rows are erased once their programs
        // have ended: on each die, the zone's blocks up to the last row
        // it wrote there.
        let from = t.max(self.programs_done(z));
        let (done, _) = self.erase_written(t, from, self.zones[z].wp);
        self.zones[z].wp = 0;
        self.set_state(z, ZoneState::Empty);
        self.stats.resets += 1;
        Completion::ok(done)
    }

    fn finish(&mut self, t: Ns, z: usize) -> Completion {
        match self.zones[z].state {
            ZoneState::Full => return Completion::ok(t),
            ZoneState::ReadOnly | ZoneState::Offline => {
                return self.fail(t, Status::Zone(ZoneStatus::InvalidTransition))
            }
            ZoneState::Empty if self.p.max_active != 0 && self.active >= self.p.max_active => {
                return self.fail(t, Status::Zone(ZoneStatus::TooManyActive))
            }
            _ => {}
        }
        // The device pads the rest of the capacity: every row left is
        // programmed, in parallel over the dies.
        let left = self.cap_units - self.zones[z].wp;
        self.stats.units_padded += left;
        self.stats.finishes += 1;
        let accepted = self.fill(t, z, left);
        let done = accepted.max(self.programs_done(z));
        self.set_state(z, ZoneState::Full);
        Completion::ok(done)
    }

    fn zone_action(&mut self, t: Ns, action: ZoneAction, z: usize) -> Completion {
        let state = self.zones[z].state;
        if state == ZoneState::NotWritePointer {
            // A zone action on a conventional zone: ILLEGAL REQUEST,
            // INVALID FIELD IN CDB (scsi_debug.c's resp_open_zone and
            // the others refuse a conventional zone so).
            return self.fail(t, Status::InvalidField);
        }
        match action {
            ZoneAction::Reset => self.reset(t, z),
            ZoneAction::Finish => self.finish(t, z),
            ZoneAction::Open => match state {
                ZoneState::ExplicitlyOpened => Completion::ok(t),
                ZoneState::Empty | ZoneState::ImplicitlyOpened | ZoneState::Closed => {
                    let s = self.take_open(z);
                    if s != Status::Ok {
                        return self.fail(t, s);
                    }
                    self.stats.opens += 1;
                    self.set_state(z, ZoneState::ExplicitlyOpened);
                    Completion::ok(t)
                }
                _ => self.fail(t, Status::Zone(ZoneStatus::InvalidTransition)),
            },
            ZoneAction::Close => match state {
                ZoneState::Closed => Completion::ok(t),
                ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened => {
                    self.stats.closes += 1;
                    self.close_zone(z);
                    Completion::ok(t)
                }
                _ => self.fail(t, Status::Zone(ZoneStatus::InvalidTransition)),
            },
        }
    }

    /// Read unit `u` of zone `z` from NAND from `t`, when it ends: a unit
    /// of the row `last_row` (die, block, page and when its sense ends)
    /// sensed for the unit before it only transfers (the row's pages are
    /// sensed once), any other senses its row and becomes `last_row`.
    fn read_unit(&mut self, t: Ns, z: usize, u: u64, last_row: &mut (u32, u32, u32, Ns)) -> Ns {
        let (die, block, page) = self.locate(z, u);
        if (die, block, page) == (last_row.0, last_row.1, last_row.2) {
            self.nand.read_more(t, die, last_row.3, UNIT)
        } else {
            let (se, d) = self.nand.read(t, die, page, UNIT);
            self.stats.nand_reads += 1;
            *last_row = (die, block, page, se);
            d
        }
    }

    /// Read `n` units from unit `first` of sequential zone `z` from `t`:
    /// programmed units from NAND (a row's pages once), the row still
    /// filling from the buffer, past the write pointer nothing.
    fn zone_read(&mut self, t: Ns, z: usize, first: u64, n: u64) -> ReadDone {
        let wp = self.zones[z].wp;
        let programmed = if wp == self.cap_units {
            wp
        } else {
            wp / self.row_units * self.row_units
        };
        let mut done = t;
        let mut hits = 0;
        let mut last_row = (u32::MAX, u32::MAX, u32::MAX, 0);
        for u in first..first + n {
            self.stats.host_read_units += 1;
            if u >= wp {
                self.stats.unwritten_reads += 1;
            } else if u >= programmed {
                hits += 1;
            } else {
                done = done.max(self.read_unit(t, z, u, &mut last_row));
            }
        }
        self.stats.buffer_read_hits += hits;
        ReadDone {
            done: Completion::ok(done),
            buffer_hits: hits,
        }
    }

    /// Read `n` units at unit `u` of the conventional zones from `t`:
    /// each unit where the map puts it in the log.
    fn conv_read(&mut self, t: Ns, u: u64, n: u64) -> ReadDone {
        let head = u64::from(self.conv_active) * self.cap_units + self.conv_fill;
        let (cap_units, row_units) = (self.cap_units, self.row_units);
        let filling = |pos: u64| (pos / cap_units, pos % cap_units / row_units);
        let partial = !(head % self.cap_units).is_multiple_of(self.row_units);
        let mut done = t;
        let mut hits = 0;
        let mut last_row = (u32::MAX, u32::MAX, u32::MAX, 0);
        for unit in u..u + n {
            self.stats.host_read_units += 1;
            let pos = self.conv_map[unit as usize];
            if pos == UNMAPPED {
                self.stats.unwritten_reads += 1;
                continue;
            }
            let pos = u64::from(pos);
            if partial && filling(pos) == filling(head) {
                hits += 1;
                continue;
            }
            let (seg, local) = ((pos / self.cap_units) as u32, pos % self.cap_units);
            let pz = self.seg_zone(seg);
            done = done.max(self.read_unit(t, pz, local, &mut last_row));
        }
        self.stats.buffer_read_hits += hits;
        ReadDone {
            done: Completion::ok(done),
            buffer_hits: hits,
        }
    }
}

impl TranslationLayer for Zns {
    fn user_bytes(&self) -> u64 {
        u64::from(self.p.zones) * self.p.zone_size
    }

    fn admit(&mut self, op: Op, offset: u64, len: u32) -> Status {
        let z = self.zone_of(offset);
        if z >= self.zones.len() {
            return Status::IoError;
        }
        let n = u64::from(len).div_ceil(UNIT);
        let last = self.zone_of(offset + u64::from(len).max(1) - 1);
        let s = match op {
            // A range from a conventional zone into a sequential one (or
            // past the last zone): WRITE or READ BOUNDARY VIOLATION
            // (scsi_debug.c check_zbc_access_params: host-managed reads
            // and writes may not cross zone types).
            Op::Write | Op::Read
                if self.conventional(z)
                    && (last >= self.zones.len() || !self.conventional(last)) =>
            {
                Status::Zone(ZoneStatus::BoundaryError)
            }
            Op::Write if self.conventional(z) => Status::Ok,
            Op::Write => self.check_write(z, offset / UNIT - z as u64 * self.size_units, n),
            Op::ZoneAppend if self.conventional(z) => Status::InvalidField,
            Op::ZoneAppend => {
                if !offset.is_multiple_of(self.p.zone_size) || u64::from(len) > self.p.zasl {
                    Status::InvalidField
                } else {
                    self.check_write(z, self.zones[z].wp, n)
                }
            }
            // No Read Across Zone Boundaries (OZCS bit 0 clear): Linux
            // splits reads at chunk_sectors, the zone size, anyway. A ZBC
            // device reads across sequential zones (URSWRZ assumed set, as
            // scsi_debug's host-managed zones do), within the LBA space.
            Op::Read if last >= self.zones.len() => Status::IoError,
            Op::Read if last != z && self.rules == ZoneRules::Zns => {
                Status::Zone(ZoneStatus::BoundaryError)
            }
            _ => Status::Ok,
        };
        if s != Status::Ok {
            self.stats.zone_errors += 1;
        }
        s
    }

    fn read(&mut self, t: Ns, offset: u64, len: u32) -> ReadDone {
        self.nand.set_now(t);
        let z = self.zone_of(offset);
        if self.conventional(z) {
            return self.conv_read(t, offset / UNIT, u64::from(len).div_ceil(UNIT));
        }
        let mut first = offset / UNIT - z as u64 * self.size_units;
        let mut left = u64::from(len).div_ceil(UNIT);
        let mut done = ReadDone {
            done: Completion::ok(t),
            buffer_hits: 0,
        };
        // Zone by zone (only a ZBC device's read crosses zones).
        let mut z = z;
        while left > 0 {
            let n = left.min(self.size_units - first);
            let r = self.zone_read(t, z, first, n);
            done.done.at = done.done.at.max(r.done.at);
            done.buffer_hits += r.buffer_hits;
            left -= n;
            first = 0;
            z += 1;
        }
        done
    }

    fn write(&mut self, t: Ns, offset: u64, len: u32) -> Completion {
        let z = self.zone_of(offset);
        let n = u64::from(len).div_ceil(UNIT);
        if self.conventional(z) {
            return Completion::ok(self.conv_write(t, offset / UNIT, n));
        }
        let at = offset / UNIT - z as u64 * self.size_units;
        // An MDTS piece after the first is checked here (the command was
        // admitted as a whole).
        let s = self.check_write(z, at, n);
        if s != Status::Ok {
            return self.fail(t, s);
        }
        self.write_units(t, z, n)
    }

    // Units of the row still filling are in the buffer.
    fn append(&mut self, t: Ns, offset: u64, len: u32) -> Completion {
        let z = self.zone_of(offset);
        let n = u64::from(len).div_ceil(UNIT);
        let wp = self.zones[z].wp;
        let s = self.check_write(z, wp, n);
        if s != Status::Ok {
            return self.fail(t, s);
        }
        self.stats.appends += 1;
        let c = self.write_units(t, z, n);
        Completion {
            result: (c.status == Status::Ok).then_some(z as u64 * self.p.zone_size + wp * UNIT),
            ..c
        }
    }

    fn trim(&mut self, t: Ns, offset: u64, len: u32) -> Completion {
        // Dataset Management on a zoned namespace changes no zone state
        // or write pointer (ZNS 1.1 section 3.3), nor does UNMAP on a
        // ZBC sequential zone; on a conventional zone it forgets the
        // units' places in the map.
        let (u, n) = (offset / UNIT, u64::from(len).div_ceil(UNIT));
        let end = (u + n).min(self.conv_units);
        for lu in u..end {
            self.conv_invalidate(lu);
        }
        Completion::ok(t)
    }

    fn flush(&mut self, t: Ns) -> Ns {
        // Every zone's rows and the conventional log's spare segments'.
        (0..self.row_free.len() / self.p.buffer_rows as usize)
            .map(|z| self.programs_done(z))
            .fold(t, Ns::max)
    }

    fn zone_mgmt(&mut self, t: Ns, action: ZoneAction, offset: u64, all: bool) -> Completion {
        if all {
            // Select All acts on every zone in a state the action applies
            // to (ZNS 1.1 section 3.4.3): the others are left alone.
            let mut done = Completion::ok(t);
            for z in 0..self.zones.len() {
                let applies = match (action, self.zones[z].state) {
                    (ZoneAction::Reset, s) => s.active() || s == ZoneState::Full,
                    (ZoneAction::Finish, s) => s.active(),
                    (ZoneAction::Close, s) => s.open(),
                    (ZoneAction::Open, s) => s == ZoneState::Closed,
                };
                if applies {
                    let c = self.zone_action(t, action, z);
                    done.at = done.at.max(c.at);
                    if done.status == Status::Ok {
                        done.status = c.status;
                    }
                }
            }
            return done;
        }
        let z = self.zone_of(offset);
        if z >= self.zones.len() || !offset.is_multiple_of(self.p.zone_size) {
            return self.fail(t, Status::InvalidField);
        }
        self.zone_action(t, action, z)
    }

    fn zones(&self) -> Option<ZoneGeometry> {
        Some(ZoneGeometry {
            zone_bytes: self.p.zone_size,
            capacity_bytes: self.p.zone_capacity,
            zones: self.p.zones,
            conventional: self.p.conventional,
            max_open: self.p.max_open,
            max_active: self.p.max_active,
            append_max_bytes: self.p.zasl,
        })
    }

    fn write_pointer(&self, offset: u64) -> Option<u64> {
        let d = self.report((offset / self.p.zone_size) as u32);
        (d.state != ZoneState::NotWritePointer).then_some(d.wp)
    }

    fn nand(&self) -> &Nand {
        &self.nand
    }

    fn buffer_counters(&self) -> BufferCounters {
        BufferCounters::default()
    }

    fn counters(&self, out: &mut serde_json::Map<String, serde_json::Value>) {
        let s = &self.stats;
        let host = s.host_write_units;
        let mut zones = serde_json::json!({
                "zones": self.p.zones,
                "open_zones": self.open,
                "active_zones": self.active,
                "max_open_seen": s.max_open_seen,
                "max_active_seen": s.max_active_seen,
                "resets": s.resets,
                "finishes": s.finishes,
                "opens": s.opens,
                "closes": s.closes,
                "implicit_closes": s.implicit_closes,
                "appends": s.appends,
                "zone_errors": s.zone_errors,
                "host_write_units": host,
                "units_padded": s.units_padded,
                "waf": if host == 0 { 1.0 } else { (host + s.units_padded) as f64 / host as f64 },
                "host_read_units": s.host_read_units,
                "unwritten_reads": s.unwritten_reads,
                "buffer_read_hits": s.buffer_read_hits,
                "model_bytes": self.model_bytes().to_json(),
        });
        // A ZBC device's section has its conventional zones' counters and
        // its own name; a ZNS namespace's stays as it was.
        let name = match self.rules {
            ZoneRules::Zns => "zns",
            ZoneRules::Zbc => {
                zones["conventional_zones"] = self.p.conventional.into();
                zones["conventional_write_units"] = s.conventional_write_units.into();
                zones["conventional_erases"] = s.conventional_erases.into();
                zones["conventional_spare_zones"] = self.p.conventional_spare.into();
                zones["conventional_gc_segments"] = s.conventional_gc_segments.into();
                zones["conventional_gc_units"] = s.conventional_gc_units.into();
                let w = s.conventional_write_units;
                zones["conventional_waf"] = if w == 0 {
                    1.0
                } else {
                    (w + s.conventional_gc_units) as f64 / w as f64
                }
                .into();
                "zbc"
            }
        };
        out.insert(name.into(), zones);
        out.insert(
            "nand".into(),
            serde_json::json!({
                "reads": s.nand_reads,
                "rows_programmed": s.rows_programmed,
                "blocks_erased": s.blocks_erased,
                "die_wait_ns": self.nand.waits.die_wait_ns,
                "channel_wait_ns": self.nand.waits.channel_wait_ns,
            }),
        );
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
