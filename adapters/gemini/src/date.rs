//! The localized date line of Takeout's HTML activity records, e.g.
//! `Aug 8, 2026, 6:39:27 PM CEST` (English; also `8 Aug 2026, 18:39:27 UTC`
//! and zone-less pre-2018 dates, taken as UTC).

use chatmill_adapter_sdk::Timestamp;

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// Offset in minutes of the zone abbreviations Takeout prints.
fn zone_offset(z: &str) -> Option<i32> {
    let z = z.to_ascii_uppercase();
    if let Some(rest) = z.strip_prefix("GMT").or_else(|| z.strip_prefix("UTC")) {
        if rest.is_empty() {
            return Some(0);
        }
        // GMT+2, GMT-05:00, UTC+5:30
        let (sign, digits) = match rest.as_bytes().first() {
            Some(b'+') => (1, &rest[1..]),
            Some(b'-') => (-1, &rest[1..]),
            _ => return None,
        };
        let (h, m) = match digits.split_once(':') {
            Some((h, m)) => (h.parse::<i32>().ok()?, m.parse::<i32>().ok()?),
            None => (digits.parse::<i32>().ok()?, 0),
        };
        if h > 14 || m > 59 {
            return None;
        }
        return Some(sign * (h * 60 + m));
    }
    Some(match z.as_str() {
        "Z" | "UT" | "WET" => 0,
        "CET" | "WEST" | "BST" | "WAT" => 60,
        "CEST" | "EET" | "SAST" | "CAT" => 120,
        "EEST" | "MSK" | "IDT" | "EAT" | "TRT" | "AST3" => 180,
        "IST" => 330,
        "PKT" => 300,
        "ICT" | "WIB" => 420,
        "SGT" | "HKT" | "AWST" | "PHT" | "CST8" => 480,
        "JST" | "KST" => 540,
        "ACST" => 570,
        "AEST" => 600,
        "ACDT" => 630,
        "AEDT" => 660,
        "NZST" => 720,
        "NZDT" => 780,
        "BRT" | "ART" => -180,
        "ADT" => -180,
        "AST" => -240,
        "EDT" => -240,
        "EST" | "CDT" => -300,
        "CST" | "MDT" => -360,
        "MST" | "PDT" => -420,
        "PST" | "AKDT" => -480,
        "AKST" => -540,
        "HST" => -600,
        _ => return None,
    })
}

/// What a date line parsed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    pub timestamp: Timestamp,
    /// A zone was written but is not one we know (taken as UTC).
    pub unknown_zone: bool,
}

/// Parses a Takeout HTML date line; `None` when it is not a date.
pub fn parse(line: &str) -> Option<Parsed> {
    let norm: String = line
        .chars()
        .map(|c| {
            if c == ',' || c.is_whitespace() {
                ' '
            } else {
                c
            }
        })
        .collect();
    let mut month = None;
    let mut numbers: Vec<u32> = Vec::new();
    let mut time: Option<(u32, u32, u32)> = None;
    let mut pm: Option<bool> = None;
    let mut zone: Option<&str> = None;
    let mut unknown_words = 0;
    for tok in norm.split(' ').filter(|t| !t.is_empty()) {
        let lower = tok.to_ascii_lowercase();
        let lower = lower.trim_end_matches('.');
        if tok.contains(':') && tok.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            let mut it = tok.split(':');
            let h = it.next()?.parse().ok()?;
            let m = it.next()?.parse().ok()?;
            let s = match it.next() {
                Some(s) => s.parse().ok()?,
                None => 0,
            };
            time = Some((h, m, s));
        } else if let Ok(n) = tok.parse::<u32>() {
            numbers.push(n);
        } else if lower == "am" || lower == "a.m" {
            pm = Some(false);
        } else if lower == "pm" || lower == "p.m" {
            pm = Some(true);
        } else if month.is_none()
            && lower.len() >= 3
            && MONTHS.iter().position(|m| lower.starts_with(m)).is_some()
        {
            month = MONTHS.iter().position(|m| lower.starts_with(m));
        } else if zone.is_none() && time.is_some() {
            zone = Some(tok);
        } else {
            unknown_words += 1;
        }
    }
    if unknown_words > 0 {
        return None;
    }
    let month = month? as u32 + 1;
    let (h, mi, s) = time?;
    let (day, year) = match numbers.as_slice() {
        [a, b] if *b > 31 => (*a, *b),
        [a, b] if *a > 31 => (*b, *a),
        _ => return None,
    };
    if !(1..=31).contains(&day) || !(1970..=9999).contains(&year) || mi > 59 || s > 60 {
        return None;
    }
    let hour = match pm {
        Some(true) if h < 12 => h + 12,
        Some(false) if h == 12 => 0,
        Some(_) if h > 12 || h == 0 => return None,
        _ => h,
    };
    if hour > 23 {
        return None;
    }
    let (offset, unknown_zone) = match zone {
        None => (0, false),
        Some(z) => match zone_offset(z) {
            Some(o) => (o, false),
            None => (0, true),
        },
    };
    let sign = if offset < 0 { '-' } else { '+' };
    let iso = format!(
        "{year:04}-{month:02}-{day:02}T{hour:02}:{mi:02}:{s:02}{sign}{:02}:{:02}",
        offset.abs() / 60,
        offset.abs() % 60
    );
    Some(Parsed {
        timestamp: Timestamp::parse(&iso)?,
        unknown_zone,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iso(s: &str) -> Option<String> {
        parse(s).map(|p| p.timestamp.to_rfc3339())
    }

    #[test]
    fn english_takeout_dates_with_zones() {
        assert_eq!(
            iso("Aug 8, 2026, 6:39:27 PM CEST").as_deref(),
            Some("2026-08-08T16:39:27Z")
        );
        assert_eq!(
            iso("Aug 8, 2026, 6:39:27\u{202f}PM CEST").as_deref(),
            Some("2026-08-08T16:39:27Z")
        );
        assert_eq!(
            iso("Jan 2, 2026, 12:05:00 AM PST").as_deref(),
            Some("2026-01-02T08:05:00Z")
        );
        assert_eq!(
            iso("Mar 3, 2019, 12:00:00 PM UTC").as_deref(),
            Some("2019-03-03T12:00:00Z")
        );
        assert_eq!(
            iso("8 Aug 2026, 18:39:27 GMT+02:00").as_deref(),
            Some("2026-08-08T16:39:27Z")
        );
        assert_eq!(
            iso("Dec 31, 2016, 11:59:59 PM").as_deref(),
            Some("2016-12-31T23:59:59Z")
        );
        let p = parse("Aug 8, 2026, 6:39:27 PM XYZT").unwrap();
        assert!(p.unknown_zone);
    }

    #[test]
    fn non_dates_are_none() {
        assert_eq!(iso("Prompted what is 2 + 2?"), None);
        assert_eq!(iso("Gemini Apps"), None);
        assert_eq!(iso(""), None);
        assert_eq!(iso("Aug 40, 2026, 6:39:27 PM"), None);
        assert_eq!(iso("Aug 8, 2026, 13:39:27 PM"), None);
        assert_eq!(iso("May 5, 2026, 99:00 PM"), None);
    }
}
