//! The `swiotlb=` boot parameter, read as `setup_io_tlb_npages()` in
//! `kernel/dma/swiotlb.c` reads it, and the sizing rules applied at boot
//! (`swiotlb_adjust_nareas`, `round_up_default_nslabs`, `limit_nareas`).
//!
//! Format (Documentation/admin-guide/kernel-parameters.txt):
//! `swiotlb={ <int> [,<int>] | force | noforce }`, and the kernel code also
//! accepts `<int>,<int>,force|noforce` and `<int>,force`. Where the kernel
//! silently ignores text it cannot read, we refuse it and name it.

use super::{IO_TLB_DEFAULT_SIZE, IO_TLB_SEGSIZE, IO_TLB_SHIFT};
use crate::error::InputError;

/// `force` / `noforce` / neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForceMode {
    /// Bounce only what the device cannot address.
    #[default]
    Auto,
    /// `force`: bounce every DMA (`swiotlb_force_bounce`).
    Force,
    /// `noforce`: never set up swiotlb (`swiotlb_force_disable`).
    NoForce,
}

/// What the command line said, before the boot-time defaults are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwiotlbParam {
    /// `default_nslabs` after the parameter (already aligned to
    /// `IO_TLB_SEGSIZE`, and already rounded if areas were given), or
    /// `None` when not given.
    pub nslabs: Option<u64>,
    /// Areas (already rounded up to a power of two), `None` when not given.
    pub nareas: Option<u32>,
    pub force: ForceMode,
}

/// The resolved sizing of the default pool (and of every dynamic pool,
/// which `swiotlb_dyn_alloc` makes with `default_nslabs`/`default_nareas`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwiotlbConfig {
    /// `default_nslabs`.
    pub nslabs: u32,
    /// `default_nareas`.
    pub nareas: u32,
    pub force: ForceMode,
}

fn err(msg: String) -> InputError {
    InputError::new("kernel command line", None, msg)
}

/// `simple_strtoul(str, &end, 0)`: base from the prefix (`0x` hex, `0`
/// octal, else decimal), stop at the first non-digit. Returns the value and
/// the rest.
fn simple_strtoul(s: &str) -> Result<(u64, &str), String> {
    let (radix, body) = if let Some(r) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if r.chars().next().is_some_and(|c| c.is_ascii_hexdigit()) {
            (16, r)
        } else {
            // "0x" with no hex digit: the kernel reads the 0 and stops at 'x'.
            (10, s)
        }
    } else if s.starts_with('0') && s.len() > 1 {
        (8, &s[1..])
    } else {
        (10, s)
    };
    let end = body
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(body.len());
    let digits = &body[..end];
    let value = if digits.is_empty() {
        0
    } else {
        u64::from_str_radix(digits, radix)
            .map_err(|_| format!("number `{}` is too large", &s[..s.len() - body.len() + end]))?
    };
    Ok((value, &body[end..]))
}

/// `round_up_default_nslabs()`: at least one segment per area, and a power
/// of two so the areas are equal.
fn round_up_nslabs(nslabs: u64, nareas: u32) -> u64 {
    let min = u64::from(IO_TLB_SEGSIZE) * u64::from(nareas);
    if nslabs < min {
        min.next_power_of_two()
    } else if nslabs.is_power_of_two() {
        nslabs
    } else {
        nslabs.next_power_of_two()
    }
}

/// `swiotlb_adjust_nareas()`: 0 is 1, anything else rounds up to 2^k.
fn adjust_nareas(n: u64) -> u64 {
    if n == 0 {
        1
    } else {
        n.next_power_of_two()
    }
}

/// `limit_nareas()`: no more areas than whole segments in the pool.
pub fn limit_nareas(nareas: u32, nslots: u32) -> u32 {
    if u64::from(nslots) < u64::from(nareas) * u64::from(IO_TLB_SEGSIZE) {
        nslots / IO_TLB_SEGSIZE
    } else {
        nareas
    }
}

/// Largest areas count we accept: far beyond any machine's CPU count, and
/// keeps `128 * nareas` slots addressable.
const MAX_NAREAS: u64 = 1 << 16;
/// Largest slot count we accept: 2^21 slots of 2 KiB are a 4 GiB pool, as
/// much as a device limited to 32-bit DMA addresses (what the pool bounces
/// for) can reach; the model keeps state per slot, so 2^31 would be 48 GiB.
const MAX_NSLABS: u64 = 1 << 21;

