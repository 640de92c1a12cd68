//! The run's `index.html`: one self-contained page (inline CSS, SVG and script; no network).

use std::fmt::Write as _;
use std::path::Path;

use crate::Section;
use crate::check;
use crate::format::{self, html as esc};
use crate::model::{
    BASELINE_CLIENT, Cell, DepthChart, KINDS, Model, OpSection, backend_title, transport_title,
};
use crate::results::{Kind, Mode, Results, Row, Run, Status};
use crate::svg;

/// Criterion's own summary of every group, linked from the environment section when present.
const CRITERION_INDEX: &str = "criterion/report/index.html";

/// Runs before anything else on the page: records script errors, failed resource loads and
/// `console.error` calls, so the self-check (and `make test-report`) can report them.
const ERROR_CAPTURE_JS: &str = r#"window.__kvbenchErrors = [];
window.addEventListener('error', function (e) {
  var t = e.target;
  if (t && t !== window && (t.src || t.href)) {
    window.__kvbenchErrors.push('failed to load ' + (t.src || t.href));
  } else {
    window.__kvbenchErrors.push('script error: ' + (e.message || String(e)));
  }
}, true);
(function () {
  var original = console.error;
  console.error = function () {
    window.__kvbenchErrors.push('console.error: ' + Array.prototype.join.call(arguments, ' '));
    return original.apply(console, arguments);
  };
})();"#;

/// Sortable tables: click (or Enter on) a header. Numbers sort by `data-v`, first descending;
/// text sorts ascending first; empty cells stay last either way.
const SORT_JS: &str = r#"(function () {
  function key(cell, numeric) {
    if (!cell) return null;
    if (numeric) {
      var v = cell.getAttribute('data-v');
      if (v === null || v === '') return null;
      var n = parseFloat(v);
      return isNaN(n) ? null : n;
    }
    return cell.textContent.trim().toLowerCase();
  }
  function sort(table, th, col) {
    var numeric = th.getAttribute('data-type') === 'num';
    var current = th.getAttribute('aria-sort');
    var ascending = current ? current === 'descending' : !numeric;
    table.querySelectorAll('thead th').forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[col], numeric), y = key(b.cells[col], numeric);
      if (x === null && y === null) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      var c = x < y ? -1 : x > y ? 1 : 0;
      return ascending ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  var nav = document.getElementById('nav');
  var details = document.querySelectorAll('details.cost');
  if (nav && details.length) {
    var button = document.createElement('button');
    button.type = 'button';
    button.textContent = 'open all cost tables';
    button.addEventListener('click', function () {
      var open = button.textContent.indexOf('open') === 0;
      details.forEach(function (d) { d.open = open; });
      button.textContent = (open ? 'close' : 'open') + ' all cost tables';
    });
    nav.appendChild(button);
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    table.querySelectorAll('thead th').forEach(function (th, col) {
      th.tabIndex = 0;
      th.title = 'sort';
      th.addEventListener('click', function () { sort(table, th, col); });
      th.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sort(table, th, col); }
      });
    });
  });
})();"#;

/// After load: every chart has its SVG, laid out, with the bars it should have. The verdict goes
/// into `#selfcheck[data-status]` (read by `make test-report` from the dumped DOM).
const SELF_CHECK_JS: &str = r#"window.addEventListener('load', function () {
  var problems = window.__kvbenchErrors.slice();
  var figures = document.querySelectorAll('figure.chart');
  figures.forEach(function (f) {
    var name = f.getAttribute('data-cell') || f.getAttribute('data-client') || f.id;
    var svg = f.querySelector('svg');
    if (!svg) { problems.push('no svg in chart ' + name); return; }
    var box = svg.getBoundingClientRect();
    if (!(box.width > 0 && box.height > 0)) problems.push('chart not laid out: ' + name);
    var bars = svg.querySelectorAll('rect.bar');
    var want = parseInt(f.getAttribute('data-bars'), 10);
    if (bars.length !== want) problems.push('chart ' + name + ': ' + bars.length + ' bars, expected ' + want);
    bars.forEach(function (r) {
      var b = r.getBBox();
      if (!(b.width > 0 && b.height > 0)) problems.push('empty bar in chart ' + name);
    });
  });
  var expected = parseInt(document.body.getAttribute('data-charts'), 10);
  if (figures.length !== expected) problems.push(figures.length + ' charts, expected ' + expected);
  var out = document.getElementById('selfcheck');
  out.setAttribute('data-status', problems.length ? 'fail' : 'ok');
  out.textContent = problems.length
    ? 'page self-check failed: ' + problems.join('; ')
    : 'page self-check ok: ' + figures.length + ' charts laid out, no script errors';
});"#;

