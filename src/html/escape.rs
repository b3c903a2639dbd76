//! Trace text is untrusted: every string that reaches the page goes through one of these. Text and
//! attribute values are HTML-escaped; data handed to the page's script is JSON with every character
//! that could end a `<script>` element or a JavaScript string escaped.

use std::fmt::Write as _;

/// `text` safe in an HTML text node or a quoted attribute value.
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab and newline have no business on the page.
            c if c.is_control() && c != '\t' && c != '\n' => {
                let _ = write!(out, "&#x{:x};", 0xFFFD);
            }
            c => out.push(c),
        }
    }
    out
}

/// `value` as JSON that is safe inside `<script type="application/json">`: `<`, `>` and `&`
/// (which could close the element or open a comment) and U+2028/U+2029 (line ends to older
/// JavaScript) are written as `\uXXXX` escapes, which JSON reads back as the same characters.
pub fn script_json(value: &serde_json::Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_text_and_attributes_is_inert() {
        assert_eq!(
            html(r#"<img src=x onerror="alert('1')">&"#),
            "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;"
        );
        assert_eq!(html("a\u{1b}b"), "a&#xfffd;b");
    }

    #[test]
    fn script_data_cannot_close_its_element_and_reads_back_unchanged() {
        let value = serde_json::json!(["</script><script>x()</script>", "a\u{2028}b&c"]);
        let text = script_json(&value);
        assert!(!text.contains('<') && !text.contains('>') && !text.contains('&'));
        assert!(!text.contains('\u{2028}'));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            value
        );
    }
}
