//! The tour's line links (`docs/tour.md`, written by hand, unlike the lessons' links, which are
//! resolved from `// ANCHOR:` markers) still land on whole pieces of code after the code moved.
//!
//! A link cannot say which item it meant, but a stale one gives itself away: it starts in the
//! middle of something (a closing brace, a statement, the second line of a doc comment) or its
//! brackets do not balance. Each link's range must start a piece of code (a comment, an
//! attribute, an item, a field, a match arm) at the top of its doc comment, and close every
//! bracket it opens; a link whose text begins with "the start of" may stop inside its block.

use std::fs;
use std::path::{Path, PathBuf};

/// The documents with hand-written line links.
const DOCUMENTS: &[&str] = &["docs/tour.md"];

/// What a piece of code may start with.
const STARTS: &[&str] = &[
    "//",
    "#[",
    "pub ",
    "pub(",
    "fn ",
    "async fn ",
    "impl",
    "struct ",
    "enum ",
    "const ",
    "static ",
    "type ",
    "trait ",
    "mod ",
    "unsafe ",
    "(",
];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `(link text, path, first line, last line)` of every `[text](../path#La-Lb)` in `markdown`.
fn line_links(markdown: &str) -> Vec<(String, String, usize, usize)> {
    let mut links = Vec::new();
    for (at, _) in markdown.match_indices("](../") {
        let target = &markdown[at + 5..];
        let Some(target) = target.find(')').map(|end| &target[..end]) else {
            continue;
        };
        let Some((path, lines)) = target.split_once("#L") else {
            continue;
        };
        let (first, last) = lines.split_once("-L").unwrap_or((lines, lines));
        let number = |text: &str| text.parse::<usize>().unwrap_or(0);
        let text = markdown[..at]
            .rfind('[')
            .map_or("", |open| &markdown[open + 1..at]);
        links.push((
            text.to_string(),
            path.to_string(),
            number(first),
            number(last),
        ));
    }
    links
}

/// Which bracket `c` is (`{`, `[` or `(`) and whether it opens (+1) or closes (-1) one.
fn bracket(c: char) -> Option<(usize, i32)> {
    match c {
        '{' => Some((0, 1)),
        '[' => Some((1, 1)),
        '(' => Some((2, 1)),
        '}' => Some((0, -1)),
        ']' => Some((1, -1)),
        ')' => Some((2, -1)),
        _ => None,
    }
}

/// The brackets `lines` leave open, per kind (`{`, `[`, `(`); comments, strings and character
/// literals are skipped (a lifetime is not a character literal).
fn open_brackets(lines: &[&str]) -> [i32; 3] {
    let mut depth = [0; 3];
    let mut in_string = false;
    for line in lines {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if in_string {
                match c {
                    '\\' => i += 1,
                    '"' => in_string = false,
                    _ => {}
                }
            } else {
                match c {
                    '/' if chars.get(i + 1) == Some(&'/') => break,
                    '"' => in_string = true,
                    // An escaped character (`'\n'`, `'\''`): on to its closing quote.
                    '\'' if chars.get(i + 1) == Some(&'\\') => {
                        i += 3;
                        while i < chars.len() && chars[i] != '\'' {
                            i += 1;
                        }
                    }
                    '\'' if chars.get(i + 2) == Some(&'\'') => i += 2,
                    _ => {
                        if let Some((kind, step)) = bracket(c) {
                            depth[kind] += step;
                        }
                    }
                }
            }
            i += 1;
        }
    }
    depth
}

/// Why the range `first..=last` of `source` is not a whole piece of code, if it is not.
fn problem(source: &str, text: &str, first: usize, last: usize) -> Option<String> {
    let lines: Vec<&str> = source.lines().collect();
    if first == 0 || first > last || last > lines.len() {
        return Some(format!("outside the file's {} lines", lines.len()));
    }
    let start = lines[first - 1].trim_start();
    let is_field = start
        .split_once(": ")
        .is_some_and(|(name, _)| name.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
    if !STARTS.iter().any(|prefix| start.starts_with(prefix)) && !is_field {
        return Some(format!("starts in the middle of something: {start:?}"));
    }
    let above = first.checked_sub(2).map_or("", |i| lines[i].trim_start());
    if start.starts_with("///") && above.starts_with("///") {
        return Some("starts inside a doc comment".to_string());
    }
    let open = open_brackets(&lines[first - 1..last]);
    if open != [0; 3] && !text.starts_with("the start of") {
        return Some(format!("brackets {{ [ ( left open: {open:?}"));
    }
    None
}

#[test]
fn line_links_land_on_whole_pieces_of_code() {
    let root = repository();
    let mut problems = Vec::new();
    let mut checked = 0;
    for document in DOCUMENTS {
        let markdown = fs::read_to_string(root.join(document)).unwrap();
        let folder = Path::new(document).parent().unwrap();
        for (text, path, first, last) in line_links(&markdown) {
            let file = root.join(folder).join("..").join(&path);
            let Ok(source) = fs::read_to_string(&file) else {
                problems.push(format!("{document}: [{text}]: {path} not found"));
                continue;
            };
            checked += 1;
            if let Some(why) = problem(&source, &text, first, last) {
                problems.push(format!(
                    "{document}: [{text}](../{path}#L{first}-L{last}): {why}"
                ));
            }
        }
    }
    assert!(checked > 50, "the tour's line links were found ({checked})");
    assert!(
        problems.is_empty(),
        "stale line links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_check_tells_a_moved_range_from_a_whole_one() {
    let source = "/// Adds.\n/// Twice.\npub fn add(a: u8) -> u8 {\n    let c = b'(';\n    \
                  a + 1 // }\n}\n\nfn next<'a>(s: &'a str) -> &'a str {\n    s\n}\n";
    assert_eq!(problem(source, "add", 1, 6), None);
    assert_eq!(problem(source, "next", 8, 10), None);
    assert!(
        problem(source, "add", 2, 6)
            .unwrap()
            .contains("doc comment")
    );
    assert!(problem(source, "add", 4, 8).unwrap().contains("middle"));
    assert!(problem(source, "add", 1, 5).unwrap().contains("left open"));
    assert_eq!(problem(source, "the start of add", 1, 5), None);
    assert!(problem(source, "add", 9, 12).unwrap().contains("outside"));
}
