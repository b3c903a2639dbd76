//! The models section of an evaluation's page under a model matrix: each task's pass rate per
//! model, one column per model, and each model's overall pass rate.

use std::fmt::Write as _;

use super::escape::html;
use crate::eval::ModelMatrix;

/// The section, as a static table (it needs no script).
pub fn section(matrix: &ModelMatrix) -> String {
    let (header, rows) = matrix.cells();
    let mut out = String::from(
        "<section id=\"models\"><h2>Models side by side</h2>\
         <p class=\"note\">passing runs / runs, per task and model</p>\
         <div class=\"scroll\"><table id=\"models-table\"><thead><tr>",
    );
    for (i, cell) in header.iter().enumerate() {
        let class = if i == 0 { "" } else { " class=\"num\"" };
        let _ = write!(out, "<th{class}>{}</th>", html(cell));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let class = if i == 0 { "" } else { " class=\"num\"" };
            let _ = write!(out, "<td{class}>{}</td>", html(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div></section>");
    out
}
