//! Time phrases in a query ("what did I decide about the schema last
//! spring", "the camping trip in June", "on 8 May, 2023"): the window of
//! time they name, so a search can favour the chunks dated inside it.
//!
//! Relative phrases count back from a given moment (the clock, or the
//! request's `now`). A month or season without a year is its latest
//! occurrence that has begun by then. Only one phrase is read, the first;
//! words that merely look like dates ("may I", "2023 errors") are left alone:
//! a month needs a day, a year, or a word such as "in" or "last" before it,
//! and a bare year needs "in", "during", "since" or "of". "Since" runs the
//! window on to now.

use chrono::{DateTime, Datelike, Days, Months, NaiveDate, TimeZone, Utc};
use serde::{Deserialize, Serialize};

/// The window a query's time phrase names (Unix seconds, both ends inclusive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeWindow {
    /// The words it was read from, as written.
    pub phrase: String,
    pub since: i64,
    pub until: i64,
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

fn month(w: &str) -> Option<u32> {
    let i = MONTHS.iter().position(|m| *m == w).or_else(|| {
        // The usual abbreviations ("sept" too).
        let short = if w == "sept" { "sep" } else { w };
        (short.len() == 3)
            .then(|| MONTHS.iter().position(|m| m.starts_with(short)))
            .flatten()
    })?;
    u32::try_from(i + 1).ok()
}

fn number(w: &str) -> Option<u32> {
    const WORDS: [&str; 12] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    match w {
        "a" | "an" => Some(1),
        "couple" => Some(2),
        "few" => Some(3),
        _ => w.parse().ok().or_else(|| {
            WORDS
                .iter()
                .position(|n| *n == w)
                .and_then(|i| u32::try_from(i + 1).ok())
        }),
    }
}

