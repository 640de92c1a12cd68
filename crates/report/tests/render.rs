//! `render_run` on the synthetic fixture: a well-formed page with a chart per cell, escaping,
//! no dead links, the cost tables, the failures list, the environment, the Lessons section and hook, and
//! `summary.md`.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::{EVIL_CLIENT, EVIL_ERROR, cells, fixture, rendered};
use kvbench_report::check::{Tag, check_run_dir, scan, well_formed};
use kvbench_report::{Error, Section, render_run, render_run_with_lessons};
use serde_json::{Value, json};

/// Rows of the fixture that have a measurement, per cell.
fn measured_per_cell(value: &Value) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for row in value["rows"].as_array().unwrap() {
        let entry = counts
            .entry(row["cell"].as_str().unwrap().to_string())
            .or_insert(0);
        if row["status"] == "ok" && row["ops_per_sec"].is_number() {
            *entry += 1;
        }
    }
    counts
}

/// (figure tag, number of `rect.bar` inside it) for every chart figure.
fn figures(page: &str) -> Vec<(Tag, usize)> {
    let mut out = Vec::new();
    let mut open: Option<(Tag, usize)> = None;
    for tag in scan(page).unwrap() {
        match (tag.name.as_str(), tag.closing) {
            ("figure", false) => open = Some((tag, 0)),
            ("rect", false) if tag.has_class("bar") => {
                if let Some((_, bars)) = open.as_mut() {
                    *bars += 1;
                }
            }
            ("figure", true) => out.extend(open.take()),
            _ => {}
        }
    }
    out
}

