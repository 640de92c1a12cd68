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
use crate::results::Results;
use crate::{Error, INDEX_FILE};

/// Pages followed at most while crawling a run folder (criterion writes a few per cell).
const MAX_PAGES: usize = 20_000;

/// Elements that never have a closing tag.
const VOID_ELEMENTS: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr",
];

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
    let index_path = dir.join(INDEX_FILE);
    let index = fs::read_to_string(&index_path).map_err(|source| Error::Read {
        path: index_path.clone(),
        source,
    })?;
    let tags = match scan(&index) {
        Ok(tags) => tags,
        Err(problem) => {
            report.problems.push(format!("{INDEX_FILE}: {problem}"));
            return Ok(report);
        }
    };
    if let Err(problem) = well_formed(&tags) {
        report.problems.push(format!("{INDEX_FILE}: {problem}"));
    }

    check_charts(&results, &tags, &mut report);
    check_links(dir, &mut report)?;
    Ok(report)
}

fn check_charts(results: &Results, tags: &[Tag], report: &mut CheckReport) {
    let mut cells_with_svg = HashSet::new();
    let mut clients_with_svg = HashSet::new();
    let mut open: Option<(Option<String>, Option<String>, bool)> = None;
    for tag in tags {
        match (tag.name.as_str(), tag.closing) {
            ("figure", false) if tag.has_class("chart") => {
                report.charts += 1;
                open = Some((tag.attr("data-cell"), tag.attr("data-client"), false));
            }
            ("svg", false) => {
                if let Some((_, _, has_svg)) = open.as_mut() {
                    *has_svg = true;
                }
            }
            ("figure", true) => {
                if let Some((cell, client, true)) = open.take() {
                    cells_with_svg.extend(cell);
                    clients_with_svg.extend(client);
                }
            }
            _ => {}
        }
    }
    let cells: BTreeSet<String> = results.rows.iter().map(|r| r.cell.clone()).collect();
    for cell in cells {
        if !cells_with_svg.contains(&cell) {
            report
                .problems
                .push(format!("missing chart for cell {cell:?}"));
        }
    }
    let pipelined: BTreeSet<&str> = results
        .rows
        .iter()
        .filter(|r| r.op == crate::results::Op::PipelineSet)
        .map(|r| r.client.as_str())
        .collect();
    for client in pipelined {
        if !clients_with_svg.contains(client) {
            report.problems.push(format!(
                "missing pipeline-depth chart for client {client:?}"
            ));
        }
    }
}

