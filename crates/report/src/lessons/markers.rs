//! Generated blocks inside hand-written files:
//!
//! ```text
//! <!-- BEGIN GENERATED lessons:<name> from reports/<run-id>/results.json by `make lessons`; do not edit -->
//! …generated…
//! <!-- END GENERATED lessons:<name> -->
//! ```
//!
//! Only the marker lines and what lies between them are replaced; every other byte of the file
//! is kept. A missing, duplicated or misordered marker is an error, never a guess.

/// What is wrong with a block's markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MarkerProblem {
    /// No BEGIN line for the block.
    #[error("no BEGIN marker")]
    MissingBegin,
    /// No END line for the block.
    #[error("no END marker")]
    MissingEnd,
    /// More than one BEGIN or END line for the block.
    #[error("the marker appears more than once")]
    Duplicated,
    /// The END line comes before the BEGIN line.
    #[error("the END marker comes before the BEGIN marker")]
    Misordered,
}

/// `<!-- BEGIN GENERATED lessons:<name> from <source> by `make lessons`; do not edit -->`.
pub fn begin_line(name: &str, source: &str) -> String {
    format!("<!-- BEGIN GENERATED lessons:{name} from {source} by `make lessons`; do not edit -->")
}

/// `<!-- END GENERATED lessons:<name> -->`.
pub fn end_line(name: &str) -> String {
    format!("<!-- END GENERATED lessons:{name} -->")
}

/// Replaces block `name` of `text` (marker lines included) with fresh markers naming `source`
/// around `body`.
pub fn replace_block(
    text: &str,
    name: &str,
    source: &str,
    body: &str,
) -> Result<String, MarkerProblem> {
    let begin_prefix = format!("<!-- BEGIN GENERATED lessons:{name} ");
    let end = end_line(name);
    // Where each BEGIN line starts and ends (newline included), and where each END line starts
    // and ends (newline excluded: whatever ended it is kept, a newline or the end of the file).
    let (mut begins, mut ends) = (Vec::new(), Vec::new());
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        if content.trim().starts_with(&begin_prefix) {
            begins.push((offset, offset + line.len()));
        } else if content.trim() == end {
            ends.push((offset, offset + content.len()));
        }
        offset += line.len();
    }
    let (begin, finish) = match (begins.as_slice(), ends.as_slice()) {
        ([_, _, ..], _) | ([_], [_, _, ..]) => return Err(MarkerProblem::Duplicated),
        ([], _) => return Err(MarkerProblem::MissingBegin),
        (_, []) => return Err(MarkerProblem::MissingEnd),
        (&[begin], &[finish]) => (begin, finish),
    };
    if finish.0 < begin.1 {
        return Err(MarkerProblem::Misordered);
    }
    let newline = if body.is_empty() || body.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    let begin_line = begin_line(name, source);
    let (before, after) = (&text[..begin.0], &text[finish.1..]);
    Ok(format!("{before}{begin_line}\n{body}{newline}{end}{after}"))
}

/// `text` without the generated blocks (marker lines included): what a human wrote.
pub fn outside_blocks(text: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.starts_with("<!-- BEGIN GENERATED lessons:") {
            inside = true;
        } else if trimmed.starts_with("<!-- END GENERATED lessons:") {
            inside = false;
        } else if !inside {
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Title\n\nhand\n<!-- BEGIN GENERATED lessons:a from old by `make lessons`; do not edit -->\nold body\n<!-- END GENERATED lessons:a -->\ntail\n";

    #[test]
    fn replaces_only_between_markers() {
        let out = replace_block(DOC, "a", "reports/x/results.json", "new\nbody").unwrap();
        assert_eq!(
            out,
            "# Title\n\nhand\n<!-- BEGIN GENERATED lessons:a from reports/x/results.json by `make lessons`; do not edit -->\nnew\nbody\n<!-- END GENERATED lessons:a -->\ntail\n"
        );
        assert_eq!(outside_blocks(&out), outside_blocks(DOC));
        assert_eq!(outside_blocks(DOC), "# Title\n\nhand\ntail\n");
        // Idempotent, and the end of the file is kept as it was.
        let again = replace_block(&out, "a", "reports/x/results.json", "new\nbody\n").unwrap();
        assert_eq!(again, out);
        let no_newline = DOC.trim_end_matches("tail\n").trim_end();
        let out = replace_block(no_newline, "a", "s", "b").unwrap();
        assert!(out.ends_with("<!-- END GENERATED lessons:a -->"), "{out}");
    }

    #[test]
    fn marker_problems_are_errors() {
        assert_eq!(
            replace_block(DOC, "b", "s", "x"),
            Err(MarkerProblem::MissingBegin)
        );
        let no_end = DOC.replace("<!-- END GENERATED lessons:a -->\n", "");
        assert_eq!(
            replace_block(&no_end, "a", "s", "x"),
            Err(MarkerProblem::MissingEnd)
        );
        let twice = format!("{DOC}{DOC}");
        assert_eq!(
            replace_block(&twice, "a", "s", "x"),
            Err(MarkerProblem::Duplicated)
        );
        let swapped = "<!-- END GENERATED lessons:a -->\n<!-- BEGIN GENERATED lessons:a from s by `make lessons`; do not edit -->\n";
        assert_eq!(
            replace_block(swapped, "a", "s", "x"),
            Err(MarkerProblem::Misordered)
        );
        // A longer name is another block, not a duplicate.
        let other = DOC
            .replace("lessons:a ", "lessons:ab ")
            .replace("lessons:a -->", "lessons:ab -->");
        assert_eq!(
            replace_block(&format!("{DOC}{other}"), "a", "s", "x").map(|_| ()),
            Ok(())
        );
    }
}
