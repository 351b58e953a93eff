//! The log files a job asks fio to write (`write_lat_log`,
//! `write_bw_log`, `write_iops_log`, `write_hist_log`, `write_iolog`), rendered from the
//! samples the machine kept, in fio's formats (stat.c, iolog.c).

use crate::report::{JobResult, LatSample};
use crate::sim::hist::{plat_val_to_idx, PLAT_NR};
use crate::types::Ddir;
use crate::workload::fio::{AggBwSampling, JobFile, JobSpec};
use std::fmt::Write as _;

/// A log a job asked fio to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFile {
    /// The name fio gives it, relative to where fio runs.
    pub name: String,
    pub contents: String,
    /// The option that asked for it, for messages: `job.fio:3: job 'j':
    /// write_lat_log=lat` (file, the job's line, job, option as written).
    pub option: String,
    /// Added to the end of an existing file instead of replacing it: fio
    /// opens a shared log (per_job_logs=0) with "a" (iolog.c flush_log).
    pub append: bool,
}

/// The clat histogram log (write_hist_log) as fio 3.33 writes it. In
/// add_clat_sample each direction keeps a window: its start (hist_last) is
/// the elapsed ms of the first completion, unless that is 0, when the next
/// completion's is taken; a completion at least `msec` past it snapshots
/// the direction's cumulative clat histogram (td->ts.io_u_plat) and the
/// window moves on by exactly `msec` (hist_last = elapsed - (this_window -
/// msec)). flush_hist_samples writes each snapshot less the one before as
/// "time, ddir, bs, " and the bins summed `stride` at a time: the sums start
/// at 0, stride, ... below PLAT_NR - stride, then one at PLAT_NR - stride
/// (a stride that does not divide 1856 makes the last two overlap, as in
/// fio). A window still open at the job's end is not written.
fn hist_log(samples: &[LatSample], msec: u64, coarseness: u32, epoch: u64) -> String {
    let mut text = String::new();
    if msec == 0 {
        return text;
    }
    let stride = 1usize << coarseness;
    let mut now = vec![[0u64; PLAT_NR]; 3];
    let mut before = vec![[0u64; PLAT_NR]; 3];
    let mut last = [0u64; 3];
    for s in samples {
        let d = usize::from(s.ddir).min(2);
        now[d][plat_val_to_idx(s.clat_ns)] += 1;
        if last[d] == 0 {
            last[d] = s.time_ms;
        }
        let this_window = s.time_ms - last[d];
        if this_window < msec {
            continue;
        }
        let _ = write!(text, "{}, {}, {}", s.time_ms + epoch, s.ddir, s.bs);
        let sum = |j: usize| -> u64 { (j..j + stride).map(|k| now[d][k] - before[d][k]).sum() };
        let mut j = 0;
        while j + stride < PLAT_NR {
            let _ = write!(text, ", {}", sum(j));
            j += stride;
        }
        let _ = writeln!(text, ", {}", sum(PLAT_NR - stride));
        before[d] = now[d];
        last[d] = s.time_ms - (this_window - msec);
    }
    text
}

/// fio's bw_avg_time (the `bwavgtime` option, 500 ms by default; flashpath
/// accepts and ignores the option, so its default stands).
const AGG_BW_AVG_MS: u64 = 500;

/// fio's helper thread wakes every DISK_UTIL_MSEC (helper_thread.c).
const HELPER_TICK_MS: u64 = 250;

