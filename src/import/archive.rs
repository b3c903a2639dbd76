//! Zip archives (Inspect `.eval` logs) read within bounds: members stored, deflated or compressed
//! with zstd (method 93, Inspect's default since 0.3.28x), and a cap on what one archive may cost,
//! so that a crafted file (entries that overlap, a member that expands a thousandfold) is refused
//! with the limit it broke instead of keeping a reader busy for hours.

use std::io::{Cursor, Read};

use zip::{CompressionMethod, ZipArchive};

use super::error::ImportError;
use super::importer::{Context, MAX_DOCUMENT_BYTES};

/// What one archive may cost; docs/import.md states the values of [`Limits::DEFAULT`].
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The most entries an archive may list.
    pub entries: usize,
    /// The most bytes all the members read from one archive may expand to, together.
    pub total_bytes: u64,
    /// The most bytes one member may expand to.
    pub member_bytes: u64,
    /// The most a member may expand, as a multiple of its compressed size ...
    pub ratio: u64,
    /// ... once it is past this size (small members of repeated text expand more, harmlessly).
    pub ratio_floor_bytes: u64,
}

impl Limits {
    /// The limits every import applies.
    pub const DEFAULT: Limits = Limits {
        entries: 100_000,
        total_bytes: 4 * 1024 * 1024 * 1024,
        member_bytes: MAX_DOCUMENT_BYTES,
        ratio: 1_000,
        ratio_floor_bytes: 1024 * 1024,
    };
}

/// An archive opened in memory whose entries were checked not to overlap.
pub struct Archive<'c> {
    zip: ZipArchive<Cursor<Vec<u8>>>,
    context: &'c Context,
    limits: Limits,
    /// Bytes produced so far by the members read.
    expanded: u64,
}

impl<'c> Archive<'c> {
    /// Opens `bytes` as a zip archive under [`Limits::DEFAULT`].
    pub fn open(bytes: Vec<u8>, context: &'c Context) -> Result<Self, ImportError> {
        Self::open_with(bytes, context, Limits::DEFAULT)
    }

    /// Opens `bytes` as a zip archive; refuses more entries than `limits` allow and entries whose
    /// data overlap (the trick that makes a small file expand without end).
    pub fn open_with(
        bytes: Vec<u8>,
        context: &'c Context,
        limits: Limits,
    ) -> Result<Self, ImportError> {
        let mut zip = ZipArchive::new(Cursor::new(bytes)).map_err(|err| {
            context.malformed("the archive", format!("not a readable zip: {err}"))
        })?;
        if zip.len() > limits.entries {
            return Err(context.malformed(
                "the archive",
                format!(
                    "refused: {} entries, more than the limit of {} per archive",
                    zip.len(),
                    limits.entries
                ),
            ));
        }
        let mut spans = Vec::with_capacity(zip.len());
        for index in 0..zip.len() {
            let entry = zip.by_index_raw(index).map_err(|err| {
                context.malformed(format!("entry {index} of the archive"), format!("{err}"))
            })?;
            let start = entry.header_start();
            let data = entry.data_start().unwrap_or(start);
            let end = data.saturating_add(entry.compressed_size());
            spans.push((
                start,
                end,
                entry.name().map(|n| n.into_owned()).unwrap_or_default(),
            ));
        }
        spans.sort();
        for pair in spans.windows(2) {
            let ((_, end, first), (start, _, second)) = (&pair[0], &pair[1]);
            if start < end {
                return Err(context.malformed(
                    "the archive",
                    format!(
                        "entries `{first}` and `{second}` overlap (they share compressed data): \
                         refused, as zip bombs are built this way"
                    ),
                ));
            }
        }
        Ok(Archive {
            zip,
            context,
            limits,
            expanded: 0,
        })
    }

    /// The names of the entries, in the archive's order.
    pub fn names(&self) -> Vec<String> {
        self.zip
            .file_names()
            .filter_map(Result::ok)
            .map(|name| name.into_owned())
            .collect()
    }

