//! One parse of one input inside a fresh sandbox, assembled into whole
//! conversations and checked against the adapter protocol.

use std::time::{Duration, Instant};

use wasmtime::Store;
use wasmtime::component::ResourceAny;

use crate::bindings::Adapter as AdapterWorld;
use crate::bindings::chatmill::adapter::types as wit;
use crate::convert;
use crate::error::AdapterError;
use crate::input::{Input, TextEncoding};
use crate::limits::Limit;
use crate::model::{Conversation, Pair};
use crate::runtime::{LoadedAdapter, Runtime, classify_trap};
use crate::store::{HostState, SourceState};

/// A parse in progress. Pull conversations with [`ParseStream::next_conversation`];
/// memory is bounded by the adapter's batch size and the largest
/// conversation. Dropping it drops the sandbox.
pub struct ParseStream<'a> {
    runtime: &'a Runtime,
    adapter: &'a LoadedAdapter,
    input: String,
    store: Store<HostState>,
    world: AdapterWorld,
    session: Option<ResourceAny>,
    deadline: Instant,
    batch: std::vec::IntoIter<wit::Item>,
    exhausted: bool,
    encoding: TextEncoding,
    /// Guest memory high-water mark so far, bytes.
    pub peak_memory: usize,
    /// Wall-clock time spent inside the adapter's calls (its parsing, plus
    /// the host reads it makes), excluding the host's lifting and checks.
    pub guest_time: Duration,
}

impl Runtime {
    /// Starts parsing `input` with `adapter` in a fresh sandbox.
    pub fn parse<'a>(
        &'a self,
        adapter: &'a LoadedAdapter,
        input: &Input,
    ) -> Result<ParseStream<'a>, AdapterError> {
        let label = adapter.label();
        let display = input.display().to_string();
        let (reader, encoding) = input
            .open_normalized()
            .map_err(|source| AdapterError::Input {
                input: display.clone(),
                source,
            })?;
        let deadline = Instant::now() + self.limits.file_timeout;
        let mut store = self.new_store(&label, &display);
        let world = adapter
            .pre
            .instantiate(&mut store)
            .map_err(|e| classify_trap(self, &store, &label, &display, e, false))?;
        let size_hint = match encoding {
            TextEncoding::Utf8 => input.size(),
            _ => None,
        };
        let source = store
            .data_mut()
            .push_source(SourceState {
                name: input.name().to_string(),
                size_hint,
                reader,
                consumed: 0,
            })
            .map_err(|e| AdapterError::Engine {
                reason: format!("{e:#}"),
            })?;
        self.arm(&mut store, Some(deadline));
        let t = Instant::now();
        let opened = world
            .chatmill_adapter_parser()
            .session()
            .call_open(&mut store, source, &[])
            .map_err(|e| {
                classify_trap(
                    self,
                    &store,
                    &label,
                    &display,
                    e,
                    Instant::now() >= deadline,
                )
            })?;
        let session = opened.map_err(|error| AdapterError::Parse {
            adapter: label.clone(),
            input: display.clone(),
            error: Box::new(convert::parse_error(error)),
        })?;
        Ok(ParseStream {
            runtime: self,
            adapter,
            input: display,
            store,
            world,
            session: Some(session),
            deadline,
            batch: Vec::new().into_iter(),
            exhausted: false,
            encoding,
            peak_memory: 0,
            guest_time: t.elapsed(),
        })
    }

    /// Parses `input` to the end, collecting every conversation.
    pub fn parse_all(
        &self,
        adapter: &LoadedAdapter,
        input: &Input,
    ) -> Result<Vec<Conversation>, AdapterError> {
        let mut stream = self.parse(adapter, input)?;
        let mut out = Vec::new();
        while let Some(c) = stream.next_conversation()? {
            out.push(c);
        }
        Ok(out)
    }
}

