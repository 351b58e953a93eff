//! dd's transfer line (`N bytes (X MB, Y MiB) copied, T s, R MB/s`),
//! with the number formats it uses.

/// Python's `format(x, ".{precision}g")` (C's %g): `precision`
/// significant digits, exponent form below 1e-4 or from 10^precision,
/// trailing zeros removed.
fn format_g(x: f64, precision: usize) -> String {
    let p = precision.max(1);
    if x == 0.0 {
        return "0".into();
    }
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exp < -4 || exp >= p as i32 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{:.*}", (p as i32 - 1 - exp) as usize, x))
    }
}

/// Bytes with a decimal unit, 3 significant digits.
fn si(n: f64) -> String {
    for (unit, f) in [("GB", 1e9), ("MB", 1e6), ("kB", 1e3)] {
        if n >= f {
            return format!("{} {unit}", format_g(n / f, 3));
        }
    }
    format!("{} bytes", format_g(n, 6))
}

/// Bytes with a binary unit, 3 significant digits.
fn iec(n: f64) -> String {
    for (unit, f) in [("GiB", 1073741824.0), ("MiB", 1048576.0), ("KiB", 1024.0)] {
        if n >= f {
            return format!("{} {unit}", format_g(n / f, 3));
        }
    }
    format!("{} bytes", format_g(n, 6))
}

/// dd's transfer line, as flashpath has always printed it: the bytes read,
/// their size in decimal and binary units, the job's runtime (fio's, in
/// whole ms) and the rate.
pub(super) fn copied_line(bytes: u64, runtime_ms: u64) -> String {
    let secs = runtime_ms as f64 / 1000.0;
    let rate = if secs > 0.0 { bytes as f64 / secs } else { 0.0 };
    format!(
        "{bytes} bytes ({}, {}) copied, {} s, {}/s",
        si(bytes as f64),
        iec(bytes as f64),
        format_g(secs, 6),
        si(rate)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_g_is_pythons() {
        // format(x, ".3g") and format(x, "g") from CPython 3.11.
        for (x, three, six) in [
            (0.125, "0.125", "0.125"),
            (10.25, "10.2", "10.25"),
            (1.125, "1.12", "1.125"),
            (999.5, "1e+03", "999.5"),
            (999.4999, "999", "999.5"),
            (1e-05, "1e-05", "1e-05"),
            (0.0001, "0.0001", "0.0001"),
            (123456.0, "1.23e+05", "123456"),
            (1234567.0, "1.23e+06", "1.23457e+06"),
            (0.381, "0.381", "0.381"),
            (40.213, "40.2", "40.213"),
            (1e+16, "1e+16", "1e+16"),
            (5e-324, "4.94e-324", "4.94066e-324"),
            (3.0, "3", "3"),
            (2.5, "2.5", "2.5"),
            (0.000123456, "0.000123", "0.000123456"),
        ] {
            assert_eq!(format_g(x, 3), three, "{x}");
            assert_eq!(format_g(x, 6), six, "{x}");
        }
    }

    /// The transfer line as flashpath's Python front end printed it
    /// before dd moved into the core (its _si/_iec helpers run on these
    /// numbers): byte for byte.
    #[test]
    pub(super) fn copied_line_is_unchanged() {
        for (bytes, ms, line) in [
            (
                83886080,
                381,
                "83886080 bytes (83.9 MB, 80 MiB) copied, 0.381 s, 220 MB/s",
            ),
            (
                83886080,
                217,
                "83886080 bytes (83.9 MB, 80 MiB) copied, 0.217 s, 387 MB/s",
            ),
            (
                8192000,
                13,
                "8192000 bytes (8.19 MB, 7.81 MiB) copied, 0.013 s, 630 MB/s",
            ),
            (3, 1, "3 bytes (3 bytes, 3 bytes) copied, 0.001 s, 3 kB/s"),
            (
                100,
                1,
                "100 bytes (100 bytes, 100 bytes) copied, 0.001 s, 100 kB/s",
            ),
            (
                104857600000,
                40213,
                "104857600000 bytes (105 GB, 97.7 GiB) copied, 40.213 s, 2.61 GB/s",
            ),
            (0, 0, "0 bytes (0 bytes, 0 bytes) copied, 0 s, 0 bytes/s"),
            (
                999,
                0,
                "999 bytes (999 bytes, 999 bytes) copied, 0 s, 0 bytes/s",
            ),
            (
                1000,
                1,
                "1000 bytes (1 kB, 1000 bytes) copied, 0.001 s, 1 MB/s",
            ),
            (
                1023,
                7,
                "1023 bytes (1.02 kB, 1023 bytes) copied, 0.007 s, 146 kB/s",
            ),
            (
                1024,
                1000,
                "1024 bytes (1.02 kB, 1 KiB) copied, 1 s, 1.02 kB/s",
            ),
            (
                10747904,
                3,
                "10747904 bytes (10.7 MB, 10.2 MiB) copied, 0.003 s, 3.58 GB/s",
            ),
            (
                1125000,
                8,
                "1125000 bytes (1.12 MB, 1.07 MiB) copied, 0.008 s, 141 MB/s",
            ),
            (
                999500,
                1,
                "999500 bytes (1e+03 kB, 976 KiB) copied, 0.001 s, 1e+03 MB/s",
            ),
            (
                999499999,
                999,
                "999499999 bytes (999 MB, 953 MiB) copied, 0.999 s, 1 GB/s",
            ),
            (
                4096,
                1234567,
                "4096 bytes (4.1 kB, 4 KiB) copied, 1234.57 s, 3.31776 bytes/s",
            ),
            (
                1099511627776,
                86400000,
                "1099511627776 bytes (1.1e+03 GB, 1.02e+03 GiB) copied, 86400 s, 12.7 MB/s",
            ),
            (
                512,
                100000000,
                "512 bytes (512 bytes, 512 bytes) copied, 100000 s, 0.00512 bytes/s",
            ),
            (
                1536,
                3,
                "1536 bytes (1.54 kB, 1.5 KiB) copied, 0.003 s, 512 kB/s",
            ),
        ] {
            assert_eq!(copied_line(bytes, ms), line);
        }
    }
}