/// `--bandwidth-log`'s `agg-{read,write,trim}_bw.log` (backend.c
/// setup_log, eta.c calc_thread_status) from every job's completions,
/// the run ending at `end_ns`. With `sampling.periodic` fio's helper
/// thread calls calc_thread_status at each wake, every 250 ms from
/// genesis; with `sampling.at_report` the JSON report calls it once more
/// (forced) as the run ends. While no
/// bytes were seen at the last sample the window starts at genesis
/// (fill_start_time); once the window is `avg_ms` long, each direction
/// gets a row `ms since genesis, KiB/s, ddir, 0, 0` (add_agg_sample: bs 0,
/// priority 0) with calc_rate's `(1000 * bytes / ms) / 1024` of the
/// bytes completed in the window, the trim log a row of 0 too. fio's test
/// is `rate_time > bw_avg_time`, met at its second 250 ms wake because
/// the real wake is always a few ms late (504, 1022, 1530 ms in a real
/// run); the simulated wake is exact, so the test here is `>=` (an
/// assumption: it keeps fio's every-other-wake cadence). What the real
/// fio adds per wake (its own lateness) is not modelled, and no job's
/// ramp_time holds sampling back (fio tests in_ramp_time on a pointer
/// past its last job). The report's call comes after the last job ends
/// (fio's teardown takes some ms, 132 in a 3 s run); here at the end, the
/// same `>=` keeping its row when the last periodic one was 500 ms
/// before. A window open after that is not written.
pub fn agg_bw_logs(
    results: &[JobResult],
    avg_ms: u64,
    end_ns: u64,
    sampling: AggBwSampling,
) -> [String; 3] {
    let mut done: Vec<(u64, usize, u64)> = results
        .iter()
        .flat_map(|r| {
            let start_ms = r.start_ns / 1_000_000;
            r.lat_log.iter().map(move |s| {
                (
                    start_ms + s.time_ms,
                    usize::from(s.ddir).min(2),
                    u64::from(s.bs),
                )
            })
        })
        .collect();
    done.sort_unstable();
    let mut out: [String; 3] = Default::default();
    let end_ms = end_ns / 1_000_000;
    let (mut cum, mut at_sample) = ([0u64; 3], [0u64; 3]);
    let mut next = 0;
    let mut prev = 0;
    let ticks = (1..)
        .map(|k| k * HELPER_TICK_MS)
        .take_while(|t| sampling.periodic && *t < end_ms)
        .chain(sampling.at_report.then_some(end_ms));
    for t in ticks {
        while let Some(&(ms, d, bytes)) = done.get(next) {
            if ms > t {
                break;
            }
            cum[d] += bytes;
            next += 1;
        }
        if at_sample.iter().sum::<u64>() == 0 {
            prev = 0;
        }
        let window = t - prev;
        if window >= avg_ms {
            for d in 0..3 {
                let rate = 1000 * (cum[d] - at_sample[d]) / window / 1024;
                let _ = writeln!(out[d], "{t}, {rate}, {d}, 0, 0");
            }
            at_sample = cum;
            prev = t;
        }
    }
    out
}

/// The priority column of a per-I/O log entry (iolog.c flush_samples):
/// with log_prio the I/O's ioprio value as `0x%04x`, else 1 for an
/// RT-class I/O (`ioprio_value_is_class_rt`) and 0 for any other.
fn prio_column(text: &mut String, ioprio: u16, log_prio: bool) {
    use crate::block::elevator::{ioprio_class, IOPRIO_CLASS_RT};
    if log_prio {
        let _ = writeln!(text, "0x{ioprio:04x}");
    } else {
        let rt = ioprio_class(ioprio) == IOPRIO_CLASS_RT;
        let _ = writeln!(text, "{}", u8::from(rt));
    }
}

