//! A job while its options are read ([`Draft`]), and what an option's
//! meaning gets to work with ([`Given`]: the value as fio read it). The
//! meanings themselves sit with their options in the table
//! ([`super::options::OPTIONS`]).

use super::job::{BlockSize, JobSpec};
use super::options::OptDef;
use super::value::Parsed;
use crate::types::Ddir;

/// Parser state beyond JobSpec: block-size sources are kept apart because
/// fio resolves them at the end (bssplit beats bsrange beats bs).
#[derive(Clone, Debug)]
pub(crate) struct Draft {
    pub spec: JobSpec,
    /// bs=, per direction.
    pub bs: [u64; 3],
    /// bsrange=, per direction.
    pub bsrange: [Option<(u64, u64)>; 3],
    /// bssplit=, per direction.
    pub bssplit: [Option<Vec<(u64, u32)>>; 3],
    /// iodepth_low= was given (else it follows iodepth).
    pub iodepth_low_set: bool,
    /// verify= was given (verify_pattern then does not set it).
    pub verify_set: bool,
}

impl Draft {
    pub fn new() -> Self {
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
    pub fn finish(mut self) -> JobSpec {
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
        // fixup_options: no overlap check when the job cannot overlap
        // itself (it changes no data, or never has two I/Os out) and does
        // not offload (init.c).
        if s.serialize_overlap
            && s.read_iolog.is_none()
            && (!(s.rw.has(Ddir::Write) || s.rw.has(Ddir::Trim)) || s.iodepth == 1)
            && !s.io_submit_offload
        {
            s.serialize_overlap = false;
        }
        // fixup_options: strided works with one file only. (Its
        // ZONE_MODE_NOT_SPECIFIED branch, zonesize meaning strided, is
        // never reached from a job file: zonemode's default is "none".)
        let z = &mut s.zones;
        if z.mode == super::ZoneMode::Strided && s.nrfiles > 1 {
            z.mode = super::ZoneMode::None;
        }
        if z.mode == super::ZoneMode::Strided && z.range == 0 {
            z.range = z.size;
        }
        // The sg engine's SG_IO and io_uring_cmd's NVMe passthrough move
        // data between the user's buffer and the device with no page cache
        // whatever O_DIRECT says (FIO_RAWIO): they run on the direct path.
        if s.ioengine.passthrough() {
            s.direct = true;
        }
        self.spec
    }
}

/// One option's value as fio 3.33 read it, handed to the option's meaning.
pub(crate) struct Given<'a> {
    /// The option's table entry (its canonical name, its words).
    pub def: &'static OptDef,
    /// The text after '=' (None: a bare option).
    pub text: Option<&'a str>,
    /// What fio's parser stored for it (parse.c).
    pub parsed: &'a Parsed,
    /// The job's kb_base so far, for sizes a meaning reads itself.
    pub kb: u64,
    /// CPUs of the simulated host (cpus_allowed must name them).
    pub ncpus: u32,
}

impl Given<'_> {
    /// The text, empty for a bare option.
    pub fn v(&self) -> &str {
        self.text.unwrap_or("")
    }

    /// The number fio stored (a boolean's C int, 0 meaning false; an
    /// INT's low 32 bits); 0 when it stored none.
    pub fn n(&self) -> u64 {
        self.parsed.first().unwrap_or(0)
    }

    /// A boolean option's value.
    pub fn on(&self) -> bool {
        self.n() != 0
    }

    /// The last part's number: an option whose callback sees each part
    /// ends with it.
    pub fn last(&self) -> u64 {
        self.parsed.last.unwrap_or(0)
    }
}

/// The reason for refusing a valid value flashpath does not simulate.
pub(crate) fn not_modelled(what: &str) -> String {
    format!("{what} {NOT_MODELLED}")
}

/// How every refusal of a valid value flashpath does not simulate ends.
pub const NOT_MODELLED: &str = "is not modelled by flashpath";
