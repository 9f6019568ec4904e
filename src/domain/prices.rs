//! What tokens cost, for agents whose CLI reports tokens but no cost (Codex, Gemini CLI, ACP
//! agents): USD per million input and output tokens, by model. Claude Code reports its own
//! cost, which is always used as it is.
//!
//! A few list prices are built in (OpenAI's and Google's published prices as of 2025, for
//! prompts under Gemini's long-context tier; nothing checks them against the providers, and
//! cached input is priced as input, so a turn's cost is an upper bound); the `model_prices`
//! setting adds models and overrides these. A model with no price costs 0, and the session's own cap and the
//! budgets cannot see it: name the model at launch, or give it a price.

use std::collections::BTreeMap;

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}

impl Price {
    /// What `input` and `output` tokens cost; negative counts cost nothing.
    pub fn cost(&self, input: i64, output: i64) -> f64 {
        (input.max(0) as f64 * self.input + output.max(0) as f64 * self.output) / 1_000_000.0
    }
}

const BUILT_IN: [(&str, Price); 8] = [
    ("gpt-5", Price { input: 1.25, output: 10.0 }),
    ("gpt-5-codex", Price { input: 1.25, output: 10.0 }),
    ("gpt-5-mini", Price { input: 0.25, output: 2.0 }),
    ("gpt-5-nano", Price { input: 0.05, output: 0.4 }),
    ("gpt-4.1", Price { input: 2.0, output: 8.0 }),
    ("gemini-2.5-pro", Price { input: 1.25, output: 10.0 }),
    ("gemini-2.5-flash", Price { input: 0.3, output: 2.5 }),
    ("gemini-2.5-flash-lite", Price { input: 0.1, output: 0.4 }),
];

/// Prices by exact model name.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceTable(BTreeMap<String, Price>);

impl Default for PriceTable {
    /// The built-in prices.
    fn default() -> Self {
        PriceTable(BUILT_IN.iter().map(|(model, price)| (model.to_string(), *price)).collect())
    }
}

impl PriceTable {
    /// The built-in prices, with `more` added over them.
    pub fn with(more: impl IntoIterator<Item = (String, Price)>) -> Self {
        let mut table = PriceTable::default();
        table.0.extend(more);
        table
    }

    pub fn of(&self, model: Option<&str>) -> Option<Price> {
        model.and_then(|m| self.0.get(m)).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_cost_their_model_s_price_and_settings_override_the_built_in_ones() {
        let table = PriceTable::with([("gpt-5-mini".to_string(), Price { input: 1.0, output: 4.0 })]);
        let cost = table.of(Some("gpt-5-codex")).map(|p| p.cost(1_000_000, 100_000));
        assert_eq!(cost, Some(1.25 + 1.0));
        assert_eq!(table.of(Some("gpt-5-mini")).map(|p| p.cost(500_000, 250_000)), Some(0.5 + 1.0));
        assert_eq!(table.of(Some("unknown")), None);
        assert_eq!(table.of(None), None);
        assert_eq!(Price { input: 1.0, output: 1.0 }.cost(-5, -5), 0.0);
    }
}
