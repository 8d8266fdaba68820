//! The hyper-parameters the forward pass needs, from `config.json`, and
//! which of them it supports.

use super::weights::LoadError;

/// The hyper-parameters the forward pass needs, from `config.json`.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Config {
    pub hidden_size: usize,
    pub num_attention_heads: usize,
    pub num_hidden_layers: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default = "default_pos")]
    pub position_embedding_type: String,
}

fn default_eps() -> f64 {
    1e-12
}

fn default_act() -> String {
    "gelu".into()
}

fn default_pos() -> String {
    "absolute".into()
}

impl Config {
    /// `Ok` if the forward pass implements this model: BERT's exact `gelu`,
    /// absolute position embeddings, heads that divide the hidden size.
    pub(super) fn supported(&self) -> Result<(), LoadError> {
        if self.hidden_act != "gelu" {
            return Err(LoadError::Unsupported(format!(
                "activation `{}` (only BERT's exact `gelu` is implemented)",
                self.hidden_act
            )));
        }
        if self.position_embedding_type != "absolute" {
            return Err(LoadError::Unsupported(format!(
                "position embeddings `{}` (only `absolute`)",
                self.position_embedding_type
            )));
        }
        let hidden = self.hidden_size;
        if self.num_attention_heads == 0 || !hidden.is_multiple_of(self.num_attention_heads) {
            return Err(LoadError::Unsupported(format!(
                "{} heads do not divide hidden size {hidden}",
                self.num_attention_heads
            )));
        }
        Ok(())
    }
}
