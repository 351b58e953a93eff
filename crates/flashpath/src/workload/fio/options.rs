//! The one table of fio 3.33 option names: what kind of value each takes
//! and what it means to flashpath, side by side. Names, aliases and types
//! come from fio 3.33's own `fio --cmdhelp=NAME` (options.c
//! `fio_options[]`); engine options from `fio --enghelp=ENGINE`
//! (engines/io_uring.c, libaio.c, sync.c).
//!
//! Each entry carries fio's value type with its limits (minval, maxval,
//! pow2, posval, maxlen, minfp/maxfp) and, where options.c has one that can
//! refuse a value, its callback (`.cb(Cb::...)`): the parser refuses what
//! fio refuses whatever the handling, ignored options included. The real
//! fio's verdicts on thousands of values are in
//! `tests/fixtures/fio-verdicts/`.
//!
//! Its [`Handling`] says what the option means, following DESIGN.md ("an
//! option flashpath does not model is refused by name, unless it cannot
//! change the simulated I/O"); an entry cannot be written without one:
//! - `sets(|spec, given| ...)`, `resolves(|draft, given| ...)`: modelled;
//!   the function next to the name turns the value fio read into
//!   [`JobSpec`](super::JobSpec) fields (`resolves` also reaches the
//!   [`Draft`]'s block-size sources and may refuse a valid value flashpath
//!   does not simulate, with the reason).
//! - `records(|spec, given| ...)`: output-only options, recorded in
//!   `JobSpec` for the reporter.
//! - `Ignore`: cannot change the simulated I/O (logging, file creation,
//!   buffer contents, page-cache hints, process/thread choice); listed in
//!   `JobFile::ignored`.
//! - `Inert(master)`: has an effect only when `master` is enabled, and every
//!   non-default `master` is refused; so it is accepted and listed as ignored.
//! - `RefuseUnless(values)`: accepted (and listed as ignored) only at its
//!   default / "off" values; any other value changes the I/O and is refused.
//! - `Refuse`: could change the simulated I/O and is not modelled.

use super::callbacks::{opt_postfix, parse_bssplit_dirs, parse_cpu_list, parse_distribution};
use super::draft::{not_modelled, Draft, Given};
use super::job::{
    CmdprioBssplit, DpKind, DpSelect, FadviseHint, FileService, IoEngine, JobSpec,
    RandomDistribution, RateProcess, RwKind, ZoneMode,
};
use super::number::{as_percent, as_zones, atoi, c_float, fio_bytes, ZONE_BASE};
use super::value::posval_match;
use crate::error::{clip, nearest};
use crate::mm::thp::IoMem;
use crate::workload::iolog::SKIP_SYNC;

/// fio's option value types (parse.h `enum fio_opt_type`); how parse.c
/// reads each is in `parse::handle_option`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// FIO_OPT_STR: one of `values` (the token before ':' or ','), then the
    /// option's callback; with no `values`, the callback alone.
    Str,
    /// FIO_OPT_STR_ULL: read as Str (bssplit).
    StrUll,
    /// FIO_OPT_STR_MULTI: Str per ','-separated part (sync_file_range).
    StrMulti,
    /// FIO_OPT_STR_STORE: any non-empty text.
    Store,
    /// FIO_OPT_INT: a number with byte suffixes, checked as a C int.
    Int,
    /// FIO_OPT_ULL: a number with byte suffixes, checked as unsigned.
    Ull,
    /// FIO_OPT_STR_VAL: like Ull, one value.
    Val,
    /// FIO_OPT_STR_VAL_ZONE: like Val, or `Nz` (N zones).
    Zone,
    /// FIO_OPT_STR_VAL_TIME: a time with suffixes.
    Time,
    /// FIO_OPT_RANGE: `low-high` or `low:high`, per direction.
    Range,
    /// FIO_OPT_BOOL: a C unsigned (sscanf %u), at most 1.
    Bool,
    /// FIO_OPT_STR_SET: as Bool without the bound; bare means 1.
    Set,
    /// FIO_OPT_FLOAT_LIST: floats joined by ':'.
    Floats,
    /// FIO_OPT_DEPRECATED: always "failed parsing".
    Deprecated,
    /// FIO_OPT_SOFT_DEPRECATED: accepted, does nothing.
    SoftDeprecated,
}

/// An option's value type with the limits options.c gives it (`minval`,
/// `maxval`, `pow2`, `is_time`, `posval`, `maxlen`, `minfp`/`maxfp`).
/// parse.c options_init: a BOOL's range is 0..1, an INT's maxval defaults
/// to UINT_MAX and an ULL's to ULLONG_MAX.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Kind {
    pub ty: Ty,
    /// minval (0: none); compared as a C int for Int and Bool.
    pub min: i64,
    /// maxval (0: none).
    pub max: u64,
    pub pow2: bool,
    /// is_time: Some(is_seconds) (no suffix means seconds, else µs).
    pub time: Option<bool>,
    /// posval: the words a Str option takes.
    pub values: &'static [&'static str],
    /// maxlen: entries of a float list; characters of stored text (0: none).
    pub max_len: u32,
    /// minfp/maxfp of a float list (both 0: none).
    pub fp: (f64, f64),
    /// neg: the stored boolean is the inverse (buffered = !direct).
    pub neg: bool,
}

impl Kind {
    const fn of(ty: Ty) -> Kind {
        Kind {
            ty,
            min: 0,
            max: match ty {
                Ty::Int => u32::MAX as u64,
                Ty::Ull => u64::MAX,
                Ty::Bool => 1,
                _ => 0,
            },
            pow2: false,
            time: None,
            values: &[],
            max_len: 0,
            fp: (0.0, 0.0),
            neg: false,
        }
    }
    const fn min(self, min: i64) -> Kind {
        Kind { min, ..self }
    }
    const fn max(self, max: u64) -> Kind {
        Kind { max, ..self }
    }
    const fn pow2(self) -> Kind {
        Kind { pow2: true, ..self }
    }
    /// is_time without is_seconds: microseconds unless suffixed.
    const fn time_us(self) -> Kind {
        Kind {
            time: Some(false),
            ..self
        }
    }
    /// is_time with is_seconds: seconds unless suffixed.
    const fn time_s(self) -> Kind {
        Kind {
            time: Some(true),
            ..self
        }
    }
    const fn values(self, values: &'static [&'static str]) -> Kind {
        Kind { values, ..self }
    }
    const fn max_len(self, max_len: u32) -> Kind {
        Kind { max_len, ..self }
    }
    const fn fp(self, min: f64, max: f64) -> Kind {
        Kind {
            fp: (min, max),
            ..self
        }
    }
    const fn neg(self) -> Kind {
        Kind { neg: true, ..self }
    }
}

const STR: Kind = Kind::of(Ty::Str);
const STR_ULL: Kind = Kind::of(Ty::StrUll);
const STR_MULTI: Kind = Kind::of(Ty::StrMulti);
const STORE: Kind = Kind::of(Ty::Store);
const INT: Kind = Kind::of(Ty::Int);
const ULL: Kind = Kind::of(Ty::Ull);
const VAL: Kind = Kind::of(Ty::Val);
const ZONE: Kind = Kind::of(Ty::Zone);
const TIME_S: Kind = Kind::of(Ty::Time).time_s();
const TIME_US: Kind = Kind::of(Ty::Time).time_us();
const RANGE: Kind = Kind::of(Ty::Range);
const BOOL: Kind = Kind::of(Ty::Bool);
const SET: Kind = Kind::of(Ty::Set);
const FLOATS: Kind = Kind::of(Ty::Floats);
const SOFT_DEPRECATED: Kind = Kind::of(Ty::SoftDeprecated);
const DEPRECATED: Kind = Kind::of(Ty::Deprecated);

/// What an option means to flashpath (see the module's notes).
#[derive(Clone, Copy, Debug)]
pub enum Handling {
    /// Modelled: the value shapes the simulated I/O.
    Model(Meaning),
    /// Output-only: the value shapes the report.
    Record(Meaning),
    Ignore,
    Inert(&'static str),
    RefuseUnless(&'static [&'static str]),
    Refuse,
}

