//! `?limit=&offset=` for list endpoints that can grow.

use serde::Deserialize;
use utoipa::IntoParams;

use crate::error::AppError;

pub const DEFAULT_LIMIT: i64 = 100;
pub const MAX_LIMIT: i64 = 1000;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Page {
    /// How many items at most (1-1000, default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
    /// How many items to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

impl Page {
    /// (limit, offset), validated.
    pub fn bounds(&self) -> Result<(i64, i64), AppError> {
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(AppError::validation(format!("`limit` must be from 1 to {MAX_LIMIT}, got {limit}")));
        }
        let offset = self.offset.unwrap_or(0);
        if offset < 0 {
            return Err(AppError::validation(format!("`offset` must not be negative, got {offset}")));
        }
        Ok((limit, offset))
    }
}
