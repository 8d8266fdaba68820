//! `chatmill search`.

use std::process::ExitCode;

use chatmill_index::{Filter, SearchRequest, SearchResults, WeightedQuery};
use chatmill_runtime::model::visible::{visible, visible_keeping};
use chrono::{DateTime, Utc};

use crate::cli::{SearchArgs, SearchFormat};
use crate::command_error::CliError;
use crate::context::Context;
use crate::out::{out, outln};

/// RFC 3339, or a date (midnight UTC; the end of the day for `--until`).
fn parse_time(flag: &str, s: &str, end_of_day: bool) -> Result<i64, CliError> {
    chatmill_index::time_bound(s, end_of_day).ok_or_else(|| {
        CliError::usage(anyhow::anyhow!("`--{flag} {s}` is not a time"))
            .hint("use RFC 3339 (2025-03-31T14:00:00Z) or a date (2025-03-31)")
    })
}

pub fn request(args: &SearchArgs) -> Result<SearchRequest, CliError> {
    if args.queries.is_empty() && args.mode != chatmill_index::Mode::Recent {
        return Err(CliError::usage(anyhow::anyhow!("no query given"))
            .hint("`chatmill search \"what did I decide about X\"`, or `--mode recent`"));
    }
    Ok(SearchRequest {
        queries: args
            .queries
            .iter()
            .enumerate()
            .map(|(i, q)| WeightedQuery {
                text: q.clone(),
                weight: args.weights.get(i).copied().unwrap_or(1.0),
            })
            .collect(),
        mode: args.mode,
        filter: Filter {
            agent_id: args.agent.clone(),
            platform: args.platform.clone(),
            since: args
                .since
                .as_deref()
                .map(|s| parse_time("since", s, false))
                .transpose()?,
            until: args
                .until
                .as_deref()
                .map(|s| parse_time("until", s, true))
                .transpose()?,
            conversation_id: args.conversation.clone(),
            project: args.project.clone(),
        },
        k: args.k,
        recency_boost: args.recency_boost,
        recency_half_life_days: 30.0,
        keyword_weight: args.keyword_weight,
        neighbour_share: args.neighbour_share,
        time_hints: !args.no_time_hints,
        now: None,
    })
}

fn date(ts: i64) -> String {
    DateTime::<Utc>::from_timestamp(ts, 0)
        .map_or_else(String::new, |t| t.format("%Y-%m-%d").to_string())
}

/// The exchange part of a chunk file (what goes into a prompt).
fn exchange(doc: &str) -> &str {
    doc.split_once("\n## Exchange\n")
        .map_or(doc, |(_, e)| e.trim())
}

fn context_block(ctx: &Context, r: &SearchResults) -> String {
    let mut out = String::new();
    for (i, h) in r.hits.iter().enumerate() {
        out.push_str(&format!(
            "[{}] {} · {} · {}\nsource: {}\n\n{}\n\n",
            i + 1,
            h.meta.title.as_deref().unwrap_or("(untitled)"),
            h.meta.platform,
            date(h.meta.timestamp),
            ctx.root.join(&h.meta.path).display(),
            exchange(&h.document)
        ));
    }
    out
}

pub fn run(ctx: &Context, args: SearchArgs) -> Result<ExitCode, CliError> {
    let req = request(&args)?;
    let index = ctx.index()?;
    let mut results = index.search(&req)?;
    // Chunks written before redaction (or with it off) may hold secrets:
    // what is shown, or handed to an assistant as context, never does.
    if let Some(r) = crate::redaction::answers(ctx)? {
        for h in &mut results.hits {
            chatmill_pipeline::redaction::hit(&r, h);
        }
    }
    for w in &results.warnings {
        crate::render::warning(w);
    }
    if let Some(w) = &results.time_window
        && !args.json
    {
        crate::render::notice(&format!(
            "read \"{}\" as {} to {} (favoured, not filtered; `--no-time-hints` turns this off)",
            w.phrase,
            date(w.since),
            date(w.until)
        ));
    }
    if args.json {
        let s = serde_json::to_string_pretty(&results)?;
        outln!("{s}");
    } else if args.format == Some(SearchFormat::Context) {
        let block = context_block(ctx, &results);
        out!("{}", visible_keeping(&block, &['\n', '\t']));
    } else if results.hits.is_empty() {
        outln!("no results");
    } else {
        for (i, h) in results.hits.iter().enumerate() {
            outln!(
                "{:>2}. {:.4}  {}  {:<11} {}  [{}]",
                i + 1,
                h.score,
                date(h.meta.timestamp),
                visible(&h.meta.platform),
                visible(h.meta.title.as_deref().unwrap_or("(untitled)")),
                visible(&h.meta.topics.join(", "))
            );
            outln!(
                "    {}",
                visible(&ctx.root.join(&h.meta.path).display().to_string())
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
