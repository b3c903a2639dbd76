//! `--shard K/N`: a stable 1/N share of a suite, so one suite spreads across CI matrix jobs, indexed
//! Kubernetes Jobs or batch-scheduler arrays. Task i (0-based, suite order) belongs to shard
//! `i mod N + 1`: the same suite always splits the same way, shares differ by at most one task, and
//! the N shards together are exactly the suite.

use std::fmt;
use std::str::FromStr;

use super::results::{MissingShard, Shard};

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let bad = || {
            format!(
                "--shard takes K/N with 1 <= K <= N <= {}, got {text:?}",
                Shard::MAX_COUNT
            )
        };
        let (k, n) = text.split_once('/').ok_or_else(bad)?;
        let index: usize = k.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        let shard = Shard { index, count };
        if !shard.is_valid() {
            return Err(bad());
        }
        Ok(shard)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A shard a partial merge lacks as `2/3`, or `2/3 (12 rows)` when it lacks only some rows.
impl fmt::Display for MissingShard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)?;
        match self.missing_rows {
            Some(1) => write!(f, " (1 row)"),
            Some(rows) => write!(f, " ({rows} rows)"),
            None => Ok(()),
        }
    }
}

/// Shards of one split that were not given, as a sentence that cannot read as a fraction:
/// `shard 2 of 3 is missing`, `shards 2 and 3 of 3 are missing`, `shards 1, 2 and 4 of 5 are
/// missing`.
pub fn missing_sentence(shards: &[MissingShard]) -> String {
    let count = shards.first().map_or(0, |s| s.count);
    let indexes: Vec<String> = shards.iter().map(|s| s.index.to_string()).collect();
    match indexes.as_slice() {
        [] => String::new(),
        [one] => format!("shard {one} of {count} is missing"),
        [rest @ .., last] => format!(
            "shards {} and {last} of {count} are missing",
            rest.join(", ")
        ),
    }
}

