//! `chatmill parse`: inputs → normalized JSON, one entry per input.
//!
//! The output is streamed: workers parse inputs in parallel, each in its own
//! sandbox, and send every conversation as JSON text as soon as it is read;
//! this thread writes the entries in input order. Memory is bounded by a few
//! conversations per input in flight, not by the size of the export.

mod entry;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Mutex, PoisonError};

use chatmill_runtime::{AdapterSet, Input, Runtime};
use entry::{Entry, Layout};
use serde::Serialize;

use crate::cli::ParseArgs;
use crate::command_error::CliError;
use crate::context::Context;
use crate::render;

/// Conversations of one input that may wait, serialized, for the writer.
const IN_FLIGHT: usize = 16;

#[derive(Serialize)]
struct AdapterRef {
    id: String,
    version: String,
    source: &'static str,
}

#[derive(Serialize)]
struct ErrorOut {
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
}

/// What a worker sends about one input, in this order: `Opened` (once, if
/// an adapter read it), `Conversation`s, then `Done`.
enum Event {
    Opened {
        adapter: AdapterRef,
        encoding: chatmill_runtime::TextEncoding,
    },
    /// One conversation as JSON text (already laid out).
    Conversation(String),
    Done {
        error: Option<ErrorOut>,
        /// What the trust boundary changed, and adapters that declined it.
        warnings: Vec<String>,
    },
}

pub fn run(ctx: &Context, args: ParseArgs) -> Result<ExitCode, CliError> {
    let set = ctx.adapter_set()?;
    if let Some(id) = &args.adapter_id {
        crate::adapter_lint::named_adapter(&set, id)?;
    }
    let files = crate::inputs::expand_inputs(&args.inputs)?;
    let layout = if args.compact {
        Layout::Compact
    } else {
        Layout::Pretty
    };
    let forced = args.adapter_id.as_deref();
    let (senders, receivers): (Vec<_>, Vec<Receiver<Event>>) = files
        .iter()
        .map(|_| {
            let (tx, rx) = sync_channel(IN_FLIGHT);
            (Mutex::new(Some(tx)), rx)
        })
        .unzip();
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len())
        .max(1);
    let stdout = std::io::stdout().lock();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout);
    let failed = std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                // Inputs are taken in order, so the input the writer waits
                // for is always being read by someone.
                // Each sender is taken, so it is dropped when its input is
                // done (or its worker panicked): the writer never waits on
                // an input nobody reads.
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(tx) = senders.get(i).and_then(take) else {
                        break;
                    };
                    let input = Input::from_path(&files[i]);
                    parse_one(&ctx.runtime, &set, input, forced, layout, &tx);
                }
            });
        }
        // The receivers go with the writer: if it stops (a closed pipe),
        // the workers' next send fails and they stop too.
        write_all(&mut out, &files, receivers, layout)
    })
    .map_err(crate::out::written)?;
    out.flush().map_err(crate::out::written)?;
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn take(sender: &Mutex<Option<SyncSender<Event>>>) -> Option<SyncSender<Event>> {
    sender.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// Writes every input's entry in order as its events arrive; `true` if an
/// input failed.
fn write_all(
    out: &mut impl Write,
    files: &[PathBuf],
    receivers: Vec<Receiver<Event>>,
    layout: Layout,
) -> std::io::Result<bool> {
    let mut failed = false;
    out.write_all(b"[")?;
    for (i, (path, events)) in files.iter().zip(receivers).enumerate() {
        let input = Input::from_path(path).display().to_string();
        let mut entry = Entry::begin(out, layout, i == 0, &input)?;
        let mut done = false;
        for event in events.iter() {
            match event {
                Event::Opened { adapter, encoding } => {
                    entry.field(out, "adapter", &adapter)?;
                    entry.field(out, "encoding", &encoding)?;
                }
                Event::Conversation(json) => entry.conversation(out, &json)?,
                Event::Done { error, warnings } => {
                    for w in &warnings {
                        render::warning(&format!("{input}: {w}"));
                    }
                    if let Some(e) = &error {
                        failed = true;
                        let err = anyhow::anyhow!("{}", e.message);
                        render::error(&CliError::failed(err).hint_opt(e.hint.clone()));
                        entry.field(out, "error", e)?;
                    } else {
                        entry.end_conversations(out)?;
                    }
                    if !warnings.is_empty() {
                        entry.field(out, "warnings", &warnings)?;
                    }
                    done = true;
                    break;
                }
            }
        }
        if !done {
            // The worker stopped without a word: it panicked (and said so).
            failed = true;
            let e = ErrorOut {
                message: "reading this input stopped unexpectedly".into(),
                hint: None,
            };
            entry.field(out, "error", &e)?;
        }
        entry.end(out)?;
    }
    entry::close_array(out, layout, files.len())?;
    Ok(failed)
}

/// Reads one input and sends its events; a closed channel (the writer is
/// gone) stops it.
fn parse_one(
    runtime: &Runtime,
    set: &AdapterSet,
    input: Input,
    forced: Option<&str>,
    layout: Layout,
    events: &SyncSender<Event>,
) {
    let mut warnings = Vec::new();
    let candidates = match set.candidates(runtime, &input, forced) {
        Ok(c) => c,
        Err(e) => {
            let error = Some(ErrorOut {
                hint: e.hint(),
                message: e.to_string(),
            });
            let _ = events.send(Event::Done { error, warnings });
            return;
        }
    };
    let result = runtime
        .parse_first(&candidates, &input)
        .and_then(|(mut stream, declined)| {
            let adapter = stream.adapter();
            let id = adapter.info.id.clone();
            for d in declined {
                warnings.push(format!(
                    "adapter {} said it is not its format ({}); read with `{id}` instead",
                    d.adapter, d.message
                ));
            }
            let opened = Event::Opened {
                adapter: AdapterRef {
                    id: id.clone(),
                    version: adapter.info.version.clone(),
                    source: adapter.origin.kind(),
                },
                encoding: stream.encoding(),
            };
            let mut open = events.send(opened).is_ok();
            let mut read = Ok(());
            while open {
                match stream.next_conversation() {
                    Ok(Some(c)) => {
                        let json = layout.conversation(&c);
                        open = events.send(Event::Conversation(json)).is_ok();
                    }
                    Ok(None) => break,
                    Err(e) => {
                        read = Err(e);
                        break;
                    }
                }
            }
            let lines = stream.adjustments().lines();
            warnings.extend(lines.into_iter().map(|l| format!("adapter `{id}`: {l}")));
            read
        });
    let error = result.err().map(|e| {
        let mut message = e.to_string();
        if let Some(t) = e.stderr_tail() {
            message.push_str(&format!("\n  adapter output: {}", t.trim()));
        }
        ErrorOut {
            hint: e.hint(),
            message,
        }
    });
    let _ = events.send(Event::Done { error, warnings });
}