fn check_links(dir: &Path, report: &mut CheckReport) -> Result<(), Error> {
    let root = dir.canonicalize().map_err(|source| Error::Read {
        path: dir.to_path_buf(),
        source,
    })?;
    let index = root.join(INDEX_FILE);
    let mut queue = VecDeque::from([index.clone()]);
    let mut seen = HashSet::from([index.clone()]);
    while let Some(page) = queue.pop_front() {
        if report.pages >= MAX_PAGES {
            report
                .problems
                .push(format!("more than {MAX_PAGES} pages: crawl stopped"));
            break;
        }
        report.pages += 1;
        let ours = page == index;
        let name = page
            .strip_prefix(&root)
            .unwrap_or(&page)
            .display()
            .to_string();
        let text = fs::read(&page).map_err(|source| Error::Read {
            path: page.clone(),
            source,
        })?;
        let text = String::from_utf8_lossy(&text);
        let tags = match scan(&text) {
            Ok(tags) => tags,
            Err(problem) => {
                report.problems.push(format!("{name}: {problem}"));
                continue;
            }
        };
        let ids: HashSet<String> = tags.iter().filter_map(|t| t.attr("id")).collect();
        for tag in &tags {
            for (attr, value) in &tag.attrs {
                if attr != "href" && attr != "src" {
                    continue;
                }
                let target = value.trim();
                if let Some(fragment) = target.strip_prefix('#') {
                    if ours
                        && !fragment.is_empty()
                        && !ids.contains(&format::percent_decode(fragment))
                    {
                        report
                            .problems
                            .push(format!("{name}: {attr}={target:?} names no element id"));
                    }
                    continue;
                }
                if has_scheme(target) || target.starts_with("//") {
                    if ours {
                        report.problems.push(format!(
                            "{name}: {attr}={target:?} needs the network (the report must open offline)"
                        ));
                    } else {
                        report.external_links_in_criterion_pages += 1;
                    }
                    continue;
                }
                let path_part = target.split(['#', '?']).next().unwrap_or_default();
                let relative = format::percent_decode(path_part);
                let base = page.parent().unwrap_or(&root);
                if ours && tag.has_class(SOURCE_LINK_CLASS) {
                    // A lesson's link into the source tree around the run folder: it leaves the
                    // folder on purpose, and must name a file that exists. Not crawled.
                    if is_plain_relative(&relative) && base.join(&relative).is_file() {
                        report.links += 1;
                    } else {
                        report.problems.push(format!(
                            "{name}: dead source link {attr}={target:?} (no such file)"
                        ));
                    }
                    continue;
                }
                match resolve(&root, base, &relative) {
                    Some(resolved) => {
                        report.links += 1;
                        let is_page = resolved
                            .extension()
                            .is_some_and(|e| e == "html" || e == "htm");
                        if is_page && seen.insert(resolved.clone()) {
                            queue.push_back(resolved);
                        }
                    }
                    None => report.problems.push(format!(
                        "{name}: dead link {attr}={target:?} (no such file inside the run folder)"
                    )),
                }
            }
        }
    }
    Ok(())
}

/// Class of the Lessons section's links to source lines (`../../crates/…#L10-L20`): the only
/// links of our page allowed to leave the run folder.
pub const SOURCE_LINK_CLASS: &str = "source";

/// A relative path of plain components and `..` (no root, no scheme, no backslash).
fn is_plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\\')
        && !has_scheme(path)
        && Path::new(path).components().all(|c| {
            matches!(
                c,
                Component::Normal(_) | Component::ParentDir | Component::CurDir
            )
        })
}

