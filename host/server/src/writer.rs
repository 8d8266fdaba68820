//! The writer thread: the one owner of the inline writer, which runs the
//! turns sent to it in order, in batches of those waiting.

use std::sync::Arc;
use std::time::Duration;

use chatmill_index::Indexer;
use chatmill_pipeline::inline::{Ack, InlineError, InlineWriter, Turn};
use tokio::sync::oneshot;

use crate::config::ServerConfig;
use crate::error::ServerError;
use crate::services::Services;

/// What a connection asks of the writer thread: a turn, and where its
/// answer goes.
pub(crate) enum Job {
    Turn(Box<Turn>, oneshot::Sender<Result<Ack, InlineError>>),
}

/// The writer thread, which owns the inline writer and runs the turns sent
/// to it in order, in batches of those waiting (at most `cfg.max_batch`);
/// it ends when every sender is gone.
pub(crate) fn spawn_writer(
    cfg: &ServerConfig,
    services: &Services,
) -> Result<(std::sync::mpsc::Sender<Job>, std::thread::JoinHandle<()>), ServerError> {
    let (tx, rx) = std::sync::mpsc::channel::<Job>();
    let mut writer = InlineWriter::open(
        &cfg.root,
        Arc::clone(&services.header),
        services.index.clone().map(|i| i as Arc<dyn Indexer>),
    )?
    .redacting(services.redactor.clone());
    let mut batcher = Batcher {
        rx,
        max: cfg.max_batch.max(1),
        wait: cfg.batch_wait,
        answered: 0,
    };
    let thread = std::thread::Builder::new()
        .name("chatmill-writer".into())
        .spawn(move || {
            while let Some((turns, replies)) = batcher.next() {
                let started = std::time::Instant::now();
                let answers = writer.turns(&turns);
                tracing::debug!(turns = turns.len(), took = ?started.elapsed(), "wrote a batch");
                for (reply, answer) in replies.into_iter().zip(answers) {
                    let _ = reply.send(answer);
                }
                batcher.answered = turns.len();
            }
        })
        .map_err(|source| ServerError::Listen {
            what: "the writer thread".into(),
            source,
        })?;
    Ok((tx, thread))
}

/// Takes the writer's turns off its queue in batches: every turn waiting,
/// at most `max`. Clients that send their next turn as soon as the last is
/// answered would otherwise settle into halves that alternate (one half
/// sends while the other half's batch is written), each batch paying the
/// fixed cost of a write (its fsyncs) for half the turns; so when the last
/// batch answered several clients, the next one waits up to `wait` for as
/// many turns as were waiting plus those clients.
struct Batcher {
    rx: std::sync::mpsc::Receiver<Job>,
    max: usize,
    wait: Duration,
    /// Turns the last batch answered.
    answered: usize,
}

type Replies = Vec<oneshot::Sender<Result<Ack, InlineError>>>;

impl Batcher {
    /// The next batch; `None` once every sender is gone and the queue is
    /// empty.
    fn next(&mut self) -> Option<(Vec<Turn>, Replies)> {
        let mut jobs: Vec<Job> = self.rx.try_iter().take(self.max).collect();
        let waiting = jobs.len();
        let mut fresh = true;
        if jobs.is_empty() {
            let idle = std::time::Instant::now();
            jobs.push(self.rx.recv().ok()?);
            // After a pause, the last batch's clients are not coming back
            // at once.
            fresh = idle.elapsed() <= self.wait;
        }
        let expected = if self.answered > 1 && fresh {
            (waiting + self.answered).min(self.max)
        } else {
            0
        };
        let until = std::time::Instant::now() + self.wait;
        while jobs.len() < expected {
            let left = until.saturating_duration_since(std::time::Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        Some(
            jobs.into_iter()
                .map(|Job::Turn(turn, reply)| (*turn, reply))
                .unzip(),
        )
    }
}
