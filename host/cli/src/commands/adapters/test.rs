//! `chatmill adapters test ADAPTER.wasm [FIXTURE…]`: the conformance checks
//! of `chatmill_runtime::conformance`, rendered. Exit 0 when every check
//! passes, 1 when one fails, 2 when the adapter or a fixture cannot be read.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chatmill_runtime::AdapterOrigin;
use chatmill_runtime::conformance::{self, Fixture, Report};
use chatmill_runtime::model::visible::visible;

use crate::command_error::CliError;
use crate::context::Context;
use crate::out::outln;

/// What `adapters test` was asked.
pub struct TestArgs {
    pub adapter: PathBuf,
    pub fixtures: Vec<PathBuf>,
    pub expect: Option<PathBuf>,
    pub bless: bool,
    pub json: bool,
}

/// Where `--bless` writes without `--expect`.
const DEFAULT_EXPECT: &str = "expected.json";

pub fn run(ctx: &Context, args: TestArgs) -> Result<ExitCode, CliError> {
    let bytes = fs_err::read(&args.adapter)
        .map_err(|e| CliError::usage(e).hint("check the path to the `.wasm` file"))?;
    let adapter = ctx
        .runtime
        .load(AdapterOrigin::Dev(args.adapter.clone()), &bytes)?;
    let expect_path = args
        .expect
        .clone()
        .or_else(|| args.bless.then(|| PathBuf::from(DEFAULT_EXPECT)));
    let fixtures = fixtures(&args.fixtures, expect_path.as_deref())?;
    let expected = match (&args.expect, args.bless) {
        (Some(path), false) => Some(read_expected(path)?),
        _ => None,
    };
    let report = conformance::test_adapter(
        &ctx.runtime,
        &adapter,
        &fixtures,
        &crate::adapter_lint::samples(),
        expected.as_ref(),
    );
    if args.bless
        && let Some(path) = &expect_path
    {
        let text = serde_json::to_string_pretty(&report.output)? + "\n";
        fs_err::write(path, text)?;
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report, &fixtures)?;
        if args.bless
            && let Some(path) = &expect_path
        {
            outln!(
                "wrote the output to {} (`--expect` compares with it)",
                path.display()
            );
        }
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The fixture files (folders walked), leaving out the expected-output file.
fn fixtures(paths: &[PathBuf], expect: Option<&Path>) -> Result<Vec<Fixture>, CliError> {
    if paths.is_empty() {
        return Err(CliError::usage(anyhow::anyhow!(
            "no fixture: `adapters test` needs at least one file in the adapter's format"
        ))
        .hint("e.g. `chatmill adapters test my_adapter.wasm fixtures/`"));
    }
    let expect = expect.and_then(|p| p.canonicalize().ok());
    let mut out: Vec<Fixture> = Vec::new();
    for path in crate::inputs::expand_inputs(paths)? {
        if expect.is_some() && path.canonicalize().ok() == expect {
            continue;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        if out.iter().any(|f| f.name == name) {
            return Err(
                CliError::usage(anyhow::anyhow!("two fixtures are named `{name}`"))
                    .hint("fixtures are told apart by file name: rename one"),
            );
        }
        let bytes = fs_err::read(&path).map_err(CliError::usage)?;
        out.push(Fixture { name, bytes });
    }
    Ok(out)
}

fn read_expected(path: &Path) -> Result<serde_json::Value, CliError> {
    let text = fs_err::read_to_string(path).map_err(|e| {
        CliError::usage(e).hint("write it with `--bless` (from an output you have checked)")
    })?;
    serde_json::from_str(&text).map_err(|e| {
        CliError::usage(anyhow::anyhow!("`{}` is not JSON: {e}", path.display()))
            .hint("write it with `--bless`")
    })
}

fn print_report(report: &Report, fixtures: &[Fixture]) -> Result<(), CliError> {
    let a = &report.adapter;
    outln!(
        "adapter `{}` {} (API {}), {} fixture(s)",
        a.id,
        visible(&a.version),
        a.api_version,
        fixtures.len()
    );
    for c in &report.checks {
        let mark = if c.passed { "ok  " } else { "FAIL" };
        outln!("{mark} {:<17} {}", c.name, c.what);
        for d in &c.details {
            outln!("       {}", visible(d));
        }
    }
    outln!(
        "read {} bytes: {} conversation(s), {} pair(s); {:.2} MB/s, peak memory {:.1} MiB",
        report.bytes,
        report.conversations,
        report.pairs,
        report.mb_per_s,
        report.peak_memory_bytes as f64 / (1024.0 * 1024.0)
    );
    let failed = report.checks.iter().filter(|c| !c.passed).count();
    if failed == 0 {
        outln!("all {} checks passed", report.checks.len());
    } else {
        outln!("{failed} of {} checks failed", report.checks.len());
    }
    Ok(())
}
