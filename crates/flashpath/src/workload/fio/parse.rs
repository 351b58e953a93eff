//! A fio job file as fio 3.33 assembles it into jobs (init.c
//! `parse_jobs_ini`, `add_job`): the ini layer's items ([`super::ini`]),
//! global sections as defaults, options in fio's priority order, each
//! option looked up in the table ([`super::options`]), its value read
//! ([`super::value`], [`super::number`]) and checked by its callback
//! ([`super::callbacks`]), then given its meaning. The quirks are
//! reproduced on purpose; each is checked by a probe in
//! `fixtures/fio/parse-probes/` (see FORMAT-NOTES.md there).

use std::path::Path;

use super::callbacks::{
    callback, numeric_callback, opt_postfix, parse_bssplit_dirs, parse_cpu_list, parse_distribution,
};
use super::ini::{read_items, Item, ParseContext, MAX_JOB_TEXT_BYTES, TEXT_BOUND};
use super::job::*;
use super::number::{as_percent, as_zones, atoi, fio_bytes, ZONE_BASE};
use super::options::{self, Handling, Ty};
use super::value::{handle_option, posval_match, Parsed};
use crate::error::{clip, nearest, Diagnostic, InputError};
use crate::Result;

/// Parse a job file from disk. Includes are looked up as fio does: relative
/// to the current directory first, then next to the including file.
pub fn parse_job_file(path: &Path, ctx: &ParseContext) -> Result<JobFile> {
    let name = path.display().to_string();
    let text = crate::input::read_bounded(path, MAX_JOB_TEXT_BYTES, TEXT_BOUND)
        .map_err(|e| InputError::new(name.clone(), None, format!("cannot read job file: {e}")))?;
    let text = String::from_utf8_lossy(&text);
    let base = path.parent().unwrap_or_else(|| Path::new("."));
    parse_job_str(&name, &text, base, ctx)
}

/// Parse job-file text. `path_for_messages` names it in errors;
/// `base_dir` is where `include` files are looked for.
pub fn parse_job_str(
    path_for_messages: &str,
    text: &str,
    base_dir: &Path,
    ctx: &ParseContext,
) -> Result<JobFile> {
    let items = read_items(path_for_messages, text, base_dir, ctx)?;
    build(path_for_messages, &items, ctx, base_dir)
}

// ---------------------------------------------------------------------------
// Building jobs.

/// Parser state beyond JobSpec: block-size sources are kept apart because
/// fio resolves them at the end (bssplit beats bsrange beats bs).
#[derive(Clone, Debug)]
struct Draft {
    spec: JobSpec,
    bs: [u64; 3],
    bsrange: [Option<(u64, u64)>; 3],
    bssplit: [Option<Vec<(u64, u32)>>; 3],
    iodepth_low_set: bool,
    /// verify= was given (verify_pattern then does not set it).
    verify_set: bool,
}

impl Draft {
    fn new() -> Self {
        Draft {
            spec: JobSpec::default(),
            bs: [4096; 3],
            bsrange: [None, None, None],
            bssplit: [None, None, None],
            iodepth_low_set: false,
            verify_set: false,
        }
    }

    /// init.c fixup_options and the block-size resolution.
    fn finish(mut self) -> JobSpec {
        for d in 0..3 {
            self.spec.bs[d] = if let Some(s) = self.bssplit[d].take() {
                BlockSize::Split(s)
            } else if let Some((min, max)) = self.bsrange[d] {
                if min == max {
                    BlockSize::Fixed(min)
                } else {
                    BlockSize::Range { min, max }
                }
            } else {
                BlockSize::Fixed(self.bs[d])
            };
        }
        let s = &mut self.spec;
        // fixup_options: iodepth_low defaults to (and is capped at) iodepth;
        // iodepth_batch is capped at iodepth; complete_max >= complete_min.
        if !self.iodepth_low_set || s.iodepth_low > s.iodepth || s.iodepth_low == 0 {
            s.iodepth_low = s.iodepth;
        }
        if s.iodepth_batch_submit == 0 || s.iodepth_batch_submit > s.iodepth {
            s.iodepth_batch_submit = s.iodepth;
        }
        if s.iodepth_batch_complete_max < s.iodepth_batch_complete_min {
            s.iodepth_batch_complete_max = s.iodepth_batch_complete_min;
        }
        self.spec
    }
}