/// Shards as `1/3, 3/3`, for messages.
pub fn list_shards<S: fmt::Display>(shards: &[S]) -> String {
    shards
        .iter()
        .map(S::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Shard {
    /// The most shards a suite may be split into.
    pub const MAX_COUNT: usize = 1_000_000;

    /// Whether `1 <= index <= count <= MAX_COUNT`.
    pub fn is_valid(self) -> bool {
        self.index >= 1 && self.index <= self.count && self.count <= Shard::MAX_COUNT
    }

    /// Whether the task at `position` (0-based) belongs to this shard.
    pub fn contains(self, position: usize) -> bool {
        position % self.count + 1 == self.index
    }

    /// The items of this shard, in order.
    pub fn select<T: Clone>(self, items: &[T]) -> Vec<T> {
        items
            .iter()
            .enumerate()
            .filter(|(i, _)| self.contains(*i))
            .map(|(_, item)| item.clone())
            .collect()
    }
}

/// One engine's pair of variables for `--shard auto`.
struct Engine {
    /// Who sets them, for the message that says which was used.
    name: &'static str,
    /// The shard index; its presence selects the engine.
    index: &'static str,
    /// The shard count.
    count: &'static str,
    /// Whether `index` counts from 0 (else from 1).
    zero_based: bool,
}

/// The engines `--shard auto` knows, in the order they are tried: the first whose index variable
/// is set (and not empty) wins.
const ENGINES: [Engine; 5] = [
    Engine {
        name: "looptrace",
        index: "LOOPTRACE_SHARD",
        count: "LOOPTRACE_SHARDS",
        zero_based: false,
    },
    Engine {
        name: "Kubernetes Indexed Job",
        index: "JOB_COMPLETION_INDEX",
        count: "LOOPTRACE_SHARDS",
        zero_based: true,
    },
    Engine {
        name: "GitLab CI",
        index: "CI_NODE_INDEX",
        count: "CI_NODE_TOTAL",
        zero_based: false,
    },
    Engine {
        name: "Buildkite",
        index: "BUILDKITE_PARALLEL_JOB",
        count: "BUILDKITE_PARALLEL_JOB_COUNT",
        zero_based: true,
    },
    Engine {
        name: "CircleCI",
        index: "CIRCLE_NODE_INDEX",
        count: "CIRCLE_NODE_TOTAL",
        zero_based: true,
    },
];

/// Every variable `--shard auto` reads, for callers that must clear them.
pub const SHARD_ENV_VARS: [&str; 9] = [
    "LOOPTRACE_SHARD",
    "LOOPTRACE_SHARDS",
    "JOB_COMPLETION_INDEX",
    "CI_NODE_INDEX",
    "CI_NODE_TOTAL",
    "BUILDKITE_PARALLEL_JOB",
    "BUILDKITE_PARALLEL_JOB_COUNT",
    "CIRCLE_NODE_INDEX",
    "CIRCLE_NODE_TOTAL",
];

impl Shard {
    /// `--shard auto`: the shard named by the first engine whose index variable `var` finds set,
    /// with a line saying which variables gave it; or why none could be used, naming the variable.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<(Shard, String), String> {
        let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        let Some((engine, index_text)) = ENGINES
            .iter()
            .find_map(|engine| set(engine.index).map(|value| (engine, value)))
        else {
            let names: Vec<&str> = ENGINES.iter().map(|engine| engine.index).collect();
            return Err(format!(
                "--shard auto: none of {} is set (or give --shard K/N)",
                names.join(", ")
            ));
        };
        let number = |name: &str, text: &str| {
            text.trim().parse::<usize>().map_err(|_| {
                format!(
                    "--shard auto: {name}={text:?} is not a whole number (from {engine_name})",
                    engine_name = engine.name
                )
            })
        };
        let count_text = set(engine.count).ok_or_else(|| {
            format!(
                "--shard auto: {}={index_text:?} is set but {} is not (from {}: it gives the number of shards)",
                engine.index, engine.count, engine.name
            )
        })?;
        let raw_index = number(engine.index, &index_text)?;
        let count = number(engine.count, &count_text)?;
        if count == 0 || count > Shard::MAX_COUNT {
            return Err(format!(
                "--shard auto: {}={count_text:?} must be from 1 to {} (from {})",
                engine.count,
                Shard::MAX_COUNT,
                engine.name
            ));
        }
        let base = usize::from(!engine.zero_based);
        let shard = Shard {
            index: raw_index + 1 - base,
            count,
        };
        if raw_index < base || !shard.is_valid() {
            return Err(format!(
                "--shard auto: {}={index_text:?} must be from {base} to {} with {}={count_text:?} (from {}, {}-based)",
                engine.index,
                count - 1 + base,
                engine.count,
                engine.name,
                base
            ));
        }
        let used = format!(
            "shard {shard} from {} ({}={}, {}={})",
            engine.name,
            engine.index,
            index_text.trim(),
            engine.count,
            count_text.trim()
        );
        Ok((shard, used))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn missing_shards_read_as_shards_of_a_split_not_as_a_fraction() {
        let absent = |index| MissingShard {
            index,
            count: 5,
            missing_rows: None,
        };
        assert_eq!(
            super::missing_sentence(&[absent(2)]),
            "shard 2 of 5 is missing"
        );
        assert_eq!(
            super::missing_sentence(&[absent(2), absent(3)]),
            "shards 2 and 3 of 5 are missing"
        );
        assert_eq!(
            super::missing_sentence(&[absent(1), absent(2), absent(4)]),
            "shards 1, 2 and 4 of 5 are missing"
        );
    }

    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<(Shard, String), String> {
        Shard::from_env(|name| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        })
    }

    fn shard(index: usize, count: usize) -> Shard {
        Shard { index, count }
    }

    #[test]
    fn each_engine_counts_from_its_own_base() {
        let cases: [(&[(&str, &str)], Shard); 5] = [
            (
                &[("LOOPTRACE_SHARD", "1"), ("LOOPTRACE_SHARDS", "3")],
                shard(1, 3),
            ),
            (
                &[("JOB_COMPLETION_INDEX", "0"), ("LOOPTRACE_SHARDS", "3")],
                shard(1, 3),
            ),
            (
                &[("CI_NODE_INDEX", "3"), ("CI_NODE_TOTAL", "3")],
                shard(3, 3),
            ),
            (
                &[
                    ("BUILDKITE_PARALLEL_JOB", "2"),
                    ("BUILDKITE_PARALLEL_JOB_COUNT", "3"),
                ],
                shard(3, 3),
            ),
            (
                &[("CIRCLE_NODE_INDEX", "1"), ("CIRCLE_NODE_TOTAL", "2")],
                shard(2, 2),
            ),
        ];
        for (vars, expected) in cases {
            assert_eq!(from(vars).map(|(s, _)| s), Ok(expected), "{vars:?}");
        }
        let (_, used) = from(&[("CI_NODE_INDEX", "2"), ("CI_NODE_TOTAL", "4")]).unwrap();
        assert_eq!(
            used,
            "shard 2/4 from GitLab CI (CI_NODE_INDEX=2, CI_NODE_TOTAL=4)"
        );
    }

    #[test]
    fn the_first_engine_whose_index_is_set_wins() {
        let vars = [
            ("CIRCLE_NODE_INDEX", "0"),
            ("CIRCLE_NODE_TOTAL", "5"),
            ("JOB_COMPLETION_INDEX", "1"),
            ("LOOPTRACE_SHARDS", "2"),
            ("LOOPTRACE_SHARD", ""),
        ];
        let (found, used) = from(&vars).unwrap();
        assert_eq!(found, shard(2, 2));
        assert!(used.contains("Kubernetes"), "{used}");
    }

    #[test]
    fn missing_or_bad_values_name_the_variable() {
        let none = from(&[("LOOPTRACE_SHARDS", "3")]).unwrap_err();
        assert!(
            none.contains("none of LOOPTRACE_SHARD, JOB_COMPLETION_INDEX"),
            "{none}"
        );
        let cases: [(&[(&str, &str)], &str); 6] = [
            (&[("LOOPTRACE_SHARD", "1")], "LOOPTRACE_SHARDS is not"),
            (
                &[("LOOPTRACE_SHARD", "0"), ("LOOPTRACE_SHARDS", "3")],
                "LOOPTRACE_SHARD=\"0\" must be from 1 to 3",
            ),
            (
                &[("JOB_COMPLETION_INDEX", "3"), ("LOOPTRACE_SHARDS", "3")],
                "JOB_COMPLETION_INDEX=\"3\" must be from 0 to 2",
            ),
            (
                &[("CI_NODE_INDEX", "x"), ("CI_NODE_TOTAL", "3")],
                "CI_NODE_INDEX=\"x\" is not a whole number",
            ),
            (
                &[("CIRCLE_NODE_INDEX", "0"), ("CIRCLE_NODE_TOTAL", "0")],
                "CIRCLE_NODE_TOTAL=\"0\" must be from 1",
            ),
            (
                &[
                    ("BUILDKITE_PARALLEL_JOB", "-1"),
                    ("BUILDKITE_PARALLEL_JOB_COUNT", "2"),
                ],
                "BUILDKITE_PARALLEL_JOB=\"-1\" is not",
            ),
        ];
        for (vars, expected) in cases {
            let err = from(vars).unwrap_err();
            assert!(err.contains(expected), "{vars:?}: {err}");
        }
    }
}
