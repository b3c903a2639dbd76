//! How text reports meet a terminal: borders, width and colour, decided once at the edge and
//! applied by the renderers, which stay pure functions of their data.
//!
//! [`Style::plain`] is what a pipe gets: Unicode borders, no width limit, no colour, the same
//! bytes as ever. [`Style::detect`] reads the locale (`LC_ALL`, then `LC_CTYPE`, then `LANG`:
//! a non-UTF-8 charset gets ASCII borders), `COLUMNS` or the terminal's width (tables are fitted,
//! long cells wrapped, never cut; prose lines wrapped at spaces), and `NO_COLOR` (colour by
//! outcome only on a terminal without it).

use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width, presets};
use unicode_width::UnicodeWidthChar;

/// How text tables and lines are drawn.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// ASCII borders and `...` instead of box drawing and `…`.
    pub ascii: bool,
    /// Fit every table and line to this many columns.
    pub width: Option<u16>,
    /// Colour outcomes (ANSI SGR).
    pub color: bool,
}

/// ANSI colours of outcomes, by the word that names them.
const COLORS: [(&str, &str); 7] = [
    ("finished", "32"),
    ("max_steps_exceeded", "33"),
    ("invalid_model_output", "35"),
    ("internal_error", "31"),
    ("incomplete", "2"),
    ("faithful", "32"),
    ("diverged", "31"),
];

impl Style {
    /// Today's output for pipes and files: Unicode borders, no width limit, no colour.
    pub fn plain() -> Style {
        Style::default()
    }

    /// The style for standard output, from the environment (`get` reads a variable) and, when
    /// standard output is a terminal, its width.
    pub fn detect(
        get: impl Fn(&str) -> Option<String>,
        is_terminal: bool,
        terminal_width: Option<u16>,
    ) -> Style {
        let locale = ["LC_ALL", "LC_CTYPE", "LANG"]
            .iter()
            .filter_map(|name| get(name))
            .find(|value| !value.is_empty());
        let columns = get("COLUMNS").and_then(|value| value.trim().parse::<u16>().ok());
        Style {
            ascii: locale.is_some_and(|locale| !is_utf8_locale(&locale)),
            width: columns
                .filter(|&width| width > 0)
                .or(terminal_width.filter(|_| is_terminal)),
            color: is_terminal && get("NO_COLOR").is_none_or(|value| value.is_empty()),
        }
    }

    /// The cut-off mark.
    pub fn ellipsis(&self) -> &'static str {
        if self.ascii { "..." } else { "…" }
    }

    /// A table with this style's borders and width and `header`; with a width, long cells wrap
    /// onto more lines.
    pub fn table(&self, header: Vec<&str>) -> Table {
        let mut table = Table::new();
        table.load_style(if self.ascii {
            presets::ASCII_FULL_CONDENSED
        } else {
            presets::UTF8_FULL_CONDENSED
        });
        if let Some(width) = self.width {
            table
                .set_width(width)
                .set_content_arrangement(ContentArrangement::Dynamic)
                .set_truncation_indicator(self.ellipsis());
        }
        table.set_header(header);
        table
    }

    /// Adds a row; with a width, a long cell wraps: what says why is never cut off.
    pub fn add_row(&self, table: &mut Table, cells: Vec<String>) {
        table.add_row(cells);
    }

    /// With a width, keeps the cells of `column` whole (numbers are never cut): the column is
    /// at least as wide as its widest cell in `cells`; its header may wrap.
    pub fn keep_whole<'a>(
        &self,
        table: &mut Table,
        column: usize,
        cells: impl IntoIterator<Item = &'a str>,
    ) {
        if self.width.is_none() {
            return;
        }
        let widest = cells.into_iter().map(display_width).max().unwrap_or(0);
        if let Some(column) = table.column_mut(column) {
            // The bound counts the padding on both sides.
            let widest = u16::try_from(widest + 2).unwrap_or(u16::MAX);
            column.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(widest)));
        }
    }

    /// The finished text: prose lines wider than the width wrapped at spaces (tables are fitted
    /// already), then outcomes coloured.
    pub fn finish(&self, text: &str) -> String {
        // Every text a terminal gets passes here: a control character from a trace, a suite or a
        // program's output (a scorer's, a gate's) is shown escaped, in every table and line.
        let text = &*crate::text::escape_lines(text);
        if self.width.is_none() && !self.color {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let (body, end) = match line.strip_suffix('\n') {
                Some(body) => (body, "\n"),
                None => (line, ""),
            };
            let wrapped = match self.width {
                Some(width) => wrap(body, usize::from(width)),
                None => vec![body.to_owned()],
            };
            let count = wrapped.len();
            for (i, piece) in wrapped.into_iter().enumerate() {
                if self.color {
                    out.push_str(&paint(&piece));
                } else {
                    out.push_str(&piece);
                }
                out.push_str(if i + 1 < count { "\n" } else { end });
            }
        }
        out
    }
}

