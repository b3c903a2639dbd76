//! How a serde_json error reads in looptrace's messages, which name the file and line themselves.

/// serde_json's message without any position.
pub fn describe_plain(err: &serde_json::Error) -> String {
    let message = err.to_string();
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message,
    }
}
