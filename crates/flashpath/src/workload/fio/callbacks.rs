//! The callbacks options.c runs on an option's value after the parser has
//! read it, where they can refuse it (fio then refuses the job, whatever
//! flashpath does with the option): rw postfixes, bssplit and zoned
//! distribution lists, CPU lists and masks, patterns, NUMA policies, error
//! names. The readers of structured values (`parse_bssplit_dirs`,
//! `parse_distribution`, `parse_cpu_list`) also give the values the option
//! then takes.

use std::path::{Path, PathBuf};

use super::job::RandomDistribution;
use super::number::{atoi, c_float, c_space, c_strtoll, fio_bytes, ZONE_BASE};
use super::options::{self, Cb, OptDef};
use super::value::posval_match;
use crate::error::clip;

/// options.c str_split_parse: "r" gives every direction the same list,
/// "r,w" gives trims the write list, "r,w,t..." each its own (the trim
/// part keeps any further commas).
pub(super) fn split_dirs(v: &str) -> [&str; 3] {
    match v.split_once(',') {
        None => [v, v, v],
        Some((r, rest)) => match rest.split_once(',') {
            None => [r, rest, rest],
            Some((w, t)) => [r, w, t],
        },
    }
}

/// options.c split_parse_ddir: `value[/percent]` entries joined by ':',
/// up to the first empty one and at most `max` (fio stops there, no
/// error). Returns (value, percent): a relative percent is atoi'd, capped
/// at 100, None when missing or 0; an absolute one is a size.
fn split_entries(
    s: &str,
    kb: u64,
    absolute: bool,
    max: usize,
) -> std::result::Result<Vec<(u64, Option<u64>)>, String> {
    let mut out = Vec::new();
    for ent in s.split(':') {
        if ent.is_empty() {
            break;
        }
        let (val, perc) = match ent.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (ent, None),
        };
        let perc = match perc {
            Some(p) if absolute => Some(fio_bytes(p, kb).ok_or("split conversion failed")?),
            Some(p) => Some(atoi(p).clamp(0, 100) as u64).filter(|p| *p > 0),
            None if absolute => Some(0),
            None => None,
        };
        let val = fio_bytes(val, kb).ok_or("split conversion failed")?;
        out.push((val, perc));
        if out.len() == max {
            break;
        }
    }
    Ok(out)
}

/// options.c bssplit_ddir: block sizes with percentages; a missing
/// percent shares what is left evenly; more than 100% with two or more
/// missing is refused.
fn parse_bssplit(s: &str, kb: u64) -> std::result::Result<Option<Split>, String> {
    let entries = split_entries(s, kb, false, 64)?;
    if entries.is_empty() {
        return Ok(None);
    }
    let given: u64 = entries.iter().filter_map(|e| e.1).sum();
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u64;
    if given > 100 && missing > 1 {
        return Err("bssplit percentages add to more than 100%".into());
    }
    let share = 100u64
        .saturating_sub(given)
        .checked_div(missing)
        .unwrap_or(0);
    Ok(Some(
        entries
            .into_iter()
            .map(|(b, p)| (b, p.unwrap_or(share) as u32))
            .collect(),
    ))
}

/// A bssplit list: (block size, percent) entries.
pub(super) type Split = Vec<(u64, u32)>;

/// str_bssplit_cb: a list per direction (None: that direction keeps bs).
pub(super) fn parse_bssplit_dirs(
    v: &str,
    kb: u64,
) -> std::result::Result<[Option<Split>; 3], String> {
    let parts = split_dirs(v.trim());
    let mut out = [None, None, None];
    for (d, p) in parts.iter().enumerate() {
        out[d] = parse_bssplit(p, kb)?;
    }
    Ok(out)
}

/// options.c split_parse_distr: `value[:center]`, each read by sscanf.
pub(super) fn split_distr(s: &str) -> Option<(f64, Option<f64>)> {
    match s.split_once(':') {
        Some((v, c)) => Some((c_float(v)?, Some(c_float(c)?))),
        None => Some((c_float(s)?, None)),
    }
}

