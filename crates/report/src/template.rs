//! The templates under `crates/report/templates/`, built into the library, and the one way they
//! are filled: from a serde context whose numbers are already formatted text (`format`).
//!
//! HTML templates (`*.html`, the charts' SVG included) escape every value with [`format::html`]
//! unless the template marks it `safe` (only the lessons' HTML, which their code escapes). Other templates (`*.md`, `*.css`, `*.js`) print values as they are: Markdown escaping
//! stays explicit, in the code that builds the context.

use std::sync::LazyLock;

use minijinja::syntax::SyntaxConfig;
use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

use crate::format;

/// Every template by name; the name's extension decides its escaping.
const FILES: &[(&str, &str)] = &[
    ("base.html", include_str!("../templates/base.html")),
    ("macros.html", include_str!("../templates/macros.html")),
    ("charts.html", include_str!("../templates/charts.html")),
    ("report.html", include_str!("../templates/report.html")),
    ("compare.html", include_str!("../templates/compare.html")),
    ("lessons.html", include_str!("../templates/lessons.html")),
    ("summary.md", include_str!("../templates/summary.md")),
    ("report.css", include_str!("../templates/report.css")),
    ("errors.js", include_str!("../templates/errors.js")),
    ("sort.js", include_str!("../templates/sort.js")),
    ("selfcheck.js", include_str!("../templates/selfcheck.js")),
];

static TEMPLATES: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    // A misspelt field is an error, not an empty string.
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_syntax(
        SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()
            .expect("valid template syntax"),
    );
    env.set_auto_escape_callback(|name| match name.rsplit('.').next() {
        Some("html") => AutoEscape::Html,
        _ => AutoEscape::None,
    });
    env.set_formatter(|out, state, value| {
        let text = value.to_string();
        let escaped = match state.auto_escape() {
            AutoEscape::Html if !value.is_safe() => format::html(&text),
            _ => text,
        };
        out.write_str(&escaped).map_err(minijinja::Error::from)
    });
    env.add_filter("md", |text: String| format::markdown(&text));
    for (name, source) in FILES {
        env.add_template(name, source)
            .unwrap_or_else(|error| panic!("template {name}: {error:#}"));
    }
    env
});

/// Fills template `name` from `context`.
///
/// The templates are part of the program and every one is rendered by the tests, so a failure
/// here is a bug in this crate, not in the input: it panics with the template's own message.
pub fn render(name: &str, context: &impl Serialize) -> String {
    TEMPLATES
        .get_template(name)
        .and_then(|template| template.render(Serde(context)))
        .unwrap_or_else(|error| panic!("template {name}: {error:#}"))
}