impl ParseStream<'_> {
    /// The encoding the input was found in (it was normalized to UTF-8).
    pub fn encoding(&self) -> TextEncoding {
        self.encoding
    }

    fn violation(&self, violation: impl Into<String>) -> AdapterError {
        AdapterError::Protocol {
            adapter: self.adapter.label(),
            input: self.input.clone(),
            violation: violation.into(),
        }
    }

    /// The next item, fetching a batch from the adapter when needed.
    fn next_item(&mut self) -> Result<Option<wit::Item>, AdapterError> {
        if let Some(item) = self.batch.next() {
            return Ok(Some(item));
        }
        if self.exhausted {
            return Ok(None);
        }
        let Some(session) = self.session else {
            return Ok(None);
        };
        let limits = &self.runtime.limits;
        if Instant::now() >= self.deadline {
            return Err(AdapterError::Limit {
                adapter: self.adapter.label(),
                input: self.input.clone(),
                limit: Limit::FileTimeout,
                limits: Box::new(limits.clone()),
                stderr_tail: String::new(),
            });
        }
        self.runtime.arm(&mut self.store, Some(self.deadline));
        let max = limits.items_per_batch;
        let t = Instant::now();
        let result =
            self.world
                .chatmill_adapter_parser()
                .session()
                .call_next(&mut self.store, session, max);
        self.guest_time += t.elapsed();
        self.peak_memory = self.peak_memory.max(self.store.data().limiter.peak);
        let items = match result {
            Ok(Ok(items)) => items,
            Ok(Err(error)) => {
                return Err(AdapterError::Parse {
                    adapter: self.adapter.label(),
                    input: self.input.clone(),
                    error: Box::new(convert::parse_error(error)),
                });
            }
            Err(e) => {
                let passed = Instant::now() >= self.deadline;
                return Err(classify_trap(
                    self.runtime,
                    &self.store,
                    &self.adapter.label(),
                    &self.input,
                    e,
                    passed,
                ));
            }
        };
        if items.len() > max as usize {
            return Err(AdapterError::Limit {
                adapter: self.adapter.label(),
                input: self.input.clone(),
                limit: Limit::ItemsPerBatch,
                limits: Box::new(limits.clone()),
                stderr_tail: format!("returned {} items when asked for {max}", items.len()),
            });
        }
        let bytes: usize = items.iter().map(item_text_len).sum();
        if bytes as u64 > limits.bytes_per_batch {
            return Err(AdapterError::Limit {
                adapter: self.adapter.label(),
                input: self.input.clone(),
                limit: Limit::BytesPerBatch,
                limits: Box::new(limits.clone()),
                stderr_tail: format!("returned a batch of {bytes} bytes of text"),
            });
        }
        if items.is_empty() {
            self.exhausted = true;
            if let Some(s) = self.session.take() {
                let _ = s.resource_drop(&mut self.store);
            }
            return Ok(None);
        }
        self.batch = items.into_iter();
        Ok(self.batch.next())
    }

    /// The next whole conversation, or `None` when the input is exhausted.
    pub fn next_conversation(&mut self) -> Result<Option<Conversation>, AdapterError> {
        let start = match self.next_item()? {
            None => return Ok(None),
            Some(wit::Item::ConversationStart(s)) => s,
            Some(wit::Item::Pair(p)) => {
                return Err(
                    self.violation(format!("pair {} came outside any conversation", p.index))
                );
            }
            Some(wit::Item::ConversationEnd(e)) => {
                return Err(
                    self.violation(format!("conversation-end for `{}` without a start", e.id))
                );
            }
        };
        if start.id.trim().is_empty() {
            return Err(self.violation("a conversation has an empty id"));
        }
        let ts = |t: Option<wit::Timestamp>, what: &str| -> Result<_, AdapterError> {
            t.map(convert::timestamp)
                .transpose()
                .map_err(|e| self.violation(format!("{what}: {e}")))
        };
        let mut conv = Conversation {
            created: ts(start.created, "conversation created")?,
            updated: ts(start.updated, "conversation updated")?,
            id: start.id,
            title: start.title,
            platform: start.platform,
            model: start.model,
            metadata: convert::metadata(start.metadata),
            pairs: Vec::new(),
            skipped: Default::default(),
        };
        loop {
            match self.next_item()? {
                None => {
                    return Err(self.violation(format!(
                        "the input ended inside conversation `{}` (no conversation-end)",
                        conv.id
                    )));
                }
                Some(wit::Item::ConversationStart(s)) => {
                    return Err(self.violation(format!(
                        "conversation `{}` started inside conversation `{}`",
                        s.id, conv.id
                    )));
                }
                Some(wit::Item::Pair(p)) => {
                    let timestamp = p
                        .timestamp
                        .map(convert::timestamp)
                        .transpose()
                        .map_err(|e| self.violation(format!("pair {}: {e}", p.index)))?;
                    conv.pairs.push(Pair {
                        index: p.index,
                        timestamp,
                        model: p.model,
                        user: p.user.into_iter().map(convert::part).collect(),
                        assistant: p.assistant.into_iter().map(convert::part).collect(),
                        metadata: convert::metadata(p.metadata),
                    });
                }
                Some(wit::Item::ConversationEnd(e)) => {
                    if e.id != conv.id {
                        return Err(self.violation(format!(
                            "conversation-end for `{}` inside conversation `{}`",
                            e.id, conv.id
                        )));
                    }
                    for s in e.skipped {
                        *conv.skipped.entry(s.reason).or_default() += s.count;
                    }
                    return Ok(Some(conv));
                }
            }
        }
    }
}

fn parts_len(parts: &[wit::Part]) -> usize {
    parts
        .iter()
        .map(|p| match p {
            wit::Part::Text(t) | wit::Part::Thinking(t) | wit::Part::ToolResult(t) => t.len(),
            wit::Part::Code(c) => c.code.len(),
            wit::Part::ToolCall(t) => t.name.len() + t.summary.len(),
            wit::Part::Attachment(a) => a.name.len(),
            wit::Part::Other(o) => o.text.len(),
        })
        .sum()
}

fn item_text_len(item: &wit::Item) -> usize {
    match item {
        wit::Item::ConversationStart(s) => {
            s.id.len()
                + s.title.as_ref().map_or(0, String::len)
                + s.metadata
                    .iter()
                    .map(|(k, v)| k.len() + v.len())
                    .sum::<usize>()
        }
        wit::Item::Pair(p) => parts_len(&p.user) + parts_len(&p.assistant),
        wit::Item::ConversationEnd(e) => e.id.len(),
    }
}
