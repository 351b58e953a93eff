//! One job's I/O sequence, in fio's order: direction (io_u.c get_rw_ddir,
//! with the rwmix switching of set_rwmix_bytes), offset (get_next_offset:
//! sequential per direction with the `:N` hole, or random through the
//! random map), block size (get_next_buflen), file (file_service_type
//! roundrobin), and the end of the job (size/io_size/number_ios/loops).
//!
//! Randomness comes from `RngStream`s, one per purpose, so the sequence is
//! deterministic for a seed but not bit-identical to fio's tausworthe
//! generator. Nothing is allocated per `next()`: the random map (one bit per
//! minimum block) and the per-file positions are allocated in `new`.

use super::job::*;
use crate::sim::rng::RngStream;
use crate::workload::{Ddir, IoUnit};

/// lib/zipf.c caps the zeta sum at this many terms (ZIPF_MAX_GEN).
const ZIPF_MAX_GEN: u64 = 10_000_000;
/// lib/gauss.c: sum of this many uniform deviates.
const GAUSS_ITERS: i64 = 12;
/// fio's hash.h GOLDEN_RATIO_64; zipf/pareto/gauss scramble the rank so hot
/// blocks are spread over the file instead of packed at its start.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

enum Dist {
    Uniform,
    Zipf {
        theta: f64,
        zeta2: f64,
        zetan: f64,
        off: u64,
    },
    Pareto {
        pow: f64,
        off: u64,
    },
    Gauss {
        stddev: u64,
    },
    /// cumulative access percent, start fraction, size fraction
    Zoned(Vec<(f64, f64, f64)>),
    /// zoned_abs: cumulative access percent, first block, blocks.
    ZonedBlocks(Vec<(f64, u64, u64)>),
}

pub struct IoStream {
    rw: RwKind,
    rwmix: [u32; 2],
    bs: [BlockSize; 3],
    bs_unaligned: bool,
    /// Granularity of random offsets and of the random map: blockalign
    /// when set, else min_bs (io_u.c: offset = block * ba).
    gran: u64,
    base: u64,
    /// Where the clone's area starts in each of its files (offset,
    /// offset_increment): `base` less the region's start.
    clone_start: u64,
    file_len: u64,
    nfiles: u64,
    file_idx: u64,
    /// file_service_type and file_service_nr (fio's default roundrobin:1
    /// takes the plain turn above, every I/O the next file).
    file_service: (FileService, u32),
    /// The file picked last and the I/Os it has left before the next pick
    /// (td->file_service_file, td->file_service_left).
    service_file: Option<u64>,
    service_left: u32,
    /// Bytes issued per file in this pass: a file with `file_len` of them
    /// is done (fio_file_done) and is not picked again until every file is.
    file_bytes: Vec<u64>,
    /// file_service_type=random's draws (td->next_file_state).
    r_file: RngStream,
    /// Per file, per direction: end of the last I/O (fio's f->last_pos).
    last_pos: Vec<[u64; 3]>,
    /// zonemode=strided: (zonesize, zonerange, zoneskip), the bytes done
    /// in the current zone (td->zone_bytes) and where the zone starts in
    /// the file (f->file_offset moves by range + skip).
    stride: Option<(u64, u64, u64)>,
    zone_bytes: u64,
    zone_start: u64,
    seq_add: i64,
    /// percentage_random per direction (100 = all random).
    pct_random: [u32; 3],
    /// Random patterns: new offset every `seq_nr` I/Os.
    seq_nr: u64,
    seq_count: u64,
    nblocks: u64,
    use_map: bool,
    map: BlockMap,
    map_used: u64,
    dist: Dist,
    budget: Option<u64>,
    bytes_done: u64,
    /// A sequential pass that reaches the end of its file starts over
    /// only while this allows it: time_based, or io_size (backend.c
    /// keep_running loops until io_size is done), else `loops` passes.
    wrap_always: bool,
    passes_left: u32,
    /// The file's end ended the job (keep_running: the files are done
    /// and no io_size asks for more).
    ended: bool,
    ios_left: Option<u64>,
    io_issues: [u64; 3],
    rwmix_ddir: Ddir,
    rwmix_issues: u64,
    /// The machine's view of the rate limits (see IoSource::rate_view).
    rate_until_due: [Option<u64>; 2],
    pending_write: Option<IoUnit>,
    r_off: RngStream,
    /// randrepeat=1 with the random map on a job of `loops` passes: the
    /// offset stream as it began, taken up again at each pass (see
    /// `random_offset`).
    r_off_loop: Option<RngStream>,
    r_bs: RngStream,
    r_mix: RngStream,
    r_dist: RngStream,
    /// verify with do_verify on a writing job: a replica of this stream
    /// from its start, whose writes become the read-back pass once this
    /// stream's work is done (fio verifies after the write phase, in write
    /// order when there is a random map: backend.c do_verify, io_hist_list).
    verify: Option<Box<IoStream>>,
    /// Writes logged for verify and not yet read back (fio's
    /// io_hist_len): the replica's next `hist_len` writes.
    hist_len: u64,
    /// verify_backlog and verify_backlog_batch (0: none / the backlog).
    backlog: u64,
    backlog_batch: u64,
    /// Verify reads left in the current backlog round (td->verify_batch).
    batch_left: u64,
    /// Direction of the last I/O (td->last_ddir; fio sets it at
    /// completion, the stream at issue: the same at iodepth=1).
    last_ddir: Option<Ddir>,
    /// With verify and loops: bytes per pass, and where this pass ends.
    /// fio verifies after every pass (backend.c thread_main runs do_io
    /// then do_verify in each keep_running round).
    loop_bytes: u64,
    loop_end: u64,
}

