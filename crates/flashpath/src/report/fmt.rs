//! Number and time formatting exactly as fio 3.33 prints them: lib/num2str.c
//! (the "cheesy number->string conversion, complete with carry rounding
//! error" used for IOPS=, BW=, io= and the slat/clat min/max), ctime(3) for
//! the report time, and C's `%f`.
//!
//! Rust's `{:.N}` and glibc's `%.Nf` both round the exact binary value to
//! nearest (ties to even), so they print the same digits for finite values.

/// fio's `enum n2s_unit` (lib/num2str.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum N2sUnit {
    None,
    PerSec,
    Byte,
    Bit,
    BytePerSec,
    BitPerSec,
}

/// fio's num2str(num, maxlen, base, pow2, units): divide by 1000 (or 1024
/// when `pow2`) until at most `maxlen` digits remain, then show as many
/// decimals of the last remainder as fit in `maxlen` (counting the dot).
pub fn num2str(num: u64, maxlen: usize, base: u64, pow2: bool, units: N2sUnit) -> String {
    const SI: [&str; 6] = ["", "k", "M", "G", "T", "P"];
    const IEC: [&str; 6] = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let prefix = if pow2 { &IEC } else { &SI };
    let unitstr = match units {
        N2sUnit::None => "",
        N2sUnit::PerSec => "/s",
        N2sUnit::Byte => "B",
        N2sUnit::Bit => "bit",
        N2sUnit::BytePerSec => "B/s",
        N2sUnit::BitPerSec => "bit/s",
    };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut num = match units {
        N2sUnit::Bit | N2sUnit::BitPerSec => num.wrapping_mul(8),
        _ => num,
    };
    let mut post_index = 0usize;
    let mut base = base;
    while base > 1 {
        base /= thousand;
        post_index += 1;
    }
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post_index < SI.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post_index += 1;
    }
    if post_index >= SI.len() {
        post_index = SI.len() - 1;
    }
    let done = |n: u64| format!("{}{}{}", n, prefix[post_index], unitstr);
    let Some(modulo) = modulo else {
        return done(num);
    };
    let digits = num.to_string().len() as i64;
    if maxlen as i64 - digits <= 1 {
        return done(if carry { num + 1 } else { num });
    }
    let decimals = (maxlen as i64 - digits - 1) as usize;
    // fio prints modulo/thousand with "%.*f" and keeps what follows "0.";
    // a fraction that rounds up to "1.0" therefore shows as ".0" without
    // carrying into the integer part (fio's own rounding error).
    let frac = format!("{:.*}", decimals, modulo as f64 / thousand as f64);
    format!("{}.{}{}{}", num, &frac[2..], prefix[post_index], unitstr)
}

/// ctime(3) without the trailing newline, for `t` seconds since the Unix
/// epoch, in UTC (flashpath's virtual clock starts at the epoch):
/// "Thu Jan  1 00:00:05 1970".
pub fn ctime(t: u64) -> String {
    const WDAY: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = (t / 86_400) as i64;
    let secs = t % 86_400;
    let (y, m, d) = civil_from_days(days);
    // 1970-01-01 was a Thursday.
    let wday = ((days + 4) % 7) as usize;
    format!(
        "{} {}{:3} {:02}:{:02}:{:02} {}",
        WDAY[wday],
        MON[(m - 1) as usize],
        d,
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        y
    )
}

/// Days since 1970-01-01 to (year, month 1..=12, day 1..=31), proleptic
/// Gregorian (H. Hinnant's civil_from_days).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// C's `%f` (6 decimals). NaN and infinities as glibc prints them.
pub fn cf(v: f64) -> String {
    cfp(v, 6)
}

/// C's `%.Nf`.
pub fn cfp(v: f64, prec: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.into();
    }
    format!("{:.*}", prec, v)
}

