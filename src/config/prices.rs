//! `model_prices`: USD per million tokens by model, for agents whose CLI reports no cost.

use toml::Value;

use super::layers::Layers;
use super::ConfigError;
use crate::domain::prices::{Price, PriceTable};

/// The built-in prices with the setting's over them.
pub(super) fn model_prices(l: &Layers) -> Result<PriceTable, ConfigError> {
    const KEY: &str = "model_prices";
    let table = l.table(KEY, "{ \"gpt-5-codex\" = { input = 1.25, output = 10.0 } }")?;
    let mut prices = Vec::new();
    for (model, value) in table {
        let bad = |problem: &str| l.err(KEY, format!("model {model:?}: {problem}"));
        if model.trim().is_empty() {
            return Err(l.err(KEY, "a model name is empty"));
        }
        let Value::Table(def) = value else {
            return Err(bad("expected a table with `input` and `output` (USD per million tokens)"));
        };
        if let Some(unknown) = def.keys().find(|k| !["input", "output"].contains(&k.as_str())) {
            return Err(bad(&format!("unknown key {unknown:?} (expected input, output)")));
        }
        let usd = |field: &str| -> Result<f64, ConfigError> {
            let n = match def.get(field) {
                Some(Value::Float(f)) => *f,
                Some(Value::Integer(i)) => *i as f64,
                _ => return Err(bad(&format!("`{field}` must be a number of USD per million tokens"))),
            };
            if !n.is_finite() || !(0.0..=10_000.0).contains(&n) {
                return Err(bad(&format!("`{field}` must be from 0 to 10000 USD per million tokens, got {n}")));
            }
            Ok(n)
        };
        prices.push((model.clone(), Price { input: usd("input")?, output: usd("output")? }));
    }
    Ok(PriceTable::with(prices))
}