/// `line` as lines of at most `width` display columns, broken at spaces (a word wider than the
/// width is broken where it must be); a line that fits, or a table's line, stays as it is.
fn wrap(line: &str, width: usize) -> Vec<String> {
    let is_table = line
        .chars()
        .next()
        .is_some_and(|c| matches!(c, '│' | '┌' | '└' | '├' | '╞' | '|' | '+'));
    if width == 0 || is_table || display_width(line) <= width {
        return vec![line.to_owned()];
    }
    let mut lines = Vec::new();
    let mut current = String::new();
    let mut used = 0;
    for word in line.split(' ') {
        let w = display_width(word);
        let gap = usize::from(!current.is_empty());
        if used + gap + w <= width {
            if gap == 1 {
                current.push(' ');
            }
            current.push_str(word);
            used += gap + w;
            continue;
        }
        if !current.is_empty() {
            lines.push(std::mem::take(&mut current));
            used = 0;
        }
        for c in word.chars() {
            let cw = c.width().unwrap_or(0);
            if used + cw > width && !current.is_empty() {
                lines.push(std::mem::take(&mut current));
                used = 0;
            }
            current.push(c);
            used += cw;
        }
    }
    lines.push(current);
    lines
}

/// Display columns of `text` (East Asian wide characters take two).
pub fn display_width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Whether a locale value names UTF-8 (`C.UTF-8`, `en_US.utf8`); `C` and `POSIX` do not.
fn is_utf8_locale(locale: &str) -> bool {
    let charset = locale.split('@').next().unwrap_or(locale);
    let charset = charset.rsplit_once('.').map_or("", |(_, charset)| charset);
    let normal: String = charset
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .collect::<String>()
        .to_ascii_lowercase();
    normal == "utf8"
}

