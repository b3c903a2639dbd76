//! Working folders: a fresh copy of the tools file's template for every task, and the hash of the
//! template's content that `run_started` records so replay can tell when it changed.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// `sha256:HEX` over the template's files in path order: each file's relative path, whether it
/// is executable, and its bytes; symbolic links by their target.
pub fn content_hash(template: &Path) -> io::Result<String> {
    let mut entries = Vec::new();
    walk(template, Path::new(""), &mut entries)?;
    entries.sort();
    let mut bytes = Vec::new();
    for relative in entries {
        let path = template.join(&relative);
        let meta = fs::symlink_metadata(&path)?;
        refuse_special(&path, meta.file_type())?;
        let (kind, content) = if meta.file_type().is_symlink() {
            (
                b'l',
                fs::read_link(&path)?.into_os_string().into_encoded_bytes(),
            )
        } else if meta.is_dir() {
            (b'd', Vec::new())
        } else if meta.permissions().mode() & 0o111 != 0 {
            (b'x', fs::read(&path)?)
        } else {
            (b'f', fs::read(&path)?)
        };
        let name = relative.into_os_string().into_encoded_bytes();
        bytes.push(kind);
        bytes.extend_from_slice(&(name.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&name);
        bytes.extend_from_slice(&(content.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&content);
    }
    Ok(crate::digest::sha256_tagged(&bytes))
}

fn walk(root: &Path, relative: &Path, out: &mut Vec<std::path::PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(root.join(relative))? {
        let entry = entry?;
        let child = relative.join(entry.file_name());
        let kind = entry.file_type()?;
        out.push(child.clone());
        if kind.is_dir() {
            walk(root, &child, out)?;
        }
    }
    Ok(())
}

/// Makes `dir` an exact copy of `template`, removing whatever `dir` held before. A `dir` inside
/// the template is refused: the copy would copy itself.
pub fn copy_fresh(template: &Path, dir: &Path) -> io::Result<()> {
    if let (Ok(template), Some(dir)) = (template.canonicalize(), resolved(dir))
        && dir.starts_with(&template)
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the working folder would be inside its template `{}`",
                template.display()
            ),
        ));
    }
    match fs::remove_dir_all(dir) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
        _ => {}
    }
    copy_tree(template, dir)
}

/// `path` with its longest existing ancestor resolved (symbolic links, `..`), the rest appended.
fn resolved(path: &Path) -> Option<std::path::PathBuf> {
    let absolute = std::path::absolute(path).ok()?;
    absolute.ancestors().find_map(|ancestor| {
        let rest = absolute.strip_prefix(ancestor).ok()?;
        Some(ancestor.canonicalize().ok()?.join(rest))
    })
}

fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        refuse_special(&source, kind)?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&source)?, &target)?;
        } else if kind.is_dir() {
            copy_tree(&source, &target)?;
        } else {
            // `fs::copy` keeps the permission bits, so scripts stay executable.
            fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

/// Fails on a named pipe, socket or device: reading one to hash or copy it would wait for a
/// writer or never end, so a template holds only files, folders and symbolic links.
fn refuse_special(path: &Path, kind: fs::FileType) -> io::Result<()> {
    match crate::output::special_kind(kind) {
        Some(what) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "`{}` is {what}: a working-folder template may hold only files, folders and symbolic links",
                path.display()
            ),
        )),
        None => Ok(()),
    }
}

/// A new, empty folder under the system's temporary folder for one `run`'s working folder.
pub fn temp_workdir() -> io::Result<std::path::PathBuf> {
    let base = std::env::temp_dir();
    let mut last = None;
    for attempt in 0..100u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = base.join(format!(
            "looptrace-work-{}-{nanos:09}-{attempt}",
            std::process::id()
        ));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary folder name")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_hashes_like_its_template_and_an_edit_changes_the_hash() {
        let root = tempfile::tempdir().unwrap();
        let template = root.path().join("template");
        fs::create_dir_all(template.join("src")).unwrap();
        fs::write(template.join("src/a.txt"), "one").unwrap();
        fs::write(template.join("b.txt"), "two").unwrap();
        let copy = root.path().join("copy");
        fs::create_dir_all(&copy).unwrap();
        fs::write(copy.join("stale.txt"), "left over").unwrap();
        copy_fresh(&template, &copy).unwrap();
        assert!(!copy.join("stale.txt").exists());
        assert_eq!(
            content_hash(&copy).unwrap(),
            content_hash(&template).unwrap()
        );
        fs::write(copy.join("src/a.txt"), "changed").unwrap();
        assert_ne!(
            content_hash(&copy).unwrap(),
            content_hash(&template).unwrap()
        );
    }
}
