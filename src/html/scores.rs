//! The scores section of an evaluation's page: each scorer's passing runs, runs scored and mean
//! value.

use std::fmt::Write as _;

use super::escape::html;
use crate::eval::ScoreTotal;

/// The section, as a static table; empty when no run was scored.
pub fn section(totals: &[ScoreTotal]) -> String {
    if totals.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<section id=\"scores\"><h2>Scores</h2><div class=\"scroll\"><table id=\"scores-table\"><thead><tr>\
         <th>scorer</th><th>kind</th><th class=\"num\">passed</th><th class=\"num\">mean value</th>\
         </tr></thead><tbody>",
    );
    for total in totals {
        let mean = total
            .mean_value
            .map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}/{}</td><td class=\"num\">{mean}</td></tr>",
            html(&total.name),
            html(&total.kind),
            total.passed,
            total.scored
        );
    }
    out.push_str("</tbody></table></div></section>");
    out
}