/// `scheme:` at the start (`https:`, `data:`, `javascript:`, …).
fn has_scheme(target: &str) -> bool {
    match target.find(':') {
        Some(colon) if colon > 0 => {
            let scheme = &target[..colon];
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        _ => false,
    }
}

/// Resolves `relative` against `base` (a folder inside `root`): the target must be a file and
/// stay inside `root`, also after following symlinks.
fn resolve(root: &Path, base: &Path, relative: &str) -> Option<PathBuf> {
    if relative.is_empty() || relative.starts_with('/') || relative.contains('\\') {
        return None;
    }
    let mut path = base.to_path_buf();
    for component in Path::new(relative).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !path.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    if !path.starts_with(root) || !path.is_file() {
        return None;
    }
    let real = path.canonicalize().ok()?;
    real.starts_with(root).then_some(path)
}

/// Whether `relative` (a path from results.json) names a file inside the run folder `dir`,
/// without leaving it: no absolute path, no `..`, no symlink pointing out. The report links
/// only to such files, so it never has a dead link and never points outside the folder.
pub fn existing_inside(dir: &Path, relative: &str) -> bool {
    if has_scheme(relative) {
        return false;
    }
    let plain = Path::new(relative)
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    let Ok(root) = dir.canonicalize() else {
        return false;
    };
    plain && resolve(&root, &root, relative).is_some()
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
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    /// Whether the `class` attribute contains `class`.
    pub fn has_class(&self, class: &str) -> bool {
        self.attr("class")
            .is_some_and(|c| c.split_whitespace().any(|c| c == class))
    }
}

/// Splits HTML into its tags (text, comments and doctype skipped; `script`/`style` content is
/// raw text). Errors on an unterminated tag, comment or raw-text element.
pub fn scan(html: &str) -> Result<Vec<Tag>, String> {
    let bytes = html.as_bytes();
    let mut tags = Vec::new();
    let mut i = 0;
    while let Some(offset) = html[i..].find('<') {
        let start = i + offset;
        let rest = &html[start..];
        if rest.starts_with("<!--") {
            let end = rest
                .find("-->")
                .ok_or_else(|| format!("unterminated comment at byte {start}"))?;
            i = start + end + 3;
            continue;
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            let end = rest
                .find('>')
                .ok_or_else(|| format!("unterminated declaration at byte {start}"))?;
            i = start + end + 1;
            continue;
        }
        let mut j = start + 1;
        let closing = bytes.get(j) == Some(&b'/');
        if closing {
            j += 1;
        }
        let name_start = j;
        while j < bytes.len()
            && (bytes[j].is_ascii_alphanumeric() || matches!(bytes[j], b'-' | b':'))
        {
            j += 1;
        }
        if j == name_start {
            // A bare `<` in text: not a tag.
            i = start + 1;
            continue;
        }
        let name = html[name_start..j].to_ascii_lowercase();
        let mut attrs = Vec::new();
        let mut self_closing = false;
        loop {
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            match bytes.get(j) {
                None => return Err(format!("unterminated <{name}> tag at byte {start}")),
                Some(b'>') => {
                    j += 1;
                    break;
                }
                Some(b'/') if bytes.get(j + 1) == Some(&b'>') => {
                    self_closing = true;
                    j += 2;
                    break;
                }
                Some(_) => {}
            }
            let attr_start = j;
            while j < bytes.len()
                && !bytes[j].is_ascii_whitespace()
                && !matches!(bytes[j], b'=' | b'>')
            {
                if bytes[j] == b'/' && bytes.get(j + 1) == Some(&b'>') {
                    break;
                }
                j += 1;
            }
            let attr = html[attr_start..j].to_ascii_lowercase();
            if attr.is_empty() {
                // A stray `/` or similar: skip it.
                j += 1;
                continue;
            }
            let mut value = String::new();
            if bytes.get(j) == Some(&b'=') {
                j += 1;
                match bytes.get(j) {
                    Some(&quote @ (b'"' | b'\'')) => {
                        let end = html[j + 1..].find(quote as char).ok_or_else(|| {
                            format!("unterminated {attr} value in <{name}> at byte {start}")
                        })?;
                        value = unescape(&html[j + 1..j + 1 + end]);
                        j += end + 2;
                    }
                    _ => {
                        let value_start = j;
                        while j < bytes.len() && !bytes[j].is_ascii_whitespace() && bytes[j] != b'>'
                        {
                            j += 1;
                        }
                        value = unescape(&html[value_start..j]);
                    }
                }
            }
            attrs.push((attr, value));
        }
        i = j;
        if !closing && !self_closing && (name == "script" || name == "style") {
            let close = format!("</{name}");
            let end = html[i..]
                .to_ascii_lowercase()
                .find(&close)
                .ok_or_else(|| format!("unterminated <{name}> at byte {start}"))?;
            i += end;
        }
        tags.push(Tag {
            name,
            closing,
            self_closing,
            attrs,
        });
    }
    Ok(tags)
}

/// Checks that tags nest (every non-void element closed, in order) and that ids are unique.
pub fn well_formed(tags: &[Tag]) -> Result<(), String> {
    let mut stack: Vec<&str> = Vec::new();
    let mut ids = HashSet::new();
    for tag in tags {
        if let Some(id) = tag.attr("id")
            && !tag.closing
            && !ids.insert(id.clone())
        {
            return Err(format!("duplicate id {id:?}"));
        }
        if tag.closing {
            match stack.pop() {
                Some(open) if open == tag.name => {}
                Some(open) => {
                    return Err(format!("</{}> closes <{open}>", tag.name));
                }
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
    if !value.contains('&') {
        return value.to_string();
    }
    value
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
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