/// The bounds str_random_distribution_cb and str_fst_cb put on a
/// distribution's parameter and center.
pub(super) fn check_distr(
    kind: &str,
    val: f64,
    center: Option<f64>,
) -> std::result::Result<(), String> {
    if let Some(c) = center {
        if !(0.0..=1.0).contains(&c) {
            return Err("distribution center out of range (0 <= center <= 1.0)".into());
        }
    }
    match kind {
        "zipf" if val == 1.0 => Err("zipf theta must be different than 1.0".into()),
        "pareto" if val <= 0.0 || val >= 1.0 => {
            Err("pareto input out of range (0 < input < 1.0)".into())
        }
        "normal" | "gauss" if !(0.0..100.0).contains(&val) => {
            Err("normal deviation out of range (0 <= input < 100.0)".into())
        }
        _ => Ok(()),
    }
}

/// A random_distribution as fio reads it; `center` is fio's optional
/// second parameter of zipf, pareto and normal.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Distribution {
    pub dist: RandomDistribution,
    pub center: Option<f64>,
    /// zoned lists that differ per direction.
    pub per_direction: bool,
}

/// options.c str_random_distribution_cb and parse_zoned_distribution.
pub(super) fn parse_distribution(v: &str, kb: u64) -> std::result::Result<Distribution, String> {
    let kind = posval_match(options::RANDOM_DISTRIBUTIONS, v).unwrap_or("");
    let plain = |dist| Distribution {
        dist,
        center: None,
        per_direction: false,
    };
    match kind {
        "zipf" | "pareto" | "normal" => {
            let default = match kind {
                "zipf" => 1.1,
                "pareto" => 0.2,
                _ => 0.0,
            };
            let (val, center) = match opt_postfix(v) {
                Some(p) => split_distr(p).ok_or("random postfix parsing failed")?,
                None => (default, None),
            };
            check_distr(kind, val, center)?;
            let dist = match kind {
                "zipf" => RandomDistribution::Zipf(val),
                "pareto" => RandomDistribution::Pareto(val),
                _ => RandomDistribution::Normal(val),
            };
            Ok(Distribution {
                dist,
                center,
                per_direction: false,
            })
        }
        "zoned" | "zoned_abs" => {
            let absolute = kind == "zoned_abs";
            let t = v.trim();
            let Some(rest) = t.strip_prefix(kind).and_then(|r| r.strip_prefix(':')) else {
                return Err(format!("mismatch in zoned input <{}>", clip(t)));
            };
            let parts = split_dirs(rest);
            let mut lists = Vec::new();
            for p in parts {
                lists.push(parse_zones(p, kb, absolute)?);
            }
            let per_direction = lists[1..].iter().any(|l| *l != lists[0]);
            let zones = lists.swap_remove(0);
            let dist = if zones.is_empty() {
                RandomDistribution::Random
            } else if absolute {
                RandomDistribution::ZonedAbs(zones.iter().map(|z| (z.0, z.1 as u64)).collect())
            } else {
                RandomDistribution::Zoned(zones)
            };
            Ok(Distribution {
                dist,
                center: None,
                per_direction,
            })
        }
        // random (and its ignored postfix)
        _ => Ok(plain(RandomDistribution::Random)),
    }
}

