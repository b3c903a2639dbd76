//! How an agent task's run ends, from three witnesses: the run its proxy recorded (whether its
//! last call failed, or was answered with no tool call), the first request a replay had no
//! answer for, and how the agent's command ended (its exit status, or its timeout).
//!
//! - a replay miss: `internal_error`, `replay_miss`, naming the new request;
//! - the run's last call failed (the agent gave up on its model): `internal_error` with the
//!   failure's kind;
//! - the command exited 0: `finished` (the agent says it is done, even when its last answer was
//!   a tool call, as with mini-swe-agent's submit command);
//! - the command ran past its timeout: `finished` if the run had ended (its last answer had no
//!   tool call), else incomplete, `agent_timeout`;
//! - the command exited non-zero or was killed by a signal: incomplete, `agent_exit`, the
//!   status in the error;
//! - the command could not be started: `internal_error`, `agent_not_started`.
//!
//! An incomplete run's trace has no `run_finished` (so `report` and `show` count it
//! `incomplete`, as they do any run that did not end); a results row has no such exit reason,
//! so its row is `internal_error` with the error kind and the error that say why.

use crate::proxy::Ending;
use crate::run::ExitReason;

/// How the agent's command ended.
#[derive(Clone, Debug, PartialEq)]
pub enum CommandEnd {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it.
    Signaled(i32),
    /// It ran past its timeout; its process group was killed.
    TimedOut {
        /// The timeout, in seconds.
        seconds: f64,
    },
    /// It could not be started (`the program ... was not found`).
    NotStarted(String),
}

/// The run's exit reason, error kind and error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The exit reason.
    pub exit_reason: ExitReason,
    /// The error kind, when it did not finish.
    pub error_kind: Option<String>,
    /// The error, when it did not finish.
    pub error: Option<String>,
    /// Whether the run did not end: its trace gets no `run_finished`.
    pub incomplete: bool,
}

impl Verdict {
    fn finished() -> Verdict {
        Verdict {
            exit_reason: ExitReason::Finished,
            error_kind: None,
            error: None,
            incomplete: false,
        }
    }

    fn failed(kind: &str, error: String) -> Verdict {
        Verdict {
            exit_reason: ExitReason::InternalError,
            error_kind: Some(kind.to_owned()),
            error: Some(error),
            incomplete: false,
        }
    }

    fn incomplete(kind: &str, error: String) -> Verdict {
        Verdict {
            incomplete: true,
            ..Verdict::failed(kind, format!("{error}; the run is incomplete"))
        }
    }
}

/// Judges the run by the rules of the module's documentation. `run` is `None` when the agent
/// made no model call.
pub fn judge(run: Option<&Ending>, first_miss: Option<&str>, command: &CommandEnd) -> Verdict {
    if let Some(miss) = first_miss {
        return Verdict::failed(
            "replay_miss",
            format!("the agent asked something it did not ask in the recorded run: {miss}"),
        );
    }
    if let Some(Ending::Failed { kind, message }) = run {
        return Verdict::failed(kind, message.clone());
    }
    let ended = matches!(run, Some(Ending::Finished));
    match command {
        CommandEnd::Exited(0) => Verdict::finished(),
        CommandEnd::TimedOut { .. } if ended => Verdict::finished(),
        CommandEnd::TimedOut { seconds } => Verdict::incomplete(
            "agent_timeout",
            format!(
                "the agent ran past its timeout_s ({seconds} s) before its run ended, and was killed with its process group"
            ),
        ),
        CommandEnd::Exited(code) => Verdict::incomplete(
            "agent_exit",
            format!("the agent exited with status {code}{}", before(ended)),
        ),
        CommandEnd::Signaled(signal) => Verdict::incomplete(
            "agent_exit",
            format!("the agent was killed by signal {signal}{}", before(ended)),
        ),
        CommandEnd::NotStarted(message) => Verdict::failed(
            "agent_not_started",
            format!("the agent could not be started: {message}"),
        ),
    }
}

fn before(ended: bool) -> &'static str {
    if ended {
        " after its last answer"
    } else {
        " before its run ended"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_exit_finishes_even_on_a_tool_call() {
        let verdict = judge(Some(&Ending::Open), None, &CommandEnd::Exited(0));
        assert_eq!(verdict, Verdict::finished());
        assert_eq!(
            judge(None, None, &CommandEnd::Exited(0)),
            Verdict::finished()
        );
    }

    #[test]
    fn a_non_zero_exit_is_incomplete_with_its_status() {
        let verdict = judge(Some(&Ending::Open), None, &CommandEnd::Exited(3));
        assert!(verdict.incomplete);
        assert_eq!(verdict.error_kind.as_deref(), Some("agent_exit"));
        assert_eq!(
            verdict.error.as_deref(),
            Some("the agent exited with status 3 before its run ended; the run is incomplete")
        );
        let killed = judge(None, None, &CommandEnd::Signaled(9));
        assert_eq!(
            killed.error.as_deref(),
            Some("the agent was killed by signal 9 before its run ended; the run is incomplete")
        );
    }

    #[test]
    fn a_timeout_is_incomplete_unless_the_run_ended() {
        let timed_out = CommandEnd::TimedOut { seconds: 2.0 };
        let open = judge(Some(&Ending::Open), None, &timed_out);
        assert!(open.incomplete);
        assert_eq!(open.error_kind.as_deref(), Some("agent_timeout"));
        assert_eq!(
            judge(Some(&Ending::Finished), None, &timed_out),
            Verdict::finished()
        );
    }

    #[test]
    fn a_miss_or_a_failed_last_call_is_an_internal_error() {
        let miss = judge(
            Some(&Ending::Open),
            Some("no recorded call"),
            &CommandEnd::Exited(1),
        );
        assert_eq!(miss.exit_reason, ExitReason::InternalError);
        assert!(!miss.incomplete);
        assert_eq!(miss.error_kind.as_deref(), Some("replay_miss"));
        let failed = Ending::Failed {
            kind: "rate_limited".to_owned(),
            message: "429".to_owned(),
        };
        let verdict = judge(Some(&failed), None, &CommandEnd::Exited(0));
        assert_eq!(verdict.error_kind.as_deref(), Some("rate_limited"));
    }
}
