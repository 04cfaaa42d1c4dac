//! Small readers of raw input shared by several operations.

use motor_domain::FieldError;

/// A comma list (`estado=a,b`), each item read with `parse`; any unknown
/// item is an error naming `field`, saying `expected`.
pub fn comma_list<T>(
    raw: &str,
    field: &'static str,
    expected: &'static str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, FieldError> {
    raw.split(',')
        .map(|s| parse(s.trim()).ok_or_else(|| FieldError::invalid(field, expected)))
        .collect()
}