fn day(w: &str) -> Option<u32> {
    let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &w[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn year(w: &str) -> Option<i32> {
    (w.len() == 4)
        .then(|| w.parse().ok())
        .flatten()
        .filter(|y| (1970..=2100).contains(y))
}

/// Meteorological seasons of the northern hemisphere: the first month, and
/// whether it starts in the year before (winter).
fn season(w: &str) -> Option<u32> {
    match w {
        "spring" => Some(3),
        "summer" => Some(6),
        "autumn" | "fall" => Some(9),
        "winter" => Some(12),
        _ => None,
    }
}

fn start(y: i32, m: u32, d: u32) -> Option<DateTime<Utc>> {
    NaiveDate::from_ymd_opt(y, m, d)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| Utc.from_utc_datetime(&t))
}

fn span(from: DateTime<Utc>, to_exclusive: DateTime<Utc>) -> (i64, i64) {
    (from.timestamp(), to_exclusive.timestamp() - 1)
}

fn month_span(y: i32, m: u32, months: u32) -> Option<(i64, i64)> {
    let from = start(y, m, 1)?;
    Some(span(from, from.checked_add_months(Months::new(months))?))
}

fn day_span(from: DateTime<Utc>, days: u64) -> Option<(i64, i64)> {
    Some(span(from, from.checked_add_days(Days::new(days))?))
}

/// The latest year in which month `m` has begun by `now` (`last`: the one
/// before the current month's, when it is the current month).
fn latest_year(now: DateTime<Utc>, m: u32, last: bool) -> i32 {
    if m < now.month() || (m == now.month() && !last) {
        now.year()
    } else {
        now.year() - 1
    }
}

/// Reads the first time phrase of `query`, counting back from `now`.
pub fn find(query: &str, now: DateTime<Utc>) -> Option<TimeWindow> {
    // Words with their byte ranges in the query, lowercased, punctuation
    // trimmed ("2023?", "may,").
    let mut words: Vec<(String, usize, usize)> = Vec::new();
    let mut pos = 0;
    for raw in query.split_whitespace() {
        let at = pos + query[pos..].find(raw).unwrap_or(0);
        pos = at + raw.len();
        let edge = |c: char| !c.is_alphanumeric() && c != '-';
        let lead = raw.len() - raw.trim_start_matches(edge).len();
        let w = raw.trim_matches(edge);
        let w = w.strip_suffix("'s").unwrap_or(w);
        if w.is_empty() {
            continue;
        }
        words.push((w.to_lowercase(), at + lead, at + lead + w.len()));
    }
    let lower: Vec<&str> = words.iter().map(|x| x.0.as_str()).collect();
    let ((since, mut until), mut from, to) =
        (0..words.len()).find_map(|i| phrase_at(&lower, i, now))?;
    // "since May": from then until now.
    if from > 0 && words[from - 1].0 == "since" {
        from -= 1;
        until = until.max(now.timestamp());
    }
    Some(TimeWindow {
        phrase: query[words[from].1..words[to].2].to_string(),
        since,
        until,
    })
}

/// A phrase's window (start, end) with its first and last word.
type Found = ((i64, i64), usize, usize);

/// The window named by a phrase that starts at word `i` of `words`
/// (lowercased), with the phrase's first and last word.
fn phrase_at(words: &[&str], i: usize, now: DateTime<Utc>) -> Option<Found> {
    let w = |j: usize| words.get(j).copied().unwrap_or("");
    let before = if i == 0 { "" } else { w(i - 1) };
    let today = start(now.year(), now.month(), now.day())?;
    // 2023-05-08
    if let Ok(d) = NaiveDate::parse_from_str(w(i), "%Y-%m-%d") {
        return Some((day_span(start(d.year(), d.month(), d.day())?, 1)?, i, i));
    }
    if let Some(m) = month(w(i)) {
        return month_phrase(words, i, m, now);
    }
    // 8 May, 2023 / 8th of May 2023
    if let Some(d) = day(w(i)) {
        let of = usize::from(w(i + 1) == "of");
        if let Some(m) = month(w(i + 1 + of))
            && let Some(y) = year(w(i + 2 + of))
        {
            return Some((day_span(start(y, m, d)?, 1)?, i, i + 2 + of));
        }
    }
    // in 2023
    if let Some(y) = year(w(i))
        && matches!(before, "in" | "during" | "since" | "of" | "from")
    {
        return Some((month_span(y, 1, 12)?, i, i));
    }
    if let Some(first) = season(w(i)) {
        return season_phrase(words, i, first, now);
    }
    relative_phrase(words, i, today, now)
}

/// A phrase that starts with month `m` at word `i`: May 8, 2023 / May
/// 2023 / May 8 / (in) May.
fn month_phrase(words: &[&str], i: usize, m: u32, now: DateTime<Utc>) -> Option<Found> {
    let w = |j: usize| words.get(j).copied().unwrap_or("");
    let before = if i == 0 { "" } else { w(i - 1) };
    // May 8, 2023 / May 2023 / May 8 / (in) May
    if let Some(d) = day(w(i + 1)) {
        if let Some(y) = year(w(i + 2)) {
            return Some((day_span(start(y, m, d)?, 1)?, i, i + 2));
        }
        let y = latest_year(now, m, false);
        let y = if start(y, m, d)? > now { y - 1 } else { y };
        return Some((day_span(start(y, m, d)?, 1)?, i, i + 1));
    }
    if let Some(y) = year(w(i + 1)) {
        return Some((month_span(y, m, 1)?, i, i + 1));
    }
    let lead = matches!(
        before,
        "in" | "during" | "since" | "last" | "this" | "early" | "late" | "mid" | "of"
    );
    if lead {
        let y = latest_year(now, m, before == "last");
        return Some((month_span(y, m, 1)?, i, i));
    }
    None
}

/// A phrase with the season that starts in month `first` at word `i`:
/// summer 2023 / summer of 2023 / last summer / this summer.
fn season_phrase(words: &[&str], i: usize, first: u32, now: DateTime<Utc>) -> Option<Found> {
    let w = |j: usize| words.get(j).copied().unwrap_or("");
    let before = if i == 0 { "" } else { w(i - 1) };
    // summer 2023 / summer of 2023 / last summer / this summer
    let of = usize::from(w(i + 1) == "of");
    if let Some(y) = year(w(i + 1 + of)) {
        let y = if first == 12 { y - 1 } else { y };
        return Some((month_span(y, first, 3)?, i, i + 1 + of));
    }
    if matches!(before, "last" | "this" | "past") {
        // The latest season of that name that has begun (this)
        // or ended (last) by now.
        let mut from = start(now.year(), first, 1)?;
        while from > now {
            from = from.checked_sub_months(Months::new(12))?;
        }
        let end = from.checked_add_months(Months::new(3))?;
        if before != "this" && end > now {
            from = from.checked_sub_months(Months::new(12))?;
        }
        let end = from.checked_add_months(Months::new(3))?;
        return Some((span(from, end), i - 1, i));
    }
    None
}

/// A phrase relative to `today`: today, yesterday, last week, this
/// month, the past year, three weeks ago.
fn relative_phrase(
    words: &[&str],
    i: usize,
    today: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Option<Found> {
    let w = |j: usize| words.get(j).copied().unwrap_or("");
    match w(i) {
        "today" | "tonight" => return Some((day_span(today, 1)?, i, i)),
        "yesterday" => {
            return Some((day_span(today.checked_sub_days(Days::new(1))?, 1)?, i, i));
        }
        _ => {}
    }
    // last week / this month / the past year
    if matches!(w(i), "last" | "this" | "past" | "previous") {
        let monday =
            today.checked_sub_days(Days::new(u64::from(today.weekday().num_days_from_monday())))?;
        let this = w(i) == "this";
        let rolling = w(i) == "past";
        let window = match w(i + 1) {
            "week" if rolling => Some(span(today.checked_sub_days(Days::new(6))?, now)),
            "week" if this => Some(span(monday, now)),
            "week" => day_span(monday.checked_sub_days(Days::new(7))?, 7),
            "weekend" => {
                let saturday = monday.checked_add_days(Days::new(5))?;
                let saturday = if this || saturday <= today {
                    saturday
                } else {
                    saturday.checked_sub_days(Days::new(7))?
                };
                let saturday = if !this && saturday.checked_add_days(Days::new(2))? > now {
                    saturday.checked_sub_days(Days::new(7))?
                } else {
                    saturday
                };
                day_span(saturday, 2)
            }
            "month" if rolling => Some(span(today.checked_sub_days(Days::new(30))?, now)),
            "month" if this => Some(span(start(now.year(), now.month(), 1)?, now)),
            "month" => {
                let first =
                    start(now.year(), now.month(), 1)?.checked_sub_months(Months::new(1))?;
                month_span(first.year(), first.month(), 1)
            }
            "year" if rolling => Some(span(today.checked_sub_days(Days::new(365))?, now)),
            "year" if this => Some(span(start(now.year(), 1, 1)?, now)),
            "year" => month_span(now.year() - 1, 1, 12),
            _ => None,
        };
        return window.map(|s| (s, i, i + 1));
    }
    // three weeks ago / a month ago / 4 years ago
    if let Some(n) = number(w(i))
        && w(i + 2) == "ago"
    {
        let unit = w(i + 1).trim_end_matches('s');
        let n64 = u64::from(n);
        let window = match unit {
            "day" => day_span(today.checked_sub_days(Days::new(n64))?, 1),
            "week" => day_span(today.checked_sub_days(Days::new(7 * n64 + 3))?, 7),
            "month" => {
                let m = start(now.year(), now.month(), 1)?.checked_sub_months(Months::new(n))?;
                month_span(m.year(), m.month(), 1)
            }
            "year" => month_span(now.year() - i32::try_from(n).ok()?, 1, 12),
            _ => None,
        };
        return window.map(|s| (s, i, i + 2));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn read(query: &str, now: &str) -> Option<(String, String, String)> {
        find(query, at(now)).map(|w| {
            let d = |t: i64| {
                DateTime::<Utc>::from_timestamp(t, 0)
                    .unwrap()
                    .format("%Y-%m-%d")
                    .to_string()
            };
            (w.phrase, d(w.since), d(w.until))
        })
    }

    /// Tuesday 24 November 2026, in the afternoon.
    const NOW: &str = "2026-11-24T15:00:00Z";

    /// A query and the window it reads as: (phrase, first day, last day).
    type Case = (
        &'static str,
        Option<(&'static str, &'static str, &'static str)>,
    );

    /// Each query, read at [`NOW`], gives its window.
    fn check(cases: &[Case]) {
        for (query, want) in cases {
            let got = read(query, NOW);
            let want = want.map(|(p, a, b)| (p.to_string(), a.to_string(), b.to_string()));
            assert_eq!(got, want, "{query}");
        }
    }

    /// A season: last, this, or of a year.
    #[test]
    fn seasons_read_as_three_months() {
        check(&[
            (
                "what did I decide about the schema last spring",
                Some(("last spring", "2026-03-01", "2026-05-31")),
            ),
            (
                "notes from last winter",
                Some(("last winter", "2025-12-01", "2026-02-28")),
            ),
            (
                "this autumn's plan",
                Some(("this autumn", "2026-09-01", "2026-11-30")),
            ),
            (
                "summer of 2023",
                Some(("summer of 2023", "2023-06-01", "2023-08-31")),
            ),
        ]);
    }

    /// A month: its latest (the current month included), the one before after
    /// "last", or of a given year; "since" a month runs to today; a month name
    /// that is also a word (march, may) is read only after a leading word.
    #[test]
    fn months_read_as_their_latest_or_named_year() {
        check(&[
            (
                "When did Melanie go camping in June?",
                Some(("June", "2026-06-01", "2026-06-30")),
            ),
            (
                "the outage in December",
                Some(("December", "2025-12-01", "2025-12-31")),
            ),
            (
                "the outage in November",
                Some(("November", "2026-11-01", "2026-11-30")),
            ),
            (
                "what happened last November",
                Some(("November", "2025-11-01", "2025-11-30")),
            ),
            (
                "What did Mel paint in July 2023?",
                Some(("July 2023", "2023-07-01", "2023-07-31")),
            ),
            (
                "the flaky test since March",
                Some(("since March", "2026-03-01", "2026-11-24")),
            ),
            ("fix the march build", None),
            ("may I ask about the parser", None),
        ]);
    }

    /// A date: spelled out, month first or day first, with or without a year,
    /// or ISO (a day that does not exist is no window).
    #[test]
    fn dates_read_as_one_day() {
        check(&[
            (
                "What painting did Melanie show on October 13, 2023?",
                Some(("October 13, 2023", "2023-10-13", "2023-10-13")),
            ),
            (
                "What did Gina find on 1 February, 2023?",
                Some(("1 February, 2023", "2023-02-01", "2023-02-01")),
            ),
            (
                "the 8th of May 2023 standup",
                Some(("8th of May 2023", "2023-05-08", "2023-05-08")),
            ),
            (
                "the deploy on Dec 24",
                Some(("Dec 24", "2025-12-24", "2025-12-24")),
            ),
            (
                "the deploy on Nov 3",
                Some(("Nov 3", "2026-11-03", "2026-11-03")),
            ),
            ("logs from 2026-02-29", None),
            (
                "logs from 2024-02-29",
                Some(("2024-02-29", "2024-02-29", "2024-02-29")),
            ),
        ]);
    }

    /// A year, after a leading word; since a year; this and last year.
    #[test]
    fn years_read_as_a_year_or_since() {
        check(&[
            (
                "How many times has Melanie gone to the beach in 2023?",
                Some(("2023", "2023-01-01", "2023-12-31")),
            ),
            ("the 2023 errors", None),
            (
                "everything since 2024",
                Some(("since 2024", "2024-01-01", "2026-11-24")),
            ),
            (
                "this year so far",
                Some(("this year", "2026-01-01", "2026-11-24")),
            ),
            (
                "the trip last year",
                Some(("last year", "2025-01-01", "2025-12-31")),
            ),
        ]);
    }

    /// Days, weeks and months counted from now.
    #[test]
    fn days_weeks_and_months_near_now() {
        check(&[
            (
                "what we discussed yesterday",
                Some(("yesterday", "2026-11-23", "2026-11-23")),
            ),
            (
                "what we said today",
                Some(("today", "2026-11-24", "2026-11-24")),
            ),
            (
                "the bug from last week",
                Some(("last week", "2026-11-16", "2026-11-22")),
            ),
            (
                "the bug from this week",
                Some(("this week", "2026-11-23", "2026-11-24")),
            ),
            (
                "the past week",
                Some(("past week", "2026-11-18", "2026-11-24")),
            ),
            (
                "hikes last weekend",
                Some(("last weekend", "2026-11-21", "2026-11-22")),
            ),
            (
                "last month's invoices",
                Some(("last month", "2026-10-01", "2026-10-31")),
            ),
        ]);
    }

    /// "… ago": that many units back, as a whole unit.
    #[test]
    fn ago_counts_back_in_its_unit() {
        check(&[
            (
                "Where did Caroline move from 4 years ago?",
                Some(("4 years ago", "2022-01-01", "2022-12-31")),
            ),
            (
                "a month ago",
                Some(("a month ago", "2026-10-01", "2026-10-31")),
            ),
            (
                "three days ago",
                Some(("three days ago", "2026-11-21", "2026-11-21")),
            ),
            (
                "two weeks ago",
                Some(("two weeks ago", "2026-11-07", "2026-11-13")),
            ),
        ]);
    }

    /// Words that name no time.
    #[test]
    fn words_that_name_no_time_read_as_none() {
        check(&[("nginx upload timeout", None), ("spring boot config", None)]);
    }

    #[test]
    fn any_text_is_read_without_panicking() {
        let now = at("2026-11-24T15:00:00Z");
        for q in [
            "",
            "-2023",
            "in -2023-",
            "since",
            "last",
            "Ünïcödé in June?",
            "in \u{1F600}June\u{1F600} 2023",
            "camping 31st",
            "on February 30, 2023",
            "in 0000",
            "9999999999999999999999 days ago",
            "last last last week",
        ] {
            let _ = find(q, now);
        }
        assert_eq!(find("on February 30, 2023", now), None);
        assert_eq!(
            find("in \u{1F600}June\u{1F600} 2023", now).map(|w| w.phrase),
            Some("June\u{1F600} 2023".to_string())
        );
    }

    #[test]
    fn in_a_season_last_means_the_one_before() {
        // In July, "last summer" is the year before's; "this summer" is now.
        let now = "2026-07-10T12:00:00Z";
        assert_eq!(
            read("last summer", now),
            Some((
                "last summer".into(),
                "2025-06-01".into(),
                "2025-08-31".into()
            ))
        );
        assert_eq!(
            read("this summer", now),
            Some((
                "this summer".into(),
                "2026-06-01".into(),
                "2026-08-31".into()
            ))
        );
        // And "in July" is this July, "last July" the one before.
        assert_eq!(read("in July", now).unwrap().1, "2026-07-01");
        assert_eq!(read("last July", now).unwrap().1, "2025-07-01");
    }
}