fn min_of(b: &BlockSize) -> u64 {
    match b {
        BlockSize::Fixed(x) => *x,
        BlockSize::Range { min, .. } => *min,
        BlockSize::Split(v) => v.iter().map(|e| e.0).min().unwrap_or(4096),
    }
    .max(1)
}

/// fio's random map (lib/axmap.c): a bit per block, kept in chunks made
/// when a block in them is first marked. A job over a whole device with
/// 1-byte blocks has 2^38 blocks; memory follows the blocks the job
/// touches (plus a pointer per 2^18 blocks), not the device's size. A
/// lookup is an index, and a new pass zeroes the chunks it already has,
/// so after the first pass the hot path allocates nothing.
#[derive(Clone, Debug, Default)]
struct BlockMap {
    chunks: Vec<Option<Box<[u64]>>>,
    /// 64-block words the map covers.
    words: u64,
}

/// Words per chunk: 32 KiB, 2^18 blocks.
const MAP_CHUNK_WORDS: u64 = 4096;

impl BlockMap {
    fn new(words: u64) -> Self {
        BlockMap {
            chunks: vec![None; words.div_ceil(MAP_CHUNK_WORDS) as usize],
            words,
        }
    }

    fn word(&self, w: u64) -> u64 {
        self.chunks[(w / MAP_CHUNK_WORDS) as usize]
            .as_ref()
            .map_or(0, |c| c[(w % MAP_CHUNK_WORDS) as usize])
    }

    fn set(&mut self, block: u64) {
        let w = block / 64;
        let chunk = self.chunks[(w / MAP_CHUNK_WORDS) as usize]
            .get_or_insert_with(|| vec![0; MAP_CHUNK_WORDS as usize].into_boxed_slice());
        chunk[(w % MAP_CHUNK_WORDS) as usize] |= 1u64 << (block % 64);
    }

    /// Every block free again (axmap_reset), keeping the chunks made.
    fn clear(&mut self) {
        self.chunks.iter_mut().flatten().for_each(|c| c.fill(0));
    }

    #[cfg(test)]
    fn chunks_made(&self) -> usize {
        self.chunks.iter().flatten().count()
    }
}

