//! Read a block trace to its end and say how fast: the reader benchmark
//! (`bench/trace-readers.sh` runs it under `/usr/bin/time -v` for the peak
//! memory).
//!
//!     cargo run --release -p flashpath --example trace_read -- FILE [FORMAT]

use flashpath::workload::trace::{self, Format};
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(file) = args.get(1) else {
        eprintln!("usage: trace_read FILE [FORMAT]");
        std::process::exit(2);
    };
    let path = Path::new(file);
    let format = match args.get(2) {
        Some(f) => Format::from_name(f, None).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2)
        }),
        None => trace::detect(path).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(1)
        }),
    };
    let t0 = Instant::now();
    let mut r = trace::open(path, &format).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let (mut n, mut bytes, mut completed) = (0u64, 0u64, 0u64);
    loop {
        match r.next_record() {
            Ok(Some(x)) => {
                n += 1;
                bytes += x.len;
                completed += u64::from(x.completion_ns.is_some());
            }
            Ok(None) => break,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1)
            }
        }
    }
    let s = t0.elapsed().as_secs_f64();
    let read = r.consumed();
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    println!(
        "{} {}: {read} lines or records, {n} I/Os ({completed} with completion, {bytes} bytes), \
         {} MB in {s:.2} s: {:.2} M records/s, {:.2} M I/Os/s, {:.0} MB/s",
        format.name(),
        file,
        size / 1_000_000,
        read as f64 / s / 1e6,
        n as f64 / s / 1e6,
        size as f64 / s / 1e6
    );
}
