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

crate::choice_enum! {
    /// The driver a profile's `device.kind` binds, with the device behind
    /// it (in the order a "did you mean" lists them).
    pub enum DeviceKind {
        NullBlk = "null_blk",
        Nvme = "nvme",
        Ufs = "ufs",
        Mmc = "mmc",
        VirtioBlk = "virtio-blk",
        Sdcard = "sdcard",
        Brd = "brd",
        Generic = "generic",
    }
}

crate::params! {
    /// The device a profile describes.
    pub struct ProbeParams {
        /// The driver (and the device model behind it): null_blk, the NVMe
        /// driver, ufshcd, the MMC stack over an eMMC card, virtio-blk, the
        /// SD card stack (sdhci), brd (a RAM disk), or a generic
        /// service-time device.
        pub kind: DeviceKind = required choice("device.kind", DeviceKind),
    }
}

/// Build the driver `kind` names, with the device behind it; `ncpus` and
/// `host` are the host's CPU count and costs.
pub fn probe<E: 'static>(
    p: &Profile,
    kind: DeviceKind,
    ncpus: u32,
    host: &crate::host::cpu::HostCosts,
) -> Result<Box<dyn Driver<E>>> {
    Ok(match kind {
        DeviceKind::NullBlk => Box::new(NullBlk::from_profile(p)?),
        DeviceKind::Nvme => Box::new(Nvme::from_profile(p)?),
        DeviceKind::Ufs => Box::new(Ufs::from_profile(p, 0, ncpus)?),
        DeviceKind::Mmc => Box::new(Mmc::from_profile(p, 0, host)?),
        DeviceKind::VirtioBlk => Box::new(VirtioBlk::from_profile(p, ncpus)?),
        DeviceKind::Sdcard => Box::new(Sdhci::from_profile(p)?),
        DeviceKind::Brd => Box::new(Brd::from_profile(p)?),
        DeviceKind::Generic => Box::new(Generic::from_profile(p)?),
    })
}