    /// Whether the archive has an entry named `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.zip.index_for_name(name).is_some()
    }

    /// The member `name`, decompressed within the limits and checked against its CRC-32.
    pub fn read(&mut self, name: &str) -> Result<Vec<u8>, ImportError> {
        let context = self.context;
        let at = || name.to_owned();
        let index = self
            .zip
            .index_for_name(name)
            .ok_or_else(|| context.malformed(at(), "no such member in the archive"))?;
        let entry = self
            .zip
            .by_index_raw(index)
            .map_err(|err| context.malformed(at(), format!("cannot open: {err}")))?;
        if entry.encrypted() {
            return Err(context.malformed(at(), "encrypted members are not supported"));
        }
        let method = entry.compression();
        let compressed = entry.compressed_size();
        let crc = entry.crc32();
        let limits = self.limits;
        let by_ratio = compressed
            .saturating_mul(limits.ratio)
            .max(limits.ratio_floor_bytes);
        let left = limits.total_bytes.saturating_sub(self.expanded);
        let cap = limits.member_bytes.min(by_ratio).min(left);
        let mut data = Vec::new();
        let result = match method {
            CompressionMethod::Stored => read_capped(entry, cap, &mut data),
            CompressionMethod::Deflated => {
                read_capped(flate2::read::DeflateDecoder::new(entry), cap, &mut data)
            }
            method if method == CompressionMethod::ZSTD => {
                let mut raw = Vec::new();
                entry
                    .take(compressed)
                    .read_to_end(&mut raw)
                    .map_err(|err| context.malformed(at(), format!("cannot read: {err}")))?;
                read_zstd_frames(&raw, cap, &mut data)
            }
            other => {
                return Err(context.malformed(
                    at(),
                    format!(
                        "compression method {other} is not supported (stored, deflate and zstd are)"
                    ),
                ));
            }
        };
        result.map_err(|err| context.malformed(at(), format!("cannot decompress: {err}")))?;
        let produced = data.len() as u64;
        if produced > cap {
            let limit = if left < limits.member_bytes.min(by_ratio) {
                format!(
                    "the archive's members expand past the limit of {} in total",
                    bytes(limits.total_bytes)
                )
            } else if by_ratio < limits.member_bytes {
                format!(
                    "{compressed} compressed bytes expand more than {} times \
                     (the limit per member)",
                    limits.ratio
                )
            } else {
                format!(
                    "expands past the limit of {} per member",
                    bytes(limits.member_bytes)
                )
            };
            return Err(context.malformed(at(), format!("refused: {limit}")));
        }
        self.expanded += produced;
        if crc32fast::hash(&data) != crc {
            return Err(context.malformed(at(), "damaged: its CRC-32 does not match"));
        }
        Ok(data)
    }
}

/// Reads `reader` into `out` up to one byte past `cap` (so that going over it shows).
fn read_capped(reader: impl Read, cap: u64, out: &mut Vec<u8>) -> std::io::Result<()> {
    reader.take(cap.saturating_add(1)).read_to_end(out)?;
    Ok(())
}

/// Decodes every zstd frame of `raw` (skippable frames skipped) into `out`, up to one byte past
/// `cap`.
fn read_zstd_frames(mut raw: &[u8], cap: u64, out: &mut Vec<u8>) -> std::io::Result<()> {
    use ruzstd::decoding::StreamingDecoder;
    use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
    while !raw.is_empty() && (out.len() as u64) <= cap {
        match StreamingDecoder::new(&mut raw) {
            Ok(decoder) => {
                let room = cap.saturating_add(1).saturating_sub(out.len() as u64);
                decoder.take(room).read_to_end(out)?;
            }
            Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                length,
                ..
            })) => {
                let skip = usize::try_from(length).unwrap_or(usize::MAX).min(raw.len());
                raw = &raw[skip..];
            }
            Err(err) => return Err(std::io::Error::other(err.to_string())),
        }
    }
    Ok(())
}

