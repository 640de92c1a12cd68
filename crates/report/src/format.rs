//! Escaping and number formatting shared by the HTML, SVG, Markdown and text outputs.

use std::fmt::Write as _;

/// Escapes text for HTML and SVG, in element content and in quoted attributes alike.
///
/// Every string that comes from results.json (client names, errors, server configuration) goes
/// through here: a client named `<script>` must show as text, not run.
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Escapes text for a Markdown table cell: table syntax (`|`, line breaks), emphasis and link
/// syntax, and inline HTML (GitHub renders some of it) all become literal text.
pub fn markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '|' | '\\' | '`' | '*' | '_' | '[' | ']' | '#' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Percent-encodes a relative path for an `href`, leaving `/` and unreserved characters.
pub fn url_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'/' | b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// `text` with every character but ASCII letters, digits and those of `keep` replaced by `with`:
/// a name safe in an id or a file name.
pub fn safe_name(text: &str, keep: &str, with: char) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || keep.contains(c);
    text.chars()
        .map(|c| if safe(c) { c } else { with })
        .collect()
}

/// Decodes `%XX` sequences (the inverse of [`url_path`]; invalid sequences are kept as they are).
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(high * 16 + low);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|d| d as u8)
}

/// A value size for people: `3 B`, `2 KiB`, `100 KiB`, `1 MiB`.
pub fn size(bytes: u64) -> String {
    exact(bytes, &[(1 << 20, " MiB"), (1 << 10, " KiB")]).unwrap_or_else(|| format!("{bytes} B"))
}

/// A pipeline depth: `1k`, `100k`, `1M` (exact multiples only; otherwise grouped digits).
pub fn depth(depth: u64) -> String {
    exact(depth, &[(1_000_000, "M"), (1_000, "k")]).unwrap_or_else(|| grouped(depth as f64))
}

/// `value` in the first of `units` (largest first) it is a multiple of, if any.
fn exact(value: u64, units: &[(u64, &str)]) -> Option<String> {
    (units.iter())
        .find(|(unit, _)| value >= *unit && value.is_multiple_of(*unit))
        .map(|(unit, name)| format!("{}{name}", value / unit))
}

