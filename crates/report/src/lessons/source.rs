//! Code references: anchors in the source, marked the way mdBook marks them,
//!
//! ```text
//! // ANCHOR: connect_unix
//! pub fn connect_unix(…) { … }
//! // ANCHOR_END: connect_unix
//! ```
//!
//! resolved to the lines between the two markers when the lessons are generated, so a link never
//! points at lines that moved, and the code says which of its lines a lesson quotes.

use std::fs;
use std::path::{Path, PathBuf};

use super::catalogue::CodeRef;
use crate::Error;

/// A [`CodeRef`] resolved in a source tree: 1-based, inclusive line numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// First line after the `ANCHOR` marker.
    pub start: usize,
    /// Last line before the `ANCHOR_END` marker.
    pub end: usize,
}

impl Resolved {
    /// `#L12-L20` (or `#L12` for one line), the fragment GitHub and most forges understand.
    pub fn fragment(&self) -> String {
        if self.start == self.end {
            format!("#L{}", self.start)
        } else {
            format!("#L{}-L{}", self.start, self.end)
        }
    }

    /// `lines 12–20` or `line 12`, for people.
    pub fn lines_text(&self) -> String {
        if self.start == self.end {
            format!("line {}", self.start)
        } else {
            format!("lines {}–{}", self.start, self.end)
        }
    }
}

/// The repository the lessons link into: the nearest ancestor of `start` (itself included)
/// holding a workspace `Cargo.toml` and a `crates/` folder.
pub fn find_root(start: &Path) -> Option<PathBuf> {
    let start = start.canonicalize().ok()?;
    start
        .ancestors()
        .find(|dir| {
            dir.join("crates").is_dir()
                && fs::read_to_string(dir.join("Cargo.toml"))
                    .is_ok_and(|text| text.contains("[workspace]"))
        })
        .map(Path::to_path_buf)
}

/// `../` once per folder between `from` (a folder) and `root`, or `None` when `from` is not
/// inside `root`: the prefix that turns a repository path into a link relative to `from`.
pub fn prefix_to_root(from: &Path, root: &Path) -> Option<String> {
    let from = from.canonicalize().ok()?;
    let root = root.canonicalize().ok()?;
    let inside = from.strip_prefix(&root).ok()?;
    Some("../".repeat(inside.components().count()))
}

/// The index of the line that is the comment `// <marker>`, if any.
pub fn marker_line(lines: &[&str], marker: &str) -> Option<usize> {
    lines.iter().position(|line| {
        line.trim()
            .strip_prefix("//")
            .is_some_and(|comment| comment.trim() == marker)
    })
}

/// Resolves `code` against the files under `root`: the lines between its two markers, which
/// must both be there, in order, with at least one line between them.
pub fn resolve(root: &Path, code: &CodeRef) -> Result<Resolved, Error> {
    let text = crate::read(&root.join(&code.path))?;
    let lines: Vec<&str> = text.lines().collect();
    let begin = marker_line(&lines, &format!("ANCHOR: {}", code.anchor));
    let end = marker_line(&lines, &format!("ANCHOR_END: {}", code.anchor));
    match (begin, end) {
        (Some(begin), Some(end)) if begin + 1 < end => Ok(Resolved {
            start: begin + 2,
            end,
        }),
        _ => Err(Error::Anchor {
            path: code.path.clone(),
            anchor: code.anchor.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_resolve_to_the_lines_between_their_markers() {
        let dir = tempfile::tempdir().unwrap();
        let text = "fn a() {}\n    // ANCHOR: b\nfn b() {\n}\n    //ANCHOR_END: b\n// ANCHOR: empty\n// ANCHOR_END: empty\n// ANCHOR_END: late\n// ANCHOR: late\n// ANCHOR: bc\n";
        fs::write(dir.path().join("x.rs"), text).unwrap();
        let code = |anchor: &str| CodeRef {
            anchor: anchor.to_string(),
            path: "x.rs".to_string(),
        };
        let b = resolve(dir.path(), &code("b")).unwrap();
        assert_eq!(b, Resolved { start: 3, end: 4 });
        for missing in ["empty", "late", "bc", "a", "B"] {
            assert!(
                matches!(resolve(dir.path(), &code(missing)), Err(Error::Anchor { anchor, .. }) if anchor == missing),
                "{missing}"
            );
        }
        assert!(matches!(
            resolve(
                dir.path(),
                &CodeRef {
                    path: "gone.rs".into(),
                    ..code("b")
                }
            ),
            Err(Error::Read { .. })
        ));
    }

    #[test]
    fn fragments() {
        let many = Resolved { start: 3, end: 9 };
        assert_eq!(many.fragment(), "#L3-L9");
        assert_eq!(many.lines_text(), "lines 3–9");
        let one = Resolved { end: 3, ..many };
        assert_eq!(one.fragment(), "#L3");
        assert_eq!(one.lines_text(), "line 3");
    }
}