/// strerror(3) of glibc for the errors a run here can produce; others as
/// glibc prints an unknown one.
pub fn strerror(err: i32) -> String {
    match err {
        0 => "Success".into(),
        5 => "Input/output error".into(),
        28 => "No space left on device".into(),
        61 => "No data available".into(),
        75 => "Value too large for defined data type".into(),
        84 => "Invalid or incomplete multibyte or wide character".into(),
        95 => "Operation not supported".into(),
        109 => "Too many references: cannot splice".into(),
        // ETIMEDOUT: fio's lat_fatal (latency_target, max_latency).
        110 => "Connection timed out".into(),
        121 => "Remote I/O error".into(),
        _ => format!("Unknown error {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num2str_matches_fio_fixture_values() {
        // real-runs/randrw70-4jobs-grouped/out.all-formats.txt
        assert_eq!(num2str(45053, 4, 1, false, N2sUnit::None), "45.1k");
        assert_eq!(num2str(19577, 4, 1, false, N2sUnit::None), "19.6k");
        assert_eq!(
            num2str(184538130, 4, 1, true, N2sUnit::BytePerSec),
            "176MiB/s"
        );
        assert_eq!(
            num2str(184538130, 4, 1, false, N2sUnit::BytePerSec),
            "185MB/s"
        );
        assert_eq!(
            num2str(80191116, 4, 1, true, N2sUnit::BytePerSec),
            "76.5MiB/s"
        );
        assert_eq!(
            num2str(80191116, 4, 1, false, N2sUnit::BytePerSec),
            "80.2MB/s"
        );
        assert_eq!(num2str(187121664, 4, 1, true, N2sUnit::Byte), "178MiB");
        assert_eq!(num2str(81313792, 4, 1, true, N2sUnit::Byte), "77.5MiB");
        assert_eq!(num2str(81313792, 4, 1, false, N2sUnit::Byte), "81.3MB");
        assert_eq!(num2str(33554432, 4, 1, true, N2sUnit::Byte), "32.0MiB");
        // seqread-128k: IOPS=6077 fits in 4 digits.
        assert_eq!(num2str(6077, 4, 1, false, N2sUnit::None), "6077");
        // display_lat: num2str(max, 6, 1, 0, N2S_NONE)
        assert_eq!(num2str(2361626, 6, 1, false, N2sUnit::None), "2361.6k");
        assert_eq!(num2str(998418, 6, 1, false, N2sUnit::None), "998418");
        // header: bs=(R) 64.0KiB-64.0KiB, 128KiB, 4096B
        assert_eq!(num2str(65536, 4, 1, true, N2sUnit::Byte), "64.0KiB");
        assert_eq!(num2str(131072, 4, 1, true, N2sUnit::Byte), "128KiB");
        assert_eq!(num2str(4096, 4, 1, true, N2sUnit::Byte), "4096B");
    }

    #[test]
    fn num2str_edge_cases() {
        assert_eq!(num2str(0, 4, 1, false, N2sUnit::None), "0");
        assert_eq!(num2str(9999, 4, 1, false, N2sUnit::None), "9999");
        assert_eq!(num2str(10000, 4, 1, false, N2sUnit::None), "10.0k");
        assert_eq!(num2str(1, 4, 1, true, N2sUnit::Bit), "8bit");
        // base 1024 with pow2 starts one prefix up.
        assert_eq!(num2str(512, 4, 1024, true, N2sUnit::Byte), "512KiB");
        // no panic at the top of the prefix table
        let s = num2str(u64::MAX, 4, 1, false, N2sUnit::None);
        assert!(s.ends_with('P'), "{s}");
    }

    #[test]
    fn ctime_formats_like_glibc() {
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime(5), "Thu Jan  1 00:00:05 1970");
        // fixture timestamps (fio ran with TZ=UTC on the VM)
        assert_eq!(ctime(1795315091), "Sun Nov 22 02:38:11 2026");
        assert_eq!(ctime(1795315063), "Sun Nov 22 02:37:43 2026");
        assert_eq!(ctime(951_782_400), "Tue Feb 29 00:00:00 2000");
    }

    #[test]
    fn c_float_format() {
        assert_eq!(cf(45053.254438), "45053.254438");
        assert_eq!(cf(0.0), "0.000000");
        assert_eq!(cfp(99.657063, 2), "99.66");
        assert_eq!(cf(f64::NAN), "nan");
    }
}