#[test]
fn render_writes_a_well_formed_page_and_summary() {
    let (_dir, page, summary) = rendered(&fixture());
    assert!(page.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    assert!(page.contains("<meta charset=\"utf-8\">"));
    assert!(page.contains("<title>kvbench · 2026-11-30T09-00-00Z-fixture</title>"));
    let tags = scan(&page).unwrap();
    well_formed(&tags).unwrap();
    // Offline: no stylesheet, script or image is fetched from anywhere.
    for tag in &tags {
        assert!(
            tag.attr("src").is_none() || tag.name != "script",
            "external script {tag:?}"
        );
        assert!(tag.name != "link", "external resource {tag:?}");
    }
    assert!(summary.starts_with("# kvbench run 2026-11-30T09-00-00Z-fixture\n"));
    assert!(summary.contains("\n## Headline\n"));
}

#[test]
fn every_cell_has_a_chart_with_a_bar_per_measured_client() {
    let value = fixture();
    let (_dir, page, _) = rendered(&value);
    let expected = measured_per_cell(&value);
    let figures = figures(&page);
    let cell_figures: BTreeMap<String, (Tag, usize)> = figures
        .iter()
        .filter_map(|(tag, bars)| Some((tag.attr("data-cell")?, (tag.clone(), *bars))))
        .collect();
    assert_eq!(
        cell_figures.keys().cloned().collect::<Vec<_>>(),
        cells(&value),
        "one chart per cell, no other cell charts"
    );
    for (cell, measured) in &expected {
        let (tag, bars) = &cell_figures[cell];
        assert_eq!(bars, measured, "{cell}: one bar per measured client");
        assert_eq!(tag.attr("data-bars"), Some(measured.to_string()), "{cell}");
    }
    // Pipeline depth: one chart per client that has pipelined rows, three depths each.
    let depth: Vec<&(Tag, usize)> = figures
        .iter()
        .filter(|(tag, _)| tag.has_class("depth-chart"))
        .collect();
    let pipelined: std::collections::BTreeSet<&str> = value["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["op"] == "pipeline_set")
        .map(|r| r["client"].as_str().unwrap())
        .collect();
    assert_eq!(depth.len(), pipelined.len());
    let buffered = depth
        .iter()
        .find(|(tag, _)| tag.attr("data-client").as_deref() == Some("buffered"))
        .expect("a depth chart for buffered");
    assert_eq!(buffered.1, 6, "3 depths × 2 transports");
    // The page announces how many charts its self-check must find.
    assert!(page.contains(&format!("<body data-charts=\"{}\">", figures.len())));
}

#[test]
fn charts_put_redis_beside_memcached_and_tcp_beside_unix() {
    let (_dir, page, _) = rendered(&fixture());
    let order: Vec<String> = figures(&page)
        .into_iter()
        .filter_map(|(tag, _)| tag.attr("data-cell"))
        .filter(|cell| cell.contains("/get/3B/"))
        .collect();
    // A row of four per number of callers: one caller (the plain cells) first.
    let expected: Vec<String> = ["", "/c16", "/c256"]
        .iter()
        .flat_map(|callers| {
            ["redis/get/3B/tcp", "redis/get/3B/unix"]
                .into_iter()
                .chain(["memcached/get/3B/tcp", "memcached/get/3B/unix"])
                .map(move |cell| format!("{cell}{callers}"))
        })
        .collect();
    assert_eq!(order, expected);
}

/// A callers chart as drawn: its `data-points` and `data-lines`, the points and lines inside, and
/// each line's path data by client.
#[derive(Debug, Default)]
struct LinePlot {
    want_points: usize,
    want_lines: usize,
    points: usize,
    paths: BTreeMap<String, String>,
    dashed: Vec<String>,
}

/// The callers figures by id, each with its two charts (ops/s, p99).
fn line_plots(page: &str) -> BTreeMap<String, Vec<LinePlot>> {
    let mut out: BTreeMap<String, Vec<LinePlot>> = BTreeMap::new();
    let (mut figure, mut client) = (None, String::new());
    for tag in scan(page).unwrap().into_iter().filter(|t| !t.closing) {
        let count = |attr: &str| tag.attr(attr).unwrap().parse().unwrap();
        match tag.name.as_str() {
            "figure" => {
                figure = tag
                    .has_class("callers-chart")
                    .then(|| tag.attr("id").unwrap())
            }
            _ if figure.is_none() => {}
            "svg" => out
                .entry(figure.clone().unwrap())
                .or_default()
                .push(LinePlot {
                    want_points: count("data-points"),
                    want_lines: count("data-lines"),
                    ..LinePlot::default()
                }),
            "g" => client = tag.attr("data-client").unwrap(),
            "path" | "circle" => {
                let plot = out.get_mut(figure.as_ref().unwrap()).unwrap();
                let plot = plot.last_mut().unwrap();
                if tag.name == "circle" {
                    plot.points += 1;
                } else {
                    plot.paths.insert(client.clone(), tag.attr("d").unwrap());
                    if tag.attr("stroke-dasharray").is_some() {
                        plot.dashed.push(client.clone());
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[test]
fn callers_charts_draw_a_line_per_client_from_one_caller_with_gaps_not_zeros() {
    let value = fixture();
    let (_dir, page, summary) = rendered(&value);
    let plots = line_plots(&page);
    // GET 3 B and SET 3 B, each on both backends and transports; Redis TCP comes first.
    assert_eq!(plots.len(), 8, "{:?}", plots.keys());
    let rows = value["rows"].as_array().unwrap();
    let panel = |op: &str, backend: &str, transport: &str| {
        let rows = rows.iter().filter(move |r| {
            (r["op"] == op && r["value_size"] == 3 && r["backend"] == backend)
                && (r["transport"] == transport && r["client"] != "loopback-floor")
        });
        // A client is drawn when measured with many callers; the plain cell's row is its C = 1
        // point.
        let drawn: std::collections::BTreeSet<&str> = rows
            .clone()
            .filter(|r| r["status"] == "ok" && r["ops_per_sec"].is_number())
            .filter(|r| r["concurrency"] != 1)
            .map(|r| r["client"].as_str().unwrap())
            .collect();
        let rows: Vec<&Value> = rows
            .filter(|r| drawn.contains(r["client"].as_str().unwrap()))
            .collect();
        (drawn.len(), rows)
    };
    for (index, (op, backend, transport)) in [
        ("get", "redis", "tcp"),
        ("get", "redis", "unix"),
        ("get", "memcached", "tcp"),
        ("get", "memcached", "unix"),
        ("set", "redis", "tcp"),
    ]
    .into_iter()
    .enumerate()
    {
        let id = format!("callers-{}-{}", index / 4, index % 4);
        let (clients, rows) = panel(op, backend, transport);
        let measured = |field: &str| {
            (rows.iter())
                .filter(|r| r["status"] == "ok" && !r[field].is_null())
                .count()
        };
        let [ops, p99] = &plots[&id][..] else {
            panic!("{id}: two charts")
        };
        for (plot, want) in [
            (ops, measured("ops_per_sec")),
            (p99, measured("latency_ns")),
        ] {
            assert_eq!(plot.want_points, want, "{id}: a point per measured row");
            assert_eq!(plot.points, want, "{id}: every point drawn");
            assert_eq!(
                (plot.want_lines, plot.paths.len()),
                (clients, clients),
                "{id}"
            );
        }
    }
    // Redis TCP, GET: raw-tcp from one caller to 256; inline failed at 256, so its line stops at
    // 16; fred was unsupported at 16, so its line breaks there: no point drawn at 0 ops/s.
    let ops = &plots["callers-0-0"][0];
    let moves = |client: &str| {
        let path = &ops.paths[client];
        (path.matches('M').count(), path.matches('L').count())
    };
    assert_eq!(moves("raw-tcp"), (1, 2));
    assert_eq!(moves("inline"), (1, 1));
    assert_eq!(moves("fred"), (2, 0));
    assert_eq!(
        ops.dashed,
        ["redis-benchmark"],
        "the baseline tool is dashed"
    );
    assert!(
        !ops.paths.contains_key("raw-unix"),
        "unsupported on TCP: no line"
    );
    let memcached_unix = &plots["callers-0-3"][0].paths;
    assert!(
        !memcached_unix.contains_key("memcache"),
        "measured with one caller only: no line"
    );
    // Tooltips: client, C, value, model and connections.
    for title in [
        "<title>raw-tcp (hand-written) · 1 caller: 119,037 ops/s\nmodel threads, 1 connection</title>",
        "<title>redis-rs (library) · 256 callers: ",
        " ops/s\nmodel multiplexed, 1 connection\nmemory per caller 2 KiB</title>",
        "<title>redis-benchmark (baseline) · 16 callers: p99 ",
        "\nmodel event-loop, 16 connections",
    ] {
        assert!(page.contains(title), "{title}");
    }
    // The numbers, in the page and in summary.md: fred's model at the most callers, gaps named.
    assert!(
        page.contains(
            "<th data-type=\"num\" title=\"ops/s with 256 callers in flight\">C = 256</th>"
        )
    );
    let start = summary
        .find("## Callers in flight: GET (hit) · 3 B (ops/s)")
        .unwrap();
    let table = &summary[start..];
    let line = |client: &str| {
        let prefix = format!("| redis/tcp | {client} |");
        table
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap()
            .to_string()
    };
    let (fred, inline) = (line("fred"), line("inline"));
    for (row, needle) in [
        (&fred, "| library | pool | 4 | "),
        (&fred, " | unsupported | "),
        (&inline, "| threads | 16 | "),
        (&inline, " | failed |"),
    ] {
        assert!(row.contains(needle), "{needle:?} not in {row}");
    }
}

#[test]
fn strings_from_results_are_escaped() {
    let (_dir, page, summary) = rendered(&fixture());
    assert!(
        !page.contains(EVIL_CLIENT),
        "client name reached the page raw"
    );
    assert!(page.contains("&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;"));
    assert!(
        !page.contains("<b>waiting</b>"),
        "error text reached the page raw"
    );
    assert!(page.contains("&lt;b&gt;waiting&lt;/b&gt;"));
    assert!(page.contains("Fixture CPU @ 2.0GHz &lt;with markup&gt;"));
    // The only scripts are the page's own three.
    let scripts = scan(&page)
        .unwrap()
        .into_iter()
        .filter(|t| t.name == "script" && !t.closing)
        .count();
    assert_eq!(scripts, 3);

    assert!(!summary.contains(EVIL_CLIENT));
    assert!(summary.contains("&lt;script&gt;alert(\"pwned\")&lt;/script&gt;"));
    assert!(
        !summary.contains(EVIL_ERROR),
        "a raw | would break the table"
    );
    assert!(summary.contains(r"&lt;b&gt;waiting&lt;/b&gt; for reply \| &amp; more"));
}

#[test]
fn no_dead_links_and_links_only_to_reports_that_exist() {
    let (dir, page, _) = rendered(&fixture());
    let report = check_run_dir(dir.path()).unwrap();
    assert!(report.is_ok(), "{:#?}", report.problems);
    assert!(report.pages > 1, "criterion's pages are crawled too");
    assert!(report.external_links_in_criterion_pages > 0);
    let hrefs: Vec<String> = scan(&page)
        .unwrap()
        .iter()
        .filter_map(|t| t.attr("href"))
        .collect();
    assert!(hrefs.contains(&"criterion/redis_get_3B_unix/report/index.html".to_string()));
    // Written only for Redis cells: memcached's criterion_report names missing files.
    assert!(!hrefs.iter().any(|h| h.contains("memcached_")), "{hrefs:?}");
    assert!(!hrefs.iter().any(|h| h.contains("passwd")));
    for href in &hrefs {
        assert!(
            href.starts_with('#') || Path::new(dir.path()).join(href).is_file(),
            "{href} does not resolve"
        );
    }
}

#[test]
fn check_finds_dead_links_missing_charts_and_network_links() {
    let (dir, page, _) = rendered(&fixture());
    let tampered = page
        .replacen(
            "data-cell=\"memcached/get/3B/unix\"",
            "data-cell=\"renamed\"",
            1,
        )
        .replacen(
            "</footer>",
            "<a href=\"criterion/nope/report/index.html\">x</a><a href=\"#nowhere\">y</a>\
             <img src=\"https://cdn.example.invalid/x.png\"></footer>",
            1,
        );
    fs::write(dir.path().join("index.html"), tampered).unwrap();
    // A dead link inside one of criterion's pages is found too.
    let group = dir
        .path()
        .join("criterion/redis_get_3B_tcp/report/index.html");
    let text = fs::read_to_string(&group).unwrap();
    fs::write(&group, text.replace("violin.svg\">", "missing.svg\">")).unwrap();

    let problems = check_run_dir(dir.path()).unwrap().problems.join("\n");
    for needle in [
        "missing chart for cell \"memcached/get/3B/unix\"",
        "dead link href=\"criterion/nope/report/index.html\"",
        "href=\"#nowhere\" names no element id",
        "needs the network",
        "criterion/redis_get_3B_tcp/report/index.html: dead link href=\"missing.svg\"",
    ] {
        assert!(problems.contains(needle), "{needle:?} not in:\n{problems}");
    }
}

#[test]
fn cost_tables_carry_ratios_and_sort_keys() {
    let (_dir, page, _) = rendered(&fixture());
    let start = page
        .find("Cost per operation · <code>redis/get/3B/tcp</code>")
        .unwrap();
    let table = &page[start..start + page[start..].find("</table>").unwrap()];
    let raw_tcp = table
        .lines()
        .find(|l| l.starts_with("<tr><td>raw-tcp</td>"))
        .expect("raw-tcp row");
    // No paired rounds in the 2 KiB cells of this fixture: the ratios are of rows timed apart.
    let start = page
        .find("Cost per operation · <code>redis/get/2KiB/tcp</code>")
        .unwrap();
    let apart = &page[start..start + page[start..].find("</table>").unwrap()];
    assert!(apart.contains("<p class=\"paired\">No paired rounds in this cell"));
    assert!(apart.contains(", timed apart)</td>"), "{apart}");
    // raw-tcp takes 0.70 of the base time (the fastest client), buffered 0.74,
    // redis-benchmark 0.95, and the loopback floor 0.50 (not a client: not "fastest").
    assert!(
        raw_tcp.contains(">1.36× ("),
        "× redis-benchmark, with its range: {raw_tcp}"
    );
    assert!(raw_tcp.contains(">1.00×<"), "× fastest: {raw_tcp}");
    assert!(raw_tcp.contains(">1.40×<"), "time × floor: {raw_tcp}");
    let buffered = table
        .lines()
        .find(|l| l.starts_with("<tr><td>buffered</td>"))
        .unwrap();
    // Paired in this cell: × reference and × fastest (both raw-tcp) are the median of the
    // rounds' ratios with their interval, and the rule's word against the reference.
    assert!(
        buffered.contains("title=\"11 rounds; A/A 0.1 %\">0.95× (0.94–0.95×)</td><td>slower</td>"),
        "× reference: {buffered}"
    );
    assert!(
        buffered.contains("title=\"slower; paired over 11 rounds, A/A 0.1 %\">0.95× (0.94–0.95×)<"),
        "× fastest: {buffered}"
    );
    assert!(raw_tcp.contains(">reference</td><td>–</td>"), "{raw_tcp}");
    // The cell says how it was timed and its A/A ratio above the table.
    assert!(
        table.contains("<p class=\"paired\">Paired over 11 rounds; × raw-tcp is each row"),
        "{table}"
    );
    assert!(table.contains("A/A: raw-tcp timed twice in the same rounds, 1.00"));
    // CPU 0.42 and p50 0.95 of the 8.4 µs mean.
    assert!(raw_tcp.contains(">3.53 µs<"), "CPU/op: {raw_tcp}");
    assert!(raw_tcp.contains(">7.98 µs<"), "p50: {raw_tcp}");
    // Bytes read and written per op, from the server's counters.
    assert!(raw_tcp.contains(">9 B<"), "bytes read/op: {raw_tcp}");
    assert!(raw_tcp.contains(">30 B<"), "bytes written/op: {raw_tcp}");
    assert!(table.contains(">bytes read/op</th>"));
    // Sortable: every numeric cell carries its raw value.
    let numeric = raw_tcp.matches("class=\"num\" data-v=").count();
    assert_eq!(numeric, 19, "{raw_tcp}");
    // What the interval is, and the run-to-run spread.
    assert!(raw_tcp.contains("<td>range of 3</td>"), "{raw_tcp}");
    assert!(raw_tcp.contains(">5.1 %<"), "noise: {raw_tcp}");
    assert!(table.contains("<th data-type=\"num\">ops/s</th>"));
    assert!(page.contains("table.sortable"), "the sort script is inline");
    // The fastest row comes first.
    let first = table.lines().find(|l| l.starts_with("<tr><td>")).unwrap();
    assert!(first.starts_with("<tr><td>loopback-floor</td>"), "{first}");
}

/// Counted instructions per operation: in the cost table beside syscalls/op, with the spread
/// above 0.1 % and the owners as tooltip; `not counted` for a measured row without a count; a
/// work chart in the counted cell only; the CPU columns labelled tick-sampled; the same in the
/// summary.
#[test]
fn cost_tables_and_charts_carry_counted_instructions_or_say_not_counted() {
    let (_dir, page, summary) = common::rendered(&common::fixture());
    let heads = "<th data-type=\"num\" title=\"user-space instructions";
    assert!(page.contains(heads), "instructions/op header");
    assert!(page.contains(">user/op, tick-sampled</th>"));
    let table_of = |cell: &str| {
        let at = page
            .find(&format!("Cost per operation · <code>{cell}</code>"))
            .unwrap();
        let end = at + page[at..].find("</details>").unwrap();
        &page[at..end]
    };
    let table = table_of("redis/get/3B/tcp");
    let line = |client: &str| {
        let start = format!("<tr><td>{client}</td>");
        (table.lines()).find(|l| l.starts_with(&start)).unwrap()
    };
    let raw_tcp = line("raw-tcp");
    assert!(
        raw_tcp.contains("data-v=\"1398.2\" title=\"user-space instructions per operation under valgrind, 2,000 calls per caller in each phase; by owner: ours 925, libc 192\">1,398</td><td class=\"num\" data-v=\"2\">2</td>"),
        "counted, then syscalls/op: {raw_tcp}"
    );
    assert!(line("redis-rs").contains(">8,986 (spread 38 %)<"));
    let buffered = line("buffered");
    assert!(
        buffered.contains("not counted in this run (the run&#39;s notes say why)\">not counted<"),
        "{buffered}"
    );
    assert!(line("redis-benchmark").contains("a baseline tool or floor is not a client"));
    assert!(table.contains("counted under valgrind-3.19.0"), "{table}");
    assert!(table.contains("context, not a verdict"), "{table}");
    assert!(table_of("redis/get/3B/unix").contains("Instructions/op: not counted in this cell."));
    // A work chart where something was counted: a bar per counted client.
    let charts: Vec<&str> = page.split("<svg class=\"work\"").skip(1).collect();
    assert_eq!(
        charts.len(),
        3,
        "GET 3 B over TCP, at 1, 16 and 256 callers"
    );
    assert!(charts[0].contains("data-work=\"2\""));
    assert_eq!(
        charts[0]
            .split("</svg>")
            .next()
            .unwrap()
            .matches("<rect class=\"work\"")
            .count(),
        2
    );
    assert!(charts[0].contains(">not counted</text>"));
    // The summary: the same columns, the same words.
    assert!(summary.contains("| instructions/op | syscalls/op |"));
    assert!(summary.contains("| 8,986 (spread 38 %) |"));
    assert!(summary.contains("| not counted |"));
}

#[test]
fn failed_and_unsupported_pairs_are_listed_with_reasons() {
    let value = fixture();
    let (_dir, page, summary) = rendered(&value);
    let section = &page[page.find("<section id=\"problems\">").unwrap()..];
    let section = &section[..section.find("</section>").unwrap()];
    let expected = value["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] != "ok")
        .count();
    assert_eq!(section.matches("<tr><td><code>").count(), expected);
    // An ok row without a throughput is not a failure: its chart and table say "not timed",
    // and its cost table row keeps the numbers it has.
    assert!(!section.contains(">not timed<"));
    let start = page
        .find("Cost per operation · <code>redis/get/1MiB/unix</code>")
        .unwrap();
    let table = &page[start..start + page[start..].find("</table>").unwrap()];
    let inline = table
        .lines()
        .find(|l| l.starts_with("<tr><td>inline</td>"))
        .unwrap();
    assert!(inline.contains(">not timed</td>"), "{inline}");
    assert!(
        inline.contains("µs</td>"),
        "CPU and latency still shown: {inline}"
    );
    for reason in [
        "raw-tcp speaks TCP only",
        "redis-benchmark cannot express a GET miss",
        "the inline protocol cannot carry a 100 KiB value",
        "failed (no reason given)",
    ] {
        assert!(section.contains(reason), "{reason}");
        assert!(summary.contains(reason), "{reason} in summary.md");
        // In a cost table, a status word in the cell and the reason in a note under the table:
        // a sentence in a cell would squeeze the table's columns.
        assert!(
            page.lines()
                .any(|l| l.starts_with("<p class=\"note\">") && l.contains(reason)),
            "{reason} in a note under its cost table"
        );
    }
    let cost_tables = &page[..page.find("<section id=\"problems\">").unwrap()];
    assert!(
        !cost_tables.contains("colspan"),
        "no cost table cell spans columns"
    );
    assert!(cost_tables.contains(">unsupported</td>"));
}

#[test]
fn optional_operation_cells_say_what_they_count_and_who_lacks_the_operation() {
    let value = fixture();
    let (_dir, page, summary) = rendered(&value);
    for heading in [
        "<h3>INCR · counter</h3>",
        "<h3>Many keys, one command (MGET, multi-get) · 100 keys · 3 B</h3>",
        "<h3>Many keys, pipelined GETs · 100 keys · 2 KiB</h3>",
        "<h3>Hash: HSET of many fields, then HGETALL · 100 fields · 3 B</h3>",
        "<h3>SETs in MULTI … EXEC · 100 SETs · 3 B</h3>",
    ] {
        assert!(page.contains(heading), "{heading}");
    }
    // Sections of many items per call say what their numbers count.
    assert!(page.contains("ops/s, the costs and the ratios count keys"));
    assert!(page.contains("ops/s, the costs and the ratios count SETs"));
    assert!(summary.contains("the costs and the ratios count fields"));
    // Only Redis has hashes and transactions; memcached has INCR and multi-get.
    let ids = cells(&value);
    assert!(ids.contains(&"memcached/get_many/100/2KiB/unix".to_string()));
    assert!(ids.contains(&"memcached/incr/counter/tcp".to_string()));
    assert!(!ids.iter().any(|id| id.starts_with("memcached/hash")));
    // A client without the operation is listed, with the operation it lacks.
    let problems = &page[page.find("<section id=\"problems\">").unwrap()..];
    assert!(problems.contains("<code>redis/get_many/100/3B/tcp</code>"));
    assert!(problems.contains("the client does not implement get_many"));
    assert!(summary.contains("redis-benchmark cannot send MULTI"));
}

#[test]
fn environment_section_shows_the_run() {
    let (_dir, page, summary) = rendered(&fixture());
    let section = &page[page.find("<section id=\"environment\">").unwrap()..];
    let section = &section[..section.find("</section>").unwrap()];
    for needle in [
        "0123456789abcdef0123456789abcdef01234567",
        "6.1.0-fixture",
        "rustc 1.95.0 (fixture)",
        "2 logical CPUs",
        "same-core (servers on CPU 1, bench on CPU 1)",
        "7.0.15",
        "1.6.18",
        "memcached -m 256 -I 2m",
        "redis-server --port 40001 --save &quot;&quot; --appendonly no",
        "a note the report should show",
        "Known library defects",
        "stack overflow &lt;kills the process&gt;",
        "median spread",
        "17 min 42 s",
        "<th>instructions counted by</th><td>valgrind-3.19.0</td>",
    ] {
        assert!(section.contains(needle), "{needle} missing");
    }
    assert!(summary.contains("same-core (servers on CPU 1, bench on CPU 1)"));
    assert!(summary.contains("| Redis | 7.0.15 —"));
}

#[test]
fn lessons_section_by_default_and_the_hook_takes_more() {
    let (dir, page, _) = rendered(&fixture());
    assert!(page.contains("<!-- LESSONS HOOK:"));
    // Every report ends with the lessons computed from its own run; outside a checkout their
    // code references name file and anchor, without links.
    assert_eq!(page.matches("<section class=\"lesson\"").count(), 1);
    assert!(page.contains("<section class=\"lesson\" id=\"lesson-trade-offs\">"));
    assert!(page.contains("<a href=\"#lesson-trade-offs\">"));
    assert_eq!(
        page.matches("<article class=\"lesson-item\"").count(),
        kvbench_report::lessons::catalogue::LESSONS.len()
    );
    assert!(!page.contains("class=\"source\""));
    assert!(page.contains("not inside a kvbench checkout"));

    let lesson = Section {
        id: "why pipelines".into(),
        title: "Why <pipelines> win".into(),
        html: "<p>One write, <em>many</em> commands.</p>".into(),
    };
    render_run_with_lessons(dir.path(), &[lesson]).unwrap();
    let page = fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert!(page.contains(
        "<section class=\"lesson\" id=\"lesson-why-pipelines\">\n<h2>Why &lt;pipelines&gt; win</h2>\n\
         <p>One write, <em>many</em> commands.</p>"
    ));
    assert!(page.contains("<a href=\"#lesson-why-pipelines\">"));
    assert!(check_run_dir(dir.path()).unwrap().is_ok());
}

#[test]
fn summary_md_has_the_headline_and_a_table_per_cell() {
    let value = fixture();
    let (_dir, _, summary) = rendered(&value);
    let cells = cells(&value);
    assert_eq!(summary.matches("\n### ").count(), cells.len());
    assert!(summary.contains("\n### redis/get\\_miss/none/tcp · Redis · TCP\n"));
    let headline = &summary[summary.find("## Headline").unwrap()..];
    let headline = &headline[..headline.find("\n\n## ").unwrap()];
    // Header, separator, one line per cell.
    assert_eq!(
        headline.lines().filter(|l| l.starts_with('|')).count(),
        cells.len() + 2
    );
    // Every line of a table has as many columns as its header (escaped `\|` is no separator).
    let columns = |line: &str| line.replace("\\|", "").matches('|').count();
    let mut header = None;
    for line in summary.lines() {
        match (line.starts_with('|'), header) {
            (true, None) => header = Some(columns(line)),
            (true, Some(n)) => assert_eq!(columns(line), n, "{line}"),
            (false, _) => header = None,
        }
    }
    assert!(summary.contains("## Pipelined SET by depth (ops/s)"));
    assert!(summary.contains("| buffered | hand-written | redis/tcp |"));
}

#[test]
fn a_run_without_rows_renders() {
    let mut value = common::fixture();
    value["rows"] = json!([]);
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("results.json"), value.to_string()).unwrap();
    render_run(dir.path()).unwrap();
    let report = check_run_dir(dir.path()).unwrap();
    assert!(report.is_ok(), "{:#?}", report.problems);
}

#[test]
fn bad_input_is_a_typed_error_that_names_what_is_wrong() {
    use kvbench_report::results::Error as SchemaError;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.json");
    assert!(matches!(
        render_run(dir.path()),
        Err(Error::Results(SchemaError::Read { .. }))
    ));
    fs::write(&results, "{").unwrap();
    assert!(matches!(
        render_run(dir.path()),
        Err(Error::Results(SchemaError::Parse { .. }))
    ));
    // Sparse files of the old, lenient days: refused as another schema version.
    for value in [json!({}), json!({"rows": [{"status": "ok", "op": "get"}]})] {
        fs::write(&results, value.to_string()).unwrap();
        assert!(matches!(
            render_run(dir.path()),
            Err(Error::Results(SchemaError::Version { found: None, .. }))
        ));
    }
    // A wrong type, a missing field: the message names the file and the field.
    let mut value = common::fixture();
    value["rows"][0]["ops_per_sec"] = json!("fast");
    fs::write(&results, value.to_string()).unwrap();
    let error = render_run(dir.path()).unwrap_err().to_string();
    assert!(error.contains("results.json"), "{error}");
    assert!(error.contains("invalid type: string \"fast\""), "{error}");
    value["rows"][0]["ops_per_sec"] = json!(1.0);
    value["rows"][0].as_object_mut().unwrap().remove("status");
    fs::write(&results, value.to_string()).unwrap();
    let error = render_run(dir.path()).unwrap_err().to_string();
    assert!(error.contains("missing field `status`"), "{error}");
}
