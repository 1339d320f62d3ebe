//! RFC 3339 timestamps, as every log writes them, to milliseconds since the Unix epoch.

/// `2026-02-09T22:58:34.194Z`, `2026-02-09 22:58:34+01:00`, fractions of any length.
/// None for anything else: a bad timestamp is not worth a warning, the entry still loads.
pub(crate) fn parse_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let mut v = 0i64;
        for &c in &b[r] {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(c - b'0');
        }
        Some(v)
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut ms = 0i64;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 3 {
                ms = ms * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        let digits = (i - start).min(3);
        if digits == 0 {
            return None;
        }
        for _ in digits..3 {
            ms *= 10;
        }
    }
    let offset_min = match b.get(i) {
        None => 0,
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if b.len() == i + 6 && b[i + 3] == b':' => {
            let o = num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?;
            if sign == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    Some(secs * 1000 + ms)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse, for writers of samples and the native format: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_ms(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_shapes_logs_write() {
        assert_eq!(parse_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_ms("2026-02-09T22:58:34.194Z"),
            Some(1_770_677_914_194)
        );
        assert_eq!(
            parse_ms("2026-02-09T23:58:34.194+01:00"),
            Some(1_770_677_914_194)
        );
        assert_eq!(
            parse_ms("2026-02-09T22:58:34.194123456Z"),
            Some(1_770_677_914_194)
        );
        assert_eq!(parse_ms("2026-02-09T22:58:34.1Z"), Some(1_770_677_914_100));
        assert_eq!(parse_ms("2026-02-09 22:58:34"), Some(1_770_677_914_000));
        for bad in [
            "",
            "2026-02-09",
            "2026-13-09T22:58:34Z",
            "2026-02-09T22:58:34.Z",
            "x026-02-09T22:58:34Z",
            "2026-02-09T22:58:34Zjunk",
        ] {
            assert_eq!(parse_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn format_is_the_inverse() {
        for ms in [0, 1_770_677_914_194, 951_782_400_123, 4_102_444_800_000] {
            assert_eq!(parse_ms(&format_ms(ms)), Some(ms));
        }
        assert_eq!(format_ms(1_770_677_914_194), "2026-02-09T22:58:34.194Z");
    }
}
