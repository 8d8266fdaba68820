//! `chatmill report --html FILE`: one self-contained page (no network, no
//! scripts; a Content-Security-Policy that forbids both): the root's
//! history as charts (inline SVG from `charts`) and the seven criteria
//! with their evidence linked to the chunk files. Everything from a chunk
//! or an input is escaped.

use std::fmt::Write as _;
use std::path::Path;

use crate::charts::{self, Chart};
use crate::{Report, ReportError};

/// `text` escaped for HTML text and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' => {}
            c => out.push(c),
        }
    }
    out
}

/// A `file://` URL of `path`, every byte outside a safe set encoded.
fn file_url(path: &Path) -> String {
    let mut out = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The charts of the page, in order.
pub fn charts(report: &Report) -> Vec<Chart> {
    let f = &report.facts;
    let mut out = vec![
        charts::per_month(f, "Exchanges per month, by platform", |f| &f.platform, 8),
        charts::heat_map(f),
        charts::per_month(f, "Models over time (exchanges per month)", |f| &f.model, 6),
        charts::histogram(
            "Exchange length (words)",
            f.iter().flat_map(|c| c.exchanges.iter().map(|e| e.words)),
        ),
        charts::histogram("Chunk length (words)", f.iter().map(|c| c.words())),
    ];
    for (year, top) in charts::topics_by_year(f, 6, 8) {
        out.push(charts::topics(year, &top));
    }
    out
}

/// The page's HTML.
pub fn page(report: &Report) -> String {
    let root = std::path::absolute(&report.root).unwrap_or_else(|_| report.root.clone());
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    h.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n");
    let _ = writeln!(
        h,
        "<title>chatmill report: {}</title>",
        escape(&root.display().to_string())
    );
    h.push_str("<style>body{font-family:sans-serif;margin:24px;max-width:1200px;color:#222}figure{display:inline-block;margin:8px;vertical-align:top}figcaption{font-weight:bold;margin-bottom:4px}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}.low{background:#fdd}.flag{color:#a00;font-weight:bold}</style>\n</head><body>\n");
    let _ = writeln!(
        h,
        "<h1>chatmill report</h1>\n<p>{} — {} chunks from {} inputs, {}</p>",
        escape(&root.display().to_string()),
        report.chunks,
        report.inputs,
        report.generated_at.format("%Y-%m-%d %H:%M UTC")
    );
    criteria_table(&mut h, report, &root);
    if let Some(judge) = &report.judge {
        judge_table(&mut h, judge);
    }
    h.push_str("<h2>History</h2>\n");
    for c in charts(report) {
        let _ = writeln!(
            h,
            "<figure class=\"chart\" data-points=\"{}\"><figcaption>{}</figcaption>{}</figure>",
            c.points,
            escape(&c.title),
            c.svg
        );
    }
    exclusions(&mut h, report);
    h.push_str("</body></html>\n");
    h
}

fn criteria_table(h: &mut String, report: &Report, root: &Path) {
    h.push_str("<h2>The seven criteria</h2>\n<table id=\"criteria\"><tr><th>#</th><th>criterion</th><th>score</th><th>measured</th><th>worst examples</th></tr>\n");
    for c in &report.criteria {
        let class = if c.score < crate::PASS {
            " class=\"low\""
        } else {
            ""
        };
        let _ = write!(h, "<tr{class}><td>{}</td><td>{}", c.number, escape(c.name));
        if c.unresolved_deficiency {
            h.push_str("<br><span class=\"flag\">UNRESOLVED DEFICIENCY</span>");
        }
        let _ = write!(h, "</td><td>{}/5</td><td><ul>", c.score);
        for m in &c.measures {
            let _ = write!(h, "<li>{} of {}: {}</li>", m.count, m.of, escape(m.what));
        }
        h.push_str("</ul>");
        if let Some(fix) = &c.fix {
            let _ = write!(h, "<p>fix: {}</p>", escape(fix));
        }
        h.push_str("</td><td><ul>");
        for f in &c.findings {
            let subject = match &f.file {
                Some(file) => format!(
                    "<a href=\"{}\">{}</a>",
                    escape(&file_url(&root.join(file))),
                    escape(&f.subject)
                ),
                None => escape(&f.subject),
            };
            let _ = write!(h, "<li>{subject}: {}</li>", escape(&f.problem));
        }
        h.push_str("</ul></td></tr>\n");
    }
    h.push_str("</table>\n");
}

/// The judge's scores beside the measured ones; everything the model
/// wrote is escaped.
fn judge_table(h: &mut String, judge: &crate::judge::Judge) {
    let _ = writeln!(
        h,
        "<h2>Judge</h2>\n<p>{}: {} chunks sampled, {} unparsable, {} without an answer</p>\n<table id=\"judge\"><tr><th>#</th><th>criterion</th><th>measured</th><th>judge mean</th><th>n</th></tr>",
        escape(&judge.model),
        judge.sample,
        judge.unparsable,
        judge.failed
    );
    for c in &judge.criteria {
        let mean = c
            .judge_mean
            .map_or_else(|| "no score".into(), |m| format!("{m:.1}"));
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{mean}</td><td>{}</td></tr>",
            c.number,
            escape(c.name),
            c.measured,
            c.n
        );
    }
    h.push_str("</table>\n<ul>\n");
    for v in &judge.verdicts {
        let said = v.reason.as_deref().or(v.problem.as_deref()).unwrap_or("");
        let _ = writeln!(h, "<li>{}: {}</li>", escape(&v.chunk), escape(said));
    }
    h.push_str("</ul>\n");
}

fn exclusions(h: &mut String, report: &Report) {
    if report.exclusions.is_empty() {
        return;
    }
    let _ = writeln!(
        h,
        "<h2>Pairs left out ({})</h2>\n<table id=\"exclusions\"><tr><th>input</th><th>conversation</th><th>pair</th><th>why</th><th>request</th></tr>",
        report.exclusions.len()
    );
    for e in report.exclusions.iter().take(500) {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&e.input),
            escape(&e.conversation),
            e.pair,
            escape(&e.reason),
            escape(&e.request)
        );
    }
    h.push_str("</table>\n");
}

/// Writes the page to `path` (whole, or not at all).
pub fn write(report: &Report, path: &Path) -> Result<(), ReportError> {
    let page = page(report);
    let path = &std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    chatmill_root::atomic::write_durable_with(path, |out| {
        std::io::Write::write_all(out, page.as_bytes())
    })
    .map_err(|source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    })
}
