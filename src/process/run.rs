//! `run_process`: spawn in a new process group, feed stdin, wait with a timeout, kill the group.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long to wait for an output pipe to close after the program ended and its group was
/// killed (a process that left the group may still hold it).
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// Where the program's stderr goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// stdout and stderr share one pipe, in the order written (a terminal's view).
    Merged,
    /// stdout and stderr are kept apart.
    Separate,
}

/// One program to run.
#[derive(Clone, Debug)]
pub struct ProcessSpec {
    /// The program to start (a path or a name looked up on `PATH`).
    pub program: PathBuf,
    /// Its arguments, passed as they are: no shell.
    pub args: Vec<String>,
    /// The folder it runs in; `None` keeps ours.
    pub dir: Option<PathBuf>,
    /// Its whole environment; `None` inherits ours. Secret variables are dropped either way.
    pub env: Option<Vec<(OsString, OsString)>>,
    /// What it reads on stdin.
    pub stdin: Vec<u8>,
    /// How long it may run before its group is killed.
    pub timeout: Duration,
    /// Whether stderr joins stdout.
    pub output: OutputMode,
    /// Bytes kept from each end of each output stream; the middle is counted, not kept.
    pub keep_bytes: usize,
}

/// How the program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// It exited (or was killed by a signal) on its own.
    Exited(ExitStatus),
    /// It ran past its timeout and its group was killed.
    TimedOut,
}

/// Output kept from one stream: its head, its tail and how many bytes between them were dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// The first bytes.
    pub head: Vec<u8>,
    /// Bytes left out between head and tail.
    pub dropped: u64,
    /// The last bytes (empty unless the stream outgrew the head).
    pub tail: Vec<u8>,
}

/// What running the program gave.
#[derive(Clone, Debug)]
pub struct Finished {
    /// How it ended.
    pub ended: Ended,
    /// stdout (with stderr when merged).
    pub stdout: Kept,
    /// stderr when kept apart.
    pub stderr: Kept,
}

impl Ended {
    /// The exit code, if the program exited with one.
    pub fn code(self) -> Option<i32> {
        match self {
            Ended::Exited(status) => status.code(),
            Ended::TimedOut => None,
        }
    }

    /// The signal that killed the program on its own, if any.
    pub fn signal(self) -> Option<i32> {
        match self {
            Ended::Exited(status) => status.signal(),
            Ended::TimedOut => None,
        }
    }
}

/// Runs `spec` to its end or its timeout. `Err` means the program could not be started or
/// waited for; its output and status are then unknown.
pub fn run_process(spec: &ProcessSpec) -> std::io::Result<Finished> {
    let (mut child, stdout, stderr) = spawn(spec)?;
    let group = child.id();
    let leader = i32::try_from(group).unwrap_or(0);
    super::groups::register(leader);
    if let Some(mut stdin) = child.stdin.take() {
        let input = spec.stdin.clone();
        // A program may exit without reading its input; a broken pipe is then no error.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let started = Instant::now();
    // Most tool calls end within milliseconds: poll often at first, then every 5 ms.
    let mut pause = Duration::from_micros(100);
    let finished = loop {
        match exited_unreaped(group) {
            Ok(true) => break true,
            Ok(false) if started.elapsed() >= spec.timeout => break false,
            Ok(false) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            Err(err) => {
                super::groups::kill(leader);
                let _ = child.wait();
                return Err(err);
            }
        }
    };
    // Whatever the program left running in its group goes with it. The program is not reaped
    // yet, so its pid (the group's id) cannot have been reused by then.
    super::groups::kill(leader);
    let status = child.wait()?;
    let ended = if finished {
        Ended::Exited(status)
    } else {
        Ended::TimedOut
    };
    let stdout = stdout.recv_timeout(DRAIN_GRACE).unwrap_or_default();
    let stderr = match stderr {
        Some(receiver) => receiver.recv_timeout(DRAIN_GRACE).unwrap_or_default(),
        None => Kept::default(),
    };
    Ok(Finished {
        ended,
        stdout,
        stderr,
    })
}

type Output = mpsc::Receiver<Kept>;

fn spawn(spec: &ProcessSpec) -> std::io::Result<(Child, Output, Option<Output>)> {
    let (out_reader, out_writer) = std::io::pipe()?;
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .stdin(Stdio::piped())
        .process_group(0);
    let err_reader = match spec.output {
        OutputMode::Merged => {
            command.stderr(out_writer.try_clone()?);
            None
        }
        OutputMode::Separate => {
            let (reader, writer) = std::io::pipe()?;
            command.stderr(writer);
            Some(reader)
        }
    };
    command.stdout(out_writer);
    if let Some(dir) = &spec.dir {
        command.current_dir(dir);
    }
    // Whatever the caller passes, no secret variable reaches the program.
    let env = match &spec.env {
        Some(env) => env.clone(),
        None => std::env::vars_os().collect(),
    };
    command
        .env_clear()
        .envs(crate::secrets::without_forbidden(env));
    let child = spawn_unless_busy(&mut command)?;
    // `command` holds the pipes' write ends until it is dropped: drop it now, so the readers see
    // the end of the output when the program and its children close theirs.
    drop(command);
    let stdout = collect(out_reader, spec.keep_bytes);
    let stderr = err_reader.map(|reader| collect(reader, spec.keep_bytes));
    Ok((child, stdout, stderr))
}

/// Spawns `command`, retrying for a moment while its program is busy (`ETXTBSY`). A program
/// just copied into a working folder can still be open for writing in the child of another
/// thread's fork (until that child's exec closes it), and the kernel refuses to run it then.
fn spawn_unless_busy(command: &mut Command) -> std::io::Result<Child> {
    let mut wait = Duration::from_millis(1);
    for _ in 0..8 {
        match command.spawn() {
            Err(err) if err.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(wait);
                wait *= 2;
            }
            result => return result,
        }
    }
    command.spawn()
}

/// Reads a pipe to its end on a thread, keeping `keep` bytes from each end, so a program that
/// prints without end cannot fill our memory.
fn collect(mut reader: std::io::PipeReader, keep: usize) -> Output {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Kept::default();
        let mut tail: std::collections::VecDeque<u8> = std::collections::VecDeque::new();
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let n = match reader.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let mut chunk = &buffer[..n];
            if kept.head.len() < keep {
                let take = chunk.len().min(keep - kept.head.len());
                kept.head.extend_from_slice(&chunk[..take]);
                chunk = &chunk[take..];
            }
            tail.extend(chunk);
            if tail.len() > keep {
                let excess = tail.len() - keep;
                tail.drain(..excess);
                kept.dropped += excess as u64;
            }
        }
        kept.tail = tail.into();
        let _ = sender.send(kept);
    });
    receiver
}

/// Whether the child `pid` has exited, leaving it unreaped (`WNOWAIT`) so its pid stays taken.
fn exited_unreaped(pid: u32) -> std::io::Result<bool> {
    let id = libc::id_t::from(pid);
    // SAFETY: `siginfo_t` is plain data for which all zeros is a valid value, and `waitid` only
    // writes into the struct it is given.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        if libc::waitid(libc::P_PID, id, &mut info, flags) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // With WNOHANG and no change of state, `si_pid` stays 0.
        Ok(info.si_pid() != 0)
    }
}