fn build(path: &str, items: &[Item], ctx: &ParseContext, base_dir: &Path) -> Result<JobFile> {
    let mut jf = JobFile {
        path: path.to_string(),
        ..JobFile::default()
    };
    let mut defaults = Draft::new();
    let mut i = 0;
    while i < items.len() {
        let Item::Section { name, file, line } = &items[i] else {
            // read_lines never yields an option before the first section.
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while j < items.len() && matches!(items[j], Item::Opt { .. }) {
            j += 1;
        }
        let opts = &items[i + 1..j];
        // init.c: a section is global when its first 6 characters are "global".
        let is_global = name.starts_with("global");
        let mut draft = if is_global {
            defaults.clone()
        } else {
            let mut d = defaults.clone();
            d.spec.name = name.clone();
            d.spec.line = *line;
            d.spec.own_options.clear();
            d
        };
        // options.c sort_options: ioengine and kb_base are parsed first, as
        // the engine decides which engine options exist and kb_base how
        // sizes read.
        // options.c sort_options: a stable sort by option priority.
        // ioengine, kb_base and unit_base go first (the engine decides which
        // engine options exist, kb_base how sizes read); filename (prio -1)
        // goes last. fio's JSON "job options" come out in this order too.
        let prio = |o: &Item| match o {
            Item::Opt { key, .. } => match key.as_str() {
                "ioengine" | "kb_base" | "unit_base" => 0,
                "filename" => 2,
                _ => 1,
            },
            Item::Section { .. } => 1,
        };
        let mut ordered: Vec<&Item> = opts.iter().collect();
        ordered.sort_by_key(|o| prio(o));
        for it in &ordered {
            if let Item::Opt {
                file,
                line,
                key,
                value,
            } = it
            {
                apply(
                    &mut draft,
                    &mut jf,
                    ctx,
                    base_dir,
                    file,
                    *line,
                    key,
                    value.as_deref(),
                )?;
            }
        }
        // "job options" / "global options" as written, bare flags left out.
        let written: Vec<(String, String)> = ordered
            .iter()
            .filter_map(|o| match o {
                Item::Opt {
                    key,
                    value: Some(v),
                    ..
                } => Some((key.clone(), v.clone())),
                _ => None,
            })
            .collect();
        if is_global {
            jf.global_options
                .get_or_insert_with(Vec::new)
                .extend(written);
            defaults = draft;
        } else {
            draft.spec.own_options = written;
            let mut spec = draft.finish();
            // init.c fixup_options: without a runtime, time_based is
            // dropped with a warning and the job does its size once.
            if spec.time_based && spec.runtime.is_none() {
                spec.time_based = false;
                jf.warnings.push(Diagnostic {
                    file: file.clone(),
                    line: Some(spec.line),
                    message: format!(
                        "job '{}': time_based requires a runtime/timeout setting \
                         (fio 3.33 drops it and runs the job's size once)",
                        spec.name
                    ),
                });
            }
            jf.jobs.push(spec);
        }
        i = j;
    }
    Ok(jf)
}

const RW_NAMES: &[(&str, RwKind)] = &[
    ("read", RwKind::Read),
    ("write", RwKind::Write),
    ("trim", RwKind::Trim),
    ("randread", RwKind::RandRead),
    ("randwrite", RwKind::RandWrite),
    ("randtrim", RwKind::RandTrim),
    ("rw", RwKind::ReadWrite),
    ("readwrite", RwKind::ReadWrite),
    ("randrw", RwKind::RandReadWrite),
    ("trimwrite", RwKind::TrimWrite),
    ("randtrimwrite", RwKind::RandTrimWrite),
];

fn engine_of(name: &str) -> Option<IoEngine> {
    Some(match name {
        "sync" => IoEngine::Sync,
        "psync" => IoEngine::Psync,
        "vsync" => IoEngine::Vsync,
        "pvsync" => IoEngine::Pvsync,
        "pvsync2" => IoEngine::Pvsync2,
        "libaio" => IoEngine::Libaio,
        "io_uring" => IoEngine::IoUring,
        "posixaio" => IoEngine::PosixAio,
        "null" => IoEngine::Null,
        _ => return None,
    })
}

/// "did you mean": only for names no longer than twice the longest option
/// name, since a longer one is farther than half its length from every
/// option (error::nearest's bound) and the distance costs its length times
/// each name's.
fn option_hint(key: &str) -> String {
    let longest = options::all_names().map(str::len).max().unwrap_or(0);
    if key.len() > 2 * longest {
        return String::new();
    }
    nearest(key, options::all_names())
        .map(|n| format!("; did you mean '{n}'?"))
        .unwrap_or_default()
}

#[allow(clippy::too_many_arguments)]
fn apply(
    d: &mut Draft,
    jf: &mut JobFile,
    ctx: &ParseContext,
    base_dir: &Path,
    file: &str,
    line: u32,
    key: &str,
    value: Option<&str>,
) -> Result<()> {
    let err = |m: String| InputError::new(file, Some(line), m);
    let shown = match value {
        Some(v) => clip(&format!("{key}={v}")),
        None => clip(key),
    };
    let Some(def) = options::find(key) else {
        return Err(err(format!(
            "bad option <{shown}>: not a fio option{}",
            option_hint(key)
        )));
    };
    if let Some(engines) = def.engines {
        let cur = d.spec.ioengine.fio_name();
        if !engines.contains(&cur) {
            return Err(err(format!(
                "bad option <{shown}>: '{key}' is an option of ioengine {}, not of {cur}",
                engines.join("/")
            )));
        }
    }
    let kb = u64::from(d.spec.kb_base);
    let bad = |why: &str| err(format!("failed parsing {shown}: {why}"));

    // What fio's parser makes of the value (parse.c), then the option's
    // own callback (options.c): fio refuses the job when either fails,
    // whatever flashpath does with the option afterwards.
    let ncpus = ctx.ncpus;
    let num_check = |v: u64| numeric_callback(def, v, ncpus);
    let parsed = handle_option(&def.kind, value, kb, Some(&num_check)).map_err(|w| bad(&w))?;
    callback(def, value, kb, ncpus, base_dir).map_err(|w| bad(&w))?;

    // The bs= quirk: a blank after '=' hides the unit suffix.
    if let Some(v) = value {
        if v.starts_with(char::is_whitespace)
            && matches!(
                def.kind.ty,
                Ty::Int | Ty::Ull | Ty::Val | Ty::Zone | Ty::Time
            )
            && v.trim_start().contains(|c: char| c.is_ascii_alphabetic())
        {
            jf.warnings.push(Diagnostic {
                file: file.to_string(),
                line: Some(line),
                message: format!(
                    "'{}': the blank after '=' makes fio 3.33 ignore the unit suffix \
                     (read as {}); write '{key}={}' if that is not meant",
                    shown,
                    parsed.first().map(|n| n.to_string()).unwrap_or_default(),
                    clip(v.trim())
                ),
            });
        }
    }

    let ignore = |jf: &mut JobFile, why: &str| {
        jf.ignored.push(Diagnostic {
            file: file.to_string(),
            line: Some(line),
            message: format!("option '{}' ignored: {why}", def.name),
        });
    };
    match def.handling {
        Handling::Model | Handling::Record => model(d, ctx, def.name, value, &parsed, kb, &err),
        Handling::Ignore => {
            ignore(jf, "it cannot change the simulated I/O");
            Ok(())
        }
        Handling::Inert(master) => {
            ignore(
                jf,
                &format!("it only acts together with '{master}', which flashpath refuses"),
            );
            Ok(())
        }
        Handling::RefuseUnless(ok) => {
            let v = value.unwrap_or("1").trim();
            let same = ok.iter().any(|a| {
                a.eq_ignore_ascii_case(v)
                    || (parsed.first().is_some()
                        && handle_option(&def.kind, Some(a), kb, None)
                            .is_ok_and(|p| p.first() == parsed.first()))
                    || (!def.kind.values.is_empty() && posval_match(def.kind.values, v) == Some(a))
            });
            if same {
                ignore(jf, "its value is fio's default (no effect)");
                Ok(())
            } else {
                Err(err(format!(
                    "option '{}' is not modelled by flashpath (accepted only as {key}={})",
                    def.name,
                    ok.join(" or ")
                )))
            }
        }
        Handling::Refuse => Err(err(format!(
            "option '{}' is not modelled by flashpath",
            def.name
        ))),
    }
}

fn us_to_ns(us: u64) -> u64 {
    us.saturating_mul(1000)
}

/// Turn an option fio accepted into JobSpec fields, storing what fio
/// stores (`parsed`, the parser's slots). A valid value flashpath does
/// not simulate is refused by name as not modelled.
#[allow(clippy::too_many_arguments)]
fn model(
    d: &mut Draft,
    ctx: &ParseContext,
    name: &str,
    value: Option<&str>,
    parsed: &Parsed,
    kb: u64,
    err: &dyn Fn(String) -> InputError,
) -> Result<()> {
    let s = &mut d.spec;
    let v = value.unwrap_or("");
    // The number fio stored (a boolean's C int, 0 meaning false; an INT's
    // low 32 bits).
    let n = parsed.first().unwrap_or(0);
    let on = n != 0;
    let not_modelled = |what: &str| err(format!("{what} is not modelled by flashpath"));
    // An option whose callback sees each part: the last part's value wins.
    let last = parsed.last.unwrap_or(0);
    match name {
        "description" => s.description = Some(v.to_string()),
        "name" => s.name = v.to_string(),
        "filename" => s.filename = Some(v.to_string()),
        "directory" => s.directory = Some(v.to_string()),
        "rw" => {
            // options.c str_rw_cb: the part after ':' is ddir_seq_nr for
            // random patterns (atoi) and ddir_seq_add (a size) for
            // sequential ones.
            let word = options::find("rw")
                .and_then(|o| posval_match(o.kind.values, v))
                .unwrap_or("read");
            let rw = RW_NAMES
                .iter()
                .find(|(n, _)| *n == word)
                .map_or(RwKind::Read, |(_, rw)| *rw);
            s.rw = rw;
            s.rw_nr = 0;
            s.rw_seq_add = 0;
            if let Some(p) = opt_postfix(v) {
                if rw.is_random() {
                    s.rw_nr = u64::try_from(atoi(p)).unwrap_or(0);
                } else {
                    // fio keeps a long long; the callback checked it reads.
                    let add = fio_bytes(p, kb).unwrap_or(0) as i64;
                    s.rw_seq_add = add;
                    s.rw_nr = u64::try_from(add).unwrap_or(0);
                }
            }
        }
        // str_rwmix_*_cb: the other direction gets the rest of 100.
        "rwmixread" => s.rwmixread = last as u32,
        "rwmixwrite" => s.rwmixread = 100u32.wrapping_sub(last as u32),
        "bs" => {
            for (dd, b) in parsed.slots.iter().enumerate() {
                if let Some(b) = b {
                    d.bs[dd] = *b;
                }
            }
        }
        "ba" => {
            for (dd, b) in parsed.slots.iter().enumerate() {
                if let Some(b) = b {
                    s.blockalign[dd] = *b;
                }
            }
        }
        "bsrange" => {
            for (dd, r) in parsed.ranges.iter().enumerate() {
                if let Some(r) = r {
                    d.bsrange[dd] = Some(*r);
                }
            }
        }
        "bssplit" => {
            let lists = parse_bssplit_dirs(v, kb).map_err(err)?;
            for (dd, list) in lists.into_iter().enumerate() {
                if list.is_some() {
                    d.bssplit[dd] = list;
                }
            }
        }
        "bs_unaligned" => s.bs_unaligned = on,
        "randrepeat" => s.randrepeat = on,
        "randseed" => s.randseed = Some(n),
        "norandommap" => s.norandommap = on,
        "ioengine" => {
            // A known engine's name ends at ':' (options.c keeps the word).
            let e = v.trim();
            let e = match e.split_once(':') {
                Some((w, _)) if options::KNOWN_ENGINES.contains(&w) => w,
                _ => e,
            };
            match engine_of(e) {
                Some(io) => {
                    // Engine options belong to the engine (td->eo is
                    // rebuilt when ioengine changes).
                    if s.ioengine != io {
                        s.hipri = false;
                    }
                    s.ioengine = io;
                }
                None if options::KNOWN_ENGINES.contains(&e) => {
                    return Err(err(format!(
                        "ioengine '{e}' is not modelled by flashpath (modelled: sync, psync, \
                         vsync, pvsync, pvsync2, libaio, io_uring, posixaio, null)"
                    )))
                }
                None => {
                    let hint = if e.len() <= 64 {
                        nearest(e, options::KNOWN_ENGINES.iter().copied())
                            .map(|n| format!("; did you mean '{n}'?"))
                            .unwrap_or_default()
                    } else {
                        String::new()
                    };
                    return Err(err(format!("engine {} not loadable{hint}", clip(e))));
                }
            }
        }
        "iodepth" => s.iodepth = n as u32,
        "iodepth_batch" => s.iodepth_batch_submit = n as u32,
        "iodepth_batch_complete_min" => s.iodepth_batch_complete_min = n as u32,
        "iodepth_batch_complete_max" => s.iodepth_batch_complete_max = n as u32,
        "iodepth_low" => {
            s.iodepth_low = n as u32;
            d.iodepth_low_set = true;
        }
        // str_size_cb: N% of the file, Nz zones, or bytes.
        "size" => {
            if let Some(p) = as_percent(last) {
                s.size = None;
                s.size_percent = Some(p as u32);
            } else if as_zones(last).is_some() {
                return Err(not_modelled("option 'size' in zones (Nz)"));
            } else {
                s.size = Some(last);
                s.size_percent = None;
            }
        }
        "io_size" => {
            if as_zones(last).is_some() {
                return Err(not_modelled("option 'io_size' in zones (Nz)"));
            } else if last > ZONE_BASE + u64::from(u32::MAX) {
                return Err(not_modelled("option 'io_size' as a percentage"));
            }
            s.io_size = Some(last);
        }
        "filesize" => {
            // filesize=low-high: fio picks each file's size in the range.
            if parsed.slots[1].is_some_and(|hi| Some(hi) != parsed.slots[0]) {
                return Err(not_modelled(
                    "option 'filesize' as a range (random file sizes)",
                ));
            }
            s.filesize = Some(n);
        }
        "offset" => {
            if let Some(p) = as_percent(last) {
                s.offset = 0;
                s.offset_percent = Some(p as u32);
            } else if as_zones(last).is_some() {
                return Err(not_modelled("option 'offset' in zones (Nz)"));
            } else {
                s.offset = last;
                s.offset_percent = None;
            }
        }
        "offset_increment" => {
            if as_percent(last).is_some() {
                return Err(not_modelled("option 'offset_increment' as a percentage"));
            } else if as_zones(last).is_some() {
                return Err(not_modelled("option 'offset_increment' in zones (Nz)"));
            }
            s.offset_increment = last;
        }
        "number_ios" => s.number_ios = (n > 0).then_some(n),
        "nrfiles" => s.nrfiles = n as u32,
        "direct" => s.direct = on,
        // buffered is the inverse of direct (options.c: same field, .neg;
        // the parser already inverted it).
        "buffered" => s.direct = on,
        "invalidate" => s.invalidate = on,
        "end_fsync" | "fsync_on_close" => s.end_fsync |= on,
        // A block device has no metadata to skip: fdatasync syncs what
        // fsync does (blkdev_fsync).
        "fsync" | "fdatasync" => s.fsync_blocks = n as u32,
        "fadvise_hint" => {
            s.fadvise_hint = match posval_match(&["0", "1", "random", "sequential"], v) {
                Some("0") => FadviseHint::None,
                Some("random") => FadviseHint::Random,
                Some("sequential") => FadviseHint::Sequential,
                _ => FadviseHint::ByPattern,
            }
        }
        "mem" => {
            // mmap:FILE and friends back the buffers with a file; the
            // buffers' contiguity is what the model reads.
            let word = v.split_once(':').map_or(v, |(w, _)| w);
            s.io_mem = crate::mm::thp::IoMem::parse(word)
                .ok_or_else(|| not_modelled(&format!("mem={}", clip(v))))?;
        }
        "loops" => s.loops = n as u32,
        "numjobs" => s.numjobs = n as u32,
        "startdelay" => {
            // startdelay=low-high: fio draws the delay in the range.
            let lo = us_to_ns(n);
            let hi = parsed.slots[1].map_or(lo, us_to_ns);
            s.startdelay = lo;
            s.startdelay_high = (hi != lo).then_some(hi);
        }
        "runtime" => s.runtime = (n > 0).then(|| us_to_ns(n)),
        "ramp_time" => s.ramp_time = us_to_ns(n),
        "time_based" => s.time_based = on,
        "thinktime" => s.thinktime = us_to_ns(n),
        "thinktime_spin" => s.thinktime_spin = us_to_ns(n),
        "thinktime_blocks" => s.thinktime_blocks = n as u32,
        "rate" | "rate_min" | "rate_iops" => {
            let target = match name {
                "rate" => &mut s.rate,
                "rate_min" => &mut s.rate_min,
                _ => &mut s.rate_iops,
            };
            for (dd, r) in parsed.slots.iter().enumerate() {
                if let Some(r) = r {
                    target[dd] = *r;
                }
            }
        }
        "rate_process" => {
            s.rate_process = match posval_match(&["linear", "poisson"], v) {
                Some("poisson") => RateProcess::Poisson,
                _ => RateProcess::Linear,
            }
        }
        "random_distribution" => {
            let dist = parse_distribution(v, kb).map_err(err)?;
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
            s.random_distribution = dist.dist;
        }
        "cpumask" => {
            // str_cpumask_cb: the low 32 bits (bit 31 for any higher one).
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
        }
        "cpus_allowed" => {
            s.cpus_allowed = Some(parse_cpu_list(v, ctx.ncpus).map_err(err)?);
        }
        "stonewall" => s.stonewall = on,
        "new_group" => s.new_group = on,
        "group_reporting" => s.group_reporting = on,
        "kb_base" => {
            s.kb_base = if posval_match(&["1000"], v).is_some() {
                1000
            } else {
                1024
            }
        }
        "percentile_list" => s.percentile_list = Some(parsed.floats.clone()),
        "clat_percentiles" => s.clat_percentiles = on,
        "lat_percentiles" => s.lat_percentiles = on,
        "slat_percentiles" => s.slat_percentiles = on,
        "unified_rw_reporting" => {
            s.unified_rw_reporting =
                match posval_match(&["none", "mixed", "both", "0", "1", "2"], v) {
                    Some("mixed" | "1") => "mixed",
                    Some("both" | "2") => "both",
                    _ => "none",
                }
                .to_string()
        }
        "unit_base" => {
            s.unit_base = match posval_match(&["0", "8", "1"], v) {
                Some("8") => 8,
                Some("1") => 1,
                _ => 0,
            }
        }
        "hipri" => s.hipri = on,
        "read_iolog" => s.read_iolog = Some(v.to_string()),
        "write_iolog" => s.write_iolog = Some(v.to_string()),
        // str_write_*_log_cb: a bare option logs under the job's name.
        "write_lat_log" => s.write_lat_log = Some(value.unwrap_or(&s.name).to_string()),
        "write_bw_log" => s.write_bw_log = Some(value.unwrap_or(&s.name).to_string()),
        "write_iops_log" => s.write_iops_log = Some(value.unwrap_or(&s.name).to_string()),
        "log_offset" => s.log_offset = on,
        "per_job_logs" => s.per_job_logs = on,
        "log_avg_msec" => s.log_avg_msec = n,
        "log_max_value" => s.log_max_value = on,
        "replay_no_stall" => s.replay.no_stall = on,
        "replay_redirect" => s.replay_redirect = Some(v.to_string()),
        "replay_time_scale" => s.replay.time_scale_pct = n as u32,
        "replay_scale" => s.replay.offset_scale = n.max(1),
        "replay_align" => s.replay.align = n,
        "replay_skip" => {
            // options.c str_replay_skip_cb (the callback checked the words).
            s.replay.skip = 0;
            for word in v.trim().split(',') {
                s.replay.skip |= match word {
                    "read" => 1 << 0,
                    "write" => 1 << 1,
                    "trim" => 1 << 2,
                    _ => crate::workload::iolog::SKIP_SYNC,
                };
            }
        }
        "exitall" => s.exitall = on,
        "exit_what" => {
            s.exit_what = posval_match(&["group", "stonewall", "all"], v)
                .unwrap_or("group")
                .to_string();
        }
        "wait_for" => s.wait_for = Some(v.to_string()),
        "cpus_allowed_policy" => {
            s.cpus_allowed_split = posval_match(&["split"], v).is_some();
        }
        "do_verify" => s.do_verify = on,
        "verify" => {
            // options.c: "0" turns it off.
            let word = options::find("verify")
                .and_then(|o| posval_match(o.kind.values, v))
                .unwrap_or("0");
            s.verify = (word != "0").then(|| word.to_string());
            d.verify_set = true;
        }
        // str_verify_pattern_cb: a pattern means verify=pattern unless
        // verify was set.
        "verify_pattern" => {
            if !d.verify_set {
                s.verify = Some("pattern".to_string());
            }
        }
        "percentage_random" => {
            for (dd, p) in parsed.slots.iter().enumerate() {
                if let Some(p) = p {
                    s.percentage_random[dd] = *p as u32;
                }
            }
        }
        other => {
            return Err(err(format!(
                "option '{other}' is not modelled by flashpath"
            )))
        }
    }
    Ok(())
}
