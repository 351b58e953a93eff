//! `cargo run --release -p flashpath --example ftl_wa [-- --markdown]
//! [--blocks N] [--pages N] [--warm X] [--measure X] [--seed N]`:
//! the FTL's write amplification under uniform random 4 KiB writes at
//! steady state against the closed forms, one row per spare factor, as CSV
//! (default) or as the Markdown table of docs/ftl-write-amplification.md.
use flashpath::device::ftl::analytic::{
    effective_alpha, nominal_alpha, simulated_wa, wa_experiment_params, wa_greedy_mean_field,
    wa_lrw,
};

/// The nominal over-provisioning of each row, (physical − logical) /
/// logical as the profiles state it: 7% (GB vs GiB) to 50%.
const SPARES: [f64; 7] = [0.07, 0.10, 0.15, 0.20, 0.28, 0.35, 0.50];

fn main() {
    let mut markdown = false;
    let (mut blocks, mut pages, mut warm, mut measure, mut seed) = (512u32, 512u32, 3.0, 2.0, 1u64);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || {
            args.next().unwrap_or_else(|| {
                eprintln!("ftl_wa: {a} needs a value");
                std::process::exit(2)
            })
        };
        let bad = |v: &str| -> ! {
            eprintln!("ftl_wa: bad value {v}");
            std::process::exit(2)
        };
        match a.as_str() {
            "--markdown" => markdown = true,
            "--blocks" => blocks = val().parse().unwrap_or_else(|_| bad("--blocks")),
            "--pages" => pages = val().parse().unwrap_or_else(|_| bad("--pages")),
            "--warm" => warm = val().parse().unwrap_or_else(|_| bad("--warm")),
            "--measure" => measure = val().parse().unwrap_or_else(|_| bad("--measure")),
            "--seed" => seed = val().parse().unwrap_or_else(|_| bad("--seed")),
            _ => bad(&a),
        }
    }
    if markdown {
        println!(
            "| over-provisioning | analytic WA at nominal spare | effective alpha | effective spare factor | analytic WA (LRW / large-block greedy) | greedy mean field, {pages} units/block | simulated WA | error vs analytic |"
        );
        println!("|---|---|---|---|---|---|---|---|");
    } else {
        println!("over_provisioning,nominal_analytic_wa,effective_alpha,effective_spare_factor,analytic_wa,greedy_mean_field_wa,simulated_wa,error");
    }
    for op in SPARES {
        let p = wa_experiment_params(op, blocks, pages);
        let alpha = effective_alpha(&p);
        let want = wa_lrw(alpha);
        let nominal = wa_lrw(nominal_alpha(&p));
        let mf = wa_greedy_mean_field(alpha, pages);
        let got = simulated_wa(&p, seed, warm, measure).unwrap_or_else(|e| {
            eprintln!("ftl_wa: {e}");
            std::process::exit(1)
        });
        let err = got / want - 1.0;
        if markdown {
            println!(
                "| {:.0}% | {nominal:.3} | {alpha:.4} | {:.2}% | {want:.3} | {mf:.3} | {got:.3} | {:+.1}% |",
                op * 100.0,
                (1.0 - 1.0 / alpha) * 100.0,
                err * 100.0
            );
        } else {
            println!(
                "{op},{nominal:.6},{alpha:.6},{:.6},{want:.6},{mf:.6},{got:.6},{err:.6}",
                1.0 - 1.0 / alpha
            );
        }
    }
}