/// `n` bytes in the largest whole binary unit.
fn bytes(n: u64) -> String {
    const GIB: u64 = 1024 * 1024 * 1024;
    const MIB: u64 = 1024 * 1024;
    if n.is_multiple_of(GIB) {
        format!("{} GiB", n / GIB)
    } else if n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member to write: name, zip method, the bytes it holds, and those bytes as stored.
    struct Member<'a> {
        name: &'a str,
        method: u16,
        data: Vec<u8>,
        packed: Vec<u8>,
    }

    fn stored<'a>(name: &'a str, data: &[u8]) -> Member<'a> {
        Member {
            name,
            method: 0,
            data: data.to_vec(),
            packed: data.to_vec(),
        }
    }

    fn zstd<'a>(name: &'a str, frames: &[&[u8]]) -> Member<'a> {
        let mut packed = Vec::new();
        for frame in frames {
            ruzstd::encoding::compress(
                *frame,
                &mut packed,
                ruzstd::encoding::CompressionLevel::Fastest,
            );
        }
        Member {
            name,
            method: 93,
            data: frames.concat(),
            packed,
        }
    }

    /// A zip archive written by hand (the zip crate cannot write method 93), with each central
    /// entry pointing at `offsets[i]` when given (to make entries overlap).
    fn zip_of(members: &[Member<'_>], offsets: Option<&[u32]>) -> Vec<u8> {
        let mut body = Vec::new();
        let mut central = Vec::new();
        for (i, m) in members.iter().enumerate() {
            let crc = crc32fast::hash(&m.data);
            let at = offsets.map_or(body.len() as u32, |o| o[i]);
            let sizes = [crc, m.packed.len() as u32, m.data.len() as u32];
            body.extend(0x04034b50u32.to_le_bytes());
            body.extend([63, 0, 0, 0].iter().copied());
            body.extend(m.method.to_le_bytes());
            body.extend([0u8; 4]);
            sizes.iter().for_each(|v| body.extend(v.to_le_bytes()));
            body.extend((m.name.len() as u16).to_le_bytes());
            body.extend(0u16.to_le_bytes());
            body.extend(m.name.as_bytes());
            body.extend(&m.packed);
            central.extend(0x02014b50u32.to_le_bytes());
            central.extend([63, 0, 63, 0, 0, 0].iter().copied());
            central.extend(m.method.to_le_bytes());
            central.extend([0u8; 4]);
            sizes.iter().for_each(|v| central.extend(v.to_le_bytes()));
            central.extend((m.name.len() as u16).to_le_bytes());
            central.extend([0u8; 12]);
            central.extend(at.to_le_bytes());
            central.extend(m.name.as_bytes());
        }
        let (count, size, start) = (
            members.len() as u16,
            central.len() as u32,
            body.len() as u32,
        );
        body.extend(central);
        body.extend(0x06054b50u32.to_le_bytes());
        body.extend([0u8; 4]);
        body.extend(count.to_le_bytes());
        body.extend(count.to_le_bytes());
        body.extend(size.to_le_bytes());
        body.extend(start.to_le_bytes());
        body.extend(0u16.to_le_bytes());
        body
    }

    fn context() -> Context {
        Context {
            file: "log.eval".to_owned(),
            name: "log.eval".to_owned(),
        }
    }

    fn small(limits: impl FnOnce(&mut Limits)) -> Limits {
        let mut l = Limits::DEFAULT;
        limits(&mut l);
        l
    }

    #[test]
    fn reads_stored_and_zstd_members_of_several_frames() {
        let bytes = zip_of(
            &[
                stored("header.json", b"{}"),
                zstd("samples/a.json", &[b"{\"id\": ", b"1}"]),
            ],
            None,
        );
        let context = context();
        let mut archive = Archive::open(bytes, &context).unwrap();
        assert_eq!(archive.names(), ["header.json", "samples/a.json"]);
        assert_eq!(archive.read("samples/a.json").unwrap(), b"{\"id\": 1}");
        assert_eq!(archive.read("header.json").unwrap(), b"{}");
    }

    #[test]
    fn overlapping_entries_are_refused_naming_them() {
        let members = [stored("a.json", b"{}"), stored("b.json", b"{}")];
        let context = context();
        let err = Archive::open(zip_of(&members, Some(&[0, 0])), &context)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("`log.eval`"), "{err}");
        assert!(err.contains("`a.json` and `b.json` overlap"), "{err}");
    }

    #[test]
    fn each_limit_is_named_when_broken() {
        let context = context();
        let three = [stored("a", b"1"), stored("b", b"2"), stored("c", b"3")];
        let err = Archive::open_with(zip_of(&three, None), &context, small(|l| l.entries = 2))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("3 entries, more than the limit of 2"), "{err}");

        let big = vec![b' '; 4096];
        let members = [stored("a", &big), stored("b", &big)];
        let mut archive = Archive::open_with(
            zip_of(&members, None),
            &context,
            small(|l| l.total_bytes = 6000),
        )
        .unwrap();
        archive.read("a").unwrap();
        let err = archive.read("b").unwrap_err().to_string();
        assert!(err.contains("`log.eval`: b: refused"), "{err}");
        assert!(err.contains("in total"), "{err}");

        let packed = zip_of(&[zstd("a", &[&big])], None);
        let limits = small(|l| {
            l.ratio = 2;
            l.ratio_floor_bytes = 16;
        });
        let err = Archive::open_with(packed.clone(), &context, limits)
            .unwrap()
            .read("a")
            .unwrap_err()
            .to_string();
        assert!(err.contains("expand more than 2 times"), "{err}");

        let err = Archive::open_with(packed, &context, small(|l| l.member_bytes = 100))
            .unwrap()
            .read("a")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("past the limit of 100 bytes per member"),
            "{err}"
        );
    }

    #[test]
    fn a_damaged_member_fails_its_checksum() {
        let mut member = stored("a", b"{\"x\": 1}");
        member.packed = b"{\"x\": 2}".to_vec();
        let context = context();
        let err = Archive::open(zip_of(&[member], None), &context)
            .unwrap()
            .read("a")
            .unwrap_err()
            .to_string();
        assert!(err.contains("CRC-32 does not match"), "{err}");
    }
}
