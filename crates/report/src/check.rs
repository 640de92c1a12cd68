//! Static checks of a rendered run folder: every chart is there, every link resolves inside the
//! folder, and our page is well formed. `make test-report` runs these before the browser test
//! (which adds what only a browser sees: script errors, and charts that actually lay out).
//!
//! The HTML scanner here is deliberately small: it understands tags, quoted attributes,
//! comments and raw-text elements (`script`, `style`) — enough for our own page and criterion's,
//! not a general HTML parser.

use std::collections::{BTreeSet, HashSet, VecDeque};
use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::format;
use crate::results::{Op, Results};
use crate::{Error, INDEX_FILE};

/// Pages followed at most while crawling a run folder (criterion writes a few per cell).
const MAX_PAGES: usize = 20_000;

/// Elements that never have a closing tag.
const VOID_ELEMENTS: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr",
];

/// Class of the Lessons section's links to source lines (`../../crates/…#L10-L20`): the only
/// links of our page allowed to leave the run folder.
pub const SOURCE_LINK_CLASS: &str = "source";

/// What [`check_run_dir`] found.
#[derive(Debug, Default)]
pub struct CheckReport {
    /// HTML pages read (index.html and every local page reachable from it).
    pub pages: usize,
    /// Local links and sources that resolved to a file inside the folder.
    pub links: usize,
    /// Chart figures found in index.html.
    pub charts: usize,
    /// Absolute (network) links found in criterion's pages: tolerated there, never in ours.
    pub external_links_in_criterion_pages: usize,
    /// Everything wrong, one line each.
    pub problems: Vec<String>,
}