impl IoStream {
    pub fn new(
        spec: &JobSpec,
        region_start: u64,
        region_len: u64,
        seed: u64,
        clone_index: u32,
    ) -> IoStream {
        let rw = spec.rw;
        let min_bs = Ddir::ALL
            .iter()
            .filter(|d| rw.has(**d))
            .map(|d| min_of(&spec.bs[d.index()]))
            .min()
            .unwrap_or(4096);
        // Where this clone's area starts: offset plus clone_index *
        // offset_increment (HOWTO "offset_increment"), an offset=N% in
        // bytes already (layout::resolve_offset_percent).
        let pct = |p: u32| (u128::from(region_len) * u128::from(p) / 100) as u64;
        let start = spec.clone_offset(clone_index).min(region_len);
        // The file ends at filesize when one is given (the region may be
        // larger: another job's offset extends it, or the layout rounds
        // it up); fio's I/O stops at the file's real size.
        let file_end = match spec.filesize {
            Some(fs) if spec.nrfiles.max(1) == 1 => region_len.min(fs.max(start)),
            _ => region_len,
        };
        let avail = file_end - start;
        let total = match (spec.size, spec.size_percent) {
            (Some(s), _) => s,
            (None, Some(p)) => pct(p),
            (None, None) => avail,
        }
        .min(avail);
        let nfiles = u64::from(spec.nrfiles.max(1));
        let per_file = spec.filesize.unwrap_or(total / nfiles).min(avail / nfiles);
        // filesetup.c: a file's I/O size is rounded down to the min block size.
        let file_len = per_file / min_bs * min_bs;
        let gran = Ddir::ALL
            .iter()
            .filter(|d| rw.has(**d))
            .map(|d| spec.blockalign[d.index()])
            .max()
            .filter(|b| *b > 0)
            .unwrap_or(min_bs)
            .min(file_len.max(1));
        let nblocks = file_len / gran;
        let per_loop = spec.io_size.unwrap_or(file_len * nfiles);
        let budget = if spec.time_based {
            None
        } else {
            Some(per_loop.saturating_mul(u64::from(spec.loops.max(1))))
        };
        let name = |p: &str| format!("job{clone_index}.{p}");
        let mut r_dist = RngStream::new(seed, &name("dist"));
        let n = nblocks.max(1);
        let dist = match &spec.random_distribution {
            RandomDistribution::Random => Dist::Uniform,
            RandomDistribution::Zipf(theta) => {
                // lib/zipf.c zipf_init: zeta2 and zetan = sum 1/i^theta.
                let zeta = |k: u64| (1..=k).map(|i| (i as f64).powf(-theta)).sum::<f64>();
                Dist::Zipf {
                    theta: *theta,
                    zeta2: zeta(2),
                    zetan: zeta(n.min(ZIPF_MAX_GEN)),
                    off: r_dist.next_u64(),
                }
            }
            RandomDistribution::Pareto(h) => Dist::Pareto {
                // lib/zipf.c pareto_init: pareto_pow = log(h) / log(1 - h).
                pow: h.ln() / (1.0 - h).ln(),
                off: r_dist.next_u64(),
            },
            RandomDistribution::Normal(dev) => Dist::Gauss {
                // lib/gauss.c gauss_init: stddev = ceil(nranges * dev / 100),
                // at most nranges / 2.
                stddev: ((n as f64 * dev / 100.0).ceil() as u64).min(n / 2),
            },
            RandomDistribution::Zoned(z) => {
                let mut acc = 0.0;
                let mut st = 0.0;
                let mut v = Vec::with_capacity(z.len());
                for (a, s) in z {
                    acc += a;
                    v.push((acc, st / 100.0, s / 100.0));
                    st += s;
                }
                Dist::Zoned(v)
            }
            RandomDistribution::ZonedAbs(z) => {
                // io_u.c __get_next_rand_offset_zoned_abs: zone i covers
                // blocks [sum of earlier sizes, + its size) / ba from the
                // file's start (run.rs refuses zones past the file's end).
                let mut acc = 0.0;
                let mut start = 0u64;
                let mut v = Vec::with_capacity(z.len());
                for (a, bytes) in z {
                    acc += a;
                    let first = start / gran;
                    start = start.saturating_add(*bytes);
                    let end = (start / gran).min(n);
                    v.push((acc, first.min(n - 1), end.saturating_sub(first).max(1)));
                }
                Dist::ZonedBlocks(v)
            }
        };
        // fio uses the random map only for uniform random offsets: with a
        // skewed distribution the map would push hits away from the hot
        // blocks (io_u.c get_next_rand_block checks the map; lib/zipf.c
        // draws ranks without it). random_generator=lfsr gives each block
        // once per pass even with norandommap (lib/lfsr.c walks every
        // value of its period once); flashpath gets the same set of
        // offsets from the map, in another order than fio's LFSR.
        let use_map = rw.is_random()
            && (!spec.norandommap || spec.lfsr)
            && matches!(spec.random_distribution, RandomDistribution::Random);
        let words = if use_map { nblocks.div_ceil(64) } else { 0 };
        IoStream {
            rw,
            rwmix: [spec.rwmixread.min(100), 100 - spec.rwmixread.min(100)],
            bs: spec.bs.clone(),
            bs_unaligned: spec.bs_unaligned,
            gran,
            base: region_start + start,
            clone_start: start,
            file_len,
            nfiles,
            file_idx: 0,
            file_service: spec.file_service,
            service_file: None,
            service_left: 0,
            file_bytes: vec![0; nfiles as usize],
            r_file: RngStream::new(seed, &name("file")),
            last_pos: vec![[0; 3]; nfiles as usize],
            stride: (spec.zones.mode == super::ZoneMode::Strided && spec.zones.size > 0)
                .then_some((spec.zones.size, spec.zones.range.max(1), spec.zones.skip)),
            zone_bytes: 0,
            zone_start: 0,
            seq_add: spec.rw_seq_add,
            seq_nr: spec.rw_nr.max(1),
            pct_random: spec.percentage_random,
            seq_count: 0,
            nblocks,
            use_map,
            map: BlockMap::new(words),
            map_used: 0,
            dist,
            budget,
            bytes_done: 0,
            wrap_always: spec.time_based || spec.io_size.is_some() || nfiles > 1,
            passes_left: spec.loops.max(1) - 1,
            ended: false,
            ios_left: spec.number_ios,
            io_issues: [0; 3],
            rwmix_ddir: Ddir::Read,
            rwmix_issues: 0,
            rate_until_due: [None, None],
            pending_write: None,
            r_off: RngStream::new(seed, &name("offset")),
            r_off_loop: (use_map
                && spec.randrepeat
                && !(spec.time_based || spec.io_size.is_some() || nfiles > 1))
                .then(|| RngStream::new(seed, &name("offset"))),
            r_bs: RngStream::new(seed, &name("bs")),
            r_mix: RngStream::new(seed, &name("rwmix")),
            r_dist,
            verify: (spec.verify.is_some()
                && spec.do_verify
                && !spec.time_based
                && rw.has(Ddir::Write))
            .then(|| {
                let mut plain = spec.clone();
                plain.verify = None;
                Box::new(IoStream::new(
                    &plain,
                    region_start,
                    region_len,
                    seed,
                    clone_index,
                ))
            }),
            hist_len: 0,
            backlog: spec.verify_backlog,
            backlog_batch: spec.verify_batch,
            batch_left: 0,
            last_ddir: None,
            loop_bytes: per_loop,
            loop_end: per_loop,
        }
    }

    /// A verify read: the replica's next write, issued as a read. Verify
    /// reads do not count against the job's size (fio's this_io_bytes
    /// leaves out IO_U_F_VER_LIST I/O) but show as reads in the report.
    fn next_verify(&mut self) -> Option<IoUnit> {
        let rep = self.verify.as_mut()?;
        loop {
            let u = rep.next()?;
            if u.ddir == Ddir::Write {
                self.hist_len = self.hist_len.saturating_sub(1);
                self.last_ddir = Some(Ddir::Read);
                return Some(IoUnit {
                    ddir: Ddir::Read,
                    ..u
                });
            }
        }
    }

    /// A verify read due before the next I/O: the end of a pass of a
    /// looped job reads back that pass's writes; verify_backlog reads
    /// back a batch whenever the logged writes reach a multiple of it
    /// after a write (io_u.c check_get_verify).
    fn verify_due(&mut self) -> Option<IoUnit> {
        if self.budget.is_some_and(|b| self.loop_end < b) && self.bytes_done >= self.loop_end {
            if self.hist_len > 0 {
                if let Some(u) = self.next_verify() {
                    return Some(u);
                }
            }
            // This pass is read back: the next one starts.
            self.loop_end = self.loop_end.saturating_add(self.loop_bytes);
            self.hist_len = 0;
        }
        if self.hist_len == 0 || self.backlog == 0 {
            return None;
        }
        let get = if self.batch_left > 0 {
            true
        } else if self.hist_len.is_multiple_of(self.backlog) && self.last_ddir != Some(Ddir::Read) {
            self.batch_left = if self.backlog_batch > 0 {
                self.backlog_batch
            } else {
                self.backlog
            };
            true
        } else {
            false
        };
        if !get {
            return None;
        }
        let u = self.next_verify()?;
        self.batch_left -= 1;
        Some(u)
    }