/// A log averaged over `log_avg_msec` windows (stat.c), as fio writes it:
/// bs and offset columns 0.
/// - Latency logs are written inline (add_log_sample): a direction's
///   samples add to its window, and the first sample at least
///   log_avg_msec after the window's start writes the window's mean
///   (rounded) or, with log_max_value, its maximum, at that sample's time;
///   the next window starts at that time rounded down to the period. At the
///   job's end (finalize_logs) what is left is written at the end time.
/// - Bandwidth and IOPS logs are periodic (add_bw_samples, by the helper
///   thread): at every multiple of the period, each direction that
///   completed I/O in it gets its rate, KiB/s or I/O per second.
fn averaged_log(
    kind: &str,
    samples: &[LatSample],
    spec: &JobSpec,
    end_ms: u64,
    epoch: u64,
) -> String {
    let avg = spec.log_avg_msec;
    let mut text = String::new();
    // Windows are kept in ms since the job started; the epoch is added to
    // each sample's time as it is written (stat.c __add_log_sample).
    let line = |text: &mut String, at: u64, value: u64, ddir: usize| {
        let _ = write!(text, "{}, {value}, {ddir}, 0, ", at + epoch);
        if spec.log_offset {
            text.push_str("0, ");
        }
        // An averaged entry carries no I/O's priority (stat.c
        // __add_stat_to_log passes 0).
        text.push_str(if spec.log_prio { "0x0000\n" } else { "0\n" });
    };
    if matches!(kind, "bw" | "iops") {
        let mut bytes = [0u64; 3];
        let mut ios = [0u64; 3];
        let mut window_end = avg;
        let mut next = 0;
        while window_end <= end_ms {
            while next < samples.len() && samples[next].time_ms < window_end {
                let d = samples[next].ddir as usize;
                bytes[d] += u64::from(samples[next].bs);
                ios[d] += 1;
                next += 1;
            }
            for d in 0..3 {
                if ios[d] > 0 {
                    let value = if kind == "bw" {
                        bytes[d] * 1000 / avg / 1024
                    } else {
                        ios[d] * 1000 / avg
                    };
                    line(&mut text, window_end, value, d);
                }
            }
            bytes = [0; 3];
            ios = [0; 3];
            window_end += avg;
        }
        return text;
    }
    // (sum, count, max) per direction, and where each window began.
    let mut window = [(0u128, 0u64, 0u64); 3];
    let mut last = [0u64; 3];
    let flush = |text: &mut String, w: &mut (u128, u64, u64), at: u64, d: usize| {
        if w.1 > 0 {
            let value = if spec.log_max_value {
                w.2
            } else {
                // io_stat's mean + 0.50, truncated.
                ((w.0 as f64 / w.1 as f64) + 0.5) as u64
            };
            line(text, at, value, d);
        }
        *w = (0, 0, 0);
    };
    for s in samples {
        let value = match kind {
            "lat" => s.lat_ns,
            "clat" => s.clat_ns,
            _ => match s.slat_ns {
                Some(v) => v,
                None => continue,
            },
        };
        let d = s.ddir as usize;
        let w = &mut window[d];
        w.0 += u128::from(value);
        w.1 += 1;
        w.2 = w.2.max(value);
        let elapsed = s.time_ms;
        if elapsed < last[d] || elapsed - last[d] < avg {
            continue;
        }
        flush(&mut text, w, elapsed, d);
        last[d] = elapsed - elapsed % avg;
    }
    for (d, w) in window.iter_mut().enumerate() {
        flush(&mut text, w, end_ms, d);
    }
    text
}

/// The log files fio writes at the end of a job, taken out of the results
/// (stat.c flush_samples for the latency logs, iolog.c for the I/O log).
/// Job numbers count clones in order from 1, as fio's thread_number.
/// A log joins the run's files; a shared log (per_job_logs=0) another job
/// already writes gets this job's lines after that job's. fio appends each
/// job's lines as the job exits; flashpath appends in the jobs' order.
fn add_log(files: &mut Vec<LogFile>, log: LogFile) {
    if log.append {
        if let Some(f) = files.iter_mut().find(|f| f.append && f.name == log.name) {
            f.contents.push_str(&log.contents);
            return;
        }
    }
    files.push(log);
}