impl CheckReport {
    /// No problem found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Checks a rendered run folder (`index.html` next to `results.json`):
/// - index.html is well formed (balanced tags, unique ids) and names no network resource;
/// - every cell of results.json has a chart figure with an `<svg>`, and every client with
///   pipelined rows has a depth chart;
/// - every `href`/`src` in index.html, and in every local page reachable from it (criterion's
///   reports), resolves to a file inside the folder; `#fragment` links in index.html name an id;
///   the Lessons section's links to source lines (class `source`) may leave the folder but must
///   name a file that exists.
pub fn check_run_dir(dir: &Path) -> Result<CheckReport, Error> {
    let mut report = CheckReport::default();
    let results = Results::load(dir)?;
    let root = dir.canonicalize().map_err(|source| Error::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let index = root.join(INDEX_FILE);
    let mut queue = VecDeque::from([index.clone()]);
    let mut seen = HashSet::from([index.clone()]);
    while let Some(page) = queue.pop_front() {
        if report.pages == MAX_PAGES {
            let problem = format!("more than {MAX_PAGES} pages: crawl stopped");
            report.problems.push(problem);
            break;
        }
        report.pages += 1;
        let name = page.strip_prefix(&root).unwrap_or(&page).display();
        let text = fs::read(&page).map_err(|source| Error::Read {
            path: page.clone(),
            source,
        })?;
        let tags = match scan(&String::from_utf8_lossy(&text)) {
            Ok(tags) => tags,
            Err(problem) => {
                report.problems.push(format!("{name}: {problem}"));
                continue;
            }
        };
        let ours = page == index;
        if ours {
            if let Err(problem) = well_formed(&tags) {
                report.problems.push(format!("{name}: {problem}"));
            }
            check_charts(&results, &tags, &mut report);
        }
        let ids: HashSet<String> = tags.iter().filter_map(|t| t.attr("id")).collect();
        let base = page.parent().unwrap_or(&root);
        for tag in &tags {
            for (attr, target) in tag.attrs.iter().filter(|(a, _)| a == "href" || a == "src") {
                let target = target.trim();
                let problem = |what: &str| format!("{name}: {what}{attr}={target:?}");
                let relative =
                    format::percent_decode(target.split(['#', '?']).next().unwrap_or(""));
                if let Some(fragment) = target.strip_prefix('#') {
                    let id = format::percent_decode(fragment);
                    if ours && !fragment.is_empty() && !ids.contains(&id) {
                        report.problems.push(problem("") + " names no element id");
                    }
                } else if has_scheme(target) || target.starts_with("//") {
                    if ours {
                        let what = " needs the network (the report must open offline)";
                        report.problems.push(problem("") + what);
                    } else {
                        report.external_links_in_criterion_pages += 1;
                    }
                } else if ours && tag.has_class(SOURCE_LINK_CLASS) {
                    // A lesson's link into the source tree around the run folder: it leaves the
                    // folder on purpose, and must name a file that exists. Not crawled.
                    match relative.starts_with('/') || !base.join(&relative).is_file() {
                        true => report
                            .problems
                            .push(problem("dead source link ") + " (no such file)"),
                        false => report.links += 1,
                    }
                } else if let Some(file) = resolve(&root, base, &relative) {
                    report.links += 1;
                    let is_page = file.extension().is_some_and(|e| e == "html" || e == "htm");
                    if is_page && seen.insert(file.clone()) {
                        queue.push_back(file);
                    }
                } else {
                    let what = " (no such file inside the run folder)";
                    report.problems.push(problem("dead link ") + what);
                }
            }
        }
    }
    Ok(report)
}

/// Every cell has a chart figure with an `<svg>` (`data-cell`), every pipelining client a depth
/// chart (`data-client`).
fn check_charts(results: &Results, tags: &[Tag], report: &mut CheckReport) {
    let mut charted = HashSet::new();
    let mut open: Option<(Vec<(&str, String)>, bool)> = None;
    for tag in tags {
        match (tag.name.as_str(), tag.closing) {
            ("figure", false) if tag.has_class("chart") => {
                report.charts += 1;
                let keys = ["data-cell", "data-client"].map(|a| Some((a, tag.attr(a)?)));
                open = Some((keys.into_iter().flatten().collect(), false));
            }
            ("svg", false) => open.iter_mut().for_each(|(_, svg)| *svg = true),
            ("figure", true) => {
                if let Some((keys, true)) = open.take() {
                    charted.extend(keys);
                }
            }
            _ => {}
        }
    }
    let cells: BTreeSet<&str> = results.rows.iter().map(|r| r.cell.as_str()).collect();
    for cell in cells
        .into_iter()
        .filter(|c| !charted.contains(&("data-cell", c.to_string())))
    {
        report
            .problems
            .push(format!("missing chart for cell {cell:?}"));
    }
    let pipelined: BTreeSet<&str> = (results.rows.iter())
        .filter(|r| r.op == Op::PipelineSet)
        .map(|r| r.client.as_str())
        .collect();
    for client in
        (pipelined.into_iter()).filter(|c| !charted.contains(&("data-client", c.to_string())))
    {
        let problem = format!("missing pipeline-depth chart for client {client:?}");
        report.problems.push(problem);
    }
}

/// `scheme:` at the start (`https:`, `data:`, `javascript:`, …).
fn has_scheme(target: &str) -> bool {
    target.split_once(':').is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && (scheme.chars()).all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// The file `relative` names from `base` (a folder inside `root`, which is canonical), if it
/// exists and stays inside `root`, also after following symlinks.
fn resolve(root: &Path, base: &Path, relative: &str) -> Option<PathBuf> {
    if relative.is_empty() || relative.starts_with('/') || has_scheme(relative) {
        return None;
    }
    let real = base.join(relative).canonicalize().ok()?;
    (real.starts_with(root) && real.is_file()).then_some(real)
}

/// Whether `relative` (a path from results.json) names a file inside the run folder `dir`,
/// without leaving it: no absolute path, no `..`, no symlink pointing out. The report links
/// only to such files, so it never has a dead link and never points outside the folder.
pub fn existing_inside(dir: &Path, relative: &str) -> bool {
    let plain = (Path::new(relative).components())
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    plain
        && dir
            .canonicalize()
            .is_ok_and(|root| resolve(&root, &root, relative).is_some())
}

/// One start or end tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// Lower-case element name.
    pub name: String,
    /// `</name>`.
    pub closing: bool,
    /// `<name/>` (SVG style).
    pub self_closing: bool,
    /// Attributes in order, values with character references decoded.
    pub attrs: Vec<(String, String)>,
}

impl Tag {
    /// The value of an attribute.
    pub fn attr(&self, name: &str) -> Option<String> {
        (self.attrs.iter())
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    /// Whether the `class` attribute contains `class`.
    pub fn has_class(&self, class: &str) -> bool {
        (self.attr("class")).is_some_and(|c| c.split_whitespace().any(|c| c == class))
    }
}

/// Splits HTML into its tags (text, comments and doctype skipped; `script`/`style` content is
/// raw text). Errors on an unterminated tag, comment or raw-text element.
pub fn scan(html: &str) -> Result<Vec<Tag>, String> {
    let mut tags = Vec::new();
    let mut at = 0;
    while let Some(offset) = html[at..].find('<') {
        let start = at + offset;
        let rest = &html[start..];
        let skipped = [("<!--", "-->"), ("<!", ">"), ("<?", ">")]
            .into_iter()
            .find(|(open, _)| rest.starts_with(open));
        if let Some((open, close)) = skipped {
            let end = (rest[open.len()..].find(close))
                .ok_or_else(|| format!("unterminated {open} at byte {start}"))?;
            at = start + open.len() + end + close.len();
            continue;
        }
        let closing = rest.starts_with("</");
        let body = &rest[1 + usize::from(closing)..];
        let name_end = (body.find(|c: char| !(c.is_ascii_alphanumeric() || "-:".contains(c))))
            .unwrap_or(body.len());
        if name_end == 0 {
            // A bare `<` in text: not a tag.
            at = start + 1;
            continue;
        }
        let name = body[..name_end].to_ascii_lowercase();
        // The tag ends at the first `>` outside quotes.
        let mut quote = None;
        let end = body.char_indices().find_map(|(i, c)| {
            match (quote, c) {
                (None, '"' | '\'') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, '>') => return Some(i),
                _ => {}
            }
            None
        });
        let end = end.ok_or_else(|| format!("unterminated <{name}> tag at byte {start}"))?;
        let inside = &body[name_end..end];
        let self_closing = inside.trim_end().ends_with('/');
        at = start + (rest.len() - body.len()) + end + 1;
        if !closing && !self_closing && (name == "script" || name == "style") {
            let close = format!("</{name}");
            at += (html[at..].to_ascii_lowercase().find(&close))
                .ok_or_else(|| format!("unterminated <{name}> at byte {start}"))?;
        }
        let attrs = attributes(inside.trim_end().trim_end_matches('/'));
        tags.push(Tag {
            name,
            closing,
            self_closing,
            attrs,
        });
    }
    Ok(tags)
}

/// `name="value" name='value' name=value name`, lower-case names, values unescaped.
fn attributes(mut text: &str) -> Vec<(String, String)> {
    let mut attrs = Vec::new();
    loop {
        text = text.trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '/');
        let name_end =
            (text.find(|c: char| c.is_ascii_whitespace() || c == '=')).unwrap_or(text.len());
        if name_end == 0 {
            return attrs;
        }
        let name = text[..name_end].to_ascii_lowercase();
        text = &text[name_end..];
        let mut value = "";
        if let Some(after) = text.trim_start().strip_prefix('=') {
            let after = after.trim_start();
            let (found, rest) = match after.chars().next() {
                Some(q @ ('"' | '\'')) => after[1..].split_once(q).unwrap_or((&after[1..], "")),
                _ => after.split_at(after.find(char::is_whitespace).unwrap_or(after.len())),
            };
            (value, text) = (found, rest);
        }
        attrs.push((name, unescape(value)));
    }
}

/// Checks that tags nest (every non-void element closed, in order) and that ids are unique.
pub fn well_formed(tags: &[Tag]) -> Result<(), String> {
    let mut stack: Vec<&str> = Vec::new();
    let mut ids = HashSet::new();
    for tag in tags {
        if let Some(id) = tag.attr("id").filter(|_| !tag.closing)
            && !ids.insert(id.clone())
        {
            return Err(format!("duplicate id {id:?}"));
        }
        if tag.closing {
            match stack.pop() {
                Some(open) if open == tag.name => {}
                Some(open) => return Err(format!("</{}> closes <{open}>", tag.name)),
                None => return Err(format!("</{}> without an open element", tag.name)),
            }
        } else if !tag.self_closing && !VOID_ELEMENTS.contains(&tag.name.as_str()) {
            stack.push(&tag.name);
        }
    }
    match stack.last() {
        Some(open) => Err(format!("<{open}> is never closed")),
        None => Ok(()),
    }
}

/// Decodes the character references our escaping produces (and the common named ones).
fn unescape(value: &str) -> String {
    [
        ("&lt;", "<"),
        ("&gt;", ">"),
        ("&quot;", "\""),
        ("&#39;", "'"),
        ("&#x27;", "'"),
    ]
    .into_iter()
    .fold(value.to_string(), |text, (from, to)| text.replace(from, to))
    .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_tags_attributes_and_raw_text() {
        let tags = scan(
            r#"<!doctype html><!-- <a href="x"> --><p class="a b" id=x>t<a href='y&amp;z'>l</a>
            <script>if (a < b) { s = "<a href=\"no\">"; }</script><svg><rect x="1"/></svg></p>"#,
        )
        .unwrap();
        let names: Vec<_> = tags
            .iter()
            .map(|t| format!("{}{}", if t.closing { "/" } else { "" }, t.name))
            .collect();
        assert_eq!(
            names,
            [
                "p", "a", "/a", "script", "/script", "svg", "rect", "/svg", "/p"
            ]
        );
        assert!(tags[0].has_class("b"));
        assert_eq!(tags[0].attr("id").as_deref(), Some("x"));
        assert_eq!(tags[1].attr("href").as_deref(), Some("y&z"));
        assert!(tags[6].self_closing);
        assert_eq!(tags[6].attr("x").as_deref(), Some("1"));
        assert!(well_formed(&tags).is_ok());
    }

    #[test]
    fn rejects_bad_nesting_and_duplicate_ids() {
        let bad = scan("<div><span></div></span>").unwrap();
        assert!(well_formed(&bad).unwrap_err().contains("closes"));
        let open = scan("<div><br><img src=x>").unwrap();
        assert!(well_formed(&open).unwrap_err().contains("never closed"));
        let dup = scan(r#"<a id="x"></a><b id="x"></b>"#).unwrap();
        assert!(well_formed(&dup).unwrap_err().contains("duplicate"));
        assert!(scan("<a href=\"x").is_err());
        assert!(scan("<script>never closed").is_err());
    }

    #[test]
    fn links_must_stay_inside_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("criterion/g/report")).unwrap();
        fs::write(root.join("criterion/g/report/index.html"), "x").unwrap();
        assert!(existing_inside(root, "criterion/g/report/index.html"));
        assert!(existing_inside(root, "./criterion/g/report/index.html"));
        assert!(!existing_inside(root, "criterion/g/report/missing.html"));
        assert!(!existing_inside(root, "criterion/g/report"), "a folder");
        assert!(!existing_inside(
            root,
            "criterion/../criterion/g/report/index.html"
        ));
        assert!(!existing_inside(root, "/etc/passwd"));
        assert!(!existing_inside(root, "../outside.html"));
        assert!(!existing_inside(root, "https://example.invalid/x.html"));
        assert!(!existing_inside(root, ""));
        std::os::unix::fs::symlink("/etc/passwd", root.join("escape.html")).unwrap();
        assert!(
            !existing_inside(root, "escape.html"),
            "symlink out of the folder"
        );
    }

    #[test]
    fn schemes() {
        assert!(has_scheme("https://x"));
        assert!(has_scheme("data:image/png;base64,"));
        assert!(!has_scheme("criterion/a:b/index.html"));
        assert!(!has_scheme("report/index.html"));
        assert!(!has_scheme(":x"));
    }
}