/// Colours the outcome words of a line: a table cell that is (or starts with) an exit reason,
/// and a replay verdict (`ID: faithful (...)`).
fn paint(line: &str) -> String {
    let trimmed = line.trim_start();
    let is_row = trimmed.starts_with('│') || trimmed.starts_with('|');
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    while !rest.is_empty() {
        // The next word: a maximal run of lowercase letters and `_`.
        let start = rest
            .find(|c: char| c.is_ascii_lowercase())
            .unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(rest.len());
        let word = &rest[..end];
        let before = out.trim_end_matches(' ');
        // A cell's first word, or a verdict right after `ID: `.
        let placed = if is_row {
            before.ends_with(['│', '┆', '|'])
        } else {
            before.ends_with(':') && rest[end..].starts_with(" (")
        };
        match COLORS.iter().find(|(name, _)| *name == word) {
            Some((_, code)) if placed => {
                out.push_str(&format!("\u{1b}[{code}m{word}\u{1b}[0m"));
            }
            _ => out.push_str(word),
        }
        rest = &rest[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn the_locale_decides_the_borders() {
        let ascii = |pairs: &[(&str, &str)]| Style::detect(env(pairs), false, None).ascii;
        assert!(!ascii(&[]), "an unset locale keeps today's borders");
        assert!(!ascii(&[("LANG", "C.UTF-8")]));
        assert!(!ascii(&[("LANG", "en_US.utf8")]));
        assert!(!ascii(&[("LANG", "de_DE.UTF-8@euro")]));
        assert!(ascii(&[("LANG", "C")]));
        assert!(ascii(&[("LANG", "POSIX")]));
        assert!(ascii(&[("LANG", "en_US.ISO-8859-1")]));
        // LC_ALL, then LC_CTYPE, then LANG: the first non-empty wins.
        assert!(ascii(&[("LC_ALL", "C"), ("LANG", "C.UTF-8")]));
        assert!(!ascii(&[
            ("LC_ALL", ""),
            ("LC_CTYPE", "C.UTF-8"),
            ("LANG", "C")
        ]));
        assert!(ascii(&[("LC_CTYPE", "C"), ("LANG", "C.UTF-8")]));
    }

    #[test]
    fn width_and_colour_come_from_the_terminal_unless_overridden() {
        let style = |pairs: &[(&str, &str)], tty: bool| Style::detect(env(pairs), tty, Some(120));
        assert_eq!(
            style(&[], false),
            Style::plain(),
            "a pipe gets today's output"
        );
        assert_eq!(style(&[("COLUMNS", "80")], false).width, Some(80));
        assert_eq!(style(&[("COLUMNS", "80")], true).width, Some(80));
        assert_eq!(style(&[("COLUMNS", "wide")], true).width, Some(120));
        assert_eq!(style(&[], true).width, Some(120));
        assert!(style(&[], true).color);
        assert!(!style(&[("NO_COLOR", "1")], true).color);
        assert!(
            style(&[("NO_COLOR", "")], true).color,
            "an empty NO_COLOR is unset"
        );
        assert!(!style(&[("COLUMNS", "80")], false).color);
    }

    #[test]
    fn prose_lines_wrap_at_spaces_in_display_columns_and_are_never_cut() {
        let style = Style {
            width: Some(10),
            ..Style::plain()
        };
        assert_eq!(
            style.finish("short\nwords that wrap here\n"),
            "short\nwords that\nwrap here\n"
        );
        assert_eq!(style.finish("0123456789abc"), "0123456789\nabc");
        assert_eq!(style.finish("日本語のタスク名"), "日本語のタ\nスク名");
        // A table's lines are fitted by the table, not wrapped.
        let table_line = format!("│ {} │", "x".repeat(20));
        assert_eq!(style.finish(&table_line), table_line);
    }

    #[test]
    fn only_outcome_cells_and_verdicts_are_coloured() {
        let style = Style {
            color: true,
            ..Style::plain()
        };
        assert_eq!(
            style.finish("│ finished  ┆ 6 │\n"),
            "│ \u{1b}[32mfinished\u{1b}[0m  ┆ 6 │\n"
        );
        assert_eq!(
            style.finish("| t1 | internal_error | why finished |"),
            "| t1 | \u{1b}[31minternal_error\u{1b}[0m | why finished |"
        );
        assert_eq!(
            style.finish("multi-b: diverged (recorded finished, rerun x)"),
            "multi-b: \u{1b}[31mdiverged\u{1b}[0m (recorded finished, rerun x)"
        );
        assert_eq!(
            style.finish("Suite \"finished\": 2 tasks"),
            "Suite \"finished\": 2 tasks"
        );
    }

    #[test]
    fn fitted_tables_stay_in_the_width() {
        let style = Style {
            width: Some(40),
            ..Style::plain()
        };
        let mut table = style.table(vec!["failed task", "why"]);
        let why = "because ".repeat(25);
        style.add_row(&mut table, vec!["t1".into(), why.clone()]);
        let text = style.finish(&format!("{table}\n"));
        assert!(text.lines().count() > 5, "the cell wraps: {text}");
        for line in text.lines() {
            assert!(display_width(line) <= 40, "{line}");
        }
        assert!(!text.contains('…'), "nothing is cut: {text}");
        let words = text.matches("because").count();
        assert_eq!(words, 25, "{text}");
    }
}
