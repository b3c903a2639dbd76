//! How a JSON error reads in looptrace's messages, which name the file and line themselves, and
//! the place in the document as a JSON path.

/// serde_json's message without any position.
pub fn describe_plain(err: &serde_json::Error) -> String {
    let message = err.to_string();
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message,
    }
}

/// `$.tasks[0].name` from the JSON pointer `/tasks/0/name` under `root` (`$`, or a path), as
/// schema errors name places.
pub fn path_from_pointer(root: &str, pointer: &str) -> String {
    let mut path = root.to_owned();
    for part in pointer.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
            path.push_str(&format!("[{part}]"));
        } else {
            path.push('.');
            path.push_str(&part);
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::path_from_pointer;

    #[test]
    fn a_pointer_reads_as_a_json_path_with_indexes_in_brackets() {
        assert_eq!(path_from_pointer("$", "/tasks/0/name"), "$.tasks[0].name");
        assert_eq!(path_from_pointer("$", ""), "$");
        assert_eq!(
            path_from_pointer("$.tools[2]", "/a~1b/c~0d"),
            "$.tools[2].a/b.c~d"
        );
    }
}