const CSS: &str = r#"
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; padding: 0 20px 40px; max-width: 1600px; color: #1b1b1b; }
h1 { font-size: 24px; margin: 18px 0 4px; }
h2 { font-size: 20px; margin: 30px 0 8px; border-bottom: 2px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 22px 0 6px; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f3f3f3; padding: 1px 4px; border-radius: 3px; word-break: break-all; }
nav { font-size: 13px; margin: 6px 0 12px; }
nav a { margin-right: 12px; }
nav button { font: inherit; font-size: 12px; margin-left: 8px; }
#headline td { white-space: nowrap; }
#headline th { white-space: normal; }
.scroll { overflow-x: auto; }
.banner { background: #fff4ce; border: 1px solid #e0c060; padding: 6px 10px; border-radius: 4px; margin: 8px 0; }
.legend { list-style: none; padding: 0; margin: 6px 0; display: flex; flex-wrap: wrap; gap: 16px; font-size: 13px; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 5px; vertical-align: -1px; border-radius: 2px; }
.swatch.baseline { outline: 1px dashed #333; }
.cells { display: grid; grid-template-columns: repeat(4, minmax(0, 1fr)); gap: 12px; }
@media (max-width: 1100px) { .cells { grid-template-columns: repeat(2, minmax(0, 1fr)); } }
.depths { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 12px; }
figure.chart { margin: 0; border: 1px solid #e3e3e3; border-radius: 6px; padding: 6px; background: #fff; }
figcaption { font-size: 13px; margin-bottom: 4px; }
figcaption .kind { color: #555; }
figure.chart svg { width: 100%; height: auto; display: block; }
svg text { font: 11px system-ui, sans-serif; fill: #222; }
svg .tick { fill: #666; font-size: 10px; }
svg .axis-title { fill: #666; font-size: 10px; }
svg .grid { stroke: #e6e6e6; }
svg .axis { stroke: #999; }
svg .ci { stroke: #111; stroke-width: 1.2; fill: none; }
svg .status-failed { fill: #b00020; font-style: italic; }
svg .status-unsupported { fill: #777; font-style: italic; }
details.cost { margin: 8px 0; }
details.cost summary { cursor: pointer; font-size: 13px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border-bottom: 1px solid #e6e6e6; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f6f6; white-space: nowrap; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort=ascending]::after { content: " ▲"; }
table.sortable th[aria-sort=descending]::after { content: " ▼"; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.failed { color: #b00020; }
td.unsupported { color: #777; }
.env th { width: 170px; }
.muted { color: #666; }
footer { margin-top: 40px; font-size: 12px; color: #555; border-top: 1px solid #ddd; padding-top: 8px; }
#selfcheck[data-status=fail] { color: #b00020; font-weight: bold; }
"#;

/// Renders the page. `dir` is the run folder (links are emitted only to files inside it).
pub fn page(results: &Results, model: &Model, dir: &Path, lessons: &[Section]) -> String {
    let run = &results.run;
    let id = run_id(results, dir);
    let mut out = String::with_capacity(256 * 1024);
    let charts = model.cells().count() + model.depth.as_ref().map_or(0, |d| d.clients.len());
    let _ = write!(
        out,
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kvbench · {title}</title>
<script>{ERROR_CAPTURE_JS}</script>
<style>{CSS}</style>
</head>
<body data-charts="{charts}">
<header>
<h1>kvbench · run <code>{title}</code></h1>
<p class="muted">{summary}</p>
{banner}</header>
"#,
        title = esc(&id),
        summary = esc(&run_summary(run)),
        banner = mode_banner(run.mode),
    );

    nav(&mut out, model, lessons);
    headline(&mut out, model);
    for (index, section) in model.sections.iter().enumerate() {
        op_section(&mut out, section, index, model);
    }
    problems(&mut out, model);
    environment(&mut out, results, dir);
    out.push_str(
        "<!-- LESSONS HOOK: the Lessons section (kvbench_report::lessons) and any sections given \
         to kvbench_report::render_run_with_lessons() are inserted here. -->\n",
    );
    for lesson in lessons {
        let _ = write!(
            out,
            "<section class=\"lesson\" id=\"{}\">\n<h2>{}</h2>\n{}\n</section>\n",
            lesson_id(lesson),
            esc(&lesson.title),
            lesson.html
        );
    }
    let _ = write!(
        out,
        r#"<footer>
<p>Generated by <code>kvbench-report</code> from <code>results.json</code>. Bars: throughput (ops/s); whiskers: the throughput interval derived from criterion's confidence interval of the time per operation. Tables sort by clicking a header. How to read this report and the limits of the comparison: <code>reports/README.md</code> in the repository.</p>
<p><output id="selfcheck" data-status="pending">page self-check pending (needs JavaScript)</output></p>
</footer>
<script>{SORT_JS}</script>
<script>{SELF_CHECK_JS}</script>
</body>
</html>
"#
    );
    out
}

/// The run id: from results.json, else the folder's name.
pub fn run_id(results: &Results, dir: &Path) -> String {
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".to_string());
    if results.run.id.is_empty() {
        folder
    } else {
        results.run.id.clone()
    }
}

fn run_summary(run: &Run) -> String {
    [
        format!("mode {}", run.mode),
        format!("started {}", run.started_at),
        format!("git {}", run.git_sha.chars().take(12).collect::<String>()),
        format!("placement {}", run.placement.mode),
        run.cpu_model.clone(),
    ]
    .join(" · ")
}

fn mode_banner(mode: Mode) -> &'static str {
    match mode {
        Mode::Test => {
            "<p class=\"banner\">Test mode (<code>criterion --test</code>): every pair ran once to \
             check it works. These numbers are not measurements.</p>\n"
        }
        Mode::Quick => {
            "<p class=\"banner\">Quick run: a subset of the matrix with short measurement times. \
             Expect wide intervals; use <code>make bench</code> for numbers to quote.</p>\n"
        }
        _ => "",
    }
}

fn nav(out: &mut String, model: &Model, lessons: &[Section]) {
    out.push_str("<nav id=\"nav\"><a href=\"#headline\">Headline</a>");
    for (index, section) in model.sections.iter().enumerate() {
        let _ = write!(
            out,
            "<a href=\"#{}\">{}</a>",
            section_id(index),
            esc(&section.title)
        );
    }
    out.push_str("<a href=\"#problems\">Failed &amp; unsupported</a><a href=\"#environment\">Environment</a>");
    for lesson in lessons {
        let _ = write!(
            out,
            "<a href=\"#{}\">{}</a>",
            lesson_id(lesson),
            esc(&lesson.title)
        );
    }
    out.push_str("</nav>\n");
}

fn section_id(index: usize) -> String {
    format!("op-{index}")
}

fn lesson_id(lesson: &Section) -> String {
    let clean: String = lesson
        .id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("lesson-{clean}")
}

fn environment(out: &mut String, results: &Results, dir: &Path) {
    let run = &results.run;
    out.push_str("<section id=\"environment\">\n<h2>Environment</h2>\n<table class=\"env\">\n");
    let mut row = |name: &str, value: String| {
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td>{}</td></tr>",
            esc(name),
            if value.is_empty() {
                "<span class=\"muted\">–</span>".to_string()
            } else {
                esc(&value)
            }
        );
    };
    row("run id", run.id.clone());
    row("mode", run.mode.to_string());
    row("started", run.started_at.clone());
    row("finished", run.finished_at.clone().unwrap_or_default());
    row("duration", format::run_duration(run.duration_s));
    row("git sha", run.git_sha.clone());
    row(
        "machine",
        format!("{}, {} logical CPUs", run.cpu_model, run.cores),
    );
    row("kernel", run.kernel.clone());
    row("rustc", run.rustc.clone());
    row("placement", run.placement.describe());
    row("criterion args", run.criterion_args.clone());
    row("filters", run.filters.clone());
    row(
        "repeated runs",
        format!(
            "REPEAT={} (each repeated cell ran that many times, interleaved, against freshly \
             started servers); clients in a shuffled order per cell, seed {}",
            run.repeat, run.order_seed
        ),
    );
    row("run-to-run noise", noise_text(results));
    for note in &run.notes {
        row("note", note.clone());
    }
    out.push_str("</table>\n");

    out.push_str(
        "<table class=\"servers\">\n<thead><tr><th>server</th><th>version</th><th>external</th>\
         <th>configuration</th></tr></thead>\n<tbody>\n",
    );
    for (name, server) in [
        ("Redis", &run.servers.redis),
        ("memcached", &run.servers.memcached),
    ] {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            name,
            esc(&server.version),
            if server.external {
                "yes (REDIS_URL / MEMCACHED_URL)"
            } else {
                "no (private, started by the suite)"
            },
            esc(&server.config)
        );
    }
    out.push_str("</tbody></table>\n");
    if !run.known_defects.is_empty() {
        out.push_str(
            "<h3 id=\"known-defects\">Known library defects</h3>\n<table class=\"defects\">\n<thead><tr>\
             <th>client</th><th>library</th><th>input</th><th>outcome</th></tr></thead>\n<tbody>\n",
        );
        for defect in &run.known_defects {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&defect.client),
                esc(&defect.library),
                esc(&defect.input),
                esc(&defect.outcome)
            );
        }
        out.push_str("</tbody></table>\n");
    }
    if check::existing_inside(dir, CRITERION_INDEX) {
        let _ = writeln!(
            out,
            "<p>Criterion's own reports: <a href=\"{}\">all groups</a> (each cell below links to its group).</p>",
            esc(&format::url_path(CRITERION_INDEX))
        );
    }
    let _ = writeln!(
        out,
        "<p class=\"muted\">{} rows.</p>\n</section>",
        results.rows.len()
    );
}

/// The run-level noise figure, for people.
pub fn noise_text(results: &Results) -> String {
    match results.noise() {
        Some(noise) => format!(
            "median spread {} over {} rows measured in {} runs (largest {}); no difference \
             smaller than a row's spread is called a difference",
            kvbench_results::verdict::percent(noise.median_spread),
            noise.rows,
            results.run.repeat,
            kvbench_results::verdict::percent(noise.max_spread)
        ),
        None => "not measured (REPEAT=1): no faster side is named anywhere in this report; \
                 run with REPEAT=3 to measure it"
            .to_string(),
    }
}

/// Several leaders: `inline, raw-tcp (indistinguishable in this run)`; one: its name.
pub fn leader_names(leaders: &[&Row]) -> String {
    let names: Vec<&str> = leaders.iter().map(|r| r.client.as_str()).collect();
    match names.len() {
        0 => "–".to_string(),
        1 => names[0].to_string(),
        _ => format!("{} (indistinguishable in this run)", names.join(", ")),
    }
}

/// A row's throughput over redis-benchmark's in its cell, with the ratio's range:
/// `1.32× (1.26–1.37×)`, or `1.32× (1 run)` when a side was measured once.
pub fn baseline_ratio_text(cell: &Cell, row: Option<&Row>) -> String {
    match row.and_then(|row| cell.against_baseline(row)) {
        Some(judged) => match (judged.ratio, judged.range) {
            (Some(ratio), Some((low, high))) => format!(
                "{}× ({}–{}×)",
                format::significant(ratio, 3),
                format::significant(low, 3),
                format::significant(high, 3)
            ),
            (Some(ratio), None) => format!("{}× (1 run)", format::significant(ratio, 3)),
            _ => "–".to_string(),
        },
        None => "–".to_string(),
    }
}

fn headline(out: &mut String, model: &Model) {
    out.push_str(
        "<section id=\"headline\">\n<h2>Headline</h2>\n<p>The fastest client of each cell, the best \
         hand-written and library clients, and their throughput as a multiple of redis-benchmark \
         (the benchmark tool shipped with Redis) in the same cell, with the ratio's range from both \
         intervals; last, the best hand-written client's time per operation as a multiple of the \
         loopback floor's (a trivial server that answers a canned reply: the cost of the transport \
         itself). A client is named fastest only when its interval is clear of the next one's and \
         the difference exceeds the run-to-run spread; otherwise every client it cannot be told \
         apart from is named with it.</p>\n",
    );
    legend(out);
    out.push_str(
        "<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr><th>cell</th><th>fastest</th>\
         <th data-type=\"num\">ops/s</th><th>best hand-written</th><th data-type=\"num\">ops/s</th>\
         <th data-type=\"num\">× redis-benchmark</th><th>best library</th>\
         <th data-type=\"num\">ops/s</th><th data-type=\"num\">× redis-benchmark</th>\
         <th data-type=\"num\">redis-benchmark ops/s</th>\
         <th data-type=\"num\" title=\"time per operation of the best hand-written client over the loopback floor's\">best hand-written time × floor</th>\
         </tr></thead>\n<tbody>\n",
    );
    for (index, cell) in model.cells().enumerate() {
        let _ = write!(
            out,
            "<tr><td><a href=\"#{}\"><code>{}</code></a></td>",
            cell_id(index),
            esc(&cell.label)
        );
        let best = cell.best();
        let _ = write!(
            out,
            "<td>{}</td>{}",
            esc(&leader_names(&cell.leaders(None))),
            num_cell(best.and_then(Row::ops), format::grouped)
        );
        for kind in [Kind::HandWritten, Kind::Library] {
            let row = cell.best_of(kind);
            let ratio = baseline_ratio_text(cell, row);
            let _ = write!(
                out,
                "<td>{}</td>{}<td class=\"num\" data-v=\"{}\">{}</td>",
                esc(&leader_names(&cell.leaders(Some(kind)))),
                num_cell(row.and_then(Row::ops), format::grouped),
                row.and_then(|r| cell.ratio_to_baseline(r))
                    .map_or(String::new(), |r| r.to_string()),
                esc(&ratio)
            );
        }
        let _ = writeln!(
            out,
            "{}{}</tr>",
            num_cell(cell.baseline, format::grouped),
            num_cell(
                cell.best_of(Kind::HandWritten)
                    .and_then(|r| cell.time_over_floor(r)),
                format::ratio
            )
        );
    }
    out.push_str("</tbody></table></div>\n</section>\n");
}

fn legend(out: &mut String) {
    out.push_str("<ul class=\"legend\">");
    for kind in KINDS {
        let _ = write!(
            out,
            "<li><span class=\"swatch {kind}\" style=\"background:{}\"></span>{kind}</li>",
            svg::kind_colour(*kind)
        );
    }
    out.push_str(
        "<li>whiskers: the interval of the time per operation (95 % CI of one run, or the range of \
         several runs)</li><li><span class=\"muted\">failed / unsupported pairs: \
         named in the chart, reasons in the list at the end</span></li></ul>\n",
    );
}

fn cell_id(index: usize) -> String {
    format!("cell-{index}")
}

fn op_section(out: &mut String, section: &OpSection, index: usize, model: &Model) {
    let _ = writeln!(
        out,
        "<section class=\"op\" id=\"{}\">\n<h2>{} <code>{}</code></h2>",
        section_id(index),
        esc(&section.title),
        esc(section.op.as_str())
    );
    legend(out);
    // Cell ids number every cell of the page in order, as in `headline`.
    let first_cell: usize = model.sections[..index]
        .iter()
        .map(|s| s.variants.iter().map(|v| v.cells.len()).sum::<usize>())
        .sum();
    let mut cell_index = first_cell;
    for variant in &section.variants {
        let _ = writeln!(
            out,
            "<h3>{} · {}</h3>\n<div class=\"cells\">",
            esc(&section.title),
            esc(&variant.title)
        );
        for (offset, cell) in variant.cells.iter().enumerate() {
            cell_figure(out, cell, cell_index + offset, variant.scale_max);
        }
        out.push_str("</div>\n");
        for (offset, cell) in variant.cells.iter().enumerate() {
            cost_table(out, cell, cell_index + offset);
        }
        cell_index += variant.cells.len();
    }
    if section.op == crate::results::Op::PipelineSet
        && let Some(depth) = &model.depth
    {
        depth_section(out, depth);
    }
    out.push_str("</section>\n");
}

fn cell_figure(out: &mut String, cell: &Cell, index: usize, scale_max: f64) {
    let chart = svg::cell_chart(cell, scale_max);
    let link = cell.criterion_link.as_ref().map_or(String::new(), |rel| {
        format!(
            " · <a href=\"{}\">criterion report</a>",
            esc(&format::url_path(rel))
        )
    });
    let _ = writeln!(
        out,
        "<figure class=\"chart\" id=\"{}\" data-cell=\"{}\" data-bars=\"{}\">\n<figcaption><strong>{}</strong> · {} · <code>{}</code>{link}</figcaption>\n{}\n</figure>",
        cell_id(index),
        esc(&cell.label),
        chart.bars,
        esc(backend_title(cell.backend)),
        esc(transport_title(cell.transport)),
        esc(&cell.label),
        chart.svg
    );
}

fn cost_table(out: &mut String, cell: &Cell, index: usize) {
    let _ = write!(
        out,
        "<details class=\"cost\"><summary>Cost per operation · <code>{}</code></summary>\n\
         <table class=\"sortable\" id=\"table-{index}\">\n<thead><tr><th>client</th><th>kind</th>\
         <th data-type=\"num\">ops/s</th><th data-type=\"num\">interval (ops/s)</th>\
         <th title=\"what the interval is: criterion's 95 % CI of the median, or the range of several runs or calls\">measured</th>\
         <th data-type=\"num\" title=\"run-to-run spread: highest ops/s of the runs over the lowest\">noise</th>\
         <th data-type=\"num\" title=\"ops/s over the fastest client of the real server\">× fastest</th>\
         <th data-type=\"num\" title=\"ops/s over redis-benchmark's, with the ratio's range\">× {BASELINE_CLIENT}</th>\
         <th data-type=\"num\" title=\"time per operation over the loopback floor's\">time × floor</th>\
         <th data-type=\"num\" title=\"process CPU time per operation, all threads\">CPU/op</th>\
         <th data-type=\"num\" title=\"user-space part: the client's own code\">user/op</th>\
         <th data-type=\"num\" title=\"kernel part: system calls, loopback delivery\">sys/op</th>\
         <th data-type=\"num\">syscalls/op</th>\
         <th data-type=\"num\">allocs/op</th><th data-type=\"num\">alloc bytes/op</th>\
         <th data-type=\"num\">p50</th><th data-type=\"num\">p99</th><th data-type=\"num\">p99.9</th>\
         </tr></thead>\n<tbody>\n",
        esc(&cell.label)
    );
    let mut flags = Vec::new();
    for row in cell.by_speed() {
        let _ = write!(
            out,
            "<tr><td>{}{}</td><td><span class=\"swatch {kind}\" style=\"background:{}\"></span>{kind}</td>",
            esc(&row.client),
            if row.flags.is_empty() {
                String::new()
            } else {
                flags.push(row);
                format!(
                    " <sup class=\"flag\" title=\"{}\">⚑</sup>",
                    esc(&row.flags.join("; "))
                )
            },
            svg::kind_colour(row.kind),
            kind = row.kind.as_str(),
        );
        if !row.is_ok() {
            let status = svg::status_word(row);
            let _ = writeln!(
                out,
                "<td class=\"{}\" colspan=\"16\">{}: {}</td></tr>",
                if row.status == Status::Unsupported {
                    "unsupported"
                } else {
                    "failed"
                },
                esc(status),
                esc(&row.unmeasured_reason().unwrap_or_default())
            );
            continue;
        }
        let interval = row.ops_interval();
        let latency = row.latency_ns;
        let _ = writeln!(
            out,
            "{}<td class=\"num\" data-v=\"{}\">{}</td><td>{}</td>{}{}<td class=\"num\" data-v=\"{}\">{}</td>{}{}{}{}{}{}{}{}{}{}</tr>",
            match row.unmeasured_reason() {
                None => num_cell(row.ops(), format::grouped),
                Some(why) => format!(
                    "<td class=\"num unsupported\" data-v=\"\" title=\"{}\">{}</td>",
                    esc(&why),
                    esc(svg::status_word(row))
                ),
            },
            interval.map_or(String::new(), |(low, _)| low.to_string()),
            interval.map_or("–".to_string(), |(low, high)| format!(
                "{} – {}",
                format::short(low),
                format::short(high)
            )),
            esc(&row.measured_text()),
            num_cell(row.spread, kvbench_results::verdict::percent),
            num_cell(cell.ratio_to_fastest(row), format::ratio),
            cell.ratio_to_baseline(row)
                .map_or(String::new(), |r| r.to_string()),
            esc(
                &if cell.baseline.is_some() && row.client != BASELINE_CLIENT {
                    baseline_ratio_text(cell, Some(row))
                } else {
                    format::opt(cell.ratio_to_baseline(row), format::ratio)
                }
            ),
            num_cell(cell.time_over_floor(row), format::ratio),
            num_cell(row.cpu_ns_per_op, format::duration_ns),
            num_cell(row.user_ns_per_op, format::duration_ns),
            num_cell(row.sys_ns_per_op, format::duration_ns),
            num_cell(row.syscalls_per_op, |v| format::significant(v, 3)),
            num_cell(row.allocs_per_op, |v| format::significant(v, 3)),
            num_cell(row.alloc_bytes_per_op, format::bytes),
            num_cell(latency.map(|l| l.p50 as f64), format::duration_ns),
            num_cell(latency.map(|l| l.p99 as f64), format::duration_ns),
            num_cell(
                latency.and_then(|l| l.p999).map(|v| v as f64),
                format::duration_ns
            ),
        );
    }
    out.push_str("</tbody></table>\n");
    for row in flags {
        let _ = writeln!(
            out,
            "<p class=\"flag\">⚑ <strong>{}</strong>: {}</p>",
            esc(&row.client),
            esc(&row.flags.join("; "))
        );
    }
    out.push_str("</details>\n");
}

/// A right-aligned number with its raw value in `data-v` for sorting.
fn num_cell(value: Option<f64>, f: impl Fn(f64) -> String) -> String {
    match value.filter(|v| v.is_finite()) {
        Some(v) => format!("<td class=\"num\" data-v=\"{v}\">{}</td>", esc(&f(v))),
        None => "<td class=\"num\" data-v=\"\">–</td>".to_string(),
    }
}

fn depth_section(out: &mut String, depth: &DepthChart) {
    out.push_str(
        "<h3 id=\"depth\">Pipelined SET by depth</h3>\n<p>One chart per client; one bar per \
         backend and transport at each depth, all on one axis. ✗ marks a failed or unsupported \
         pair (hover for the reason).</p>\n<ul class=\"legend\">",
    );
    for (index, series) in depth.series.iter().enumerate() {
        let _ = write!(
            out,
            "<li><span class=\"swatch\" style=\"background:{}\"></span>{}</li>",
            svg::series_colour(series, index),
            esc(series)
        );
    }
    out.push_str("</ul>\n<div class=\"depths\">\n");
    for (index, client) in depth.clients.iter().enumerate() {
        let chart = svg::depth_chart(depth, client);
        let _ = writeln!(
            out,
            "<figure class=\"chart depth-chart\" id=\"depth-{index}\" data-client=\"{}\" data-bars=\"{}\">\n<figcaption><strong>{}</strong> <span class=\"kind\">· {}</span></figcaption>\n{}\n</figure>",
            esc(&client.client),
            chart.bars,
            esc(&client.client),
            esc(client.kind.as_str()),
            chart.svg
        );
    }
    out.push_str("</div>\n");
    depth_table(out, depth);
}

/// The depth chart's numbers, for copying.
fn depth_table(out: &mut String, depth: &DepthChart) {
    out.push_str(
        "<details class=\"cost\"><summary>Pipelined SET by depth: the numbers</summary>\n\
         <table class=\"sortable\">\n<thead><tr><th>client</th><th>kind</th><th>backend/transport</th>",
    );
    for d in &depth.depths {
        let _ = write!(
            out,
            "<th data-type=\"num\">{} ops/s</th>",
            esc(&format::depth(*d))
        );
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for client in &depth.clients {
        for series in &depth.series {
            if !depth
                .depths
                .iter()
                .any(|d| client.rows.contains_key(&(series.clone(), *d)))
            {
                continue;
            }
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td>",
                esc(&client.client),
                esc(client.kind.as_str()),
                esc(series)
            );
            for d in &depth.depths {
                match client.rows.get(&(series.clone(), *d)) {
                    Some(row) if row.ops().is_some() => {
                        out.push_str(&num_cell(row.ops(), format::grouped));
                    }
                    Some(row) => {
                        let _ = write!(
                            out,
                            "<td class=\"failed\" data-v=\"\">{}</td>",
                            esc(svg::status_word(row))
                        );
                    }
                    None => out.push_str("<td data-v=\"\">–</td>"),
                }
            }
            out.push_str("</tr>\n");
        }
    }
    out.push_str("</tbody></table>\n</details>\n");
}

fn problems(out: &mut String, model: &Model) {
    out.push_str("<section id=\"problems\">\n<h2>Failed and unsupported pairs</h2>\n");
    if model.problems.is_empty() {
        out.push_str("<p>Every (cell, client) pair was measured.</p>\n</section>\n");
        return;
    }
    let _ = writeln!(
        out,
        "<p>{} pairs have no measurement. A failed pair did not pass verification (or broke while \
         measured) and was not timed; an unsupported pair is one the client cannot do.</p>",
        model.problems.len()
    );
    out.push_str(
        "<table class=\"sortable\">\n<thead><tr><th>cell</th><th>client</th><th>kind</th>\
         <th>status</th><th>reason</th></tr></thead>\n<tbody>\n",
    );
    for (row, why) in &model.problems {
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
            esc(&row.cell),
            esc(&row.client),
            esc(row.kind.as_str()),
            if row.status == Status::Unsupported {
                "unsupported"
            } else {
                "failed"
            },
            esc(svg::status_word(row)),
            esc(why)
        );
    }
    out.push_str("</tbody></table>\n</section>\n");
}

/// Used by the comparison page: the same look, no charts.
pub fn standalone(title: &str, extra_css: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<script>{ERROR_CAPTURE_JS}</script>\n<style>{CSS}{extra_css}</style>\n\
         </head>\n<body>\n{body}\n<script>{SORT_JS}</script>\n</body>\n</html>\n",
        esc(title)
    )
}

/// Throughput cells and the noise verdict reuse the page's table helpers.
pub(crate) fn number_cell(value: Option<f64>, f: impl Fn(f64) -> String) -> String {
    num_cell(value, f)
}
