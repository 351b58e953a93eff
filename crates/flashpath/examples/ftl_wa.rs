//! `cargo run --release -p flashpath --example ftl_wa [-- --markdown]
//! [--blocks N] [--pages N] [--warm X] [--measure X] [--seed N]`:
//! the FTL's write amplification under uniform random 4 KiB writes at
//! steady state against the closed forms, one row per spare factor, as CSV
//! (default) or as the Markdown table of docs/ftl-write-amplification.md.
use flashpath::device::ftl::analytic::wa_table;

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
    let rows = wa_table(blocks, pages, warm, measure, seed).unwrap_or_else(|e| {
        eprintln!("ftl_wa: {e}");
        std::process::exit(1)
    });
    for r in rows {
        let err = r.simulated_wa / r.analytic_wa - 1.0;
        if markdown {
            println!(
                "| {:.0}% | {:.3} | {:.4} | {:.2}% | {:.3} | {:.3} | {:.3} | {:+.1}% |",
                r.over_provisioning * 100.0,
                r.nominal_analytic_wa,
                r.effective_alpha,
                r.effective_spare_factor * 100.0,
                r.analytic_wa,
                r.greedy_mean_field_wa,
                r.simulated_wa,
                err * 100.0
            );
        } else {
            println!(
                "{},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{err:.6}",
                r.over_provisioning,
                r.nominal_analytic_wa,
                r.effective_alpha,
                r.effective_spare_factor,
                r.analytic_wa,
                r.greedy_mean_field_wa,
                r.simulated_wa
            );
        }
    }
}
