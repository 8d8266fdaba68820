//! `chatmill report`: the seven criteria on the corpus root, the labelled
//! sample against the measured flags, `--since-run`, the exit code, and
//! `--html` opened in a real headless Chromium.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{Env, corpus, repo_root};

/// The whole corpus imported into a fresh root (one corpus file holds no
/// pairs, so import exits 1; its chunks are all there).
fn corpus_root(env: &Env) -> (PathBuf, String) {
    let root = env.path("root");
    let corpus = corpus("");
    let run = env.run(&[
        "--root",
        root.to_str().unwrap(),
        "import",
        corpus.to_str().unwrap(),
    ]);
    assert!(run.stdout.contains("chunks written:"), "{run:?}");
    (root, run.stdout)
}

fn report(env: &Env, root: &Path, extra: &[&str]) -> crate::support::Run {
    let mut args = vec!["report", root.to_str().unwrap()];
    args.extend_from_slice(extra);
    env.run(&args)
}

#[test]
fn the_corpus_root_is_scored_on_seven_criteria_with_evidence() {
    let env = Env::new();
    let (root, import_out) = corpus_root(&env);
    // import prints the scores of its own chunks.
    assert!(import_out.contains("quality ("), "{import_out}");
    assert!(
        import_out.contains("Chunk Self-Containment"),
        "{import_out}"
    );
    let run = report(&env, &root, &["--json"]);
    let json = run.json();
    let criteria = json["criteria"].as_array().unwrap();
    let numbers: Vec<u64> = criteria
        .iter()
        .map(|c| c["number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6, 7]);
    let mut passed = true;
    for c in criteria {
        let score = c["score"].as_u64().unwrap();
        assert!((1..=5).contains(&score), "{c}");
        assert!(!c["measures"].as_array().unwrap().is_empty(), "{c}");
        assert_eq!(
            c["unresolved_deficiency"].as_bool().unwrap(),
            score < 3,
            "{c}"
        );
        passed &= score >= 3;
    }
    assert_eq!(run.code, if passed { 0 } else { 1 }, "{run:?}");
    assert!(json["chunks"].as_u64().unwrap() > 400, "{json}");
    // Every pair the manifest counts is in a chunk or listed as left out.
    let preservation = &criteria[6];
    assert_eq!(preservation["measures"][1]["count"], 0, "{preservation}");
    let left_out = json["exclusions"].as_array().unwrap();
    assert!(!left_out.is_empty() && left_out.iter().all(|e| e["reason"] == "mechanical"));
    let text = report(&env, &root, &[]);
    for name in [
        "Chunk Self-Containment",
        "Semantic Boundary Accuracy",
        "Metadata Accuracy",
        "Contextual Header Quality",
        "Deduplication",
        "Format Consistency",
        "Information Preservation",
    ] {
        assert!(text.stdout.contains(name), "{text:?}");
    }
}

/// `(agreement, Cohen's kappa)` of two yes/no judgements of the same items.
fn agreement(pairs: &[(bool, bool)]) -> (f64, f64) {
    let n = pairs.len() as f64;
    let agree = pairs.iter().filter(|(a, b)| a == b).count() as f64 / n;
    let a_yes = pairs.iter().filter(|(a, _)| *a).count() as f64 / n;
    let b_yes = pairs.iter().filter(|(_, b)| *b).count() as f64 / n;
    let chance = a_yes * b_yes + (1.0 - a_yes) * (1.0 - b_yes);
    let kappa = if chance >= 1.0 {
        1.0
    } else {
        (agree - chance) / (1.0 - chance)
    };
    (agree, kappa)
}

/// The hand labels of 40 corpus chunks (`tests/report/labels.json`) against
/// the flags the scores count, per criterion: at least 85 % of the chunks
/// judged alike, and the score the sample earns by its labels within one
/// band of the score it earns by its measures.
#[test]
#[allow(clippy::print_stderr, reason = "the agreement figures, for the record")]
fn measured_flags_agree_with_the_hand_labels() {
    let env = Env::new();
    let (root, _) = corpus_root(&env);
    let labels: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("tests/report/labels.json")).unwrap(),
    )
    .unwrap();
    let labels = labels["labels"].as_array().unwrap();
    assert_eq!(labels.len(), 40);
    let names = labels
        .iter()
        .map(|l| format!("{}.md", l["chunk_id"].as_str().unwrap()))
        .collect();
    let (facts, unreadable) = chatmill_report::facts::load(&root, names);
    assert!(unreadable.is_empty());
    assert_eq!(
        facts.len(),
        40,
        "every labelled chunk is in the corpus root"
    );
    // Flags judged among all of the root's chunks (neighbours, shared headers).
    let (all, _) = chatmill_report::facts::load(&root, chunk_names(&root));
    let flags = chatmill_report::criteria::flags(&all);
    let flag_of = |id: &str| &flags[all.iter().position(|f| f.chunk_id == id).unwrap()];
    let mut summary = Vec::new();
    for (key, pick) in [
        (
            "self_contained",
            (|f: &chatmill_report::criteria::Flags| f.containment.is_none()) as fn(&_) -> bool,
        ),
        ("boundary_ok", |f| f.boundary.is_none()),
        ("header_ok", |f| f.header.is_none()),
    ] {
        let pairs: Vec<(bool, bool)> = labels
            .iter()
            .map(|l| {
                (
                    l[key].as_bool().unwrap(),
                    pick(flag_of(l["chunk_id"].as_str().unwrap())),
                )
            })
            .collect();
        let (agree, kappa) = agreement(&pairs);
        let problems = |side: fn(&(bool, bool)) -> bool| pairs.iter().filter(|p| !side(p)).count();
        let by_labels =
            chatmill_report::bands::by_share(problems(|p| p.0), 40, &chatmill_report::bands::SHARE);
        let by_measure =
            chatmill_report::bands::by_share(problems(|p| p.1), 40, &chatmill_report::bands::SHARE);
        summary.push(format!("{key}: agreement {agree:.3}, kappa {kappa:.2}, score by labels {by_labels}, by measures {by_measure}"));
        assert!(agree >= 0.85, "{summary:#?}");
        assert!(by_labels.abs_diff(by_measure) <= 1, "{summary:#?}");
    }
    eprintln!("{summary:#?}");
}

