//! One parse of one input inside a fresh sandbox, assembled into whole
//! conversations and checked against the adapter protocol.

use std::time::{Duration, Instant};

use wasmtime::Store;
use wasmtime::component::ResourceAny;

use crate::bindings::Adapter as AdapterWorld;
use crate::bindings::chatmill::adapter::types as wit;
use crate::boundary::{self, Adjustments, Rule, Violation};
use crate::error::AdapterError;
use crate::input::{Input, TextEncoding};
use crate::limits::Limit;
use crate::model::Conversation;
use crate::runtime::{LoadedAdapter, Runtime, classify_trap};
use crate::source::SourceState;
use crate::store::HostState;

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
    /// Items asked for per `next` call.
    max_items: u32,
    /// An item taken by [`ParseStream::prime`], handed out first.
    primed: Option<wit::Item>,
    exhausted: bool,
    encoding: TextEncoding,
    /// Guest memory high-water mark so far, bytes.
    pub peak_memory: usize,
    /// Wall-clock time spent inside the adapter's calls (its parsing, plus
    /// the host reads it makes), excluding the host's lifting and checks.
    pub guest_time: Duration,
    /// What the trust boundary changed in the items so far.
    adjustments: Adjustments,
}

/// How the host feeds an adapter: the first `trickle` bytes 1 byte per
/// `read`, and `items_per_batch` items asked per `next` (the limits' value
/// by default). The conformance checks trickle and ask for 1 item.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Feed {
    pub trickle: u64,
    pub items_per_batch: Option<u32>,
}

impl Runtime {
    /// Starts parsing `input` with `adapter` in a fresh sandbox.
    pub fn parse<'a>(
        &'a self,
        adapter: &'a LoadedAdapter,
        input: &Input,
    ) -> Result<ParseStream<'a>, AdapterError> {
        self.parse_fed(adapter, input, Feed::default())
    }

    /// [`Runtime::parse`], fed as `feed` says.
    pub(crate) fn parse_fed<'a>(
        &'a self,
        adapter: &'a LoadedAdapter,
        input: &Input,
        feed: Feed,
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
                trickle_until: feed.trickle,
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
            error: Box::new(boundary::parse_error(error)),
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
            max_items: feed
                .items_per_batch
                .unwrap_or(self.limits.items_per_batch)
                .max(1),
            primed: None,
            exhausted: false,
            encoding,
            peak_memory: 0,
            guest_time: t.elapsed(),
            adjustments: Adjustments::default(),
        })
    }

    /// Starts parsing `input` with the first of `candidates` that takes it.
    /// One that answers `not-this-format` at `open` or at its first batch
    /// makes way for the next (a sniff can be wrong); the ones that did are
    /// returned for the summary. The last candidate's error is returned when
    /// none takes it.
    pub fn parse_first<'a>(
        &'a self,
        candidates: &[&'a LoadedAdapter],
        input: &Input,
    ) -> Result<(ParseStream<'a>, Vec<Declined>), AdapterError> {
        let mut declined = Vec::new();
        let mut last = None;
        for (i, adapter) in candidates.iter().enumerate() {
            let attempt = self.parse(adapter, input).and_then(|mut s| {
                s.prime()?;
                Ok(s)
            });
            match attempt {
                Ok(stream) => return Ok((stream, declined)),
                Err(e) if i + 1 < candidates.len() && e.is_not_this_format() => {
                    declined.push(Declined {
                        adapter: adapter.label(),
                        message: e.to_string(),
                    });
                }
                Err(e) => {
                    last = Some(e);
                    break;
                }
            }
        }
        Err(last.unwrap_or_else(|| AdapterError::Engine {
            reason: format!("no adapter was given to read `{}`", input.display()),
        }))
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

/// An adapter that answered `not-this-format` before another took the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declined {
    /// `` `id` version ``.
    pub adapter: String,
    /// Its error, as the user would have seen it.
    pub message: String,
}

impl<'a> ParseStream<'a> {
    /// The adapter that parses.
    pub fn adapter(&self) -> &'a LoadedAdapter {
        self.adapter
    }
}

