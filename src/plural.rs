//! Counts with their noun in the right number ("1 task", "2 tasks") and sizes in bytes as people
//! read them ("4.2 KB"), for every message and report.

/// `count` followed by `one` when it is 1, else by `many`.
pub fn plural(count: impl Into<u64>, one: &str, many: &str) -> String {
    let count = count.into();
    format!("{count} {}", if count == 1 { one } else { many })
}

/// Bytes as people read them: `812 B`, `4.2 KB`, `1.3 MB`, `2.0 GB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
