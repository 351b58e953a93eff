//! `cargo run --release --example iozone -- PROFILE [--set k=v]... -- <iozone args>`:
//! the core's iozone entry point without Python (for timing runs).
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let device = &args[0];
    let sets: Vec<String> = args[1..split]
        .chunks(2)
        .filter(|c| c[0] == "--set")
        .map(|c| c[1].clone())
        .collect();
    let t0 = std::time::Instant::now();
    match flashpath::run::run_iozone(&args[(split + 1).min(args.len())..], device, &sets, 0) {
        Ok(o) => {
            let wall = t0.elapsed().as_secs_f64();
            print!("{}", o.text);
            println!("{}", o.json["flashpath"]["driver"]);
            eprintln!(
                "{} I/Os in {wall:.2} s: {:.2} M I/O/s",
                o.completed_ios,
                o.completed_ios as f64 / wall / 1e6
            );
        }
        Err(e) => {
            eprintln!("flashpath: error: {e}");
            std::process::exit(1);
        }
    }
}