fn chunk_names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    names
}

#[test]
fn since_run_reads_the_latest_import_only_and_a_deficient_root_exits_1() {
    let env = Env::new();
    let root = env.path("root");
    let r = root.to_str().unwrap();
    let first = corpus("claude/claude-to-sqlite-artifacts.json");
    let second = corpus("chatgpt/librechat-chatgpt-export.json");
    assert_eq!(
        env.run(&["--root", r, "import", first.to_str().unwrap()])
            .code,
        0
    );
    let run = env.run(&["--root", r, "import", "--json", second.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    let written = run.json()["chunks_written"].as_u64().unwrap();
    let all = report(&env, &root, &["--json"]).json();
    let latest = report(&env, &root, &["--json", "--since-run"]).json();
    assert_eq!(latest["chunks"].as_u64().unwrap(), written, "{latest}");
    assert_eq!(latest["inputs"], 1);
    assert!(all["chunks"].as_u64().unwrap() > written);
    // Every header made the same: formulaic, criterion 4 scores 1.
    for name in chunk_names(&root) {
        let path = root.join(&name);
        let text = std::fs::read_to_string(&path).unwrap();
        let (head, rest) = text.split_once("## Context\n\n").unwrap();
        let body = rest.split_once("\n\n## Exchange\n").unwrap().1;
        std::fs::write(
            &path,
            format!("{head}## Context\n\nA conversation.\n\n## Exchange\n{body}"),
        )
        .unwrap();
    }
    let run = report(&env, &root, &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .contains("UNRESOLVED DEFICIENCY: 4 Contextual Header Quality scores 1/5"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("fix: configure a header model"),
        "{run:?}"
    );
}

/// Chromium's console messages in its log (`--enable-logging=stderr`):
/// script errors, blocked loads and policy violations are all logged so.
fn console_messages(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

fn chromium(args: &[&str], page: &Path) -> (String, String) {
    let url = format!("file://{}", page.display());
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(args)
        .arg(&url)
        .output()
        .expect("Chromium runs (scripts/setup-browser.sh installs Debian's `chromium`)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[allow(clippy::print_stderr, reason = "where the screenshot is kept")]
fn the_html_page_renders_every_chart_with_data_in_chromium() {
    let env = Env::new();
    let (root, _) = corpus_root(&env);
    let page = env.path("report.html");
    let run = report(&env, &root, &["--html", page.to_str().unwrap()]);
    assert!(run.stdout.contains("page: "), "{run:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    for remote in ["<script", "<link", "src=\"http", "url(", "@import"] {
        assert!(!html.contains(remote), "the page loads nothing: {remote}");
    }
    assert!(html.contains("Content-Security-Policy"));
    // The detector sees what it must: a page with a script error and a
    // blocked load is caught.
    let bad = env.write("bad.html", "<!DOCTYPE html><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\"><img src=\"http://127.0.0.1:9/x.png\"><p>x</p>");
    let (_, log) = chromium(&["--dump-dom"], &bad);
    assert!(!console_messages(&log).is_empty(), "{log}");
    let (dom, log) = chromium(&["--dump-dom"], &page);
    assert!(
        console_messages(&log).is_empty(),
        "console: {:#?}",
        console_messages(&log)
    );
    let figures: Vec<&str> = dom.split("<figure class=\"chart\"").skip(1).collect();
    assert!(figures.len() >= 6, "{} charts", figures.len());
    for f in &figures {
        let points: usize = f.split('"').nth(1).unwrap().parse().unwrap();
        let title = f
            .split("<figcaption>")
            .nth(1)
            .unwrap()
            .split('<')
            .next()
            .unwrap();
        assert!(points > 0, "chart `{title}` has no data");
        assert!(
            f.contains("<svg")
                && (f.contains("<rect") || f.contains("<polyline") || f.contains("<path")),
            "chart `{title}` draws nothing"
        );
    }
    for title in [
        "Exchanges per month, by platform",
        "Exchanges by weekday and hour",
        "Models over time",
        "Exchange length",
        "Chunk length",
        "Top topics of",
    ] {
        assert!(dom.contains(title), "no chart `{title}`");
    }
    assert!(
        dom.contains("id=\"criteria\"") && dom.contains("href=\"file://"),
        "criteria with links"
    );
    let shot = repo_root().join("target/report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let arg = format!("--screenshot={}", shot.display());
    chromium(&[&arg, "--window-size=1280,4000"], &page);
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
    eprintln!(
        "screenshot: {} ({} bytes); page: {} bytes",
        shot.display(),
        png.len(),
        html.len()
    );
}
