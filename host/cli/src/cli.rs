//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "chatmill",
    version,
    about = "Turn AI chat history into retrieval-ready memory"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct Global {
    /// More output on stderr (-v: info, -vv: debug). `CHATMILL_LOG` overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// The root folder: chunk files, the manifest, and `raw/` (default:
    /// `~/Documents/conversations`).
    #[arg(long, global = true, env = "CHATMILL_ROOT", value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// Config file (default: `$XDG_CONFIG_HOME/chatmill/config.toml`).
    #[arg(long, global = true, env = "CHATMILL_CONFIG")]
    pub config: Option<PathBuf>,

    /// Load this adapter (`.wasm` component) for this run only; repeatable.
    #[arg(long = "adapter", global = true, value_name = "PATH")]
    pub adapters: Vec<PathBuf>,

    /// Directory of installed adapters (default: `$XDG_DATA_HOME/chatmill/adapters`).
    #[arg(long, global = true, env = "CHATMILL_ADAPTERS_DIR", value_name = "DIR")]
    pub adapters_dir: Option<PathBuf>,

    /// Cache of compiled adapters (default: `$XDG_CACHE_HOME/chatmill`).
    #[arg(long, global = true, env = "CHATMILL_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,

    /// Compile adapters every time instead of using the cache.
    #[arg(long, global = true)]
    pub no_cache: bool,

    /// Write, index and send this run's inputs without replacing their
    /// secrets (prints a warning; see `[redact]` in the config).
    #[arg(long, global = true)]
    pub no_redact: bool,

    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Overrides of the adapter sandbox limits (also `[limits]` in the config).
#[derive(Debug, Args, Default)]
pub struct LimitArgs {
    /// Memory one adapter instance may use, MiB (default 512).
    #[arg(long, global = true, value_name = "MIB")]
    pub adapter_memory_mb: Option<u64>,
    /// Time one call into an adapter may take, ms (default 30000).
    #[arg(long, global = true, value_name = "MS")]
    pub adapter_timeout_ms: Option<u64>,
    /// Time the parse of one input may take, s (default 1800).
    #[arg(long, global = true, value_name = "S")]
    pub adapter_file_timeout_s: Option<u64>,
    /// Wasm stack of an adapter, KiB (default 1024).
    #[arg(long, global = true, value_name = "KIB")]
    pub adapter_stack_kb: Option<usize>,
    /// Items asked of an adapter per batch (default 256).
    #[arg(long, global = true, value_name = "N")]
    pub adapter_batch_items: Option<u32>,
    /// Text one batch may carry, MiB (default 64).
    #[arg(long, global = true, value_name = "MIB")]
    pub adapter_batch_mb: Option<u64>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Import exports into chunk files (default input: `ROOT/raw`).
    Import(ImportArgs),
    /// Inline mode: serve turns and searches on a local socket.
    Serve(ServeArgs),
    /// Watch folders and import new and changed inputs as they appear
    /// (default: `ROOT/raw`, and `~/.claude/projects` and `~/.gemini/tmp`
    /// when they exist).
    Watch(WatchArgs),
    /// Entry points for assistants' hooks: they always exit 0 and log to
    /// `ROOT/.chatmill/hook.log`.
    #[command(subcommand)]
    Hook(HookCommand),
    /// Serve the memory to assistants over the Model Context Protocol
    /// (stdio): `claude mcp add chatmill -- chatmill mcp`.
    Mcp(McpArgs),
    /// Send one finished exchange to a running server (flags, or JSON on
    /// stdin with `--json-stdin`).
    Turn(TurnArgs),
    /// Ask the header model for the headers still queued for backfill.
    Backfill {
        #[arg(long)]
        json: bool,
    },
    /// Make the vectors of the chunks an import left waiting for them
    /// (`import --no-wait`, or an import stopped while it embedded).
    Embed(EmbedArgs),
    /// Search the index (hybrid by default).
    Search(SearchArgs),
    /// Rebuild the index from the chunk files (the source of truth), with
    /// the current embedding model; `--to chroma` fills a ChromaDB server
    /// instead (a migration: the configured index is left as it is).
    Reindex(ReindexArgs),
    /// Check chunk files, manifest and index agree (`--repair` re-derives
    /// the manifest and index from the chunk files).
    Verify(VerifyArgs),
    /// Score the root's chunks on the spec's seven criteria, 1–5 with
    /// evidence (exit 1 when one is below 3); `--html FILE` draws the
    /// root's history as one page.
    Report(ReportArgs),
    /// Parse export files with the adapters and print normalized JSON.
    Parse(ParseArgs),
    /// List the secrets an import would redact in files or folders (masked),
    /// without importing; exit 1 when any is found.
    Scan(ScanArgs),
    /// Manage adapters.
    #[command(subcommand)]
    Adapters(AdaptersCommand),
}

#[derive(Debug, Args)]
pub struct ReindexArgs {
    #[arg(long)]
    pub json: bool,
    /// The store to fill (default: the configured one); `chroma` takes
    /// `[index.chroma]` from the config, or `--chroma-url`.
    #[arg(long, value_enum, value_name = "BACKEND")]
    pub to: Option<crate::backend::Backend>,
    /// The Chroma server for `--to chroma`, e.g. http://127.0.0.1:8000.
    #[arg(long, value_name = "URL")]
    pub chroma_url: Option<String>,
}

#[derive(Debug, Args)]
pub struct ParseArgs {
    /// Files or folders (folders are walked recursively).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Use the adapter with this id for every input instead of sniffing
    /// (`--format` is the older spelling).
    #[arg(long = "adapter-id", alias = "format", value_name = "ID")]
    pub adapter_id: Option<String>,
    /// Print compact JSON (default: pretty).
    #[arg(long)]
    pub compact: bool,
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Files or folders (folders are walked recursively).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Print the secrets found as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Files or folders to import (default: `ROOT/raw`).
    pub inputs: Vec<PathBuf>,
    /// Use the adapter with this id for every input instead of sniffing
    /// (`--format` is the older spelling).
    #[arg(long = "adapter-id", alias = "format", value_name = "ID")]
    pub adapter_id: Option<String>,
    /// Print the processing summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write chunk files and the manifest only; leave the index alone.
    #[arg(long)]
    pub no_index: bool,
    /// Read again the inputs an older chatmill read (another build of their
    /// adapter, an older chunk format) and rewrite their chunks.
    #[arg(long)]
    pub reprocess: bool,
    /// With --reprocess: only the inputs of this platform (or adapter id).
    #[arg(long, value_name = "PLATFORM", requires = "reprocess")]
    pub only: Option<String>,
    /// Exit once chunks, manifest and keyword index are written; leave the
    /// vectors to `chatmill embed`, `serve`, `watch`, `mcp` or the next
    /// import (searches rank the waiting chunks by keywords meanwhile).
    #[arg(long)]
    pub no_wait: bool,
}

#[derive(Debug, Args)]
pub struct EmbedArgs {
    /// Print the counts as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for; several queries are fused (`--weight` per query).
    pub queries: Vec<String>,
    /// Weight of each query, in order (default 1).
    #[arg(long = "weight", value_name = "W")]
    pub weights: Vec<f32>,
    /// hybrid (default), semantic, keyword or recent.
    #[arg(long, default_value = "hybrid")]
    pub mode: chatmill_index::Mode,
    /// How many results.
    #[arg(short, long, default_value_t = 10)]
    pub k: usize,
    #[arg(long, value_name = "ID")]
    pub agent: Option<String>,
    /// chatgpt, claude, gemini, claude-code, local or api.
    #[arg(long)]
    pub platform: Option<String>,
    /// Only chunks at or after this time (RFC 3339 or YYYY-MM-DD).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only chunks at or before this time (RFC 3339 or YYYY-MM-DD).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Only chunks of this project (a coding session's `project`).
    #[arg(long, value_name = "NAME")]
    pub project: Option<String>,
    /// Favour newer chunks (hybrid): 0 (off) to about 1.
    #[arg(long, default_value_t = 0.0)]
    pub recency_boost: f32,
    /// Weight of the keyword (BM25) ranking against the semantic one in
    /// hybrid search.
    #[arg(long, default_value_t = chatmill_index::KEYWORD_WEIGHT)]
    pub keyword_weight: f32,
    /// Share of the score of the neighbouring exchanges (same conversation)
    /// a hit gains in hybrid search: 0 turns it off.
    #[arg(long, default_value_t = chatmill_index::NEIGHBOUR_SHARE)]
    pub neighbour_share: f32,
    /// Do not read time phrases in the query ("last spring", "in June", "on
    /// 8 May, 2023"); by default the chunks dated in the window they name
    /// are favoured.
    #[arg(long)]
    pub no_time_hints: bool,
    /// Print JSON.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// How to print the hits (default: a list).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<SearchFormat>,
}

/// How `search` prints its hits besides the default list and `--json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SearchFormat {
    /// Numbered entries with provenance, ready for a prompt.
    Context,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Re-derive the manifest's chunk records and the index from the chunk
    /// files (the source of truth).
    #[arg(long)]
    pub repair: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The root to report on (default: `--root`, CHATMILL_ROOT, the config's).
    pub root: Option<PathBuf>,
    /// Only the chunks the latest import added.
    #[arg(long)]
    pub since_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the report and the root's history as one self-contained
    /// HTML page of charts.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also have the configured language model (`[header]`) score criteria
    /// 1, 2 and 4 on a sample of chunks, beside the measured scores.
    #[arg(long)]
    pub judge: bool,
    /// How many chunks `--judge` sends (evenly spaced by chunk id).
    #[arg(long, value_name = "N", default_value_t = 12, requires = "judge")]
    pub judge_sample: usize,
}

#[derive(Debug, Subcommand)]
pub enum AdaptersCommand {
    /// List the adapters this run would use.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Validate an adapter component and install it into the adapters directory.
    ///
    /// The adapter is sniffed against a sample of every first-party format
    /// first: one that claims files of another format is refused.
    Add {
        path: PathBuf,
        /// Install it even when it claims files of first-party formats
        /// (those files stay with their built-in adapters unless an import
        /// names it with `--adapter-id`).
        #[arg(long)]
        force: bool,
    },
    /// Remove an installed adapter.
    Remove { id: String },
    /// Show one adapter's details.
    Info {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Show how every adapter scores a file (which adapter would be chosen).
    Sniff { file: PathBuf },
    /// Write a project for a new adapter that builds as is: its README's
    /// first shell block builds, tests and installs it.
    New {
        /// The adapter id (also its platform name): lowercase letters,
        /// digits and `-`.
        name: String,
        #[arg(long, value_enum)]
        lang: Lang,
        /// Where to write it (default: `./NAME`); must be new or empty.
        dir: Option<PathBuf>,
    },
    /// Check an adapter before shipping it: sniffing, the same output on
    /// every run and however it is fed, the host's rules, limits, damaged
    /// input, and an expected output. Exit 0 when every check passes.
    Test {
        /// The adapter component (`.wasm`).
        adapter: PathBuf,
        /// Files in the adapter's format (folders are walked).
        fixtures: Vec<PathBuf>,
        /// Compare the output with this file (written by `--bless`).
        #[arg(long, value_name = "FILE.json")]
        expect: Option<PathBuf>,
        /// Write the output to the `--expect` file (default: `expected.json`)
        /// instead of comparing.
        #[arg(long)]
        bless: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The language of a new adapter project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// Rust with the chatmill adapter SDK (vendored).
    Rust,
    /// Python with componentize-py 0.25.1.
    Python,
    /// JavaScript with componentize-js 0.23.0.
    Js,
}

impl Lang {
    pub fn word(self) -> &'static str {
        match self {
            Self::Rust => "Rust",
            Self::Python => "Python",
            Self::Js => "JavaScript",
        }
    }
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Folders (or files) to watch, instead of the defaults.
    pub paths: Vec<PathBuf>,
    /// How long a file must be quiet before it is imported.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub debounce_ms: u64,
    /// Write chunk files and the manifest only; leave the index alone.
    #[arg(long)]
    pub no_index: bool,
}

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// A Claude Code hook (`Stop`, `SessionEnd`, …): imports the session's
    /// transcript named in the JSON on stdin, incrementally.
    ClaudeCode(HookArgs),
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// Anything else on the command line is logged and ignored: a hook
    /// never fails its caller.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub ignored: Vec<String>,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Offer `record_turn`, which stores exchanges the client sends
    /// (default: read-only).
    #[arg(long)]
    pub allow_write: bool,
    /// Serve Streamable HTTP at http://ADDR/mcp (loopback only) instead of
    /// stdio; clients send `Authorization: Bearer TOKEN`.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// The bearer token HTTP clients must send.
    #[arg(
        long,
        env = "CHATMILL_TOKEN",
        hide_env_values = true,
        requires = "listen"
    )]
    pub token: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The Unix socket (default: `$XDG_RUNTIME_DIR/chatmill/<root-hash>.sock`,
    /// else `ROOT/.chatmill/chatmill.sock`).
    #[arg(long, env = "CHATMILL_SOCKET", value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Also listen on this TCP address (loopback only unless
    /// `--allow-remote`); clients `auth` with `--token`.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    #[arg(long)]
    pub allow_remote: bool,
    #[arg(long, env = "CHATMILL_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Longest request line, bytes.
    #[arg(long, default_value_t = 16 << 20)]
    pub max_line: usize,
    /// Print the socket path on stdout once listening (for scripts).
    #[arg(long)]
    pub print_socket: bool,
}

#[derive(Debug, Args)]
pub struct TurnArgs {
    #[arg(long, env = "CHATMILL_SOCKET", value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Read the turn as JSON (the `turn` method's params) from stdin.
    #[arg(long, conflicts_with_all = ["session", "user", "assistant"])]
    pub json_stdin: bool,
    #[arg(long, required_unless_present = "json_stdin")]
    pub session: Option<String>,
    #[arg(long, required_unless_present = "json_stdin")]
    pub turn: Option<u32>,
    #[arg(long, required_unless_present = "json_stdin")]
    pub user: Option<String>,
    #[arg(long, required_unless_present = "json_stdin")]
    pub assistant: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long)]
    pub agent: Option<String>,
    #[arg(long)]
    pub title: Option<String>,
}
