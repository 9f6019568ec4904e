//! Request fields shared by the handlers: the checks' sentences as 422s, and the two states an
//! optional field of a partial update can be left in.

use serde::{Deserialize, Deserializer};

use crate::error::{AppError, AppResult};

/// A check's sentence (the `domain::validate` functions' error) as a 422.
pub fn check<T>(r: Result<T, String>) -> AppResult<T> {
    r.map_err(AppError::validation)
}

/// For `#[serde(deserialize_with)]` on a partial update's field: absent keeps the value
/// (`None`), `null` clears it (`Some(None)`).
pub fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A field that may be left out of an update but not cleared: `null` is refused.
pub fn required<T>(field: &str, value: Option<Option<T>>) -> Result<Option<T>, AppError> {
    match value {
        Some(None) => Err(AppError::validation(format!("`{field}` cannot be null; leave it out to keep its value"))),
        Some(Some(v)) => Ok(Some(v)),
        None => Ok(None),
    }
}
