//! The driver probe table: which driver (and device behind it) a profile's
//! `device.kind` names, as the kernel binds a driver to a device it finds.
//! A new device type is one entry here plus its driver and device files
//! (docs/extending.md).

use super::brd::Brd;
use super::generic::Generic;
use super::mmc::Mmc;
use super::null_blk::NullBlk;
use super::nvme::Nvme;
use super::sdhci::Sdhci;
use super::ufs::Ufs;
use super::virtio::VirtioBlk;
use super::Driver;
use crate::error::Result;
use crate::profile::Profile;

/// The `device.kind` names, in the order a "did you mean" lists them.
pub const KINDS: [&str; 8] = [
    "null_blk",
    "nvme",
    "ufs",
    "mmc",
    "virtio-blk",
    "sdcard",
    "brd",
    "generic",
];

/// Build the driver `device.kind` names, with the device behind it.
pub fn probe<E: 'static>(p: &Profile, _ncpus: u32) -> Result<Box<dyn Driver<E>>> {
    let kind = p.choice_str("device.kind", &KINDS)?;
    match kind.as_str() {
        "null_blk" => Ok(Box::new(NullBlk::from_profile(p)?)),
        "nvme" => Ok(Box::new(Nvme::from_profile(p)?)),
        "ufs" => Ok(Box::new(Ufs::from_profile(p, 0)?)),
        "mmc" => Ok(Box::new(Mmc::from_profile(p, 0)?)),
        "virtio-blk" => Ok(Box::new(VirtioBlk::from_profile(p)?)),
        "sdcard" => Ok(Box::new(Sdhci::from_profile(p)?)),
        "brd" => Ok(Box::new(Brd::from_profile(p)?)),
        "generic" => Ok(Box::new(Generic::from_profile(p)?)),
        _ => unreachable!("choice() checked the kind"),
    }
}