/// An integer with thousands separators: `1,234,567`. Rounds to the nearest integer.
pub fn grouped(value: f64) -> String {
    if !value.is_finite() {
        return "–".to_string();
    }
    let rounded = value.round();
    let negative = rounded < 0.0;
    let digits = format!("{:.0}", rounded.abs());
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if negative {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A short throughput for chart labels: `950`, `82.1k`, `1.85M`.
pub fn short(value: f64) -> String {
    scaled(value, &[(1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")])
}

/// `value` in the first of `units` (largest first) it reaches (else the last), with 3
/// significant digits.
fn scaled(value: f64, units: &[(f64, &str)]) -> String {
    if !value.is_finite() {
        return "–".to_string();
    }
    let last = units[units.len() - 1];
    let (scale, unit) = (units.iter().copied())
        .find(|(scale, _)| value.abs() >= *scale)
        .unwrap_or(last);
    format!("{}{unit}", significant(value / scale, 3))
}

/// `digits` significant digits, without trailing zeros: `0.00213`, `2.5`, `123`, `12346`.
pub fn significant(value: f64, digits: usize) -> String {
    if !value.is_finite() {
        return "–".to_string();
    }
    if value == 0.0 {
        return "0".to_string();
    }
    let magnitude = value.abs().log10().floor() as i32;
    let decimals = (digits as i32 - 1 - magnitude).max(0) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A duration given in nanoseconds, in the unit that keeps 3 significant digits readable:
/// `850 ns`, `8.12 µs`, `1.23 ms`, `2.5 s`.
pub fn duration_ns(ns: f64) -> String {
    scaled(ns, &[(1e9, " s"), (1e6, " ms"), (1e3, " µs"), (1.0, " ns")])
}

/// A run's wall time, given in seconds: `42.1 s`, `17 min 42 s`, `1 h 02 min`.
pub fn run_duration(seconds: f64) -> String {
    if !(seconds.is_finite() && seconds >= 0.0) {
        return "–".to_string();
    }
    if seconds < 60.0 {
        return format!("{} s", significant(seconds, 3));
    }
    let whole = seconds.round() as u64;
    if whole < 3600 {
        format!("{} min {} s", whole / 60, whole % 60)
    } else {
        format!("{} h {:02} min", whole / 3600, (whole % 3600) / 60)
    }
}

/// Bytes for people: `512 B`, `1.5 KiB`, `1 MiB`.
pub fn bytes(value: f64) -> String {
    scaled(value, &[(1048576.0, " MiB"), (1024.0, " KiB"), (1.0, " B")])
}

/// A ratio: `1.32×`.
pub fn ratio(value: f64) -> String {
    if !value.is_finite() {
        return "–".to_string();
    }
    let decimals = if value >= 100.0 { 0 } else { 2 };
    format!("{value:.decimals$}×")
}

/// Spreads of a counted row at most this (0.1 %) are not shown: the count is as good as exact.
pub const SPREAD_SHOWN: f64 = 0.001;

/// A row's counted instructions per operation for people: `1,398`, or with the phases' spread
/// where it exceeds [`SPREAD_SHOWN`], `8,986 (spread 38 %)`.
pub fn instructions(counted: &kvbench_results::Instructions) -> String {
    let per_op = grouped(counted.per_op);
    match counted.spread > SPREAD_SHOWN {
        true => format!(
            "{per_op} (spread {})",
            kvbench_results::verdict::percent(1.0 + counted.spread)
        ),
        false => per_op,
    }
}

/// What a cell shows for a row without counted instructions.
pub const NOT_COUNTED: &str = "not counted";

/// An optional value formatted with `f`, or an en dash for "no value".
pub fn opt(value: Option<f64>, f: impl Fn(f64) -> String) -> String {
    match value {
        Some(v) if v.is_finite() => f(v),
        _ => "–".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escapes_markup_and_quotes() {
        assert_eq!(
            html(r#"<script>alert("x&'y")</script>"#),
            "&lt;script&gt;alert(&quot;x&amp;&#39;y&quot;)&lt;/script&gt;"
        );
    }

    #[test]
    fn markdown_escapes_table_syntax_and_html() {
        assert_eq!(markdown("a|b\n<i>*c*"), r"a\|b &lt;i&gt;\*c\*");
    }

    #[test]
    fn url_path_round_trips() {
        let path = "criterion/redis_get_3B_unix/a b%/report/index.html";
        let encoded = url_path(path);
        assert_eq!(
            encoded,
            "criterion/redis_get_3B_unix/a%20b%25/report/index.html"
        );
        assert_eq!(percent_decode(&encoded), path);
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn sizes_and_depths() {
        assert_eq!(size(2048), "2 KiB");
        assert_eq!(size(1024 * 1024), "1 MiB");
        assert_eq!(size(1500), "1500 B");
        assert_eq!(depth(1_000), "1k");
        assert_eq!(depth(100_000), "100k");
        assert_eq!(depth(1_000_000), "1M");
        assert_eq!(depth(1_500), "1,500");
    }

    #[test]
    fn numbers() {
        assert_eq!(grouped(1_234_567.4), "1,234,567");
        assert_eq!(grouped(999.0), "999");
        assert_eq!(grouped(-1000.0), "-1,000");
        assert_eq!(short(82_123.0), "82.1k");
        assert_eq!(short(1_850_000.0), "1.85M");
        assert_eq!(short(950.0), "950");
        assert_eq!(significant(0.002134, 3), "0.00213");
        assert_eq!(significant(2.0, 3), "2");
        assert_eq!(significant(12345.6, 3), "12346");
        assert_eq!(duration_ns(850.0), "850 ns");
        assert_eq!(duration_ns(8_123.0), "8.12 µs");
        assert_eq!(duration_ns(1_234_000.0), "1.23 ms");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(run_duration(42.14), "42.1 s");
        assert_eq!(run_duration(1061.5), "17 min 42 s");
        assert_eq!(run_duration(3725.0), "1 h 02 min");
        assert_eq!(ratio(1.3249), "1.32×");
        assert_eq!(opt(None, ratio), "–");
        assert_eq!(opt(Some(f64::NAN), ratio), "–");
    }

    #[test]
    fn instruction_counts_show_their_spread_above_a_tenth_of_a_percent() {
        let counted = |per_op, spread| kvbench_results::Instructions {
            per_op,
            spread,
            calls: 2_000,
            owners: Vec::new(),
            functions: Vec::new(),
        };
        assert_eq!(instructions(&counted(1_398.2, 0.0)), "1,398");
        assert_eq!(instructions(&counted(8_492.0, 0.0009)), "8,492");
        assert_eq!(
            instructions(&counted(8_986.0, 0.384)),
            "8,986 (spread 38 %)"
        );
        assert_eq!(
            instructions(&counted(3_987.0, 0.0013)),
            "3,987 (spread 0.1 %)"
        );
    }
}