/// How a modelled option's value becomes the job's: called with the value
/// fio's parser and the option's callback accepted.
#[derive(Clone, Copy, Debug)]
pub enum Meaning {
    /// Sets `JobSpec` fields; every accepted value has a meaning.
    Sets(fn(&mut JobSpec, &Given<'_>)),
    /// Reads the value into the draft job, or refuses a value flashpath
    /// does not simulate (the message says what is not modelled).
    Resolves(fn(&mut Draft, &Given<'_>) -> Result<(), String>),
}

impl Meaning {
    pub(crate) fn apply(self, draft: &mut Draft, given: &Given<'_>) -> Result<(), String> {
        match self {
            Meaning::Sets(f) => {
                f(&mut draft.spec, given);
                Ok(())
            }
            Meaning::Resolves(f) => f(draft, given),
        }
    }
}

/// A modelled option that sets `JobSpec` fields.
const fn sets(f: fn(&mut JobSpec, &Given<'_>)) -> Handling {
    Handling::Model(Meaning::Sets(f))
}

/// A modelled option that needs the draft job or may refuse a value.
const fn resolves(f: fn(&mut Draft, &Given<'_>) -> Result<(), String>) -> Handling {
    Handling::Model(Meaning::Resolves(f))
}

/// An output-only option, recorded for the reporter.
const fn records(f: fn(&mut JobSpec, &Given<'_>)) -> Handling {
    Handling::Record(Meaning::Sets(f))
}

/// A per-direction option's slots (read, write, trim) into `target`,
/// where fio stored one.
fn per_direction(target: &mut [u64; 3], slots: &[Option<u64>; 3]) {
    for (t, v) in target.iter_mut().zip(slots) {
        if let Some(v) = v {
            *t = *v;
        }
    }
}

/// cmdprio_bssplit (options.c split_parse_prio_ddir and
/// parse_cmdprio_bssplit_entry, engines/cmdprio.c): per direction
/// (str_split_parse; trim's list is parsed and dropped), `bs/`,
/// `bs/perc` or `bs/perc/class/level` entries joined by ':' up to the
/// first empty one; zero-percent entries are left out, the rest sorted
/// by block size; one block size's percents may not pass 100.
fn parse_cmdprio_bssplit(v: &str, kb: u64) -> Result<[CmdprioBssplit; 2], String> {
    let dirs = super::callbacks::split_dirs(v.trim());
    let mut out: [CmdprioBssplit; 2] = [Vec::new(), Vec::new()];
    for (d, list) in dirs.iter().enumerate() {
        let mut entries = Vec::new();
        let mut n = 0;
        for ent in list.split(':') {
            if ent.is_empty() {
                break;
            }
            n += 1;
            if n > 64 {
                return Err("too many cmdprio_bssplit entries (BSSPLIT_MAX is 64)".into());
            }
            // sscanf("%m[^/]/%u/%u/%u"): the fields read up to the first
            // that is not a number.
            let mut fields = ent.split('/');
            let bs_str = fields.next().unwrap_or("");
            if bs_str.is_empty() {
                return Err(format!("invalid cmdprio_bssplit format in '{ent}'"));
            }
            let nums: Vec<u32> = fields
                .map_while(|f| f.parse::<u32>().ok())
                .take(3)
                .collect();
            let bs = fio_bytes(bs_str, kb)
                .ok_or_else(|| format!("split conversion failed for '{bs_str}'"))?;
            let perc = nums.first().map_or(0, |p| (*p).min(100));
            let prio = match nums.len() {
                0 | 1 => None,
                3 => Some(crate::block::elevator::ioprio_value(
                    match nums[1].min(3) as u16 {
                        0 => crate::block::elevator::IOPRIO_CLASS_BE,
                        c => c,
                    },
                    nums[2].min(7) as u16,
                )),
                _ => return Err(format!("invalid cmdprio_bssplit format in '{ent}'")),
            };
            if perc > 0 {
                entries.push((bs, perc, prio));
            }
        }
        entries.sort_by_key(|e| e.0);
        let mut i = 0;
        while i < entries.len() {
            let bs = entries[i].0;
            let tot: u32 = entries.iter().filter(|e| e.0 == bs).map(|e| e.1).sum();
            if tot > 100 {
                return Err(format!(
                    "cmdprio_bssplit total percentage for bs: {bs} exceeds 100"
                ));
            }
            i += entries.iter().filter(|e| e.0 == bs).count();
        }
        if d < 2 {
            out[d] = entries;
        }
    }
    Ok(out)
}

/// A read,write option of engines/cmdprio.h (no trim slot).
fn per_direction_u32(target: &mut [u32; 2], slots: &[Option<u64>; 3]) {
    for (t, v) in target.iter_mut().zip(slots) {
        if let Some(v) = v {
            *t = *v as u32;
        }
    }
}

fn per_direction_u16(target: &mut [u16; 2], slots: &[Option<u64>; 3]) {
    for (t, v) in target.iter_mut().zip(slots) {
        if let Some(v) = v {
            *t = *v as u16;
        }
    }
}

/// fio's times are microseconds; the model's nanoseconds.
fn us_to_ns(us: u64) -> u64 {
    us.saturating_mul(1000)
}

/// The options.c callback that reads an option's value after the parser
/// (and can refuse it); `parse::callback` and `parse::numeric_callback`
/// carry them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cb {
    /// str_rw_cb: `rw=read:4k` (sequential: a size), `randread:8` (atoi).
    Rw,
    /// str_fdp_pli_cb (fio 3.38): placement id lists.
    Plids,
    /// str_bssplit_cb: `size/percent` lists per direction.
    Bssplit,
    /// str_random_distribution_cb: the distribution's parameters.
    RandomDistribution,
    /// str_fst_cb: file_service_type's parameters.
    FileServiceType,
    /// str_cpumask_cb: each set bit a CPU of the machine.
    CpuMask,
    /// set_cpus_allowed: a list of CPUs of the machine.
    CpuList,
    /// str_io_size_cb: at most 100%.
    IoSize,
    /// str_opendir_cb: a directory to take files from.
    Opendir,
    /// posval `external`: `external:PATH` names a regular file.
    Ioengine,
    /// str_replay_skip_cb: read, write, trim, sync.
    ReplaySkip,
    /// str_ignore_error_cb: error names or numbers per direction.
    IgnoreError,
    /// parse_and_fill_pattern: a fill pattern.
    Pattern,
    /// str_steadystate_cb: `criterion:threshold`.
    Steadystate,
    /// str_numa_mpol_cb: a policy and its node list.
    NumaMemPolicy,
    /// str_numa_cpunodes_cb: a node list.
    NumaNodes,
}

#[derive(Clone, Copy, Debug)]
pub struct OptDef {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub kind: Kind,
    pub handling: Handling,
    /// Engine options: the engines that provide it (None: a general option).
    pub engines: Option<&'static [&'static str]>,
    pub cb: Option<Cb>,
}

impl OptDef {
    const fn cb(self, cb: Cb) -> OptDef {
        OptDef {
            cb: Some(cb),
            ..self
        }
    }
}

const fn o(
    name: &'static str,
    aliases: &'static [&'static str],
    kind: Kind,
    handling: Handling,
) -> OptDef {
    OptDef {
        name,
        aliases,
        kind,
        handling,
        engines: None,
        cb: None,
    }
}

const fn e(
    name: &'static str,
    engines: &'static [&'static str],
    kind: Kind,
    handling: Handling,
) -> OptDef {
    OptDef {
        name,
        aliases: &[],
        kind,
        handling,
        engines: Some(engines),
        cb: None,
    }
}

// io_uring_cmd has io_uring's options (engines/io_uring.c: one option
// table for both engines; fio 3.33 --enghelp=io_uring_cmd).
const URING: &[&str] = &["io_uring", "io_uring_cmd"];
const URING_AIO: &[&str] = &["io_uring", "io_uring_cmd", "libaio"];
const URING_AIO_PV2: &[&str] = &["io_uring", "io_uring_cmd", "libaio", "pvsync2"];
const URING_PV2: &[&str] = &["io_uring", "io_uring_cmd", "pvsync2"];

/// random_distribution's words (options.c).
pub const RANDOM_DISTRIBUTIONS: &[&str] =
    &["random", "zipf", "pareto", "normal", "zoned", "zoned_abs"];

/// Every option fio 3.33 knows (general ones, then the options of the
/// engines flashpath models).
pub static OPTIONS: &[OptDef] = &[
    o(
        "description",
        &[],
        STORE,
        sets(|s, g| s.description = Some(g.v().to_string())),
    ),
    o("name", &[], STORE, sets(|s, g| s.name = g.v().to_string())),
    o(
        "wait_for",
        &[],
        STORE,
        sets(|s, g| s.wait_for = Some(g.v().to_string())),
    ),
    o(
        "filename",
        &[],
        STORE.max_len(4096),
        sets(|s, g| s.filename = Some(g.v().to_string())),
    ),
    o(
        "lockfile",
        &[],
        STR.values(&["none", "exclusive", "readwrite"]),
        Handling::RefuseUnless(&["none"]),
    ),
    // fio's str_directory_cb also wants each directory to exist where fio
    // runs: the directories are the simulated machine's, taken to exist.
    o(
        "directory",
        &[],
        STORE,
        sets(|s, g| s.directory = Some(g.v().to_string())),
    ),
    o("filename_format", &[], STORE, Handling::Ignore),
    o("unique_filename", &[], BOOL, Handling::Ignore),
    o("opendir", &[], STORE, Handling::Refuse).cb(Cb::Opendir),
    o(
        "rw",
        &["readwrite"],
        STR.values(&[
            "read",
            "write",
            "trim",
            "randread",
            "randwrite",
            "randtrim",
            "rw",
            "readwrite",
            "randrw",
            "trimwrite",
            "randtrimwrite",
        ]),
        resolves(|d, g| {
            // options.c str_rw_cb: the part after ':' is ddir_seq_nr for
            // random patterns (atoi) and ddir_seq_add (a size) for
            // sequential ones.
            let s = &mut d.spec;
            let word = posval_match(g.def.kind.values, g.v()).unwrap_or("read");
            let rw = RwKind::from_fio_word(word).unwrap_or(RwKind::Read);
            s.rw = rw;
            s.rw_nr = 0;
            s.rw_seq_add = 0;
            if let Some(p) = opt_postfix(g.v()) {
                if rw.is_random() {
                    s.rw_nr = u64::try_from(atoi(p)).unwrap_or(0);
                } else {
                    // fio keeps a long long; the callback checked it reads.
                    let add = fio_bytes(p, g.kb).unwrap_or(0) as i64;
                    s.rw_seq_add = add;
                    s.rw_nr = u64::try_from(add).unwrap_or(0);
                }
            }
            Ok(())
        }),
    )
    .cb(Cb::Rw),
    o(
        "bs",
        &["blocksize"],
        ULL.min(1),
        resolves(|d, g| {
            per_direction(&mut d.bs, &g.parsed.slots);
            Ok(())
        }),
    ),
    o(
        "ba",
        &["blockalign"],
        ULL.min(1),
        sets(|s, g| per_direction(&mut s.blockalign, &g.parsed.slots)),
    ),
    o(
        "bsrange",
        &["blocksize_range"],
        RANGE.min(1),
        resolves(|d, g| {
            for (dd, r) in g.parsed.ranges.iter().enumerate() {
                if let Some(r) = r {
                    d.bsrange[dd] = Some(*r);
                }
            }
            Ok(())
        }),
    ),
    o(
        "bssplit",
        &[],
        STR_ULL,
        resolves(|d, g| {
            let lists = parse_bssplit_dirs(g.v(), g.kb)?;
            for (dd, list) in lists.into_iter().enumerate() {
                if list.is_some() {
                    d.bssplit[dd] = list;
                }
            }
            Ok(())
        }),
    )
    .cb(Cb::Bssplit),
    o(
        "bs_unaligned",
        &["blocksize_unaligned"],
        SET,
        sets(|s, g| s.bs_unaligned = g.on()),
    ),
    o("randrepeat", &[], BOOL, sets(|s, g| s.randrepeat = g.on())),
    o("randseed", &[], VAL, sets(|s, g| s.randseed = Some(g.n()))),
    o("norandommap", &[], SET, sets(|s, g| s.norandommap = g.on())),
    o(
        "ignore_error",
        &[],
        STR,
        sets(|s, g| s.errors.set_ignore(g.v())),
    )
    .cb(Cb::IgnoreError),
    o(
        "rw_sequencer",
        &[],
        STR.values(&["sequential", "identical"]),
        Handling::RefuseUnless(&["sequential"]),
    ),
    o(
        "ioengine",
        &[],
        STORE,
        resolves(|d, g| {
            // A known engine's name ends at ':' (options.c keeps the word).
            let e = g.v().trim();
            let e = match e.split_once(':') {
                Some((w, _)) if KNOWN_ENGINES.contains(&w) => w,
                _ => e,
            };
            match IoEngine::from_fio_name(e) {
                Some(io) => {
                    // Engine options belong to the engine (td->eo is rebuilt
                    // when ioengine changes).
                    if d.spec.ioengine != io {
                        d.spec.hipri = false;
                        d.spec.sg_write_mode = super::job::SgWriteMode::Write;
                        d.spec.zone_append = false;
                        d.spec.donorname = None;
                        d.spec.inplace = false;
                    }
                    d.spec.ioengine = io;
                    Ok(())
                }
                None if KNOWN_ENGINES.contains(&e) => Err(format!(
                    "ioengine '{e}' is not modelled by flashpath (modelled: sync, psync, vsync, \
                     pvsync, pvsync2, libaio, io_uring, posixaio, null, sg, io_uring_cmd, libzbc, \
                     falloc, ftruncate, e4defrag)"
                )),
                None => {
                    let hint = if e.len() <= 64 {
                        nearest(e, KNOWN_ENGINES.iter().copied())
                            .map(|n| format!("; did you mean '{n}'?"))
                            .unwrap_or_default()
                    } else {
                        String::new()
                    };
                    Err(format!("engine {} not loadable{hint}", clip(e)))
                }
            }
        }),
    )
    .cb(Cb::Ioengine),
    o(
        "iodepth",
        &[],
        INT.min(1),
        // A value whose first part fails (`-1`: "-1" is out of range, the
        // "1" after the '-' is read as a second part) stores nothing:
        // iodepth keeps its default, as in fio.
        sets(|s, g| {
            if let Some(v) = g.parsed.first() {
                s.iodepth = v as u32;
                s.iodepth_set = true;
            }
        }),
    ),
    o(
        "iodepth_batch",
        &["iodepth_batch_submit"],
        INT,
        sets(|s, g| s.iodepth_batch_submit = g.n() as u32),
    ),
    o(
        "iodepth_batch_complete_min",
        &["iodepth_batch_complete"],
        INT,
        sets(|s, g| s.iodepth_batch_complete_min = g.n() as u32),
    ),
    o(
        "iodepth_batch_complete_max",
        &[],
        INT,
        sets(|s, g| s.iodepth_batch_complete_max = g.n() as u32),
    ),
    o(
        "iodepth_low",
        &[],
        INT,
        resolves(|d, g| {
            d.spec.iodepth_low = g.n() as u32;
            d.iodepth_low_set = true;
            Ok(())
        }),
    ),
    // An I/O waits while it overlaps one in flight: with offload across
    // every job (rate-submit.c check_overlap, machine/overlap.rs); inline
    // per job (backend.c io_u_submit), refused in setup where
    // fixup_options leaves it on.
    o(
        "serialize_overlap",
        &[],
        BOOL,
        sets(|s, g| s.serialize_overlap = g.on()),
    ),
    // offload: the job's thread hands each I/O to one of iodepth submit
    // workers, threads with their own engine at iodepth 1 that queue it
    // and reap it (rate-submit.c, workqueue.c; machine/offload.rs).
    o(
        "io_submit_mode",
        &[],
        STR.values(&["inline", "offload"]),
        sets(|s, g| s.io_submit_offload = g.v().eq_ignore_ascii_case("offload")),
    ),
    o(
        "size",
        &[],
        ZONE,
        resolves(|d, g| {
            // str_size_cb: N% of the file, Nz zones, or bytes.
            let (s, last) = (&mut d.spec, g.last());
            if let Some(p) = as_percent(last) {
                s.size = None;
                s.size_percent = Some(p as u32);
            } else if let Some(n) = as_zones(last) {
                // Resolved with the zone size (workload/fio/zbd.rs).
                s.size = None;
                s.size_percent = None;
                s.zones.nz.size = Some(n);
            } else {
                s.size = Some(last);
                s.size_percent = None;
                s.zones.nz.size = None;
            }
            Ok(())
        }),
    ),
    o(
        "io_size",
        &["io_limit"],
        ZONE,
        resolves(|d, g| {
            let last = g.last();
            if let Some(n) = as_zones(last) {
                d.spec.zones.nz.io_size = Some(n);
                return Ok(());
            } else if last > ZONE_BASE + u64::from(u32::MAX) {
                return Err(not_modelled("option 'io_size' as a percentage"));
            }
            d.spec.io_size = Some(last);
            d.spec.zones.nz.io_size = None;
            Ok(())
        }),
    )
    .cb(Cb::IoSize),
    // fill_device: writes until ENOSPC (init.c fixup_options sets an
    // unset size to -1); the layout gives such a file the room left on
    // the device, and a sequential write ends at its end.
    o(
        "fill_device",
        &["fill_fs"],
        BOOL,
        sets(|s, g| s.fill_device = g.on()),
    ),
    o(
        "filesize",
        &[],
        VAL.min(1),
        resolves(|d, g| {
            // filesize=low-high: fio picks each file's size in the range.
            let slots = &g.parsed.slots;
            if slots[1].is_some_and(|hi| Some(hi) != slots[0]) {
                return Err(not_modelled(
                    "option 'filesize' as a range (random file sizes)",
                ));
            }
            d.spec.filesize = Some(g.n());
            Ok(())
        }),
    ),
    o("file_append", &[], BOOL, Handling::RefuseUnless(&["0"])),
    o(
        "offset",
        &["fileoffset"],
        ZONE,
        resolves(|d, g| {
            let (s, last) = (&mut d.spec, g.last());
            if let Some(p) = as_percent(last) {
                s.offset = 0;
                s.offset_percent = Some(p as u32);
            } else if let Some(n) = as_zones(last) {
                s.offset = 0;
                s.offset_percent = None;
                s.zones.nz.offset = Some(n);
            } else {
                // options.c str_offset_cb sets only start_offset: an
                // earlier offset=N% stays, and wins (get_start_offset).
                s.offset = last;
                s.zones.nz.offset = None;
            }
            Ok(())
        }),
    ),
    o(
        "offset_increment",
        &[],
        ZONE,
        resolves(|d, g| {
            let last = g.last();
            if as_percent(last).is_some() {
                return Err(not_modelled("option 'offset_increment' as a percentage"));
            } else if let Some(n) = as_zones(last) {
                d.spec.offset_increment = 0;
                d.spec.zones.nz.offset_increment = Some(n);
                return Ok(());
            }
            d.spec.offset_increment = last;
            d.spec.zones.nz.offset_increment = None;
            Ok(())
        }),
    ),
    // Used only to round an offset=N% (or offset_increment=N%) start up
    // (filesetup.c get_start_offset); 0 rounds to the smallest block size.
    o(
        "offset_align",
        &[],
        INT,
        sets(|s, g| s.offset_align = g.n()),
    ),
    o(
        "number_ios",
        &[],
        VAL,
        sets(|s, g| s.number_ios = (g.n() > 0).then_some(g.n())),
    ),
    o(
        "random_generator",
        &[],
        STR.values(&["tausworthe", "lfsr", "tausworthe64"]),
        // tausworthe and tausworthe64 differ only in their numbers
        // (flashpath draws from its own streams); lfsr changes which
        // offsets come: each block once per pass.
        sets(|s, g| {
            s.lfsr = posval_match(&["tausworthe", "lfsr", "tausworthe64"], g.v()) == Some("lfsr")
        }),
    ),
    o(
        "random_distribution",
        &[],
        STR.values(RANDOM_DISTRIBUTIONS),
        resolves(|d, g| {
            let dist = parse_distribution(g.v(), g.kb)?;
            if dist.center.is_some() {
                return Err(not_modelled(
                    "a random_distribution center (the value after the parameter)",
                ));
            }
            if dist.per_direction {
                return Err(not_modelled(
                    "per-direction zoned random_distribution lists",
                ));
            }
            match dist.dist {
                RandomDistribution::Zipf(t) if t <= 0.0 => {
                    return Err(not_modelled("zipf with theta <= 0"))
                }
                RandomDistribution::Zipf(t) if t > 0.0 => {}
                RandomDistribution::Zipf(_) => return Err(not_modelled("zipf with theta NaN")),
                _ => {}
            }
            d.spec.random_distribution = dist.dist;
            Ok(())
        }),
    )
    .cb(Cb::RandomDistribution),
    o(
        "percentage_random",
        &[],
        INT.max(100),
        sets(|s, g| {
            for (dd, p) in g.parsed.slots.iter().enumerate() {
                if let Some(p) = p {
                    s.percentage_random[dd] = *p as u32;
                }
            }
        }),
    ),
    o("allrandrepeat", &[], BOOL, Handling::Ignore),
    o(
        "nrfiles",
        &["nr_files"],
        INT,
        sets(|s, g| s.nrfiles = g.n() as u32),
    ),
    o(
        "file_service_type",
        &[],
        STR.values(&[
            "random",
            "zipf",
            "pareto",
            "normal",
            "gauss",
            "roundrobin",
            "sequential",
        ]),
        // options.c str_fst_cb: file_service_nr = atoi(postfix) for
        // random, roundrobin and sequential, else 1.
        sets(|s, g| {
            let values = g.def.kind.values;
            let kind = match posval_match(values, g.v()).unwrap_or("roundrobin") {
                "roundrobin" => FileService::RoundRobin,
                "sequential" => FileService::Sequential,
                "random" => FileService::Random,
                _ => FileService::Skewed,
            };
            let nr = match (kind, opt_postfix(g.v())) {
                (FileService::Skewed, _) | (_, None) => 1,
                (_, Some(p)) => atoi(p) as u32,
            };
            s.file_service = (kind, nr);
        }),
    )
    .cb(Cb::FileServiceType),
    o("openfiles", &[], INT, Handling::Ignore),
    o(
        "fallocate",
        &[],
        STR.values(&["none", "native", "posix", "keep", "truncate", "0", "1"]),
        // How fio lays out a file it creates (filesetup.c extend_file): only
        // e4defrag's model depends on it (workload/fio/e4defrag.rs).
        sets(|s, g| {
            s.fallocate = match posval_match(g.def.kind.values, g.v()) {
                Some("0") => "none",
                Some("1") => "posix",
                Some(w) => w,
                None => "native",
            }
        }),
    ),
    o(
        "fadvise_hint",
        &[],
        STR.values(&["0", "1", "random", "sequential"]),
        sets(|s, g| {
            s.fadvise_hint = match posval_match(&["0", "1", "random", "sequential"], g.v()) {
                Some("0") => FadviseHint::None,
                Some("random") => FadviseHint::Random,
                Some("sequential") => FadviseHint::Sequential,
                _ => FadviseHint::ByPattern,
            }
        }),
    ),
    o(
        "fsync",
        &[],
        INT,
        sets(|s, g| s.fsync_blocks = g.n() as u32),
    ),
    // A block device has no metadata to skip: fdatasync syncs what fsync does
    // (blkdev_fsync).
    o(
        "fdatasync",
        &[],
        INT,
        sets(|s, g| s.fsync_blocks = g.n() as u32),
    ),
    o("write_barrier", &[], INT, Handling::RefuseUnless(&["0"])),
    o(
        "sync_file_range",
        &[],
        STR_MULTI.values(&["wait_before", "write", "wait_after"]),
        Handling::Refuse,
    ),
    o("direct", &[], BOOL, sets(|s, g| s.direct = g.on())),
    o("atomic", &[], BOOL, Handling::RefuseUnless(&["0"])),
    // The inverse of direct: the same field, .neg (the parser inverted it).
    o("buffered", &[], BOOL.neg(), sets(|s, g| s.direct = g.on())),
    o("overwrite", &[], BOOL, sets(|s, g| s.overwrite = g.on())),
    o("loops", &[], INT, sets(|s, g| s.loops = g.n() as u32)),
    o("numjobs", &[], INT, sets(|s, g| s.numjobs = g.n() as u32)),
    o(
        "startdelay",
        &[],
        TIME_S,
        sets(|s, g| {
            // startdelay=low-high: fio draws the delay in the range.
            let lo = us_to_ns(g.n());
            let hi = g.parsed.slots[1].map_or(lo, us_to_ns);
            s.startdelay = lo;
            s.startdelay_high = (hi != lo).then_some(hi);
        }),
    ),
    o(
        "runtime",
        &["timeout"],
        TIME_S,
        sets(|s, g| s.runtime = (g.n() > 0).then(|| us_to_ns(g.n()))),
    ),
    o("time_based", &[], SET, sets(|s, g| s.time_based = g.on())),
    o("verify_only", &[], SET, Handling::RefuseUnless(&["0"])),
    o(
        "ramp_time",
        &[],
        TIME_S,
        sets(|s, g| s.ramp_time = us_to_ns(g.n())),
    ),
    o(
        "clocksource",
        &[],
        STR.values(&["gettimeofday", "clock_gettime", "cpu"]),
        Handling::Ignore,
    ),
    o(
        "mem",
        &["iomem"],
        STR.values(&["malloc", "shm", "shmhuge", "mmap", "mmapshared", "mmaphuge"]),
        resolves(|d, g| {
            // mmap:FILE and friends back the buffers with a file; the buffers'
            // contiguity is what the model reads.
            let v = g.v();
            let word = v.split_once(':').map_or(v, |(w, _)| w);
            d.spec.io_mem =
                IoMem::parse(word).ok_or_else(|| not_modelled(&format!("mem={}", clip(v))))?;
            Ok(())
        }),
    ),
    o(
        "verify",
        &[],
        STR.values(&[
            "0",
            "md5",
            "crc64",
            "crc32",
            "crc32c-intel",
            "crc32c",
            "crc16",
            "crc7",
            "sha1",
            "sha256",
            "sha512",
            "sha3-224",
            "sha3-256",
            "sha3-384",
            "sha3-512",
            "xxhash",
            "meta",
            "pattern",
            "null",
        ]),
        resolves(|d, g| {
            // options.c: "0" turns it off.
            let word = posval_match(g.def.kind.values, g.v()).unwrap_or("0");
            d.spec.verify = (word != "0").then(|| word.to_string());
            d.verify_set = true;
            Ok(())
        }),
    ),
    o("do_verify", &[], BOOL, sets(|s, g| s.do_verify = g.on())),
    o("verify_interval", &[], INT.min(80), Handling::Ignore),
    o("verify_offset", &[], INT.min(40), Handling::Ignore),
    o(
        "verify_pattern",
        &[],
        STR,
        resolves(|d, _| {
            // str_verify_pattern_cb: a pattern means verify=pattern unless
            // verify was set.
            if !d.verify_set {
                d.spec.verify = Some("pattern".to_string());
            }
            Ok(())
        }),
    )
    .cb(Cb::Pattern),
    o("verify_fatal", &[], BOOL, Handling::Ignore),
    o("verify_dump", &[], BOOL, Handling::Ignore),
    // verify_async=N hands the data check of a verify read to N threads
    // (verify.c verify_async_thread: the read's completion queues the io_u
    // on verify_list and signals verify_cond; a thread checks it and puts
    // it back, put_io_u): the same reads, the check's CPU time moved off
    // the job's thread and the io_u held until a thread is done with it.
    // flashpath books no CPU time for a verify read's check at all, so
    // there is nothing to move yet; and fio creates the N threads at the
    // job's start and fails the job when it cannot (a negative count
    // crashes fio 3.33, a million threads fail with EAGAIN:
    // tests/fixtures/fio-verdicts), a limit of the machine fio runs on.
    // Refused until the check's CPU cost (crc per byte) is modelled.
    o("verify_async", &[], INT, Handling::RefuseUnless(&["0"])),
    o(
        "verify_backlog",
        &[],
        VAL,
        sets(|s, g| s.verify_backlog = g.n()),
    ),
    o(
        "verify_backlog_batch",
        &[],
        INT,
        sets(|s, g| s.verify_batch = g.n()),
    ),
    // fio logs no writes and, after the write phase, regenerates the
    // job's offsets from its seeds to read them back (backend.c do_verify
    // with experimental_verify): the same reads, in the same order, as
    // the simulator's verify pass, which replays the job's own offset
    // sequence (stream.rs).
    o("experimental_verify", &[], BOOL, Handling::Ignore),
    // Loads the verify state file a verify_state_save run wrote
    // (verify.c verify_load_state); fio fails the job when the file is not
    // there ("open state file: No such file or directory"), and so does
    // flashpath (setup.rs check_verify_state); the simulator writes no
    // state file, so a job whose state file is there is refused.
    o(
        "verify_state_load",
        &[],
        BOOL,
        sets(|s, g| s.verify_state_load = g.on()),
    ),
    o("verify_state_save", &[], BOOL, Handling::Ignore),
    o(
        "trim_percentage",
        &[],
        INT.max(100),
        Handling::RefuseUnless(&["0"]),
    ),
    o(
        "trim_verify_zero",
        &[],
        BOOL,
        Handling::RefuseUnless(&["0", "1"]),
    ),
    o("trim_backlog", &[], VAL, Handling::Inert("trim_percentage")),
    o(
        "trim_backlog_batch",
        &[],
        INT,
        Handling::Inert("trim_percentage"),
    ),
    o(
        "write_iolog",
        &[],
        STORE,
        sets(|s, g| s.write_iolog = Some(g.v().to_string())),
    ),
    o(
        "read_iolog",
        &[],
        STORE,
        sets(|s, g| s.read_iolog = Some(g.v().to_string())),
    ),
    // Reading the log in chunks changes when fio reads it, not the I/O.
    o("read_iolog_chunked", &[], BOOL, Handling::Ignore),
    o(
        "replay_no_stall",
        &[],
        BOOL,
        sets(|s, g| s.replay.no_stall = g.on()),
    ),
    o(
        "replay_redirect",
        &[],
        STORE,
        sets(|s, g| s.replay_redirect = Some(g.v().to_string())),
    ),
    o(
        "replay_scale",
        &[],
        INT,
        sets(|s, g| s.replay.offset_scale = g.n().max(1)),
    ),
    o(
        "replay_align",
        &[],
        INT.pow2(),
        sets(|s, g| s.replay.align = g.n()),
    ),
    o(
        "replay_time_scale",
        &[],
        INT.min(1),
        sets(|s, g| s.replay.time_scale_pct = g.n() as u32),
    ),
    o(
        "replay_skip",
        &[],
        STR,
        sets(|s, g| {
            // options.c str_replay_skip_cb (the callback checked the words).
            s.replay.skip = 0;
            for word in g.v().trim().split(',') {
                s.replay.skip |= match word {
                    "read" => 1 << 0,
                    "write" => 1 << 1,
                    "trim" => 1 << 2,
                    _ => SKIP_SYNC,
                };
            }
        }),
    )
    .cb(Cb::ReplaySkip),
    // blktrace.c merge_blktrace_iologs (workload::trace::merge).
    o(
        "merge_blktrace_file",
        &[],
        STORE,
        sets(|s, g| s.merge_blktrace_file = Some(g.v().to_string())),
    ),
    o(
        "merge_blktrace_scalars",
        &[],
        FLOATS.max_len(20),
        sets(|s, g| s.merge_blktrace_scalars = g.parsed.floats.clone()),
    ),
    o(
        "merge_blktrace_iters",
        &[],
        FLOATS.max_len(20),
        sets(|s, g| s.merge_blktrace_iters = g.parsed.floats.clone()),
    ),
    // fio runs the job only if the command succeeds (backend.c
    // exec_string): flashpath runs no host commands.
    o("exec_prerun", &[], STORE, Handling::Refuse),
    o("exec_postrun", &[], STORE, Handling::Ignore),
    // backend.c switch_ioscheduler: the queue's scheduler for the run
    // (block.scheduler); a name the queue does not offer is refused when
    // the run is built.
    o(
        "ioscheduler",
        &[],
        STORE,
        sets(|s, g| s.ioscheduler = Some(g.v().to_string())),
    ),
    // zbd.c (zonemode=zbd) and io_u.c (zonemode=strided), as
    // workload/fio/zbd.rs models them.
    o(
        "zonemode",
        &[],
        STR.values(&["none", "strided", "zbd"]),
        sets(|s, g| {
            s.zones.mode = match g.v() {
                "zbd" => ZoneMode::Zbd,
                "strided" => ZoneMode::Strided,
                _ => ZoneMode::None,
            }
        }),
    ),
    o("zonesize", &[], VAL, sets(|s, g| s.zones.size = g.n())),
    o(
        "zonecapacity",
        &[],
        VAL,
        sets(|s, g| s.zones.capacity = g.n()),
    ),
    o("zonerange", &[], VAL, sets(|s, g| s.zones.range = g.n())),
    o(
        "zoneskip",
        &[],
        ZONE,
        sets(|s, g| match as_zones(g.last()) {
            Some(n) => {
                s.zones.skip = 0;
                s.zones.nz.skip = Some(n);
            }
            None => {
                s.zones.skip = g.last();
                s.zones.nz.skip = None;
            }
        }),
    ),
    o(
        "read_beyond_wp",
        &[],
        BOOL,
        sets(|s, g| s.zones.read_beyond_wp = g.on()),
    ),
    o(
        "max_open_zones",
        &[],
        INT.max(4096),
        sets(|s, g| s.zones.max_open_zones = g.n() as u32),
    ),
    o(
        "job_max_open_zones",
        &[],
        INT.max(4096),
        sets(|s, g| s.zones.job_max_open_zones = g.n() as u32),
    ),
    o(
        "ignore_zone_limits",
        &[],
        BOOL,
        sets(|s, g| s.zones.ignore_zone_limits = g.on()),
    ),
    o(
        "zone_reset_threshold",
        &[],
        FLOATS.max_len(1).fp(0.0, 1.0),
        sets(|s, g| s.zones.reset_threshold = g.parsed.floats.first().copied().unwrap_or(0.0)),
    ),
    o(
        "zone_reset_frequency",
        &[],
        FLOATS.max_len(1).fp(0.0, 1.0),
        sets(|s, g| s.zones.reset_frequency = g.parsed.floats.first().copied().unwrap_or(0.0)),
    ),
    o("lockmem", &[], VAL, Handling::Ignore),
    // str_rwmix_read_cb: the last part wins.
    o(
        "rwmixread",
        &[],
        INT.max(100),
        sets(|s, g| s.rwmixread = g.last() as u32),
    ),
    // str_rwmix_write_cb: reads get the rest of 100.
    o(
        "rwmixwrite",
        &[],
        INT.max(100),
        sets(|s, g| s.rwmixread = 100u32.wrapping_sub(g.last() as u32)),
    ),
    o(
        "nice",
        &[],
        INT.min(-20).max(19),
        Handling::RefuseUnless(&["0"]),
    ),
    // ioprio_set(IOPRIO_WHO_PROCESS, 0, prioclass, prio) in thread_main:
    // the priority of the thread's requests.
    o(
        "prio",
        &[],
        INT.max(7),
        sets(|s, g| s.prio = Some(g.n() as u32)),
    ),
    o(
        "prioclass",
        &[],
        INT.max(3),
        sets(|s, g| s.prioclass = Some(g.n() as u32)),
    ),
    o(
        "thinktime",
        &[],
        INT.time_us(),
        sets(|s, g| s.thinktime = us_to_ns(g.n())),
    ),
    o(
        "thinktime_spin",
        &[],
        INT.time_us(),
        sets(|s, g| s.thinktime_spin = us_to_ns(g.n())),
    ),
    o(
        "thinktime_blocks",
        &[],
        INT,
        sets(|s, g| s.thinktime_blocks = g.n() as u32),
    ),
    o(
        "thinktime_blocks_type",
        &[],
        STR.values(&["complete", "issue"]),
        Handling::RefuseUnless(&["complete"]),
    ),
    o(
        "thinktime_iotime",
        &[],
        INT.time_s(),
        Handling::RefuseUnless(&["0"]),
    ),
    o(
        "rate",
        &[],
        ULL,
        sets(|s, g| per_direction(&mut s.rate, &g.parsed.slots)),
    ),
    o(
        "rate_min",
        &["ratemin"],
        ULL,
        sets(|s, g| per_direction(&mut s.rate_min, &g.parsed.slots)),
    ),
    o(
        "rate_process",
        &[],
        STR.values(&["linear", "poisson"]),
        sets(|s, g| {
            s.rate_process = match posval_match(&["linear", "poisson"], g.v()) {
                Some("poisson") => RateProcess::Poisson,
                _ => RateProcess::Linear,
            }
        }),
    ),
    o("rate_cycle", &["ratecycle"], INT, Handling::Ignore),
    o(
        "rate_ignore_thinktime",
        &[],
        BOOL,
        Handling::RefuseUnless(&["0"]),
    ),
    o(
        "rate_iops",
        &[],
        INT,
        sets(|s, g| per_direction(&mut s.rate_iops, &g.parsed.slots)),
    ),
    o("rate_iops_min", &[], INT, Handling::Refuse),
    o("max_latency", &[], ULL.time_us(), Handling::Refuse),
    // fio's queue-depth search for a latency target (io_u.c lat_target_*;
    // workload/fio/thread.rs LatTarget): the target in us, kept in ns
    // (fixup_options multiplies it by 1000), the window in us.
    o(
        "latency_target",
        &[],
        TIME_US,
        sets(|s, g| s.latency_target = us_to_ns(g.n())),
    ),
    o(
        "latency_window",
        &[],
        TIME_US,
        sets(|s, g| s.latency_window = g.n()),
    ),
    o(
        "latency_percentile",
        &[],
        FLOATS.max_len(1).fp(0.0, 100.0),
        sets(|s, g| s.latency_percentile = g.parsed.floats.first().copied().unwrap_or(100.0)),
    ),
    o("latency_run", &[], BOOL, Handling::RefuseUnless(&["0"])),
    o("invalidate", &[], BOOL, sets(|s, g| s.invalidate = g.on())),
    o(
        "sync",
        &[],
        STR.values(&["none", "0", "sync", "1", "dsync"]),
        sets(|s, g| s.o_sync = !matches!(g.v(), "none" | "0")),
    ),
    o(
        "write_hint",
        &[],
        STR.values(&["none", "short", "medium", "long", "extreme"]),
        Handling::Refuse,
    ),
    // Data placement: fio 3.38's options (fio 3.33 has none of them):
    // fdp and fdp_pli came in 3.34, fdp_pli_select in 3.35, dataplacement,
    // plids and plid_select (the old names their aliases) in 3.38. See
    // workload/fio/placement.rs.
    o("fdp", &[], BOOL, sets(|s, g| s.placement.fdp = g.on())),
    o(
        "dataplacement",
        &["data_placement"],
        STR.values(&["none", "fdp", "streams"]),
        sets(|s, g| {
            s.placement.kind = Some(match posval_match(g.def.kind.values, g.v()) {
                Some("fdp") => DpKind::Fdp,
                Some("streams") => DpKind::Streams,
                _ => DpKind::None,
            })
        }),
    ),
    o(
        "plid_select",
        &["fdp_pli_select"],
        STR.values(&["random", "roundrobin", "scheme"]),
        resolves(|d, g| {
            d.spec.placement.select = match posval_match(g.def.kind.values, g.v()) {
                Some("random") => DpSelect::Random,
                Some("scheme") => {
                    return Err(not_modelled(
                        "plid_select=scheme (placement ids by offset from a dp_scheme file)",
                    ))
                }
                _ => DpSelect::RoundRobin,
            };
            Ok(())
        }),
    ),
    o(
        "plids",
        &["fdp_pli"],
        STR,
        sets(|s, g| s.placement.ids = super::placement::parse_plids(g.v()).unwrap_or_default()),
    )
    .cb(Cb::Plids),
    o("dp_scheme", &[], STORE, Handling::Refuse),
    o("create_serialize", &[], BOOL, Handling::Ignore),
    o("create_fsync", &[], BOOL, Handling::Ignore),
    o("create_on_open", &[], BOOL, Handling::Ignore),
    o("create_only", &[], BOOL, Handling::RefuseUnless(&["0"])),
    o("allow_file_create", &[], BOOL, Handling::Ignore),
    o("allow_mounted_write", &[], BOOL, Handling::Ignore),
    o("pre_read", &[], BOOL, Handling::RefuseUnless(&["0"])),
    o(
        "cpumask",
        &[],
        INT,
        sets(|s, g| {
            // str_cpumask_cb: the low 32 bits (bit 31 for any higher one).
            let last = g.last();
            let cpus: Vec<u32> = (0..32)
                .filter(|i| {
                    if *i == 31 {
                        last >> 31 != 0
                    } else {
                        last & (1 << i) != 0
                    }
                })
                .collect();
            s.cpus_allowed = Some(cpus);
        }),
    )
    .cb(Cb::CpuMask),
    o(
        "cpus_allowed",
        &[],
        STR,
        resolves(|d, g| {
            d.spec.cpus_allowed = Some(parse_cpu_list(g.v(), g.ncpus)?);
            Ok(())
        }),
    )
    .cb(Cb::CpuList),
    o(
        "cpus_allowed_policy",
        &[],
        STR.values(&["shared", "split"]),
        sets(|s, g| s.cpus_allowed_split = posval_match(&["split"], g.v()).is_some()),
    ),
    // NUMA placement (backend.c thread_main: numa_run_on_node_mask,
    // numa_set_membind / numa_set_interleave_mask). flashpath's host is one
    // NUMA node (the host profile has no NUMA topology; this machine,
    // `/sys/devices/system/node`, has node0 only): the callbacks refuse a
    // node the host lacks with fio's own error (libnuma's
    // numa_parse_nodestring fails and fio drops the job), and node 0 is
    // every CPU and all memory, so a valid value leaves the run as it is.
    o("numa_cpu_nodes", &[], STR, Handling::Ignore).cb(Cb::NumaNodes),
    o("numa_mem_policy", &[], STR, Handling::Ignore).cb(Cb::NumaMemPolicy),
    o("end_fsync", &[], BOOL, sets(|s, g| s.end_fsync |= g.on())),
    o(
        "fsync_on_close",
        &[],
        BOOL,
        sets(|s, g| s.end_fsync |= g.on()),
    ),
    o("unlink", &[], BOOL, Handling::Ignore),
    o("unlink_each_loop", &[], BOOL, Handling::Ignore),
    o("exitall", &[], SET, sets(|s, g| s.exitall = g.on())),
    o(
        "exit_what",
        &[],
        STR.values(&["group", "stonewall", "all"]),
        sets(|s, g| {
            s.exit_what = posval_match(&["group", "stonewall", "all"], g.v())
                .unwrap_or("group")
                .to_string();
        }),
    ),
    o("exitall_on_error", &[], SET, Handling::Ignore),
    o(
        "stonewall",
        &["wait_for_previous"],
        SET,
        sets(|s, g| s.stonewall = g.on()),
    ),
    o("new_group", &[], SET, sets(|s, g| s.new_group = g.on())),
    o("thread", &[], SET, Handling::Ignore),
    o(
        "per_job_logs",
        &[],
        BOOL,
        sets(|s, g| s.per_job_logs = g.on()),
    ),
    // str_write_*_log_cb: a bare option logs under the job's name.
    o(
        "write_bw_log",
        &[],
        STR,
        sets(|s, g| s.write_bw_log = Some(g.text.unwrap_or(&s.name).to_string())),
    ),
    o("bwavgtime", &[], INT, Handling::Ignore),
    // str_write_*_log_cb: a bare option logs under the job's name.
    o(
        "write_lat_log",
        &[],
        STR,
        sets(|s, g| s.write_lat_log = Some(g.text.unwrap_or(&s.name).to_string())),
    ),
    // str_write_*_log_cb: a bare option logs under the job's name.
    o(
        "write_iops_log",
        &[],
        STR,
        sets(|s, g| s.write_iops_log = Some(g.text.unwrap_or(&s.name).to_string())),
    ),
    o("iopsavgtime", &[], INT, Handling::Ignore),
    o(
        "log_entries",
        &[],
        INT.min(1024).max(1048576),
        Handling::Ignore,
    ),
    o(
        "log_avg_msec",
        &[],
        INT,
        sets(|s, g| s.log_avg_msec = g.n()),
    ),
    o(
        "log_hist_msec",
        &[],
        INT,
        sets(|s, g| s.log_hist_msec = g.n()),
    ),
    // fio documents [0,6] but enforces no maximum (options.c); past 10 the
    // stride (2^N) outgrows the 1856 bins and flush_hist_samples reads
    // past its histogram.
    o(
        "log_hist_coarseness",
        &[],
        INT,
        resolves(|d, g| {
            if g.n() > 10 {
                return Err(not_modelled(
                    "log_hist_coarseness above 10 (fio's flush_hist_samples reads past its 1856 bins)",
                ));
            }
            d.spec.log_hist_coarseness = g.n() as u32;
            Ok(())
        }),
    ),
    // str_write_hist_log_cb: a bare option logs under the job's name.
    o(
        "write_hist_log",
        &[],
        STR,
        sets(|s, g| s.write_hist_log = Some(g.text.unwrap_or(&s.name).to_string())),
    ),
    o(
        "log_max_value",
        &[],
        BOOL,
        sets(|s, g| s.log_max_value = g.on()),
    ),
    o("log_offset", &[], BOOL, sets(|s, g| s.log_offset = g.on())),
    o("log_prio", &[], BOOL, sets(|s, g| s.log_prio = g.on())),
    o(
        "log_compression",
        &[],
        INT.min(1024).max(536870912),
        Handling::Ignore,
    ),
    o("log_compression_cpus", &[], STR, Handling::Ignore).cb(Cb::CpuList),
    o("log_store_compressed", &[], BOOL, Handling::Ignore),
    // backend.c: set_epoch_time(td, log_unix_epoch | log_alternate_epoch,
    // ...): either one makes the log times absolute (report::logs).
    o(
        "log_unix_epoch",
        &[],
        BOOL,
        records(|s, g| s.log_epoch[0] = g.on()),
    ),
    o(
        "log_alternate_epoch",
        &[],
        BOOL,
        records(|s, g| s.log_epoch[1] = g.on()),
    ),
    o("log_alternate_epoch_clock_id", &[], INT, Handling::Ignore),
    o("block_error_percentiles", &[], BOOL, Handling::Ignore),
    o(
        "group_reporting",
        &[],
        SET,
        sets(|s, g| s.group_reporting = g.on()),
    ),
    o("stats", &[], BOOL, Handling::Ignore),
    o("zero_buffers", &[], SET, Handling::Ignore),
    o("refill_buffers", &[], SET, Handling::Ignore),
    o("scramble_buffers", &[], BOOL, Handling::Ignore),
    o("buffer_pattern", &[], STR, Handling::Ignore).cb(Cb::Pattern),
    o(
        "buffer_compress_percentage",
        &[],
        INT.max(100),
        Handling::Ignore,
    ),
    o("buffer_compress_chunk", &[], INT, Handling::Ignore),
    o("dedupe_percentage", &[], INT.max(100), Handling::Ignore),
    o(
        "dedupe_mode",
        &[],
        STR.values(&["repeat", "working_set"]),
        Handling::Ignore,
    ),
    o(
        "dedupe_working_set_percentage",
        &[],
        INT.max(100),
        Handling::Ignore,
    ),
    o("dedupe_global", &[], BOOL, Handling::Ignore),
    o(
        "clat_percentiles",
        &[],
        BOOL,
        records(|s, g| s.clat_percentiles = g.on()),
    ),
    o(
        "lat_percentiles",
        &[],
        BOOL,
        records(|s, g| s.lat_percentiles = g.on()),
    ),
    o(
        "slat_percentiles",
        &[],
        BOOL,
        records(|s, g| s.slat_percentiles = g.on()),
    ),
    o(
        "percentile_list",
        &[],
        FLOATS.max_len(20).fp(0.0, 100.0),
        records(|s, g| {
            s.percentile_list = Some(g.parsed.floats.clone());
            // parse.c: each entry counts the digits after the first '.' at
            // or after it; the largest count is the precision.
            s.percentile_precision = g
                .v()
                .split('.')
                .skip(1)
                .map(|rest| rest.bytes().take_while(u8::is_ascii_digit).count())
                .max()
                .unwrap_or(0);
        }),
    ),
    o(
        "significant_figures",
        &[],
        INT.min(1).max(10),
        Handling::Ignore,
    ),
    o("disk_util", &[], BOOL, Handling::Ignore),
    o("gtod_reduce", &[], BOOL, Handling::Ignore),
    o("disable_lat", &[], BOOL, Handling::Ignore),
    o("disable_clat", &[], BOOL, Handling::Ignore),
    o("disable_slat", &[], BOOL, Handling::Ignore),
    o(
        "disable_bw_measurement",
        &["disable_bw"],
        BOOL,
        Handling::Ignore,
    ),
    o("gtod_cpu", &[], INT, Handling::Ignore),
    o(
        "unified_rw_reporting",
        &[],
        STR.values(&["none", "mixed", "both", "0", "1", "2"]),
        records(|s, g| {
            s.unified_rw_reporting =
                match posval_match(&["none", "mixed", "both", "0", "1", "2"], g.v()) {
                    Some("mixed" | "1") => "mixed",
                    Some("both" | "2") => "both",
                    _ => "none",
                }
                .to_string()
        }),
    ),
    o(
        "continue_on_error",
        &[],
        STR.values(&["none", "read", "write", "io", "verify", "all", "0", "1"]),
        sets(|s, g| {
            let v = posval_match(
                &["none", "read", "write", "io", "verify", "all", "0", "1"],
                g.v(),
            );
            s.errors.set_continue(v.unwrap_or("none"));
        }),
    ),
    o(
        "error_dump",
        &[],
        BOOL,
        sets(|s, g| s.errors.error_dump = g.on()),
    ),
    o("profile", &[], STORE, Handling::Refuse),
    o("cgroup", &[], STORE, Handling::Refuse),
    o("cgroup_nodelete", &[], BOOL, Handling::RefuseUnless(&["0"])),
    o(
        "cgroup_weight",
        &[],
        INT.min(100).max(1000),
        Handling::Refuse,
    ),
    o("uid", &[], INT, Handling::Ignore),
    o("gid", &[], INT, Handling::Ignore),
    o(
        "kb_base",
        &[],
        STR.values(&["1024", "1000"]),
        sets(|s, g| {
            s.kb_base = if posval_match(&["1000"], g.v()).is_some() {
                1000
            } else {
                1024
            }
        }),
    ),
    o(
        "unit_base",
        &[],
        STR.values(&["0", "8", "1"]),
        records(|s, g| {
            s.unit_base = match posval_match(&["0", "8", "1"], g.v()) {
                Some("8") => 8,
                Some("1") => 1,
                _ => 0,
            }
        }),
    ),
    o("flow_id", &[], INT, sets(|s, g| s.flow_id = g.n())),
    o("flow", &[], INT.max(1000), sets(|s, g| s.flow = g.n())),
    // Microseconds (options.c: flow_sleep, "usleep" in flow.c).
    o(
        "flow_sleep",
        &[],
        INT,
        sets(|s, g| s.flow_sleep = us_to_ns(g.n())),
    ),
    // Steady state (steadystate.c; workload/fio/steadystate.rs): the
    // criterion and its limit (str_steadystate_cb, which Cb::Steadystate
    // checks first), the window in whole seconds and the ramp.
    o(
        "steadystate",
        &["ss"],
        STR.values(&["iops", "iops_slope", "bw", "bw_slope"]),
        resolves(|d, g| {
            let v = g.v();
            let kind = posval_match(g.def.kind.values, v).unwrap_or("iops_slope");
            let ss = &mut d.spec.steadystate;
            ss.iops = kind.starts_with("iops");
            ss.slope = kind.ends_with("_slope");
            let p = opt_postfix(v).unwrap_or("");
            if let Some(i) = p.find('%') {
                ss.pct = true;
                ss.limit = c_float(p[..i].trim_end()).unwrap_or(0.0);
            } else if ss.iops {
                ss.pct = false;
                ss.limit = c_float(p).unwrap_or(0.0);
            } else {
                ss.pct = false;
                ss.limit = fio_bytes(p, g.kb).unwrap_or(0) as f64;
            }
            Ok(())
        }),
    )
    .cb(Cb::Steadystate),
    o(
        "steadystate_duration",
        &["ss_dur"],
        TIME_S,
        sets(|s, g| s.steadystate.dur = (g.n() / 1_000_000).min(u64::from(u32::MAX)) as u32),
    ),
    o(
        "steadystate_ramp_time",
        &["ss_ramp"],
        TIME_S,
        sets(|s, g| s.steadystate.ramp = us_to_ns(g.n())),
    ),
    o("bs_is_seq_rand", &[], BOOL, Handling::RefuseUnless(&["0"])),
    o("hugepage-size", &[], INT, Handling::Ignore),
    o("iomem_align", &["mem_align"], INT, Handling::Ignore),
    o("softrandommap", &[], BOOL, Handling::Ignore),
    o("verify_async_cpus", &[], STR, Handling::Ignore).cb(Cb::CpuList),
    // Hidden in 3.33's --cmdhelp=all but accepted by its parser (found by
    // running `fio --parse-only` on each name in the binary's strings).
    o("threads", &[], INT, Handling::Ignore),
    o("flow_watermark", &[], SOFT_DEPRECATED, Handling::Ignore),
    // Deprecated in 3.33: SOFT_DEPRECATED options are accepted and do
    // nothing, DEPRECATED ones always fail (parse.c __handle_option).
    o("verifysort", &[], SOFT_DEPRECATED, Handling::Ignore),
    o("verifysort_nr", &[], SOFT_DEPRECATED, Handling::Ignore),
    o("percentage_sequential", &[], DEPRECATED, Handling::Ignore),
    o("rwmixcycle", &[], DEPRECATED, Handling::Ignore),
    // Options of fio's built-in job profiles (profiles/act.c, tiobench.c),
    // which fio 3.33 reads in any job file; `profile=` itself is refused.
    o("device-names", &[], STORE, Handling::Inert("profile")),
    o(
        "large-block-op-kbytes",
        &[],
        INT,
        Handling::Inert("profile"),
    ),
    o("prep", &[], SET, Handling::Inert("profile")),
    o(
        "read-req-num-512-blocks",
        &[],
        INT,
        Handling::Inert("profile"),
    ),
    o("load", &[], INT, Handling::Inert("profile")),
    o("block", &[], INT, Handling::Inert("profile")),
    o("numruns", &[], INT, Handling::Inert("profile")),
    o("dir", &[], STORE, Handling::Inert("profile")),
    o("test-duration", &[], TIME_US, Handling::Inert("profile")),
    o("threads-per-queue", &[], INT, Handling::Inert("profile")),
    // The sg engine's SCSI write command (engines/sg.c fio_sgio_prep,
    // fio 3.33 --enghelp=sg): what the device makes of each is its own
    // (driver/ufs). WRITE STREAM(16) needs a stream the engine opens with
    // stream_id's GET STREAM STATUS, which no device here has.
    e(
        "sg_write_mode",
        &["sg"],
        STR.values(&[
            "write",
            "write_and_verify",
            "verify",
            "write_same",
            "write_same_ndob",
            "verify_bytchk_00",
            "verify_bytchk_01",
            "verify_bytchk_11",
            "write_stream",
        ]),
        resolves(
            |d, g| match super::job::SgWriteMode::from_fio_name(g.v().trim()) {
                Some(m) => {
                    d.spec.sg_write_mode = m;
                    Ok(())
                }
                None => Err(
                    "sg_write_mode=write_stream (WRITE STREAM(16) on a SCSI stream) is \
                         not modelled by flashpath: no device here has SCSI streams"
                        .into(),
                ),
            },
        ),
    ),
    // Engine options (fio 3.33 --enghelp). hipri: io_uring (IORING_SETUP_IOPOLL)
    // and pvsync2 (RWF_HIPRI); libaio has no hipri in 3.33.
    e("hipri", URING_PV2, SET, sets(|s, g| s.hipri = g.on())),
    e(
        "hipri_percentage",
        &["pvsync2"],
        INT.max(100),
        Handling::RefuseUnless(&["100"]),
    ),
    // engines/cmdprio.c: per direction, the share of I/Os that carry the
    // command priority (cmdprio_class, cmdprio) in their iocb / sqe.
    e(
        "cmdprio_percentage",
        URING_AIO,
        INT.max(100),
        sets(|s, g| per_direction_u32(&mut s.cmdprio_percentage, &g.parsed.slots)),
    ),
    e(
        "cmdprio_class",
        URING_AIO,
        INT.min(1).max(3),
        sets(|s, g| per_direction_u16(&mut s.cmdprio_class, &g.parsed.slots)),
    ),
    e(
        "cmdprio",
        URING_AIO,
        INT.max(7),
        sets(|s, g| per_direction_u16(&mut s.cmdprio_level, &g.parsed.slots)),
    ),
    e(
        "cmdprio_bssplit",
        URING_AIO,
        STORE,
        resolves(|d, g| {
            d.spec.cmdprio_bssplit = Some(parse_cmdprio_bssplit(g.v(), g.kb)?);
            Ok(())
        }),
    ),
    // Buffer and file registration save CPU work in the kernel that the
    // host model charges per I/O anyway; they do not change the I/O.
    e("fixedbufs", URING, SET, Handling::Ignore),
    e("registerfiles", URING, SET, Handling::Ignore),
    // engines/io_uring.c fio_ioring_queue_init: sqthread_poll sets
    // IORING_SETUP_SQPOLL, and with it sqthread_poll_cpu sets
    // IORING_SETUP_SQ_AFF with sq_thread_cpu (fio_ioring_sqpoll_cb only
    // records the CPU: without sqthread_poll it does nothing);
    // machine/sqpoll.rs.
    e(
        "sqthread_poll",
        URING,
        SET,
        sets(|s, g| s.sqthread_poll = g.on()),
    ),
    e(
        "sqthread_poll_cpu",
        URING,
        INT,
        sets(|s, g| s.sqthread_poll_cpu = Some(g.n())),
    ),
    e("nonvectored", URING, INT, Handling::Ignore),
    e("uncached", URING_PV2, INT, Handling::RefuseUnless(&["0"])),
    e(
        "nowait",
        URING_AIO_PV2,
        BOOL,
        Handling::RefuseUnless(&["0"]),
    ),
    e("force_async", URING, INT, Handling::RefuseUnless(&["0"])),
    e("cmd_type", URING, STR.values(&["nvme"]), Handling::Ignore),
    // io_uring_cmd's write command (engines/io_uring.c str_write_mode_cb;
    // not in fio 3.33: write, uncor, zeroes and verify came after it, and
    // zone_append with commit ebf4b46d, 2026). Only write and zone_append
    // are modelled, one mode per job (no mix ratios).
    e(
        "write_mode",
        &["io_uring_cmd"],
        STR,
        resolves(|d, g| match g.v().trim() {
            "write" => {
                d.spec.zone_append = false;
                Ok(())
            }
            "zone_append" => {
                d.spec.zone_append = true;
                Ok(())
            }
            v => Err(not_modelled(&format!(
                "write_mode={} (modelled: write, zone_append)",
                clip(v)
            ))),
        }),
    ),
    e("userspace_reap", &["libaio"], SET, Handling::Ignore),
    // engines/e4defrag.c (fio 3.33 --enghelp=e4defrag): the donor file,
    // in the job's directory, and whether each move allocates the donor's
    // range and frees it (0 or 1: the option's minval and maxval).
    e(
        "donorname",
        &["e4defrag"],
        STORE,
        sets(|s, g| s.donorname = Some(g.v().to_string())),
    ),
    e(
        "inplace",
        &["e4defrag"],
        INT.min(0).max(1),
        sets(|s, g| s.inplace = g.n() == 1),
    ),
];

/// Look an option up by name or alias.
pub fn find(name: &str) -> Option<&'static OptDef> {
    OPTIONS
        .iter()
        .find(|d| d.name == name || d.aliases.contains(&name))
}

/// All names and aliases, for "did you mean".
pub fn all_names() -> impl Iterator<Item = &'static str> {
    OPTIONS
        .iter()
        .flat_map(|d| std::iter::once(d.name).chain(d.aliases.iter().copied()))
}

/// ioengine values fio 3.33 (Debian build) knows; flashpath models the ones
/// in [`super::IoEngine`].
pub static KNOWN_ENGINES: &[&str] = &[
    "cpuio",
    "mmap",
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "null",
    "net",
    "netsplice",
    "ftruncate",
    "filecreate",
    "filestat",
    "filedelete",
    "exec",
    "posixaio",
    "falloc",
    "e4defrag",
    "splice",
    "gfapi",
    "gfapi_async",
    "mtd",
    "sg",
    "io_uring",
    "io_uring_cmd",
    "nbd",
    "libaio",
    "rdma",
    "rados",
    "rbd",
    "pmemblk",
    "dev-dax",
    "libpmem",
];

/// docs/fio-options.md: every option of the table with its type and what
/// flashpath does with it, made from the table so that it cannot drift
/// (the test `fio_options_doc_is_current` compares it; run it with
/// `FLASHPATH_UPDATE_DOCS=1` to rewrite the page).
pub fn options_markdown() -> String {
    use std::fmt::Write as _;
    let mut out = String::from(
        "# fio 3.33 options in flashpath\n\n\
         Made from the option table (`crates/flashpath/src/workload/fio/options.rs`) by\n\
         `FLASHPATH_UPDATE_DOCS=1 cargo test -p flashpath --lib fio_options_doc_is_current`;\n\
         a test fails when this page and the table differ. Every value is first\n\
         checked as fio 3.33 checks it (type, limits, the option's callback), whatever\n\
         flashpath does with the option afterwards.\n\n\
         What flashpath does with an option:\n\n\
         - **modelled**: the value shapes the simulated I/O (a value flashpath does not\n\
         \x20 simulate is refused with the reason);\n\
         - **report**: the value shapes the report (output-only);\n\
         - **ignored**: it cannot change the simulated I/O (logging, file creation,\n\
         \x20 buffer contents, page-cache hints, process or thread choice); listed by\n\
         \x20 `--parse-only` and in the JSON's `flashpath.ignored_options`;\n\
         - **ignored unless X**: it acts only when option X is on, and every value of\n\
         \x20 X that turns it on is refused;\n\
         - **only V**: accepted at these values (fio's default or \"off\"), where it\n\
         \x20 changes nothing; any other value is refused by name;\n\
         - **refused**: it could change the simulated I/O and is not modelled.\n\n\
         Some modelled options are refused in combinations the job set-up checks\n\
         (`workload/fio/setup.rs`), each with its reason.\n\n\
         Where fio 3.33 itself fails a job when it runs it (no `size=` for a file that\n\
         does not exist, a size below the block size, a CPU or NUMA node the host\n\
         lacks, a missing `read_iolog` or verify state file, `hipri` on a queue\n\
         without poll queues), flashpath refuses it with fio's message;\n\
         `python3 tests/fio_coverage.py` counts such jobs as \"fails as fio fails\".\n\
         An iolog's `trim` lines are skipped as fio 3.33 skips them (\"bad ddir: 2\").\n\
         The simulated host is one NUMA node; its virtual clock starts at the Unix\n\
         epoch (`log_unix_epoch` adds the job's virtual start to log times).\n\n\
         | option | aliases | type | engines | flashpath |\n\
         |---|---|---|---|---|\n",
    );
    let mut defs: Vec<&OptDef> = OPTIONS.iter().collect();
    defs.sort_by_key(|d| d.name);
    for d in defs {
        let ty = match d.kind.ty {
            Ty::Str | Ty::StrUll | Ty::StrMulti if !d.kind.values.is_empty() => {
                format!("one of {}", d.kind.values.join(", "))
            }
            Ty::Str | Ty::StrUll | Ty::StrMulti | Ty::Store => "text".to_string(),
            Ty::Int | Ty::Ull | Ty::Val => "number".to_string(),
            Ty::Zone => "number or zones".to_string(),
            Ty::Time => "time".to_string(),
            Ty::Range => "range".to_string(),
            Ty::Bool => "0 or 1".to_string(),
            Ty::Set => "flag".to_string(),
            Ty::Floats => "list of numbers".to_string(),
            Ty::Deprecated => "deprecated (refused)".to_string(),
            Ty::SoftDeprecated => "deprecated (no effect)".to_string(),
        };
        let what = match d.handling {
            Handling::Model(_) => "modelled".to_string(),
            Handling::Record(_) => "report".to_string(),
            Handling::Ignore => "ignored".to_string(),
            Handling::Inert(master) => format!("ignored unless `{master}`"),
            Handling::RefuseUnless(vals) => format!(
                "only {}",
                vals.iter()
                    .map(|v| format!("`{v}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Handling::Refuse => "refused".to_string(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            d.name,
            d.aliases
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", "),
            ty.replace('|', "\\|"),
            d.engines.map(|e| e.join(", ")).unwrap_or_default(),
            what
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_options_doc_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/fio-options.md");
        let want = options_markdown();
        if std::env::var_os("FLASHPATH_UPDATE_DOCS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "docs/fio-options.md is not the option table's; rewrite it with \
             FLASHPATH_UPDATE_DOCS=1 cargo test -p flashpath --lib fio_options_doc_is_current"
        );
    }

    #[test]
    fn every_table_name_is_unique() {
        let mut names: Vec<&str> = all_names().collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
