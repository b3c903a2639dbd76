//! A full disk during a trace write, for real: a small tmpfs is filled until a run's write is
//! cut short, space is freed, the next run appends to the same trace, and `show` and `report`
//! read both runs. Mounting needs root; under `CI` the test must run, elsewhere it says why it
//! could not.

use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{fixture, looptrace, stderr, stdout};

/// A tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|err| err.to_string())?;
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|err| format!("cannot run mount: {err}"))?;
        if !output.status.success() {
            return Err(format!("mount failed: {}", stderr(&output).trim()));
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Writes zeros to `path` until the file system is full.
fn fill(path: &Path) {
    let mut file = fs::File::create(path).unwrap();
    let block = vec![0u8; 1024];
    loop {
        match file.write(&block) {
            Ok(0) => break,
            Ok(_) => {}
            Err(err) if err.kind() == ErrorKind::StorageFull => break,
            Err(err) => panic!("filling the disk: {err}"),
        }
    }
}

fn run_into(trace: &Path, run_id: &str, task: &str, capture: &str) -> std::process::Output {
    looptrace()
        .args([
            "run",
            "--task",
            task,
            "--capture",
            capture,
            "--run-id",
            run_id,
        ])
        .arg("--responses")
        .arg(fixture("responses/finish.txt"))
        .arg("--trace")
        .arg(trace)
        .output()
        .unwrap()
}

#[test]
fn a_run_cut_short_by_a_full_disk_leaves_the_next_run_readable() {
    let tmpfs = match Tmpfs::mount("64k") {
        Ok(tmpfs) => tmpfs,
        Err(reason) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped: cannot mount a tmpfs ({reason}); run as root or with CI set");
            return;
        }
        Err(reason) => panic!("CI is set, so the disk-full test must run: {reason}"),
    };
    let trace: PathBuf = tmpfs.path().join("trace.jsonl");
    let filler = tmpfs.path().join("filler");
    // A first run, so the trace's last page is partly used.
    let first = run_into(&trace, "first", "t", "summary");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    fill(&filler);
    // Its first line (the whole task, in full capture) is longer than what is left of the page.
    let cut = run_into(&trace, "cut", &"x".repeat(9000), "full");
    assert_eq!(cut.status.code(), Some(3), "{}", stdout(&cut));
    assert!(stderr(&cut).contains("No space left"), "{}", stderr(&cut));
    let written = fs::read(&trace).unwrap();
    assert_ne!(written.last(), Some(&b'\n'), "the write was not cut short");
    fs::remove_file(&filler).unwrap();
    let next = run_into(&trace, "next", "t", "summary");
    assert_eq!(next.status.code(), Some(0), "{}", stderr(&next));

    let show = looptrace().arg("show").arg(&trace).output().unwrap();
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    let text = stdout(&show);
    assert!(text.contains("run first (5 events)"), "{text}");
    assert!(text.contains("run next (5 events)"), "{text}");
    assert!(
        stderr(&show).contains(":6: a write cut short (the next line starts a run) skipped"),
        "{}",
        stderr(&show)
    );

    let report = looptrace()
        .args(["report", "--format", "json"])
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(report.status.code(), Some(0), "{}", stderr(&report));
    let report: Value = serde_json::from_str(&stdout(&report)).unwrap();
    assert_eq!(report["input"]["lines"], 11);
    let finished = &report["exit_reasons"]["rows"][0];
    assert_eq!(finished["exit_reason"], "finished");
    assert_eq!(finished["runs"], 2);
    let warnings = report["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["kind"], "cut_off_write");
}
