//! Text from traces made safe to print. A model chooses tool names and every recorded string can
//! hold anything, so before trace text reaches a terminal, a table or a message, every C0 and C1
//! control character (ESC, CSI U+009B, `\r`, `\b`, ...) and every bidirectional override or
//! isolate (U+202A–U+202E, U+2066–U+2069) is shown escaped, as `\u{1b}`.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal as itself.
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every unsafe character escaped (`\n` as `\n`, others as `\u{XX}`); borrowed when
/// nothing needs escaping.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_unsafe(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A text of many lines made safe as [`escape`] makes one: every unsafe character but `\n`
/// escaped.
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && is_unsafe(c)) {
        return Cow::Borrowed(text);
    }
    let lines: Vec<Cow<'_, str>> = text.split('\n').map(escape).collect();
    Cow::Owned(lines.join("\n"))
}

/// Untrusted text for Markdown (a table cell, a heading, a list item): escaped, with `\` and `|`
/// escaped so they cannot end a column, a line break as a space, and `&`, `<` and `>` as entities
/// so the text cannot bring raw HTML (an image that loads, a `<details>` that folds the rest of a
/// pull-request comment away).
pub fn markdown_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in escape(text).chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '|' => out.push_str("\\|"),
            '\n' => out.push(' '),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// A CSV cell's text: escaped, and a leading `=`, `+`, `-` or `@` (a formula to spreadsheets)
/// neutralised with a `'` before it. Quoting is the CSV writer's job.
pub fn csv_text(text: &str) -> Cow<'_, str> {
    let escaped = escape(text);
    if escaped.starts_with(['=', '+', '-', '@']) {
        Cow::Owned(format!("'{escaped}"))
    } else {
        escaped
    }
}

/// Writes `<what> `FILE` has N problem(s):` and one indented `PATH: MESSAGE` line per problem:
/// how every checked user file (suites, tools files) lists what is wrong with it.
pub fn write_problems(
    f: &mut std::fmt::Formatter<'_>,
    what: &str,
    file: &str,
    problems: &[(String, String)],
) -> std::fmt::Result {
    let n = problems.len() as u64;
    write!(
        f,
        "{what} `{file}` has {}:",
        crate::plural(n, "problem", "problems")
    )?;
    for (path, message) in problems {
        write!(f, "\n  {path}: {message}")?;
    }
    Ok(())
}