pub fn log_files(jobs: &JobFile, results: &mut [JobResult]) -> Vec<LogFile> {
    let mut files = Vec::new();
    if let Some(sampled) = jobs.bandwidth_log {
        let end = results
            .iter()
            .map(|r| {
                let ramp = jobs.jobs[r.section_index as usize].ramp_time;
                r.start_ns + ramp + r.job_runtime
            })
            .max()
            .unwrap_or(0);
        let texts = agg_bw_logs(results, AGG_BW_AVG_MS, end, sampled);
        for (d, text) in ["read", "write", "trim"].iter().zip(texts) {
            files.push(LogFile {
                name: format!("agg-{d}_bw.log"),
                contents: text,
                option: "--bandwidth-log".to_string(),
                append: false,
            });
        }
    }
    for (i, res) in results.iter_mut().enumerate() {
        let spec = &jobs.jobs[res.section_index as usize];
        let log = |name: String, contents: String, option: &str, value: &str| LogFile {
            name,
            contents,
            option: format!(
                "{}:{}: job '{}': {option}={value}",
                jobs.path, spec.line, spec.name
            ),
            append: !spec.per_job_logs,
        };
        // init.c gen_log_name: "<name>_<type>.<job number>.log", or with
        // per_job_logs=0 "<name>_<type>.log", one file every job appends to.
        let log_name = |prefix: &str, kind: &str| {
            if spec.per_job_logs {
                format!("{prefix}_{kind}.{}.log", i + 1)
            } else {
                format!("{prefix}_{kind}.log")
            }
        };
        let samples = std::mem::take(&mut res.lat_log);
        // stat.c: lat/clat/slat samples per completion; per-I/O bw samples
        // are bytes * 10^6 / clat ns (add_bw_sample), iops samples are 1.
        let kinds: [(&Option<String>, &str, &str); 5] = [
            (&spec.write_lat_log, "write_lat_log", "lat"),
            (&spec.write_lat_log, "write_lat_log", "clat"),
            (&spec.write_lat_log, "write_lat_log", "slat"),
            (&spec.write_bw_log, "write_bw_log", "bw"),
            (&spec.write_iops_log, "write_iops_log", "iops"),
        ];
        for (asked, option, kind) in kinds {
            let Some(prefix) = asked else {
                continue;
            };
            let name = log_name(prefix, kind);
            if spec.log_avg_msec > 0 {
                let end_ms = (res.job_runtime + spec.ramp_time) / 1_000_000;
                let text = averaged_log(kind, &samples, spec, end_ms, res.log_epoch_ms);
                add_log(&mut files, log(name, text, option, prefix));
                continue;
            }
            let mut text = String::new();
            for s in &samples {
                let value = match kind {
                    "lat" => s.lat_ns,
                    "clat" => s.clat_ns,
                    // stat.c add_bw_sample: bytes * 1e6 / clat_ns, and 0
                    // when the clat is 0 (fio never divides by it).
                    "bw" => (u64::from(s.bs) * 1_000_000)
                        .checked_div(s.clat_ns)
                        .unwrap_or(0),
                    "iops" => 1,
                    _ => match s.slat_ns {
                        Some(v) => v,
                        None => continue,
                    },
                };
                let _ = write!(
                    text,
                    "{}, {}, {}, {}, ",
                    s.time_ms + res.log_epoch_ms,
                    value,
                    s.ddir,
                    s.bs
                );
                if spec.log_offset {
                    let _ = write!(text, "{}, ", s.offset);
                }
                prio_column(&mut text, s.ioprio, spec.log_prio);
            }
            add_log(&mut files, log(name, text, option, prefix));
        }
        if let Some(prefix) = &spec.write_hist_log {
            let text = hist_log(
                &samples,
                spec.log_hist_msec,
                spec.log_hist_coarseness,
                res.log_epoch_ms,
            );
            let name = log_name(prefix, "clat_hist");
            add_log(&mut files, log(name, text, "write_hist_log", prefix));
        }
        let issued = std::mem::take(&mut res.io_log);
        if let Some(name) = &spec.write_iolog {
            // fio's files: filename=, else `name.clone.k` for k below
            // nrfiles (filesetup.c add_file via init.c get_file_name).
            let nfiles = spec.nrfiles.max(1);
            let file = |k: u32| match &spec.filename {
                Some(f) => f.clone(),
                None => format!("{}.{}.{k}", spec.name, res.clone_index),
            };
            let names = if spec.filename.is_some() { 1 } else { nfiles };
            // iolog.c log_file: every file is added as the job sets up;
            // the first is opened then, each other one before its first
            // I/O (get_next_file opens it), and every open one is closed
            // when the job ends.
            let mut text = String::from("fio version 3 iolog\n");
            for k in 0..names {
                let _ = writeln!(text, "0 {} add", file(k));
            }
            let _ = writeln!(text, "0 {} open", file(0));
            let mut opened = vec![false; names as usize];
            opened[0] = true;
            for (at_us, f, u) in &issued {
                let k = if names == 1 { 0 } else { *f };
                if let Some(o) = opened.get_mut(k as usize).filter(|o| !**o) {
                    *o = true;
                    let _ = writeln!(text, "{at_us} {} open", file(k));
                }
                let action = match u.ddir {
                    Ddir::Read => "read",
                    Ddir::Write => "write",
                    Ddir::Trim => "trim",
                };
                let _ = writeln!(text, "{at_us} {} {action} {} {}", file(k), u.offset, u.len);
            }
            let end = res.job_runtime / 1_000;
            for (k, o) in opened.iter().enumerate() {
                if *o {
                    let _ = writeln!(text, "{end} {} close", file(k as u32));
                }
            }
            // iolog.c init_iolog_write opens the file with "a": a log
            // already there keeps its lines, this run's follow them.
            let mut iolog = log(name.clone(), text, "write_iolog", name);
            iolog.append = true;
            add_log(&mut files, iolog);
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::averaged_log;
    use crate::report::LatSample;
    use crate::workload::fio::JobSpec;

    fn sample(time_ms: u64, clat_ns: u64, ddir: u8) -> LatSample {
        LatSample {
            time_ms,
            lat_ns: clat_ns,
            clat_ns,
            slat_ns: None,
            ddir,
            bs: 4096,
            offset: 0,
            ioprio: 0,
        }
    }

    /// eta.c calc_thread_status as `--bandwidth-log` samples it: a
    /// 4 KiB write a ms from 100 ms to 2099 ms; rows at every other 250 ms
    /// wake with the KiB/s of the window (401 writes in the first 500 ms:
    /// 3208 KiB/s, then 4000); the report's sample at 2100 ms is 100 ms
    /// after the last and takes none. A run whose first I/O completes
    /// late logs zeros at each wake from 500 ms on: with no bytes at the
    /// last sample, fio's window starts again at genesis.
    #[test]
    fn the_aggregate_bandwidth_log_samples_at_the_helpers_wakes() {
        use super::agg_bw_logs;
        use crate::report::JobResult;
        use crate::workload::fio::AggBwSampling;
        let res = JobResult {
            start_ns: 100_000_000,
            lat_log: (0..2000).map(|ms| sample(ms, 1, 1)).collect(),
            ..JobResult::default()
        };
        let both = AggBwSampling {
            periodic: true,
            at_report: true,
        };
        let [r, w, t] = agg_bw_logs(std::slice::from_ref(&res), 500, 2_100_000_000, both);
        assert_eq!(
            w,
            "500, 3208, 1, 0, 0\n1000, 4000, 1, 0, 0\n1500, 4000, 1, 0, 0\n2000, 4000, 1, 0, 0\n"
        );
        assert_eq!(r.lines().count(), 4);
        assert!(r.lines().all(|l| l.ends_with(", 0, 0, 0, 0")));
        assert_eq!(t.lines().nth(1), Some("1000, 0, 2, 0, 0"));
        let report_only = AggBwSampling {
            periodic: false,
            at_report: true,
        };
        let [_, w, _] = agg_bw_logs(std::slice::from_ref(&res), 500, 2_100_000_000, report_only);
        // 2000 writes over 2100 ms.
        assert_eq!(
            w,
            format!("2100, {}, 1, 0, 0\n", 2000u64 * 4096 * 1000 / 2100 / 1024)
        );
        let late = JobResult {
            start_ns: 1_200_000_000,
            lat_log: vec![sample(0, 1, 1)],
            ..JobResult::default()
        };
        let [_, w, _] = agg_bw_logs(&[late], 500, 1_400_000_000, both);
        assert_eq!(
            w,
            "500, 0, 1, 0, 0\n750, 0, 1, 0, 0\n1000, 0, 1, 0, 0\n1250, 3, 1, 0, 0\n"
        );
    }

    /// stat.c add_log_sample: a window closes at the first sample at least
    /// log_avg_msec after its start, with the mean rounded (or the
    /// maximum); the next starts at that time rounded down; each direction
    /// has its own; the rest is flushed at the end.
    #[test]
    fn latency_logs_average_per_direction_window() {
        let spec = JobSpec {
            log_avg_msec: 100,
            ..JobSpec::default()
        };
        let samples = [
            sample(10, 100, 0),
            sample(50, 201, 0),
            sample(60, 7, 1),
            sample(130, 300, 0),
            sample(150, 50, 0),
            sample(240, 10, 1),
        ];
        let mean = averaged_log("clat", &samples, &spec, 250, 0);
        assert_eq!(
            mean,
            "130, 200, 0, 0, 0\n240, 9, 1, 0, 0\n250, 50, 0, 0, 0\n"
        );
        let max_spec = JobSpec {
            log_max_value: true,
            ..spec
        };
        let max = averaged_log("clat", &samples, &max_spec, 250, 0);
        assert_eq!(
            max,
            "130, 300, 0, 0, 0\n240, 10, 1, 0, 0\n250, 50, 0, 0, 0\n"
        );
    }

    #[test]
    fn bandwidth_logs_are_periodic_rates() {
        let spec = JobSpec {
            log_avg_msec: 100,
            ..JobSpec::default()
        };
        let samples = [sample(10, 1, 0), sample(20, 1, 0), sample(150, 1, 1)];
        assert_eq!(
            averaged_log("bw", &samples, &spec, 200, 0),
            "100, 80, 0, 0, 0\n200, 40, 1, 0, 0\n"
        );
        assert_eq!(
            averaged_log("iops", &samples, &spec, 200, 0),
            "100, 20, 0, 0, 0\n200, 10, 1, 0, 0\n"
        );
    }
}
