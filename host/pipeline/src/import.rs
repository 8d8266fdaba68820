//! Batch import: inventory the inputs against the manifest, parse each new
//! or changed file with its adapter, process its conversations into chunk
//! files, and record the outcome per file. One bad file never stops the
//! others; the manifest is saved after every file, so a killed run resumes
//! where it stopped and converges to the same result.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use chatmill_runtime::{AdapterSet, Input, Runtime, SelectError};
use chrono::{DateTime, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::header::HeaderWriter;
use crate::manifest::{AdapterRef, FileRecord, FileStatus, MANIFEST_FILE, Manifest, ManifestError};
use crate::processor::{Processor, ProcessorConfig};

#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The root: chunk files and the manifest live here; `raw/` is the
    /// default input.
    pub root: PathBuf,
    /// Files or folders; empty means `ROOT/raw`.
    pub inputs: Vec<PathBuf>,
    /// Use this adapter for every input instead of sniffing.
    pub format: Option<String>,
    pub processor: ProcessorConfig,
}

/// What happened to one skipped or failed input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileProblem {
    pub file: String,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Whether running again may help (time limits, I/O).
    pub retryable: bool,
}

/// The processing summary the spec asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub files_processed: u32,
    /// Inputs already in the manifest with the same content.
    pub files_unchanged: u32,
    pub chunks_written: u32,
    pub duplicates_skipped: u32,
    pub mechanical_excluded: u32,
    pub files_skipped: Vec<FileProblem>,
    pub errors: Vec<FileProblem>,
    /// Chunks the manifest knows after the run.
    pub chunks_total: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("cannot read input `{path}`: {source}")]
    Inventory {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create the root `{path}`: {source}")]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Progress events, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    Inventory {
        files: usize,
    },
    File {
        index: usize,
        of: usize,
        name: &'a str,
    },
}

/// Names that are never exports: OS and archive junk.
fn is_junk(path: &Path) -> bool {
    path.components().any(|c| {
        let s = c.as_os_str().to_string_lossy();
        s == "__MACOSX" || s == ".DS_Store" || s == "Thumbs.db" || s == "desktop.ini"
    }) || path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(".chatmill-tmp-"))
}

struct Candidate {
    path: PathBuf,
    key: String,
    mtime: SystemTime,
}

fn walk(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = fs_err::read_dir(path)?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for e in entries {
            walk(&e, out)?;
        }
    } else {
        out.push(path.to_path_buf());
    }
    Ok(())
}

fn sha256_file(path: &Path) -> std::io::Result<(String, u64)> {
    let mut f = fs_err::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        h.update(&buf[..n]);
    }
    Ok((hex::encode(h.finalize()), size))
}

