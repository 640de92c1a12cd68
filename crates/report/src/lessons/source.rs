//! Code references: a file of the source tree and an anchor string, resolved to line numbers when
//! the lessons are generated, so a link never points at lines that moved.

use std::fs;
use std::path::{Path, PathBuf};

use super::Error;

/// How many lines a reference covers, starting at its anchor's line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// The item that starts on the anchor's line: up to the `}` that closes its first top-level
    /// `{`, or up to a `;` at depth 0 if one comes first (a statement, a `const` of one line).
    Item,
    /// Just the anchor's line.
    Line,
}

/// A few lines of our code that cause a measured difference.
#[derive(Debug, Clone, Copy)]
pub struct CodeRef {
    /// Path from the repository root, for example `crates/raw-tcp/src/lib.rs`.
    pub path: &'static str,
    /// Strings searched in order, each on a line after the previous one's; the last one's line
    /// is where the reference starts. `["impl Client for RedisSync", "fn get("]` finds the `get`
    /// of that impl.
    pub anchors: &'static [&'static str],
    /// How far it extends.
    pub extent: Extent,
    /// What these lines do, in one phrase (prose, `code` spans allowed).
    pub what: &'static str,
}

/// A [`CodeRef`] resolved in a source tree: 1-based, inclusive line numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Path from the repository root.
    pub path: &'static str,
    /// First line.
    pub start: usize,
    /// Last line.
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

/// Resolves `code` against the files under `root`.
pub fn resolve(root: &Path, code: &CodeRef) -> Result<Resolved, Error> {
    let path = root.join(code.path);
    let text = fs::read_to_string(&path).map_err(|source| Error::Source {
        path: path.clone(),
        source,
    })?;
    let lines: Vec<&str> = text.lines().collect();
    let mut at = 0;
    let mut start = None;
    for (index, anchor) in code.anchors.iter().enumerate() {
        let from = if index == 0 { 0 } else { at + 1 };
        match (from..lines.len()).find(|&i| lines[i].contains(anchor)) {
            Some(found) => {
                at = found;
                start = Some(found);
            }
            None => {
                return Err(Error::Anchor {
                    path: code.path.to_string(),
                    anchor: code.anchors[..=index].join(" … "),
                });
            }
        }
    }
    let start = start.ok_or_else(|| Error::Anchor {
        path: code.path.to_string(),
        anchor: "(no anchor given)".to_string(),
    })?;
    let end = match code.extent {
        Extent::Line => start,
        Extent::Item => item_end(&lines, start).ok_or_else(|| Error::Anchor {
            path: code.path.to_string(),
            anchor: format!("{} (the item never ends)", code.anchors.join(" … ")),
        })?,
    };
    Ok(Resolved {
        path: code.path,
        start: start + 1,
        end: end + 1,
    })
}

/// The index of the line that ends the item starting at `start`. Brackets inside string
/// literals and `//` comments are ignored; character literals are not special (none of the
/// referenced items has a bracket in one).
fn item_end(lines: &[&str], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut opened_brace = false;
    for (index, line) in lines.iter().enumerate().skip(start) {
        let mut chars = line.chars().peekable();
        let mut in_string = false;
        while let Some(c) = chars.next() {
            if in_string {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match c {
                '"' => in_string = true,
                '/' if chars.peek() == Some(&'/') => break,
                '(' | '[' => depth += 1,
                '{' => {
                    if depth == 0 {
                        opened_brace = true;
                    }
                    depth += 1;
                }
                ')' | ']' => depth = depth.saturating_sub(1),
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 && opened_brace {
                        return Some(index);
                    }
                }
                ';' if depth == 0 => return Some(index),
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_end_at_their_closing_brace_or_semicolon() {
        let lines: Vec<&str> = "fn a(\n    x: u8,\n) -> u8 {\n    let s = \"}\"; // }\n    x\n}\nconst B: u8 = 1;\nfn c() {}"
            .lines()
            .collect();
        assert_eq!(item_end(&lines, 0), Some(5));
        assert_eq!(item_end(&lines, 6), Some(6));
        assert_eq!(item_end(&lines, 7), Some(7));
        assert_eq!(item_end(&["fn open() {"], 0), None);
    }

    #[test]
    fn fragments() {
        let many = Resolved {
            path: "x",
            start: 3,
            end: 9,
        };
        assert_eq!(many.fragment(), "#L3-L9");
        assert_eq!(many.lines_text(), "lines 3–9");
        let one = Resolved { end: 3, ..many };
        assert_eq!(one.fragment(), "#L3");
        assert_eq!(one.lines_text(), "line 3");
    }
}