/// options.c zone_split_ddir: access percents (stored in a u8) must add
/// to exactly 100; relative size percents to at most 100, a missing one
/// sharing what is left. Returns (access %, size % or bytes).
fn parse_zones(s: &str, kb: u64, absolute: bool) -> std::result::Result<Vec<(f64, f64)>, String> {
    let entries = split_entries(s, kb, absolute, 256)?;
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    // uint8_t fields: 255 is fio's "missing" marker.
    let access: Vec<u8> = entries.iter().map(|e| e.0 as u8).collect();
    let sizes: Vec<Option<u64>> = entries
        .iter()
        .map(|e| {
            if absolute {
                e.1
            } else {
                e.1.map(|p| p as u8 as u64).filter(|p| *p != 255)
            }
        })
        .collect();
    let perc: u64 = access
        .iter()
        .filter(|a| **a != 255)
        .map(|a| u64::from(*a))
        .sum();
    let perc_missing = access.iter().filter(|a| **a == 255).count() as u64;
    let sperc: u64 = if absolute {
        0
    } else {
        sizes.iter().flatten().sum()
    };
    let sperc_missing = if absolute {
        0
    } else {
        sizes.iter().filter(|s| s.is_none()).count() as u64
    };
    if perc > 100 || sperc > 100 {
        return Err("zone_split percentages add to more than 100%".into());
    }
    if perc < 100 {
        return Err(format!(
            "access percentage don't add up to 100 for zoned random distribution (got={perc})"
        ));
    }
    let n = entries.len() as u64;
    let fill = |sum: u64, missing: u64| {
        let sum = if missing == 1 && n == 1 { 100 } else { sum };
        (100 - sum).checked_div(missing).unwrap_or(0)
    };
    let (fa, fs) = (fill(perc, perc_missing), fill(sperc, sperc_missing));
    Ok(access
        .iter()
        .zip(&sizes)
        .map(|(a, s)| {
            let a = if *a == 255 { fa } else { u64::from(*a) };
            (a as f64, s.unwrap_or(fs) as f64)
        })
        .collect())
}

/// options.c set_cpus_allowed: ','-separated CPUs or `a-b` ranges; an
/// empty part ends the list. strsep cuts each part at its '-'s first, so
/// the low CPU is atoi of what precedes the first '-' (`-1` is CPU 0) and
/// the high one atoi of the last piece before an empty one; a reversed
/// range adds nothing, a negative CPU is no CPU (CPU_SET ignores it). Each
/// CPU must be one of the machine's (fio checks cpus_configured(), here
/// the simulated host's) and below FIO_MAX_CPUS (CPU_SETSIZE, 1024).
pub(super) fn parse_cpu_list(v: &str, ncpus: u32) -> std::result::Result<Vec<u32>, String> {
    const FIO_MAX_CPUS: i64 = 1024;
    let mut cpus = Vec::new();
    for part in v.trim().split(',') {
        if part.is_empty() {
            break;
        }
        let mut hi = -1;
        for p in part.split('-') {
            if p.is_empty() {
                break;
            }
            hi = atoi(p);
        }
        let lo = atoi(part.split('-').next().unwrap_or(""));
        if hi == -1 {
            hi = lo;
        }
        // Negative CPUs set nothing: start at 0 rather than walk them.
        let mut c = lo.max(0);
        while c <= hi {
            if c >= FIO_MAX_CPUS {
                return Err(format!("your OS only supports up to {FIO_MAX_CPUS} CPUs"));
            }
            if c >= i64::from(ncpus) {
                return Err(format!("CPU {c} too large (max={})", i64::from(ncpus) - 1));
            }
            if !cpus.contains(&(c as u32)) {
                cpus.push(c as u32);
            }
            c += 1;
        }
    }
    cpus.sort_unstable();
    Ok(cpus)
}