impl SwiotlbParam {
    /// Parse the value of `swiotlb=` as `setup_io_tlb_npages()` does.
    pub fn parse(value: &str) -> Result<Self, InputError> {
        let mut p = SwiotlbParam::default();
        let mut s = value;
        let at = |rest: &str| value.len() - rest.len();
        if s.starts_with(|c: char| c.is_ascii_digit()) {
            let (n, rest) =
                simple_strtoul(s).map_err(|m| err(format!("swiotlb={value}: slabs: {m}")))?;
            // Bounded first: rounding up near 2^64 would overflow.
            if n > MAX_NSLABS {
                return Err(err(format!(
                    "swiotlb={value}: {n} slabs is more than the {MAX_NSLABS} flashpath supports"
                )));
            }
            // "avoid tail segment of size < IO_TLB_SEGSIZE" (MAX_NSLABS is
            // a multiple of it, so this stays within).
            let n = n.next_multiple_of(u64::from(IO_TLB_SEGSIZE));
            p.nslabs = Some(n);
            s = rest;
        }
        if let Some(rest) = s.strip_prefix(',') {
            s = rest;
        }
        if s.starts_with(|c: char| c.is_ascii_digit()) {
            let (n, rest) =
                simple_strtoul(s).map_err(|m| err(format!("swiotlb={value}: areas: {m}")))?;
            if n > MAX_NAREAS {
                return Err(err(format!(
                    "swiotlb={value}: {n} areas is more than the {MAX_NAREAS} flashpath supports"
                )));
            }
            let nareas = adjust_nareas(n);
            p.nareas = Some(nareas as u32);
            // swiotlb_adjust_nareas() rounds default_nslabs right away,
            // with whatever it is at that point (given or the default).
            let base = p.nslabs.unwrap_or(IO_TLB_DEFAULT_SIZE >> IO_TLB_SHIFT);
            let nslabs = round_up_nslabs(base, nareas as u32);
            if nslabs > MAX_NSLABS {
                return Err(err(format!(
                    "swiotlb={value}: {nareas} areas need {nslabs} slabs, more than the \
                     {MAX_NSLABS} flashpath supports"
                )));
            }
            p.nslabs = Some(nslabs);
            s = rest;
        }
        if let Some(rest) = s.strip_prefix(',') {
            s = rest;
        }
        match s {
            "" => {}
            "force" => p.force = ForceMode::Force,
            "noforce" => p.force = ForceMode::NoForce,
            other => {
                let what = if p.nslabs.is_none() && p.nareas.is_none() && at(other) == 0 {
                    "expected <slabs>[,<areas>][,force|noforce] or force|noforce".to_string()
                } else {
                    "expected `force` or `noforce` here".to_string()
                };
                return Err(err(format!(
                    "swiotlb={value}: cannot read `{other}` (at character {}): {what}",
                    at(other) + 1
                )));
            }
        }
        Ok(p)
    }

    /// Apply the boot-time defaults (`swiotlb_init_remap`): areas default
    /// to `num_possible_cpus()` (through `swiotlb_adjust_nareas`, which also
    /// rounds the slab count), then `limit_nareas`.
    pub fn resolve(&self, num_possible_cpus: u32) -> SwiotlbConfig {
        let mut nslabs = self.nslabs.unwrap_or(IO_TLB_DEFAULT_SIZE >> IO_TLB_SHIFT);
        let nareas = match self.nareas {
            Some(n) => n,
            None => {
                let n = adjust_nareas(u64::from(num_possible_cpus)).min(MAX_NAREAS) as u32;
                nslabs = round_up_nslabs(nslabs, n);
                n
            }
        };
        let nslabs = nslabs.min(MAX_NSLABS) as u32;
        SwiotlbConfig {
            nslabs,
            nareas: limit_nareas(nareas, nslabs).max(1),
            force: self.force,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> SwiotlbParam {
        SwiotlbParam::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn seed_example_512_4_force() {
        let p = parse("512,4,force");
        assert_eq!(p.nslabs, Some(512));
        assert_eq!(p.nareas, Some(4));
        assert_eq!(p.force, ForceMode::Force);
        let c = p.resolve(8);
        assert_eq!((c.nslabs, c.nareas), (512, 4));
    }

    #[test]
    fn documented_forms() {
        assert_eq!(parse("force").force, ForceMode::Force);
        assert_eq!(parse("noforce").force, ForceMode::NoForce);
        assert_eq!(parse("force").nslabs, None);
        // <int> alone: aligned to IO_TLB_SEGSIZE.
        assert_eq!(parse("1000").nslabs, Some(1024));
        assert_eq!(parse("65536").nslabs, Some(65536));
        // <int>,force without areas.
        let p = parse("512,force");
        assert_eq!(
            (p.nslabs, p.nareas, p.force),
            (Some(512), None, ForceMode::Force)
        );
        // Areas only.
        let p = parse(",4");
        assert_eq!(p.nareas, Some(4));
        assert_eq!(p.nslabs, Some(32768));
    }

    #[test]
    fn rounding_rules() {
        // nareas rounds up to a power of two; too few slabs per area are
        // raised to one segment per area.
        let p = parse("100,3");
        assert_eq!((p.nslabs, p.nareas), (Some(512), Some(4)));
        // Not a power of two: rounded up.
        assert_eq!(parse("1280,2").nslabs, Some(2048));
        // 0 areas is 1.
        assert_eq!(parse("512,0").nareas, Some(1));
        // simple_strtoul base 0: hex and octal.
        assert_eq!(parse("0x200,2").nslabs, Some(512));
        assert_eq!(parse("010").nslabs, Some(128));
        // Default areas = CPUs rounded up, which raises a small pool.
        let c = parse("128").resolve(6);
        assert_eq!((c.nslabs, c.nareas), (1024, 8));
        // No parameter at all: 64 MiB, one area per CPU.
        let c = SwiotlbParam::default().resolve(4);
        assert_eq!((c.nslabs, c.nareas), (32768, 4));
    }

    #[test]
    fn errors_name_the_bad_part() {
        for (bad, part) in [
            ("512,4,forc", "`forc`"),
            ("512x", "`x`"),
            ("abc", "`abc`"),
            ("512,4,force,", "`force,`"),
            ("99999999999999999999999", "too large"),
        ] {
            let e = SwiotlbParam::parse(bad).unwrap_err();
            assert!(e.to_string().contains(part), "{bad}: {e}");
            assert!(e.to_string().contains(&format!("swiotlb={bad}")), "{e}");
        }
    }
}
