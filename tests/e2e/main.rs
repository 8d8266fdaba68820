//! End-to-end tests of the `chatmill` binary: real adapters in the real
//! sandbox, on real files. One test binary; one module per area.

mod support;

mod adapters_cmd;
mod author_kit;
mod containment;
mod examples;
mod exit_codes;
mod export_files;
mod hook;
mod hostile;
mod import;
mod mcp;
mod normalization;
mod notes;
mod parse;
mod real_exports;
mod redaction;
mod reliability;
mod report;
mod report_judge;
mod reprocess;
mod search;
mod serve;
mod third_party;
mod vectors;
mod watch;
