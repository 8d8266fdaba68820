//! The page's charts, drawn by plotters into SVG strings. Every label that
//! came from a chunk (platforms, models, topics: an adapter's output) is
//! cut down to plain characters first.

use std::collections::BTreeMap;

use chrono::{Datelike, Timelike};
use plotters::prelude::*;

use crate::facts::Facts;

const WIDTH: u32 = 880;
const HEIGHT: u32 = 320;

/// A chart: its title, the SVG, and how many values it draws.
pub struct Chart {
    pub title: String,
    pub svg: String,
    pub points: usize,
}

/// Text from a chunk made safe for a label: no markup characters, at most
/// 32 characters.
pub fn label(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() && !"<>&\"'\\".contains(*c))
        .take(32)
        .collect()
}

fn draw(
    title: &str,
    size: (u32, u32),
    body: impl FnOnce(&DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> Result<usize, String>,
) -> Chart {
    let mut svg = String::new();
    let points = {
        let area = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let drawn = area
            .fill(&WHITE)
            .map_err(|e| e.to_string())
            .and_then(|()| body(&area))
            .and_then(|n| area.present().map(|()| n).map_err(|e| e.to_string()));
        drawn.unwrap_or_else(|e| {
            tracing::warn!("chart `{title}` could not be drawn: {e}");
            0
        })
    };
    Chart {
        title: title.to_string(),
        svg,
        points,
    }
}

/// A named series of counts by month.
type Series = (String, BTreeMap<i32, usize>);

/// Months since year 0, and back.
fn month_of(f: &Facts) -> Option<i32> {
    f.time.map(|t| t.year() * 12 + t.month0() as i32)
}

fn month_label(m: i32) -> String {
    format!("{}-{:02}", m.div_euclid(12), m.rem_euclid(12) + 1)
}

/// Per series, per month: how many exchanges (the top `keep` series by
/// total, the rest summed as "other").
fn monthly(facts: &[Facts], key: impl Fn(&Facts) -> &str, keep: usize) -> (i32, i32, Vec<Series>) {
    let mut series: BTreeMap<String, BTreeMap<i32, usize>> = BTreeMap::new();
    for f in facts {
        if let Some(m) = month_of(f) {
            *series
                .entry(label(key(f)))
                .or_default()
                .entry(m)
                .or_default() += f.exchanges.len();
        }
    }
    let mut all: Vec<Series> = series.into_iter().collect();
    all.sort_by_key(|(_, m)| std::cmp::Reverse(m.values().sum::<usize>()));
    if all.len() > keep {
        let mut other = BTreeMap::new();
        for (_, m) in all.drain(keep..) {
            for (k, v) in m {
                *other.entry(k).or_default() += v;
            }
        }
        all.push(("other".into(), other));
    }
    let months = all.iter().flat_map(|(_, m)| m.keys().copied());
    let (lo, hi) = months.fold((i32::MAX, i32::MIN), |(lo, hi), m| (lo.min(m), hi.max(m)));
    // At most twenty years: a stray timestamp must not flatten the rest.
    (lo.max(hi - 240), hi, all)
}

/// Exchanges per month, one line per series.
pub fn per_month(facts: &[Facts], title: &str, key: impl Fn(&Facts) -> &str, keep: usize) -> Chart {
    let (lo, hi, series) = monthly(facts, key, keep);
    draw(title, (WIDTH, HEIGHT), |area| {
        if series.is_empty() {
            return Ok(0);
        }
        let max = series
            .iter()
            .flat_map(|(_, m)| m.values().copied())
            .max()
            .unwrap_or(1);
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .x_label_area_size(32)
            .y_label_area_size(48)
            .build_cartesian_2d(lo..hi + 1, 0..max + max / 10 + 1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_labels(8)
            .x_label_formatter(&|m| month_label(*m))
            .y_desc("exchanges")
            .draw()
            .map_err(|e| e.to_string())?;
        let mut points = 0;
        for (i, (name, months)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let line: Vec<(i32, usize)> = (lo..=hi)
                .map(|m| (m, months.get(&m).copied().unwrap_or(0)))
                .collect();
            points += months.len();
            chart
                .draw_series(LineSeries::new(line, color.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(|e| e.to_string())?;
        Ok(points)
    })
}

/// Exchanges by weekday (rows) and hour, UTC (columns).
pub fn heat_map(facts: &[Facts]) -> Chart {
    let mut cells = [[0usize; 24]; 7];
    for f in facts {
        if let Some(t) = f.time {
            cells[t.weekday().num_days_from_monday() as usize][t.hour() as usize] +=
                f.exchanges.len();
        }
    }
    let max = cells.iter().flatten().copied().max().unwrap_or(0).max(1);
    let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    draw(
        "Exchanges by weekday and hour (UTC)",
        (WIDTH, 260),
        |area| {
            let mut chart = ChartBuilder::on(area)
                .margin(12)
                .x_label_area_size(28)
                .y_label_area_size(44)
                .build_cartesian_2d(0..24i32, -0.5f64..6.5)
                .map_err(|e| e.to_string())?;
            chart
                .configure_mesh()
                .disable_mesh()
                .x_labels(24)
                .y_labels(7)
                .y_label_formatter(&|d| row_label(*d, &days))
                .draw()
                .map_err(|e| e.to_string())?;
            let mut points = 0;
            let mut rects = Vec::with_capacity(7 * 24);
            for (d, row) in cells.iter().enumerate() {
                for (h, &n) in row.iter().enumerate() {
                    points += usize::from(n > 0);
                    let shade = 1.0 - 0.85 * (n as f64 / max as f64);
                    let color = RGBColor(
                        (30.0 + 225.0 * shade) as u8,
                        (90.0 + 165.0 * shade) as u8,
                        (160.0 + 95.0 * shade) as u8,
                    );
                    let (x, y) = (h as i32, d as f64);
                    rects.push(Rectangle::new(
                        [(x, y - 0.5), (x + 1, y + 0.5)],
                        color.filled(),
                    ));
                }
            }
            chart.draw_series(rects).map_err(|e| e.to_string())?;
            Ok(points)
        },
    )
}

/// The label of the row at `y` (rows at whole numbers; nothing between).
fn row_label<S: AsRef<str>>(y: f64, names: &[S]) -> String {
    let row = y.round();
    if (y - row).abs() > 0.01 || row < 0.0 {
        return String::new();
    }
    names
        .get(row as usize)
        .map_or(String::new(), |s| s.as_ref().to_string())
}

/// Bucket bounds of a length distribution, in words.
const BUCKETS: &[usize] = &[10, 25, 50, 100, 200, 400, 800, 1600, 3200, usize::MAX];

/// How many of `lengths` fall in each bucket.
pub fn histogram(title: &str, lengths: impl Iterator<Item = usize>) -> Chart {
    let mut counts = vec![0usize; BUCKETS.len()];
    for n in lengths {
        counts[BUCKETS
            .iter()
            .position(|&b| n <= b)
            .unwrap_or(BUCKETS.len() - 1)] += 1;
    }
    let bucket = |i: usize| match (
        BUCKETS.get(i),
        i.checked_sub(1).and_then(|j| BUCKETS.get(j)),
    ) {
        (Some(&usize::MAX), Some(before)) => format!(">{before}"),
        (Some(b), _) => format!("≤{b}"),
        (None, _) => String::new(),
    };
    let max = counts.iter().copied().max().unwrap_or(0);
    draw(title, (WIDTH / 2 - 10, HEIGHT), |area| {
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .x_label_area_size(32)
            .y_label_area_size(48)
            .build_cartesian_2d(0..BUCKETS.len() as i32, 0..max + max / 10 + 1)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(BUCKETS.len())
            .x_label_formatter(&|i| bucket(*i as usize))
            .x_desc("words")
            .draw()
            .map_err(|e| e.to_string())?;
        let bars = counts.iter().enumerate().map(|(i, &c)| {
            Rectangle::new(
                [(i as i32, 0), (i as i32 + 1, c)],
                Palette99::pick(2).filled(),
            )
        });
        chart.draw_series(bars).map_err(|e| e.to_string())?;
        Ok(counts.iter().filter(|&&c| c > 0).count())
    })
}

/// The most frequent topics of one year, as horizontal bars.
pub fn topics(year: i32, top: &[(String, usize)]) -> Chart {
    let max = top.iter().map(|(_, n)| *n).max().unwrap_or(0);
    let rows = top.len().max(1) as f64;
    let names: Vec<String> = top.iter().rev().map(|(t, _)| label(t)).collect();
    let size = (WIDTH / 2 - 10, 40 + 26 * top.len().max(1) as u32);
    draw(&format!("Top topics of {year}"), size, |area| {
        let mut chart = ChartBuilder::on(area)
            .margin(8)
            .x_label_area_size(24)
            .y_label_area_size(200)
            .build_cartesian_2d(0..max + 1, -0.5f64..rows - 0.5)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(top.len().max(1))
            .y_label_formatter(&|y| row_label(*y, &names))
            .draw()
            .map_err(|e| e.to_string())?;
        let bars = top.iter().enumerate().map(|(i, (_, n))| {
            let y = rows - 1.0 - i as f64;
            Rectangle::new([(0, y - 0.4), (*n, y + 0.4)], Palette99::pick(5).filled())
        });
        chart.draw_series(bars).map_err(|e| e.to_string())?;
        Ok(top.len())
    })
}

/// Per year (the latest `years`), its `n` most frequent topics.
pub fn topics_by_year(facts: &[Facts], years: usize, n: usize) -> Vec<(i32, Vec<(String, usize)>)> {
    let mut by_year: BTreeMap<i32, BTreeMap<String, usize>> = BTreeMap::new();
    for f in facts {
        let Some(t) = f.time else { continue };
        let year = by_year.entry(t.year()).or_default();
        for topic in &f.topics {
            *year.entry(topic.to_lowercase()).or_default() += 1;
        }
    }
    by_year
        .into_iter()
        .rev()
        .take(years)
        .map(|(y, counts)| {
            let mut top: Vec<(String, usize)> = counts.into_iter().collect();
            top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            top.truncate(n);
            (y, top)
        })
        .filter(|(_, top)| !top.is_empty())
        .collect()
}
