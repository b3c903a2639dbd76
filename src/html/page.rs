//! The page shell: head, inline style and script, the sections in order, and the data the script
//! reads. Nothing on the page is loaded from anywhere: it opens offline and is safe to attach to a
//! CI run.

use std::fmt::Write as _;

use serde_json::json;

use super::Page;
use super::escape::{html, script_json};
use super::{charts, models, scores, stats, table, timeline};

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// Renders `page` as one self-contained HTML document.
pub fn render(page: &Page<'_>) -> Vec<u8> {
    let names = timeline::event_names(page.runs);
    let data = json!({
        "verdict": page.verdict,
        "files": page.runs.files,
        "events": names,
        "runs": table::rows(page.runs),
        "timelines": timeline::timelines(page.runs, &names),
    });
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\
         <title>{title}</title><style>{STYLE}</style></head><body><header><h1>{title}</h1>",
        title = html(page.title),
    );
    for line in page.context {
        let _ = write!(out, "<p class=\"context\">{}</p>", html(line));
    }
    let _ = write!(
        out,
        "<p class=\"context\">{}, {} of input, looptrace {}</p></header><main>",
        crate::plural(page.report.input.files, "file", "files"),
        crate::plural(page.report.input.events, "event", "events"),
        env!("CARGO_PKG_VERSION")
    );
    if let Some(matrix) = page.models {
        out.push_str(&models::section(matrix));
    }
    if let Some(statistics) = page.statistics {
        out.push_str(&stats::section(statistics));
    }
    out.push_str(&scores::section(page.scores));
    if let Some(baseline) = page.baseline {
        out.push_str(&charts::baseline(baseline));
    }
    out.push_str(&charts::sections(page.report));
    out.push_str(&table::section(page.runs, page.verdict));
    out.push_str("<section id=\"timeline\" hidden></section>");
    if !page.report.warnings.is_empty() {
        out.push_str("<section id=\"warnings\"><h2>Warnings</h2><ul>");
        for warning in &page.report.warnings {
            let _ = write!(out, "<li>{}</li>", html(&warning.to_string()));
        }
        out.push_str("</ul></section>");
    }
    let _ = writeln!(
        out,
        "</main><script type=\"application/octet-stream\" id=\"looptrace-data\" data-encoding=\"deflate-base64\">{}</script><script>{SCRIPT}</script></body></html>",
        pack(script_json(&data).as_bytes())
    );
    out.into_bytes()
}

/// `bytes` compressed (zlib) and in base64, which the page's script inflates with the browser's
/// `DecompressionStream`: a 10,000-run report's data is a fifth of its JSON, and base64 holds no
/// character that could end the `<script>` element.
fn pack(bytes: &[u8]) -> String {
    use base64::Engine as _;
    use std::io::Write as _;
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
    // Writing to a Vec cannot fail.
    let compressed = encoder
        .write_all(bytes)
        .and_then(|()| encoder.finish())
        .unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(compressed)
}