/// Runs one import.
pub fn run(
    runtime: &Runtime,
    adapters: &AdapterSet,
    header: &dyn HeaderWriter,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Summary, ImportError> {
    fs_err::create_dir_all(&opts.processor.out_dir).map_err(|source| ImportError::Root {
        path: opts.processor.out_dir.clone(),
        source,
    })?;
    let manifest_path = opts.root.join(MANIFEST_FILE);
    let mut manifest = Manifest::load(&manifest_path)?;
    let inputs = if opts.inputs.is_empty() {
        vec![opts.root.join("raw")]
    } else {
        opts.inputs.clone()
    };
    let mut files = Vec::new();
    for input in &inputs {
        if !input.exists() {
            if opts.inputs.is_empty() {
                continue; // No raw/ yet: nothing to do.
            }
            return Err(ImportError::Inventory {
                path: input.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or folder"),
            });
        }
        walk(input, &mut files).map_err(|source| ImportError::Inventory {
            path: input.clone(),
            source,
        })?;
    }
    // Oldest first, so headers and manifests build up in time order.
    let mut candidates: Vec<Candidate> = files
        .into_iter()
        .filter(|p| !is_junk(p))
        .map(|path| {
            let mtime = fs_err::metadata(&path)
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            Candidate {
                key: path.display().to_string(),
                path,
                mtime,
            }
        })
        .collect();
    candidates.sort_by(|a, b| a.mtime.cmp(&b.mtime).then_with(|| a.key.cmp(&b.key)));
    progress(Progress::Inventory {
        files: candidates.len(),
    });

    let mut summary = Summary::default();
    let mut processor = Processor::new(opts.processor.clone(), header, &manifest);
    let total = candidates.len();
    for (index, c) in candidates.iter().enumerate() {
        progress(Progress::File {
            index,
            of: total,
            name: &c.key,
        });
        let problem = |reason: String, hint: Option<String>, retryable: bool| FileProblem {
            file: c.key.clone(),
            reason,
            hint,
            retryable,
        };
        let (sha256, size) = match sha256_file(&c.path) {
            Ok(h) => h,
            Err(e) => {
                summary
                    .errors
                    .push(problem(format!("cannot read it: {e}"), None, true));
                continue;
            }
        };
        if let Some(rec) = manifest.files.get(&c.key)
            && rec.sha256 == sha256
            && rec.status != FileStatus::Failed
        {
            summary.files_unchanged += 1;
            continue;
        }
        let mtime: DateTime<Utc> = c.mtime.into();
        let mut record = FileRecord {
            sha256,
            size,
            adapter: None,
            processed_at: Utc::now(),
            status: FileStatus::Processed,
            reason: None,
            chunk_ids: manifest
                .files
                .get(&c.key)
                .map(|r| r.chunk_ids.clone())
                .unwrap_or_default(),
        };
        if size == 0 {
            record.status = FileStatus::Skipped;
            record.reason = Some("empty file".into());
            summary
                .files_skipped
                .push(problem("empty file".into(), None, false));
            manifest.files.insert(c.key.clone(), record);
            manifest.save(&manifest_path)?;
            continue;
        }
        let input = Input::from_path(&c.path);
        let adapter = match adapters.select(runtime, &input, opts.format.as_deref()) {
            Ok(a) => a,
            Err(e) => {
                let hint = e.hint();
                let reason = e.to_string();
                if matches!(e, SelectError::Unrecognized { .. }) {
                    record.status = FileStatus::Skipped;
                    summary
                        .files_skipped
                        .push(problem(reason.clone(), hint, false));
                } else {
                    record.status = FileStatus::Failed;
                    summary.errors.push(problem(reason.clone(), hint, false));
                }
                record.reason = Some(reason);
                manifest.files.insert(c.key.clone(), record);
                manifest.save(&manifest_path)?;
                continue;
            }
        };
        record.adapter = Some(AdapterRef {
            id: adapter.info.id.clone(),
            version: adapter.info.version.clone(),
            sha256: adapter.sha256.clone(),
        });
        let source_file = c
            .path
            .file_name()
            .map_or_else(|| c.key.clone(), |n| n.to_string_lossy().into_owned());
        let mut pairs = 0usize;
        let mut skipped_by_adapter = 0u32;
        let result = (|| -> Result<(), String> {
            let mut stream = runtime.parse(adapter, &input).map_err(|e| e.to_string())?;
            while let Some(conv) = stream.next_conversation().map_err(|e| e.to_string())? {
                pairs += conv.pairs.len();
                skipped_by_adapter += conv.skipped.values().sum::<u32>();
                let out = processor
                    .process(&conv, &source_file, mtime, &mut manifest)
                    .map_err(|e| e.to_string())?;
                summary.chunks_written += out.written.len() as u32;
                summary.duplicates_skipped += out.duplicates;
                summary.mechanical_excluded += out.excluded;
                record
                    .chunk_ids
                    .extend(out.written.into_iter().map(|w| w.chunk_id));
            }
            Ok(())
        })();
        match result {
            Err(reason) => {
                record.status = FileStatus::Failed;
                record.reason = Some(reason.clone());
                summary.errors.push(problem(
                    reason,
                    Some(format!(
                        "chunks already written from it are kept; fix the file or force an adapter with `--format`, then run again (adapter `{}`)",
                        adapter.info.id
                    )),
                    false,
                ));
            }
            Ok(()) if pairs == 0 => {
                let reason = format!(
                    "adapter `{}` found no turn pairs in a non-empty file ({skipped_by_adapter} items skipped)",
                    adapter.info.id
                );
                record.status = FileStatus::Failed;
                record.reason = Some(reason.clone());
                summary.errors.push(problem(
                    reason,
                    Some("if this is a batch output file, import it together with its input file; otherwise check the file is a complete export".into()),
                    false,
                ));
            }
            Ok(()) => summary.files_processed += 1,
        }
        manifest.files.insert(c.key.clone(), record);
        manifest.save(&manifest_path)?;
    }
    summary.chunks_total = manifest.chunk_ids().len() as u32;
    Ok(summary)
}