impl ParseStream<'_> {
    /// Fetches the first batch now, so that an adapter which does not read
    /// this format after all says so before anything is taken from it.
    pub fn prime(&mut self) -> Result<(), AdapterError> {
        if self.primed.is_none() {
            self.primed = self.next_item()?;
        }
        Ok(())
    }

    /// The encoding the input was found in (it was normalized to UTF-8).
    pub fn encoding(&self) -> TextEncoding {
        self.encoding
    }

    /// What the trust boundary changed in the items so far (reported to
    /// the user: each change drops or cuts a value).
    pub fn adjustments(&self) -> &Adjustments {
        &self.adjustments
    }

    fn violation(&self, v: Violation) -> AdapterError {
        AdapterError::Protocol {
            adapter: self.adapter.label(),
            input: self.input.clone(),
            rule: v.rule,
            violation: v.what,
        }
    }

    fn structure(&self, what: String) -> AdapterError {
        self.violation(Violation {
            rule: Rule::Structure,
            what,
        })
    }

    /// The next item, fetching a batch from the adapter when needed.
    fn next_item(&mut self) -> Result<Option<wit::Item>, AdapterError> {
        if let Some(item) = self.primed.take() {
            return Ok(Some(item));
        }
        if let Some(item) = self.batch.next() {
            return Ok(Some(item));
        }
        if self.exhausted {
            return Ok(None);
        }
        let Some(session) = self.session else {
            return Ok(None);
        };
        let items = self.fetch_batch(session)?;
        self.check_batch(&items)?;
        if items.is_empty() {
            self.finish();
            return Ok(None);
        }
        self.batch = items.into_iter();
        Ok(self.batch.next())
    }

    /// Asks the adapter for its next batch, within the file's deadline,
    /// timing the call and noting the guest's memory peak.
    fn fetch_batch(&mut self, session: ResourceAny) -> Result<Vec<wit::Item>, AdapterError> {
        if Instant::now() >= self.deadline {
            return Err(self.limit_hit(Limit::FileTimeout, String::new()));
        }
        self.runtime.arm(&mut self.store, Some(self.deadline));
        let t = Instant::now();
        let result = self.world.chatmill_adapter_parser().session().call_next(
            &mut self.store,
            session,
            self.max_items,
        );
        self.guest_time += t.elapsed();
        self.peak_memory = self.peak_memory.max(self.store.data().limiter.peak);
        match result {
            Ok(Ok(items)) => Ok(items),
            Ok(Err(error)) => Err(AdapterError::Parse {
                adapter: self.adapter.label(),
                input: self.input.clone(),
                error: Box::new(boundary::parse_error(error)),
            }),
            Err(e) => {
                let passed = Instant::now() >= self.deadline;
                Err(classify_trap(
                    self.runtime,
                    &self.store,
                    &self.adapter.label(),
                    &self.input,
                    e,
                    passed,
                ))
            }
        }
    }

    /// A batch stays within the items asked for and the batch's bytes of
    /// text.
    fn check_batch(&self, items: &[wit::Item]) -> Result<(), AdapterError> {
        let max = self.max_items;
        if items.len() > max as usize {
            return Err(self.limit_hit(
                Limit::ItemsPerBatch,
                format!("returned {} items when asked for {max}", items.len()),
            ));
        }
        let bytes: usize = items.iter().map(item_text_len).sum();
        if bytes as u64 > self.runtime.limits.bytes_per_batch {
            return Err(self.limit_hit(
                Limit::BytesPerBatch,
                format!("returned a batch of {bytes} bytes of text"),
            ));
        }
        Ok(())
    }

    /// The adapter reached `limit`; `detail` says how.
    fn limit_hit(&self, limit: Limit, detail: String) -> AdapterError {
        AdapterError::Limit {
            adapter: self.adapter.label(),
            input: self.input.clone(),
            limit,
            limits: Box::new(self.runtime.limits.clone()),
            stderr_tail: detail,
        }
    }

    /// The adapter has nothing more: its session is dropped.
    fn finish(&mut self) {
        self.exhausted = true;
        if let Some(s) = self.session.take() {
            let _ = s.resource_drop(&mut self.store);
        }
    }

    /// The next whole conversation, or `None` when the input is exhausted.
    /// Every item passes the trust boundary ([`crate::boundary`]).
    pub fn next_conversation(&mut self) -> Result<Option<Conversation>, AdapterError> {
        let start = match self.next_item()? {
            None => return Ok(None),
            Some(wit::Item::ConversationStart(s)) => s,
            Some(wit::Item::Pair(p)) => {
                return Err(
                    self.structure(format!("pair {} came outside any conversation", p.index))
                );
            }
            Some(wit::Item::ConversationEnd(e)) => {
                return Err(self.structure(format!(
                    "conversation-end for `{}` without a start",
                    e.id.escape_debug()
                )));
            }
        };
        let mut conv =
            boundary::conversation(start, &mut self.adjustments).map_err(|v| self.violation(v))?;
        loop {
            let checked = match self.next_item()? {
                None => {
                    return Err(self.structure(format!(
                        "the input ended inside conversation `{}` (no conversation-end)",
                        conv.id.escape_debug()
                    )));
                }
                Some(wit::Item::ConversationStart(s)) => {
                    return Err(self.structure(format!(
                        "conversation `{}` started inside conversation `{}`",
                        s.id.escape_debug(),
                        conv.id.escape_debug()
                    )));
                }
                Some(wit::Item::Pair(p)) => {
                    boundary::push_pair(&mut conv, p, &mut self.adjustments)
                }
                Some(wit::Item::ConversationEnd(e)) => {
                    boundary::end(&mut conv, e, &mut self.adjustments)
                        .map_err(|v| self.violation(v))?;
                    return Ok(Some(conv));
                }
            };
            checked.map_err(|v| self.violation(v))?;
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
