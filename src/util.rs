//! Small helpers any room may use. This module imports nothing from the crate, so using it
//! never ties two rooms together.

/// The message of a caught panic.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("(no message)");
    format!("panicked: {text}")
}
