//! How a zoned UFS device's answer reaches the block layer: the device
//! ends a command it refuses with CHECK CONDITION and sense data (sense
//! key, additional sense code and qualifier), and the SCSI midlayer turns
//! that into the request's status (drivers/scsi/scsi_lib.c,
//! scsi_io_completion_action; sd.c and sd_zbc.c add nothing for these
//! commands in the Linux 6.10+ zone write plugging era).
//!
//! The sense of each zone rule is SCSI ZBC-2's (section 4.4.3, and the
//! additional sense codes of SPC-5 annex F), as drivers/scsi/scsi_debug.c
//! reports them for its host-managed zones (check_zbc_access_params and
//! the zone actions).

use super::super::BlkStatus;
use crate::device::{Status, ZoneStatus};

/// Sense keys (SPC-5 table 52).
pub const MEDIUM_ERROR: u8 = 0x3;
pub const ILLEGAL_REQUEST: u8 = 0x5;
pub const DATA_PROTECT: u8 = 0x7;

/// Fixed-format sense data's key fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sense {
    pub key: u8,
    pub asc: u8,
    pub ascq: u8,
}

const fn sense(key: u8, asc: u8, ascq: u8) -> Sense {
    Sense { key, asc, ascq }
}

/// ILLEGAL REQUEST, INVALID FIELD IN CDB (0x24/0x00): a full zone's write,
/// a zone action on a conventional zone or in a state that refuses it.
pub const INVALID_FIELD_IN_CDB: Sense = sense(ILLEGAL_REQUEST, 0x24, 0x00);
/// ILLEGAL REQUEST, UNALIGNED WRITE COMMAND (0x21/0x04): a write off the
/// zone's write pointer.
pub const UNALIGNED_WRITE: Sense = sense(ILLEGAL_REQUEST, 0x21, 0x04);
/// ILLEGAL REQUEST, WRITE BOUNDARY VIOLATION (0x21/0x05): a write crossing
/// its sequential zone's end, or from a conventional zone into a
/// sequential one.
pub const WRITE_BOUNDARY_VIOLATION: Sense = sense(ILLEGAL_REQUEST, 0x21, 0x05);
/// ILLEGAL REQUEST, READ BOUNDARY VIOLATION (0x21/0x06).
pub const READ_BOUNDARY_VIOLATION: Sense = sense(ILLEGAL_REQUEST, 0x21, 0x06);
/// DATA PROTECT, INSUFFICIENT ZONE RESOURCES (0x55/0x0E): the zone would
/// need an open resource and none can be freed.
pub const INSUFFICIENT_ZONE_RESOURCES: Sense = sense(DATA_PROTECT, 0x55, 0x0E);
/// DATA PROTECT, ZONE IS READ ONLY (0x27/0x08).
pub const ZONE_IS_READ_ONLY: Sense = sense(DATA_PROTECT, 0x27, 0x08);
/// MEDIUM ERROR, ZONE IS OFFLINE (0x2C/0x0E).
pub const ZONE_IS_OFFLINE: Sense = sense(MEDIUM_ERROR, 0x2C, 0x0E);
/// MEDIUM ERROR, UNRECOVERED READ ERROR (0x11/0x00): a bad block.
pub const UNRECOVERED_READ_ERROR: Sense = sense(MEDIUM_ERROR, 0x11, 0x00);

/// The sense data a ZBC device answers a refused command with (`None`:
/// GOOD status). `write` tells a write's boundary violation from a
/// read's.
pub fn sense_of(s: Status, write: bool) -> Option<Sense> {
    Some(match s {
        Status::Ok | Status::Unsupported => return None,
        Status::IoError => UNRECOVERED_READ_ERROR,
        Status::InvalidField => INVALID_FIELD_IN_CDB,
        Status::Zone(z) => match z {
            ZoneStatus::BoundaryError if write => WRITE_BOUNDARY_VIOLATION,
            ZoneStatus::BoundaryError => READ_BOUNDARY_VIOLATION,
            ZoneStatus::Full | ZoneStatus::InvalidTransition => INVALID_FIELD_IN_CDB,
            ZoneStatus::InvalidWrite => UNALIGNED_WRITE,
            ZoneStatus::ReadOnly => ZONE_IS_READ_ONLY,
            ZoneStatus::Offline => ZONE_IS_OFFLINE,
            // ZBC has one zone resource (sd_zbc sets no active limit, so
            // a ZBC device never answers TooManyActive).
            ZoneStatus::TooManyOpen | ZoneStatus::TooManyActive => INSUFFICIENT_ZONE_RESOURCES,
        },
    })
}

/// scsi_io_completion_action's status of a command that ended with CHECK
/// CONDITION and `s`: ILLEGAL REQUEST with INVALID COMMAND OPERATION CODE
/// (0x20) or INVALID FIELD IN CDB (0x24) is BLK_STS_TARGET; DATA PROTECT
/// with INSUFFICIENT ZONE RESOURCES (0x55/0x0E, 0x0F) or 0x0C/0x12 is
/// BLK_STS_ZONE_OPEN_RESOURCE; every other failure keeps
/// scsi_result_to_blk_status's BLK_STS_IOERR.
pub fn blk_status_of(s: Sense) -> BlkStatus {
    match (s.key, s.asc, s.ascq) {
        (ILLEGAL_REQUEST, 0x20 | 0x24, _) => BlkStatus::Target,
        (DATA_PROTECT, 0x55, 0x0E | 0x0F) | (DATA_PROTECT, 0x0C, 0x12) => {
            BlkStatus::ZoneOpenResource
        }
        _ => BlkStatus::IoErr,
    }
}

/// The block layer's status of a device's answer on the SCSI path: the
/// sense's, or the common mapping's for what has no sense here (a
/// command the device does not implement).
pub fn scsi_blk_status(s: Status, write: bool) -> BlkStatus {
    match sense_of(s, write) {
        Some(sense) => blk_status_of(sense),
        None => BlkStatus::from_device(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each ZBC rule's block-layer status (the submitter's errno follows
    /// from blk_errors: IOERR EIO, TARGET EREMOTEIO, ZONE_OPEN_RESOURCE
    /// ETOOMANYREFS): the write pointer and boundary rules an I/O error, a
    /// full zone BLK_STS_TARGET (INVALID FIELD IN CDB), the open resource
    /// BLK_STS_ZONE_OPEN_RESOURCE.
    #[test]
    fn zbc_rules_reach_the_block_layer_as_the_midlayer_maps_them() {
        let st = |z: ZoneStatus| scsi_blk_status(Status::Zone(z), true);
        assert_eq!(st(ZoneStatus::InvalidWrite), BlkStatus::IoErr);
        assert_eq!(st(ZoneStatus::BoundaryError), BlkStatus::IoErr);
        assert_eq!(st(ZoneStatus::Full), BlkStatus::Target);
        assert_eq!(st(ZoneStatus::TooManyOpen), BlkStatus::ZoneOpenResource);
        assert_eq!(st(ZoneStatus::ReadOnly), BlkStatus::IoErr);
        assert_eq!(
            sense_of(Status::Zone(ZoneStatus::InvalidWrite), true),
            Some(Sense {
                key: ILLEGAL_REQUEST,
                asc: 0x21,
                ascq: 0x04
            })
        );
        assert_eq!(
            sense_of(Status::Zone(ZoneStatus::BoundaryError), false),
            Some(READ_BOUNDARY_VIOLATION)
        );
        assert_eq!(scsi_blk_status(Status::Ok, true), BlkStatus::Ok);
    }
}