    /// The next I/O, or None when the job's work is done (never with
    /// time_based: the simulator stops it by time). With verify, the
    /// verify reads come in fio's order: during the writes with
    /// verify_backlog, after each pass, and the rest at the end.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<IoUnit> {
        if self.verify.is_none() {
            return self.next_plain();
        }
        if let Some(u) = self.verify_due() {
            return Some(u);
        }
        match self.next_plain() {
            Some(u) => {
                if u.ddir == Ddir::Write {
                    self.hist_len += 1;
                }
                self.last_ddir = Some(u.ddir);
                Some(u)
            }
            None => self.next_verify(),
        }
    }

    fn next_plain(&mut self) -> Option<IoUnit> {
        if self.file_len == 0 {
            return None;
        }
        if let Some(w) = self.pending_write.take() {
            // trimwrite: the write of the block just trimmed; the pair
            // counts once against the job's size (it covers one block).
            self.io_issues[Ddir::Write.index()] += 1;
            return Some(w);
        }
        if self.ended
            || self.budget.is_some_and(|b| self.bytes_done >= b)
            || self.ios_left == Some(0)
        {
            return None;
        }
        let ddir = self.next_ddir();
        let f = self.next_file();
        let mut len = self.next_buflen(ddir);
        // io_u.c should_do_random: percentage_random picks random or
        // sequential per I/O.
        let p = self.pct_random[ddir.index()];
        let random = self.rw.is_random() && (p >= 100 || (self.r_off.below(100) as u32) < p);
        if let Some(stride) = self.stride {
            self.strided_zone(f, ddir, stride);
        }
        let off = if random {
            self.random_offset(f, ddir, &mut len)
        } else {
            match self.seq_offset(f, ddir, len) {
                Some(off) => off,
                None => {
                    self.ended = true;
                    return None;
                }
            }
        };
        let len = len.min(self.file_len - off);
        self.last_pos[f as usize][ddir.index()] = off + len;
        self.file_bytes[f as usize] += len;
        // fill_io_u: td->zone_bytes += buflen.
        self.zone_bytes += len;
        let u = IoUnit {
            ddir,
            offset: self.base + f * self.file_len + off,
            len: u32::try_from(len).unwrap_or(u32::MAX),
        };
        if matches!(self.rw, RwKind::TrimWrite | RwKind::RandTrimWrite) {
            self.pending_write = Some(IoUnit {
                ddir: Ddir::Write,
                ..u
            });
        }
        Some(self.account(u))
    }

    fn account(&mut self, u: IoUnit) -> IoUnit {
        self.bytes_done += u64::from(u.len);
        self.io_issues[u.ddir.index()] += 1;
        if let Some(n) = self.ios_left.as_mut() {
            *n = n.saturating_sub(1);
        }
        u
    }

    pub fn set_rate_view(&mut self, until_due: [Option<u64>; 2]) {
        self.rate_until_due = until_due;
    }

    /// io_u.c get_rw_ddir + set_rwmix_bytes + get_rand_ddir, then
    /// rate_ddir: a mixed job whose drawn direction is ahead of its rate
    /// takes the other one if that is due, else the one due sooner.
    fn next_ddir(&mut self) -> Ddir {
        let drawn = self.draw_ddir();
        if !matches!(self.rw, RwKind::ReadWrite | RwKind::RandReadWrite) {
            return drawn;
        }
        let (d, o) = (drawn.index(), 1 - drawn.index());
        let chosen = match (self.rate_until_due[d], self.rate_until_due[o]) {
            (Some(0), _) | (None, _) => drawn,
            _ if self.rwmix[o] == 0 => drawn,
            (Some(_), Some(0)) => Ddir::ALL[o],
            (Some(mine), Some(other)) if other < mine => Ddir::ALL[o],
            _ => drawn,
        };
        self.rwmix_ddir = chosen;
        chosen
    }

    fn draw_ddir(&mut self) -> Ddir {
        match self.rw {
            RwKind::ReadWrite | RwKind::RandReadWrite => {
                if self.io_issues[self.rwmix_ddir.index()] >= self.rwmix_issues {
                    // rand_between(1, 100) <= rwmix[READ] -> read
                    let v = 1 + self.r_mix.below(100) as u32;
                    let d = if v <= self.rwmix[0] {
                        Ddir::Read
                    } else {
                        Ddir::Write
                    };
                    if d != self.rwmix_ddir {
                        let other = 1 - self.rwmix_ddir.index();
                        self.rwmix_issues = self.io_issues[self.rwmix_ddir.index()]
                            * u64::from(self.rwmix[other])
                            / 100;
                    }
                    self.rwmix_ddir = d;
                }
                self.rwmix_ddir
            }
            RwKind::Read | RwKind::RandRead => Ddir::Read,
            RwKind::Write | RwKind::RandWrite => Ddir::Write,
            RwKind::Trim | RwKind::RandTrim | RwKind::TrimWrite | RwKind::RandTrimWrite => {
                Ddir::Trim
            }
        }
    }

    /// io_u.c get_next_buflen.
    fn next_buflen(&mut self, ddir: Ddir) -> u64 {
        let i = ddir.index();
        let v = match &self.bs[i] {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range { min, max } => {
                let (min, max) = (*min, (*max).max(*min));
                if self.bs_unaligned {
                    min + self.r_bs.below(max - min + 1)
                } else {
                    // Multiples of min between min and max.
                    min * (1 + self.r_bs.below(max / min))
                }
            }
            BlockSize::Split(list) => {
                // Cumulative percentages against a draw in 1..=100; a list
                // that adds to less than 100 falls back to its last entry.
                let r = 1 + self.r_bs.below(100) as u32;
                let mut acc = 0;
                let mut pick = list.last().map_or(4096, |e| e.0);
                for (b, p) in list {
                    acc += p;
                    if *p > 0 && r <= acc {
                        pick = *b;
                        break;
                    }
                }
                pick
            }
        };
        v.max(1).min(self.file_len)
    }

    /// io_u.c setup_strided_zone_mode (zonemode=strided, sequential): after
    /// `size` bytes the zone moves on by `range + skip`, from the file's
    /// start again past its end; within a zone larger than its range the
    /// range is read again from the zone's start. (The file's end is the
    /// job's size here, where fio's is the file's real size.)
    fn strided_zone(&mut self, f: u64, ddir: Ddir, (size, range, skip): (u64, u64, u64)) {
        let last = &mut self.last_pos[f as usize][ddir.index()];
        if self.zone_bytes >= size {
            self.zone_bytes = 0;
            self.zone_start += range + skip;
            if self.zone_start >= self.file_len {
                self.zone_start = 0;
            }
            *last = self.zone_start;
        }
        if *last >= self.zone_start + range {
            *last = self.zone_start;
        }
    }

    /// The I/O just given was moved (zonemode=zbd) to end at device
    /// offset `end`: the file's next sequential offset follows from there.
    /// The file of the next I/O (io_u.c __get_next_file). fio's default,
    /// roundrobin:1, is the next file in turn at every I/O. Otherwise the
    /// picked file keeps the I/Os while it has `file_service_nr` of them
    /// left (sequential: until it is done); a new pick skips done files,
    /// in turn (get_next_file_rr) or drawn uniformly (get_next_file_rand:
    /// `nr_files * (r / (max + 1))`, drawn again on a done file); once
    /// every file is done a new pass starts with all of them.
    fn next_file(&mut self) -> u64 {
        // One file (most jobs): no pick, and no 64-bit division per I/O.
        if self.nfiles == 1 {
            return 0;
        }
        let (kind, nr) = self.file_service;
        if kind == FileService::RoundRobin && nr == 1 {
            let f = self.file_idx;
            self.file_idx = (self.file_idx + 1) % self.nfiles;
            return f;
        }
        let done = |s: &Self, f: u64| s.file_bytes[f as usize] >= s.file_len;
        if let Some(f) = self.service_file.filter(|f| !done(self, *f)) {
            if kind == FileService::Sequential {
                return f;
            }
            if self.service_left > 0 {
                self.service_left -= 1;
                return f;
            }
        }
        if (0..self.nfiles).all(|f| done(self, f)) {
            self.file_bytes.fill(0);
        }
        let f = if kind == FileService::Random {
            loop {
                let f = self.r_file.below(self.nfiles);
                if !done(self, f) {
                    break f;
                }
            }
        } else {
            let mut f = self.file_idx;
            while done(self, f) {
                f = (f + 1) % self.nfiles;
            }
            self.file_idx = (f + 1) % self.nfiles;
            f
        };
        self.service_file = Some(f);
        self.service_left = nr.wrapping_sub(1);
        f
    }

    /// With nrfiles > 1 the files lie one after another in the region,
    /// `file_len` apart from the clone's area start: device offset
    /// `offset`'s file and its offset in that file (the clone's area
    /// starts at the same offset in each file, as fio's get_start_offset
    /// places each file's).
    pub fn file_of_offset(&self, offset: u64) -> Option<(u32, u64)> {
        if self.nfiles <= 1 || self.file_len == 0 {
            return None;
        }
        let rel = offset.checked_sub(self.base)?;
        let f = (rel / self.file_len).min(self.nfiles - 1);
        Some((f as u32, self.clone_start + rel - f * self.file_len))
    }

    pub fn move_last_pos(&mut self, ddir: Ddir, end: u64) {
        if self.file_len == 0 {
            return;
        }
        let rel = end.saturating_sub(self.base);
        let f = (rel.saturating_sub(1) / self.file_len).min(self.nfiles - 1);
        self.last_pos[f as usize][ddir.index()] = (rel - f * self.file_len).min(self.file_len);
    }

    /// io_u.c get_next_seq_offset, with ddir_seq_add holes and backwards
    /// wrapping; None when the file's end ends the job.
    fn seq_offset(&mut self, f: u64, ddir: Ddir, len: u64) -> Option<u64> {
        let last = self.last_pos[f as usize][ddir.index()];
        let fl = i128::from(self.file_len);
        // get_next_seq_offset: a file whose last I/O reached its end has
        // no next offset; the pass is over (keep_running then ends the job
        // unless time_based, io_size or loops ask for another pass).
        if i128::from(last) >= fl {
            return self.next_pass().then_some(0);
        }
        let mut pos = i128::from(last);
        if last != 0 && self.seq_add != 0 {
            pos += i128::from(self.seq_add);
            if pos < 0 || pos >= fl {
                pos = if self.seq_add > 0 {
                    0
                } else {
                    (fl + i128::from(self.seq_add)).max(0)
                };
            }
        }
        if pos + i128::from(len) > fl {
            // A block that would pass the end (a size from bsrange or
            // bssplit) starts over at the file's start. (fio picks a size
            // that fits instead, io_u.c io_u_fits; a difference kept so
            // that such jobs' offsets do not move here.)
            pos = 0;
        }
        Some(pos as u64)
    }

    /// Whether a sequential pass that reached the file's end goes on with
    /// another (and counts it).
    fn next_pass(&mut self) -> bool {
        if self.wrap_always {
            return true;
        }
        if self.passes_left > 0 {
            self.passes_left -= 1;
            return true;
        }
        false
    }

    fn random_offset(&mut self, f: u64, ddir: Ddir, len: &mut u64) -> u64 {
        // rw=randread:N: a new random offset only every N I/Os; the ones in
        // between follow on sequentially (rw_sequencer=sequential).
        self.seq_count += 1;
        // (Every count is a multiple of 1: no division per I/O without N.)
        if self.seq_nr > 1 && !self.seq_count.is_multiple_of(self.seq_nr) {
            let last = self.last_pos[f as usize][ddir.index()];
            if last + *len <= self.file_len && last != 0 {
                if self.use_map {
                    self.mark(last / self.gran, len);
                }
                return last;
            }
        }
        let n = self.nblocks;
        // A new loop of a `loops` job (its map full): fio's thread_main
        // calls clear_io_state, whose td_fill_rand_seeds seeds the offsets
        // again, with randrepeat=1 from the same fixed seed (libfio.c,
        // init.c), and fio_file_reset empties the map: the loop repeats
        // the first one's offsets (the real fio 3.33: randread size=64k
        // bs=4k loops=3 gives one order three times; with randrepeat=0 or
        // norandommap=1 each loop differs). time_based and io_size jobs
        // start over inside one loop (io_u.c get_next_rand_block resets
        // the file, not the seeds).
        if self.use_map && self.map_used >= n {
            if let Some(start) = &self.r_off_loop {
                self.r_off = start.clone();
            }
        }
        let blk = match &self.dist {
            Dist::Uniform => {
                let b = self.r_off.below(n);
                if self.use_map {
                    let b = self.first_free_from(b);
                    self.mark(b, len);
                    b
                } else {
                    b
                }
            }
            Dist::Zipf {
                theta,
                zeta2,
                zetan,
                off,
            } => {
                // lib/zipf.c zipf_next (Gray et al., "Quickly generating
                // billion-record synthetic databases").
                let nf = n as f64;
                let alpha = 1.0 / (1.0 - theta);
                let eta = (1.0 - (2.0 / nf).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                let u = self.r_dist.uniform();
                let z = u * zetan;
                let val = if z < 1.0 {
                    1
                } else if z < 1.0 + 0.5f64.powf(*theta) {
                    2
                } else {
                    1 + (nf * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                (val - 1).wrapping_mul(GOLDEN_RATIO_64).wrapping_add(*off) % n
            }
            Dist::Pareto { pow, off } => {
                // lib/zipf.c pareto_next.
                let u = self.r_dist.uniform();
                let r = ((n - 1) as f64 * u.powf(*pow)) as u64;
                r.wrapping_mul(GOLDEN_RATIO_64).wrapping_add(*off) % n
            }
            Dist::Gauss { stddev } => {
                // lib/gauss.c gauss_next: mean of 12 uniform deviates in
                // [-stddev/2, stddev/2), centred on the middle block.
                let sd = *stddev as i64;
                if sd == 0 {
                    n / 2
                } else {
                    let mut sum: i64 = 0;
                    for _ in 0..GAUSS_ITERS {
                        sum += self.r_dist.below(sd as u64) as i64 - sd / 2;
                    }
                    let v = sum / GAUSS_ITERS * 2 + (n as i64) / 2;
                    v.clamp(0, n as i64 - 1) as u64
                }
            }
            Dist::Zoned(z) => {
                let u = self.r_dist.uniform() * 100.0;
                let (_, st, sz) = z
                    .iter()
                    .find(|(acc, _, _)| u < *acc)
                    .or(z.last())
                    .copied()
                    .unwrap_or((100.0, 0.0, 1.0));
                let zs = ((st * n as f64) as u64).min(n - 1);
                let zn = ((sz * n as f64) as u64).clamp(1, n - zs);
                zs + self.r_dist.below(zn)
            }
            Dist::ZonedBlocks(z) => {
                let u = self.r_dist.uniform() * 100.0;
                let (_, first, blocks) = z
                    .iter()
                    .find(|(acc, _, _)| u < *acc)
                    .or(z.last())
                    .copied()
                    .unwrap_or((100.0, 0, n));
                (first + self.r_dist.below(blocks.min(n - first).max(1))).min(n - 1)
            }
        };
        let mut off = blk * self.gran;
        if off + *len > self.file_len {
            // io_u_fits failed: keep the size, pull the offset back.
            off = (self.file_len - *len) / self.gran * self.gran;
        }
        off
    }

    fn is_used(&self, b: u64) -> bool {
        self.map.word(b / 64) & (1u64 << (b % 64)) != 0
    }

    /// lib/axmap.c axmap_next_free: the first free block at or after `b`,
    /// wrapping; a full map starts a new pass (all blocks free again).
    fn first_free_from(&mut self, b: u64) -> u64 {
        if self.map_used >= self.nblocks {
            self.map.clear();
            self.map_used = 0;
            return b;
        }
        let words = self.map.words;
        let mut w = b / 64;
        // Mask off bits below b in the first word.
        let mut word = self.map.word(w) | ((1u64 << (b % 64)) - 1);
        for _ in 0..=words {
            if word != u64::MAX {
                let cand = w * 64 + u64::from((!word).trailing_zeros());
                if cand < self.nblocks {
                    return cand;
                }
            }
            w = (w + 1) % words;
            word = self.map.word(w);
        }
        b
    }

    /// io_u.c mark_random_map: mark the blocks the I/O covers; if a used
    /// block comes first, the I/O is shortened to the free run.
    fn mark(&mut self, b: u64, len: &mut u64) {
        let want = len.div_ceil(self.gran);
        let mut got = 0;
        while got < want && b + got < self.nblocks && !self.is_used(b + got) {
            let x = b + got;
            self.map.set(x);
            got += 1;
        }
        self.map_used += got;
        if got > 0 && got < want {
            *len = (*len).min(got * self.gran);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn block_map_holds_only_touched_chunks_and_a_new_pass_keeps_them() {
        // 2^38 blocks (a 256 GiB file in 1-byte blocks): 2^32 words.
        let mut m = super::BlockMap::new(1 << 32);
        let far = (1u64 << 38) - 1;
        for b in [0, 63, 64, 1 << 20, far] {
            m.set(b);
        }
        assert_eq!(m.chunks_made(), 3, "blocks 0..2^18, 2^20 and the last");
        assert_eq!(m.word(0), 1 | 1 << 63);
        assert_eq!(m.word(1), 1);
        assert_eq!(m.word(far / 64), 1 << 63);
        assert_eq!(m.word(2), 0, "an untouched word of a made chunk");
        assert_eq!(m.word((1 << 32) - 4096 - 1), 0, "a word of no chunk");
        m.clear();
        assert_eq!(m.chunks_made(), 3);
        assert!((0..3).all(|w| m.word(w) == 0) && m.word(far / 64) == 0);
    }

    use super::*;

    fn spec(rw: RwKind, bs: u64, size: u64) -> JobSpec {
        JobSpec {
            rw,
            bs: [
                BlockSize::Fixed(bs),
                BlockSize::Fixed(bs),
                BlockSize::Fixed(bs),
            ],
            size: Some(size),
            ..JobSpec::default()
        }
    }

    #[test]
    fn sequential_read_covers_the_area_in_order() {
        let s = spec(RwKind::Read, 4096, 64 * 1024);
        let mut st = IoStream::new(&s, 1 << 20, 1 << 30, 1, 0);
        let offs: Vec<u64> = std::iter::from_fn(|| st.next()).map(|u| u.offset).collect();
        let want: Vec<u64> = (0..16).map(|i| (1 << 20) + i * 4096).collect();
        assert_eq!(offs, want);
    }

    #[test]
    fn backwards_read_goes_down() {
        let mut s = spec(RwKind::Read, 4096, 64 * 1024);
        s.rw_seq_add = -8192;
        let mut st = IoStream::new(&s, 0, 1 << 30, 1, 0);
        let offs: Vec<u64> = (0..4).map(|_| st.next().unwrap().offset).collect();
        assert_eq!(offs, vec![0, 65536 - 8192, 65536 - 12288, 65536 - 16384]);
    }

    #[test]
    fn offset_increment_moves_each_clone() {
        let mut s = spec(RwKind::Write, 4096, 8192);
        s.offset = 4096;
        s.offset_increment = 1 << 20;
        let mut st = IoStream::new(&s, 0, 1 << 30, 1, 2);
        assert_eq!(st.next().unwrap().offset, 4096 + 2 * (1 << 20));
    }

    #[test]
    fn trimwrite_trims_then_writes_the_same_block() {
        let s = spec(RwKind::TrimWrite, 4096, 8192);
        let mut st = IoStream::new(&s, 0, 1 << 20, 1, 0);
        let v: Vec<IoUnit> = std::iter::from_fn(|| st.next()).collect();
        assert_eq!(v.len(), 4);
        assert_eq!((v[0].ddir, v[1].ddir), (Ddir::Trim, Ddir::Write));
        assert_eq!(v[0].offset, v[1].offset);
    }

    #[test]
    fn time_based_never_ends() {
        let mut s = spec(RwKind::RandRead, 4096, 8192);
        s.time_based = true;
        let mut st = IoStream::new(&s, 0, 1 << 20, 1, 0);
        assert_eq!((0..1000).filter_map(|_| st.next()).count(), 1000);
    }

    #[test]
    fn zipf_is_skewed() {
        let mut s = spec(RwKind::RandRead, 4096, 4096 * 1000);
        s.random_distribution = RandomDistribution::Zipf(1.2);
        s.time_based = true;
        let mut st = IoStream::new(&s, 0, 1 << 30, 9, 0);
        let mut hits = vec![0u32; 1000];
        for _ in 0..20000 {
            hits[(st.next().unwrap().offset / 4096) as usize] += 1;
        }
        hits.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u32 = hits[..10].iter().sum();
        assert!(top10 > 20000 / 4, "top 1% of blocks got {top10} of 20000");
    }

    #[test]
    fn nrfiles_round_robin() {
        let mut s = spec(RwKind::Read, 4096, 4 * 8192);
        s.nrfiles = 4;
        let mut st = IoStream::new(&s, 0, 1 << 20, 1, 0);
        let offs: Vec<u64> = (0..5).map(|_| st.next().unwrap().offset).collect();
        assert_eq!(offs, vec![0, 8192, 16384, 24576, 4096]);
    }

    #[test]
    fn verify_reads_back_in_write_order() {
        let mut s = spec(RwKind::RandWrite, 4096, 8 * 4096);
        s.verify = Some("crc32c".into());
        let mut st = IoStream::new(&s, 0, 1 << 20, 5, 0);
        let v: Vec<IoUnit> = std::iter::from_fn(|| st.next()).collect();
        assert_eq!(v.len(), 16);
        for i in 0..8 {
            assert_eq!(v[i].ddir, Ddir::Write);
            assert_eq!(v[i + 8].ddir, Ddir::Read);
            assert_eq!(v[i].offset, v[i + 8].offset);
        }
    }

    /// Runs of directions, as (count, ddir) pairs.
    fn runs(v: &[IoUnit]) -> Vec<(usize, Ddir)> {
        let mut out: Vec<(usize, Ddir)> = Vec::new();
        for u in v {
            match out.last_mut() {
                Some((n, d)) if *d == u.ddir => *n += 1,
                _ => out.push((1, u.ddir)),
            }
        }
        out
    }

    #[test]
    fn verify_backlog_reads_back_each_backlog_of_writes() {
        // fio 3.33, rw=write bs=4k size=1m verify=md5 verify_backlog=N,
        // its write_iolog: 32w 32r repeated (N=32); 100w 100r 100w 100r
        // 56w 56r (N=100): the rest is read back after the writes.
        for (backlog, want) in [
            (32, vec![32; 16]),
            (100, vec![100, 100, 100, 100, 56, 56]),
            (1, vec![1; 512]),
        ] {
            let mut s = spec(RwKind::Write, 4096, 1 << 20);
            s.verify = Some("md5".into());
            s.verify_backlog = backlog;
            let mut st = IoStream::new(&s, 0, 1 << 30, 3, 0);
            let v: Vec<IoUnit> = std::iter::from_fn(|| st.next()).collect();
            let r = runs(&v);
            assert_eq!(
                r.iter().map(|x| x.0).collect::<Vec<_>>(),
                want,
                "backlog {backlog}"
            );
            assert!(r.iter().step_by(2).all(|x| x.1 == Ddir::Write));
            // Each read reads a block written, in write order.
            let w: Vec<u64> = v
                .iter()
                .filter(|u| u.ddir == Ddir::Write)
                .map(|u| u.offset)
                .collect();
            let rd: Vec<u64> = v
                .iter()
                .filter(|u| u.ddir == Ddir::Read)
                .map(|u| u.offset)
                .collect();
            assert_eq!(w, rd);
        }
    }

    #[test]
    fn verify_backlog_batch_bounds_the_logged_writes() {
        // verify_backlog=32 with verify_backlog_batch=8: a round reads 8,
        // so the unverified writes stay between 24 and 32.
        let mut s = spec(RwKind::RandWrite, 4096, 1 << 20);
        s.verify = Some("crc32c".into());
        s.verify_backlog = 32;
        s.verify_batch = 8;
        let mut st = IoStream::new(&s, 0, 1 << 30, 3, 0);
        let v: Vec<IoUnit> = std::iter::from_fn(|| st.next()).collect();
        let mut pending = 0i64;
        let mut max = 0;
        for (i, u) in v.iter().enumerate() {
            pending += if u.ddir == Ddir::Write { 1 } else { -1 };
            if v[i..].iter().any(|x| x.ddir == Ddir::Write) {
                max = max.max(pending);
            }
        }
        assert_eq!(max, 32);
        assert_eq!(runs(&v)[1], (8, Ddir::Read));
        assert_eq!(v.iter().filter(|u| u.ddir == Ddir::Read).count(), 256);
    }

    #[test]
    fn verify_reads_back_each_loop() {
        // fio 3.33, randwrite bs=4k size=64k loops=3 verify=md5: 16w 16r
        // three times (backend.c verifies after each pass).
        let mut s = spec(RwKind::RandWrite, 4096, 64 << 10);
        s.verify = Some("md5".into());
        s.loops = 3;
        let mut st = IoStream::new(&s, 0, 1 << 30, 3, 0);
        let v: Vec<IoUnit> = std::iter::from_fn(|| st.next()).collect();
        let r = runs(&v);
        assert_eq!(r.iter().map(|x| x.0).collect::<Vec<_>>(), vec![16; 6]);
        for pass in v.chunks(32) {
            let w: Vec<u64> = pass[..16].iter().map(|u| u.offset).collect();
            let rd: Vec<u64> = pass[16..].iter().map(|u| u.offset).collect();
            assert_eq!(w, rd);
        }
    }

    #[test]
    fn verify_backlog_in_a_mixed_job_reads_every_write_once() {
        // readwrite with verify_backlog=1: each write is read back before
        // the next write (fio 3.33 reports reads = plain reads + writes).
        let mut s = spec(RwKind::ReadWrite, 4096, 1 << 20);
        s.verify = Some("crc32c".into());
        s.verify_backlog = 1;
        let mut st = IoStream::new(&s, 0, 1 << 30, 3, 0);
        let v: Vec<IoUnit> = std::iter::from_fn(|| st.next()).collect();
        let writes = v.iter().filter(|u| u.ddir == Ddir::Write).count();
        let bytes: u64 = v.iter().map(|u| u64::from(u.len)).sum();
        assert_eq!(bytes, (1 << 20) + writes as u64 * 4096);
        for (i, u) in v.iter().enumerate() {
            if u.ddir == Ddir::Write {
                let back = v[i + 1..].iter().find(|x| x.offset == u.offset);
                assert_eq!(back.map(|x| x.ddir), Some(Ddir::Read));
            }
        }
    }
}