/// The numeric callbacks of options.c that can refuse a value (each part
/// of it, before it is stored).
pub(super) fn numeric_callback(
    def: &OptDef,
    v: u64,
    ncpus: u32,
) -> std::result::Result<(), String> {
    match def.cb {
        // str_cpumask_cb: bit i (of a C int shift: bit 31 stands for every
        // higher bit) names CPU i, which the machine must have.
        Some(Cb::CpuMask) => {
            for i in 0..32u32 {
                let bit = if i == 31 {
                    v >> 31 != 0
                } else {
                    v & (1 << i) != 0
                };
                if bit && i >= ncpus {
                    return Err(format!("CPU {i} too large (max={})", ncpus - 1));
                }
            }
            Ok(())
        }
        // str_io_size_cb: parse_is_percent_uncapped, at most 100%.
        Some(Cb::IoSize) => match u64::MAX.checked_sub(v) {
            Some(p) if v > ZONE_BASE + u64::from(u32::MAX) && p > 100 => {
                Err("io_size values greater than 100% aren't supported".into())
            }
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// options.c get_opt_postfix: what follows the first ':', blanks trimmed.
pub(super) fn opt_postfix(s: &str) -> Option<&str> {
    s.split_once(':').map(|(_, p)| p.trim())
}

/// The string callbacks of options.c that can refuse a value.
pub(super) fn callback(
    def: &OptDef,
    value: Option<&str>,
    kb: u64,
    ncpus: u32,
    base_dir: &Path,
) -> std::result::Result<(), String> {
    let Some(cb) = def.cb else { return Ok(()) };
    // A bare STR option reaches its callback with NULL: fio 3.33 crashes
    // (strdup(NULL)) for these.
    let Some(v) = value else {
        return match cb {
            Cb::CpuList
            | Cb::IgnoreError
            | Cb::Pattern
            | Cb::ReplaySkip
            | Cb::NumaNodes
            | Cb::NumaMemPolicy => {
                Err("requires an argument (fio 3.33 crashes without one)".into())
            }
            // fio 3.38 crashes too (SIGSEGV in str_fdp_pli_cb).
            Cb::Plids => Err("requires an argument (fio 3.38 crashes without one)".into()),
            _ => Ok(()),
        };
    };
    match cb {
        // Checked on each number by numeric_callback.
        Cb::CpuMask | Cb::IoSize => Ok(()),
        Cb::Rw => {
            // str_rw_cb: a sequential pattern's postfix is a size.
            let random = posval_match(def.kind.values, v).is_some_and(|w| w.starts_with("rand"));
            match opt_postfix(v) {
                Some(p) if !random && fio_bytes(p, kb).is_none() => {
                    Err("rw postfix parsing failed".into())
                }
                _ => Ok(()),
            }
        }
        Cb::Bssplit => parse_bssplit_dirs(v, kb).map(|_| ()),
        Cb::Plids => super::placement::parse_plids(v).map(|_| ()),
        Cb::RandomDistribution => parse_distribution(v, kb).map(|_| ()),
        Cb::FileServiceType => {
            let kind = posval_match(def.kind.values, v).unwrap_or("");
            let param = opt_postfix(v);
            match (kind, param) {
                ("random" | "roundrobin" | "sequential", _) | (_, None) => Ok(()),
                (k, Some(p)) => {
                    let (val, center) =
                        split_distr(p).ok_or("file service type random postfix parsing failed")?;
                    check_distr(if k == "normal" { "gauss" } else { k }, val, center)
                }
            }
        }
        Cb::CpuList => parse_cpu_list(v, ncpus).map(|_| ()),
        Cb::Opendir => {
            if resolve(v, base_dir).is_dir() {
                Ok(())
            } else {
                Err(format!("cannot open directory {}", clip(v)))
            }
        }
        Cb::Ioengine => match v.split_once(':') {
            Some(("external", path)) => {
                if resolve(path.trim(), base_dir).is_file() {
                    Ok(())
                } else {
                    Err(format!(
                        "invalid external ioengine path \"{}\"",
                        clip(path.trim())
                    ))
                }
            }
            _ => Ok(()),
        },
        Cb::ReplaySkip => {
            for word in v.trim().split(',') {
                if !matches!(word, "read" | "write" | "trim" | "sync") {
                    return Err(format!("Unknown skip type: {}", clip(word)));
                }
            }
            Ok(())
        }
        Cb::IgnoreError => {
            // str_ignore_error_cb: per direction (read, write, verify),
            // ':'-separated errors, each a name from fio's list or a
            // non-zero number.
            const NAMES: &[&str] = &[
                "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF",
                "ECHILD", "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST",
                "EXDEV", "ENODEV", "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY",
                "ETXTBSY", "EFBIG", "ENOSPC", "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM",
                "ERANGE",
            ];
            for (n, part) in v.trim().split(',').enumerate() {
                if n >= 3 {
                    return Err("Illegal error type".into());
                }
                for e in part.split(':') {
                    if e.is_empty() {
                        break;
                    }
                    let known = if e.starts_with('E') {
                        NAMES.contains(&e)
                    } else {
                        atoi(e) != 0
                    };
                    if !known {
                        return Err(format!(
                            "Unknown error {}, please use number value",
                            clip(e)
                        ));
                    }
                }
            }
            Ok(())
        }
        Cb::Pattern => parse_pattern(v, def.name == "verify_pattern", base_dir),
        Cb::Steadystate => {
            let kind = posval_match(def.kind.values, v).unwrap_or("");
            let Some(p) = opt_postfix(v) else {
                return Err(
                    "steadystate threshold must be specified in addition to criterion".into(),
                );
            };
            let ok = if let Some(i) = p.find('%') {
                c_float(p[..i].trim_end()).is_some()
            } else if kind.starts_with("iops") {
                c_float(p).is_some()
            } else {
                fio_bytes(p, kb).is_some()
            };
            if ok {
                Ok(())
            } else {
                Err("steadystate threshold parsing failed".into())
            }
        }
        Cb::NumaMemPolicy => {
            let (mode, nodes) = match v.split_once(':') {
                Some((m, n)) => (m, Some(n)),
                None => (v, None),
            };
            match (mode, nodes) {
                // interleave without a list takes "all" (str_numa_mpol_cb).
                ("default" | "local" | "interleave", None) => Ok(()),
                ("interleave", Some(n)) if numa_nodes_ok(n) => Ok(()),
                ("interleave", Some(_)) => Err("numa_parse_nodestring failed".into()),
                ("bind", Some(n)) if numa_nodes_ok(n) => Ok(()),
                ("prefer", Some(n)) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => {
                    Ok(())
                }
                ("default" | "local" | "bind" | "prefer", _) => {
                    Err(format!("bad node list for memory policy '{mode}'"))
                }
                _ => {
                    Err("memory policy should be: default, prefer, bind, interleave, local".into())
                }
            }
        }
        Cb::NumaNodes => {
            if numa_nodes_ok(v) {
                Ok(())
            } else {
                Err("numa_parse_nodestring failed".into())
            }
        }
    }
}

/// A path as fio opens it from its working directory; flashpath takes the
/// job file's directory when the name is not there (as for `include`).
fn resolve(name: &str, base_dir: &Path) -> PathBuf {
    let p = Path::new(name);
    if p.is_absolute() || p.exists() {
        p.to_path_buf()
    } else {
        base_dir.join(p)
    }
}

/// libnuma numa_parse_nodestring on a one-node machine: "all", or node
/// numbers (strtoul, cut to an int) and ranges joined by ',', each node 0.
fn numa_nodes_ok(v: &str) -> bool {
    let node = |n: &str| {
        let digits = n.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits != n.len() {
            return false;
        }
        let value = n.parse::<u64>().unwrap_or(u64::MAX);
        value as i32 == 0
    };
    v == "all" || (!v.is_empty() && v.split(',').all(|part| part.split('-').all(node)))
}

/// lib/pattern.c parse_and_fill_pattern: numbers (decimal or 0x hex),
/// "strings", 'files' (read from fio's working directory) and, for
/// verify_pattern, the %o format; 512 bytes at most.
fn parse_pattern(v: &str, formats: bool, base_dir: &Path) -> std::result::Result<(), String> {
    const MAX: usize = 512;
    let bad = || Err(format!("bad pattern '{}'", clip(v)));
    if v.is_empty() {
        return bad();
    }
    let mut rest = v;
    let mut room = MAX;
    while !rest.is_empty() {
        let filled;
        match rest.as_bytes()[0] {
            b'\'' => {
                let Some(end) = rest[1..].find('\'') else {
                    return bad();
                };
                let Ok(data) = std::fs::read(resolve(&rest[1..1 + end], base_dir)) else {
                    return bad();
                };
                filled = data.len().min(room);
                rest = &rest[end + 2..];
            }
            b'"' => {
                let Some(end) = rest[1..].find('"') else {
                    return bad();
                };
                if end > room {
                    return bad();
                }
                filled = end;
                rest = &rest[end + 2..];
            }
            b'%' => {
                if !(formats && rest.starts_with("%o")) || room < 8 {
                    return bad();
                }
                filled = 8;
                rest = &rest[2..];
            }
            _ => {
                let lower = rest.to_ascii_lowercase();
                let hex_digits = lower
                    .strip_prefix("0x")
                    .map(|h| h.bytes().take_while(u8::is_ascii_hexdigit).count())
                    .unwrap_or(0);
                if hex_digits > 0 {
                    // "0xff0x14": a following 0x starts a new number.
                    let mut n = hex_digits;
                    if lower.len() > 2 + n && lower[1 + n..].starts_with("0x") {
                        n -= 1;
                    }
                    filled = n.div_ceil(2);
                    if filled > room {
                        return bad();
                    }
                    rest = &rest[2 + n..];
                } else {
                    let limit = lower.find("0x").filter(|i| *i > 0).unwrap_or(rest.len());
                    let text = &rest[..limit];
                    let t = text.trim_start_matches(|c: char| c.is_ascii() && c_space(c as u8));
                    let t2 = t.strip_prefix(['+', '-']).unwrap_or(t);
                    let digits = t2.bytes().take_while(u8::is_ascii_digit).count();
                    if digits == 0 {
                        return bad();
                    }
                    let used = text.len() - t2.len() + digits;
                    let val = c_strtoll(&text[..used], 10).unwrap_or(i64::MAX);
                    if val > i64::from(i32::MAX) || val < i64::from(i32::MIN) {
                        return bad();
                    }
                    let mut u = val as u32;
                    let mut bytes = 0;
                    while u != 0 {
                        bytes += 1;
                        u >>= 8;
                    }
                    filled = bytes.max(1);
                    if filled > room {
                        return bad();
                    }
                    rest = &rest[used..];
                }
            }
        }
        // fio asserts every piece fills something (an empty "" aborts it).
        if filled == 0 {
            return bad();
        }
        room -= filled;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bssplit_shares_the_remainder() {
        assert_eq!(
            parse_bssplit("4k/50:1k/:32k/", 1024),
            Ok(Some(vec![(4096, 50), (1024, 25), (32768, 25)]))
        );
        assert!(parse_bssplit("4k/80:1k/:32k/:8k/30", 1024).is_err());
        // fio stops at 64 entries without complaint, and at an empty one.
        let long = vec!["4k/1"; 65].join(":");
        assert_eq!(parse_bssplit(&long, 1024).unwrap().unwrap().len(), 64);
        assert_eq!(parse_bssplit("", 1024), Ok(None));
    }

    #[test]
    fn zoned_access_must_add_to_100() {
        assert!(parse_zones("60/10:30/20", 1024, false).is_err());
        assert_eq!(
            parse_zones("50/5:30/15:20/", 1024, false),
            Ok(vec![(50.0, 5.0), (30.0, 15.0), (20.0, 80.0)])
        );
        assert_eq!(
            parse_zones("60/10G:40/20G", 1024, true),
            Ok(vec![
                (60.0, (10u64 << 30) as f64),
                (40.0, (20u64 << 30) as f64)
            ])
        );
    }
}
