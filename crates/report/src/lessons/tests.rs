//! The lessons against committed fixtures (`tests/fixtures/lessons/`: rows of real runs, and the
//! same rows with every number changed): numbers come from the fixture, regeneration touches only
//! generated blocks, missing rows are named, anchors resolve, marker problems are typed errors.
//! The lesson files are checked too: every table and anchor they declare is shown, and only once.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use super::*;
use crate::check::{check_run_dir, scan, well_formed};

const FIXTURE_A: &str = include_str!("../../tests/fixtures/lessons/a.json");
const FIXTURE_B: &str = include_str!("../../tests/fixtures/lessons/b.json");
const FIXTURE_SPLIT: &str = include_str!("../../tests/fixtures/lessons/split.json");
/// A real run of the counted pass alone (GET 3 B cells, quick mode): instructions per
/// operation, by owner and function, and no timing.
const FIXTURE_COUNTED: &str = include_str!("../../tests/fixtures/lessons/counted.json");

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn parse(text: &str) -> Results {
    serde_json::from_str(text).unwrap()
}

/// Every file `make lessons` reads or writes, copied into a scratch checkout with the fixtures as
/// runs `reports/a` (with `split/`) and `reports/b`.
fn checkout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let real = workspace();
    let mut files: BTreeSet<String> = LESSONS
        .iter()
        .flat_map(|l| l.code.iter().map(|c| c.path.clone()))
        .collect();
    files.insert(DOCS_FILE.into());
    files.insert("README.md".into());
    files.insert("Cargo.toml".into());
    for (readme, _) in client_readmes(&real).unwrap() {
        files.insert(readme.strip_prefix(&real).unwrap().display().to_string());
    }
    for file in files {
        let target = root.join(&file);
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::copy(real.join(&file), target).unwrap();
    }
    for (run, text) in [
        ("a", FIXTURE_A),
        ("a/split", FIXTURE_SPLIT),
        ("b", FIXTURE_B),
    ] {
        let run = root.join("reports").join(run);
        fs::create_dir_all(&run).unwrap();
        fs::write(run.join("results.json"), text).unwrap();
    }
    dir
}

fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs = vec![root.join(DOCS_FILE), root.join("README.md")];
    docs.extend(
        client_readmes(root)
            .unwrap()
            .into_iter()
            .map(|(readme, _)| readme),
    );
    docs
}

fn runs<'a>(main: &'a Results, split: Option<&'a Results>) -> Runs<'a> {
    Runs {
        main: RunRef::new(main, Path::new("a"), "reports/a/results.json".into()),
        split: split
            .map(|s| RunRef::new(s, Path::new("split"), "reports/a/split/results.json".into())),
    }
}

fn all_markdown(runs: &Runs) -> String {
    let code = Code::strict(&workspace()).unwrap();
    lessons_markdown(runs, &code, "##", Some("../")).concat()
}

/// (client, cell, run id) → fixture row, for every table row of the generated Markdown; then
/// each number cell must be exactly that row's number, formatted, and the ratio the ratio of
/// numbers shown.
#[test]
fn every_table_number_is_the_fixtures() {
    let a = parse(FIXTURE_A);
    let split = parse(FIXTURE_SPLIT);
    let text = all_markdown(&runs(&a, Some(&split)));
    let mut checked = 0;
    let mut first_ops: Option<f64> = None;
    let mut head: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.starts_with("|-") {
            continue;
        }
        if !line.starts_with("| ") {
            first_ops = None;
            head.clear();
            continue;
        }
        let cells: Vec<String> = line
            .trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().trim_matches('`').to_string())
            .collect();
        if head.is_empty() {
            head = cells;
            continue;
        }
        // An owner table (where the instructions went) is checked by its own test.
        if !head.iter().any(|h| h == "ops/s") {
            continue;
        }
        let column = |name: &str| head.iter().position(|h| h == name).unwrap();
        let results = match head.first().map(String::as_str) {
            Some("run (placement)") if cells[0].starts_with("fixture-split") => &split,
            Some("run (placement)") if cells[0].starts_with("split: none") => continue,
            _ => &a,
        };
        let (client, cell) = (&cells[column("client")], &cells[column("cell")]);
        let row = results
            .rows
            .iter()
            .find(|r| &r.client == client && &r.cell == cell);
        let ops_cell = &cells[column("ops/s")];
        let Some(row) = row else {
            assert_eq!(ops_cell, "not measured in this run", "{line}");
            continue;
        };
        match row.ops() {
            Some(ops) => {
                assert_eq!(ops_cell, &format::grouped(ops), "{line}");
                let first = *first_ops.get_or_insert(ops);
                assert_eq!(cells[column(RATIO_HEAD)], ratio_text(ops / first), "{line}");
            }
            None => assert!(ops_cell.contains(row.status.as_str()), "{line}"),
        }
        let p99 = row.latency_ns.map(|l| l.p99 as f64);
        let cpu = match (row.cpu_ns_per_op, row.user_ns_per_op, row.sys_ns_per_op) {
            (Some(cpu), Some(user), Some(sys)) => format!(
                "{} ({} + {})",
                format::duration_ns(cpu),
                format::duration_ns(user),
                format::duration_ns(sys)
            ),
            (cpu, _, _) => format::opt(cpu, format::duration_ns),
        };
        let instructions = match &row.instructions_per_op {
            Some(counted) => format::markdown(&format::instructions(counted)),
            None if row.is_ok() => format::NOT_COUNTED.to_string(),
            None => "–".to_string(),
        };
        for (name, want) in [
            ("instructions/op", instructions),
            ("CPU/op, tick-sampled (user + sys)", cpu),
            (
                "syscalls/op",
                format::opt(row.syscalls_per_op, |v| format::significant(v, 3)),
            ),
            (
                "bytes read/op",
                format::opt(row.bytes_read_per_op, format::bytes),
            ),
            (
                "allocs/op",
                format::opt(row.allocs_per_op, |v| format::significant(v, 3)),
            ),
            ("p99", format::opt(p99, format::duration_ns)),
        ] {
            assert_eq!(cells[column(name)], want, "{name}: {line}");
        }
        checked += 1;
    }
    assert!(checked > 50, "only {checked} rows checked");
}

/// Number-like tokens (`55,326`, `1.38`, `0.00041`) of a text.
fn numbers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in text.chars().chain([' ']) {
        if c.is_ascii_digit() || (!current.is_empty() && (c == '.' || c == ',')) {
            current.push(c);
        } else if !current.is_empty() {
            out.push(current.trim_end_matches(['.', ',']).to_string());
            current.clear();
        }
    }
    out
}

/// Beyond the tables: strip the catalogue's fixed prose and the code links, and every number
/// left in the lessons, the headline and the crate tables is a fixture value (formatted as the
/// report formats it), a ratio of two of them, or part of a cell name, run id or duration.
#[test]
fn every_number_printed_comes_from_the_fixture() {
    let a = parse(FIXTURE_A);
    let split = parse(FIXTURE_SPLIT);
    let runs = runs(&a, Some(&split));
    let mut text = all_markdown(&runs);
    text.push_str(&headline_markdown(&runs));
    for (_, clients) in client_readmes(&workspace()).unwrap() {
        text.push_str(&measured_markdown(&runs, &clients));
    }
    // Code links first (their line numbers are the source's), then the lesson files' own text:
    // every line piece outside a placeholder.
    let mut text: String = text
        .lines()
        .filter(|l| !l.starts_with("- ["))
        .collect::<Vec<_>>()
        .join("\n");
    for (index, lesson) in LESSONS.iter().enumerate() {
        text = text.replace(&format!("## {}. {}", index + 1, lesson.title), "## ");
        for line in lesson.body.lines() {
            let pieces = line
                .split("{{")
                .map(|piece| piece.rsplit_once("}}").map_or(piece, |(_, after)| after));
            for piece in pieces.filter(|p| p.trim().len() > 2) {
                text = text.replace(piece.trim(), "");
            }
        }
    }

    let mut allowed: BTreeSet<String> = BTreeSet::new();
    let mut allow = |s: &str| allowed.extend(numbers(s));
    let mut all_ops = Vec::new();
    for (results, id) in [(&a, "fixture-a"), (&split, "fixture-split")] {
        allow(id);
        allow(&format!("{:?}", results.run.placement));
        allow(&format::run_duration(results.run.duration_s));
        for row in &results.rows {
            allow(&row.cell);
            allow(&row.error.clone().unwrap_or_default());
            allow(&format::depth(row.pipeline));
            allow(&format::size(row.value_size));
            let p99 = row.latency_ns.map(|l| l.p99 as f64);
            for value in [
                row.cpu_ns_per_op,
                row.user_ns_per_op,
                row.sys_ns_per_op,
                p99,
            ]
            .into_iter()
            .flatten()
            {
                allow(&format::duration_ns(value));
            }
            for value in [row.syscalls_per_op, row.allocs_per_op]
                .into_iter()
                .flatten()
            {
                allow(&format::significant(value, 3));
            }
            if let Some(bytes) = row.bytes_read_per_op {
                allow(&format::bytes(bytes));
            }
            if let Some(ops) = row.ops() {
                allow(&format::grouped(ops));
                all_ops.push(ops);
            }
        }
    }
    for x in &all_ops {
        for y in &all_ops {
            allow(&ratio_text(x / y));
            allow(&paired::ratio(x / y));
        }
    }
    // Ratios of rows timed apart are quoted with the range of their intervals.
    let intervals: Vec<(f64, (f64, f64))> = (a.rows.iter().chain(&split.rows))
        .filter_map(|row| Some((row.ops()?, row.ops_interval()?)))
        .collect();
    for (x, (x_low, x_high)) in &intervals {
        for (y, (y_low, y_high)) in &intervals {
            allow(&paired::with_interval(
                x / y,
                (x_low / y_high, x_high / y_low),
            ));
        }
    }
    // The rule's constants: the 95 % interval and the prior A/A deviation.
    allow("95");
    allow(&paired::percent(verdict::PRIOR_AA_DEVIATION));
    allow("p99");
    for pick in LESSONS.iter().flat_map(|l| l.tables.iter().flatten()) {
        allow(&pick.cell);
    }
    for &(_, _, size, depth) in MAIN_CELLS {
        allow(&format::size(size.unwrap_or(0)));
        allow(&format::depth(depth));
    }
    let stray: Vec<String> = numbers(&text)
        .into_iter()
        .filter(|n| !allowed.contains(n))
        .collect();
    assert!(
        stray.is_empty(),
        "numbers not from the fixture: {stray:?}\n{text}"
    );
}

#[test]
fn missing_failed_and_absent_rows_are_named_not_invented() {
    let b = parse(FIXTURE_B);
    let text = all_markdown(&runs(&b, None));
    // fred GET 1 MiB is not in the fixture.
    assert!(
        text.contains(
            "| `fred` | `redis/get/1MiB/tcp` | not measured in this run | – | – | – | – | – |"
        ),
        "{text}"
    );
    // inline GET 3 B TCP failed: the status and a note number in the cell, no number; the
    // reason in a note under the table (a reason in the cell crushes the other columns).
    assert!(
        text.contains("| `inline` | `redis/get/3B/tcp` | failed (note 1) | – | – | – | – | – |")
    );
    assert!(text.contains(
        "Note 1: `inline` (`redis/get/3B/tcp`): failed: verification failed: GET returned 4 bytes, expected 3"
    ));
    // The 100 KiB inline SET is unsupported, with the client's reason under the table.
    assert!(text.contains("| `inline` | `redis/set_ex/100KiB/tcp` | unsupported (note "));
    assert!(
        text.contains("`inline` (`redis/set_ex/100KiB/tcp`): unsupported: refused before sending")
    );
    // No split run: lesson 9 says how to make one.
    assert!(
        text.contains(
            "| split: none given | `raw-tcp` | `redis/get/3B/tcp` | no split run given |"
        )
    );
    assert!(text.contains("`PLACEMENT=split make bench-quick`"));
    assert!(text.contains("`make lessons RUN=<this run> SPLIT_RUN=<that run>`"));
    // SET 3 B (depth 1) is not in the fixture: the ratio starts at the first measured depth.
    assert!(text.contains("| `buffered` | `redis/set/3B/tcp` | not measured in this run |"));

    // A run without rows: every row of every table says so.
    let mut empty = parse(FIXTURE_A);
    empty.rows.clear();
    let text = all_markdown(&runs(&empty, None));
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("| `") || l.starts_with("| split"))
        .collect();
    assert!(rows.len() > 50);
    for row in rows {
        assert!(
            row.contains("| not measured in this run | – | – | – | – | – |")
                || row.contains("| no split run given | – | – | – | – | – |"),
            "{row}"
        );
    }
    let headline = headline_markdown(&runs(&empty, None));
    assert!(headline.contains("not measured in this run"));
    assert!(
        measured_markdown(&runs(&empty, None), "raw-tcp")
            .contains("Not measured in this run: GET (hit) 3 B;")
    );
}

#[test]
fn every_code_anchor_resolves_in_this_tree() {
    let root = workspace();
    let code = Code::strict(&root).expect("every anchor resolves");
    let mut paths = BTreeMap::new();
    for reference in LESSONS.iter().flat_map(|l| &l.code) {
        // One name, one place: a lesson file names anchors without their file's context.
        let path = paths.entry(&reference.anchor).or_insert(&reference.path);
        assert_eq!(
            *path, &reference.path,
            "anchor {} in two files",
            reference.anchor
        );
        let at = &code.resolved[reference];
        let text = fs::read_to_string(root.join(&reference.path)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            at.start <= at.end && at.end < lines.len(),
            "{reference:?}: {at:?}"
        );
        assert_eq!(
            lines[at.start - 2].trim(),
            format!("// ANCHOR: {}", reference.anchor)
        );
        assert_eq!(
            lines[at.end].trim(),
            format!("// ANCHOR_END: {}", reference.anchor)
        );
        assert!(
            at.end - at.start < 60,
            "{reference:?} spans {at:?}: too long to be a few lines"
        );
    }
}

#[test]
fn every_table_and_anchor_a_lesson_declares_is_shown_once() {
    let a = parse(FIXTURE_A);
    let runs = runs(&a, None);
    let code = Code::strict(&workspace()).unwrap();
    let pages = lessons_markdown(&runs, &code, "##", Some("../"));
    assert_eq!(pages.len(), LESSONS.len());
    for (lesson, page) in LESSONS.iter().zip(&pages) {
        assert!(
            !lesson.tables.is_empty() && !lesson.code.is_empty(),
            "{}",
            lesson.id
        );
        for index in 0..lesson.tables.len() {
            assert_eq!(
                lesson
                    .body
                    .matches(&format!("{{{{ tables[{index}] }}}}"))
                    .count(),
                1
            );
        }
        assert_eq!(
            page.matches("| client | cell |").count(),
            lesson.tables.len(),
            "{page}"
        );
        for reference in &lesson.code {
            let placeholder = format!("{{{{ code.{} }}}}", reference.anchor);
            assert_eq!(
                lesson.body.matches(&placeholder).count(),
                1,
                "{}",
                lesson.id
            );
            assert!(
                page.contains(&format!("- [`{}` line", reference.path)),
                "{page}"
            );
        }
        assert!(!page.contains("{{") && !page.contains("}}"), "{page}");
    }
    // Without a source tree, a reference names its file and anchor instead of lines.
    let page = lessons_markdown(&runs, &Code::lenient(None), "##", None).concat();
    assert!(page.contains("- `crates/raw-unix/src/lib.rs` at anchor `connect_unix`: all of"));
}

#[test]
fn regenerating_from_another_run_changes_only_generated_blocks() {
    let dir = checkout();
    let root = dir.path();
    let before: Vec<String> = documents(root)
        .iter()
        .map(|p| fs::read_to_string(p).unwrap())
        .collect();
    let first = generate(&root.join("reports/a"), None, None).unwrap();
    let after_a: Vec<String> = documents(root)
        .iter()
        .map(|p| fs::read_to_string(p).unwrap())
        .collect();
    generate(&root.join("reports/b"), None, None).unwrap();
    let after_b: Vec<String> = documents(root)
        .iter()
        .map(|p| fs::read_to_string(p).unwrap())
        .collect();
    for ((old, a), b) in before.iter().zip(&after_a).zip(&after_b) {
        assert_eq!(markers::outside_blocks(old), markers::outside_blocks(a));
        assert_eq!(
            markers::outside_blocks(a).as_bytes(),
            markers::outside_blocks(b).as_bytes()
        );
        assert_ne!(a, b, "new numbers in every document");
    }
    let docs = &after_b[0];
    assert_eq!(
        docs.matches("from reports/b/results.json by `make lessons`")
            .count(),
        LESSONS.len()
    );
    assert!(!docs.contains("reports/a/"));
    // The same run twice: nothing changes.
    generate(&root.join("reports/b"), None, None).unwrap();
    let again: Vec<String> = documents(root)
        .iter()
        .map(|p| fs::read_to_string(p).unwrap())
        .collect();
    assert_eq!(again, after_b);
    assert!(first.iter().any(|p| p.ends_with("reports/a/lessons.md")));
}

#[test]
fn split_run_is_found_in_the_run_folder_or_named() {
    let dir = checkout();
    let root = dir.path();
    generate(&root.join("reports/a"), None, None).unwrap();
    let page = fs::read_to_string(root.join("reports/a/lessons.md")).unwrap();
    assert!(page.contains("split placement in run `fixture-split` (mode full; placement split, servers on CPU 1, bench on CPU 0), from `reports/a/split/results.json`"), "{page}");
    assert!(page.contains("| fixture-split (split) | `raw-tcp` | `redis/get/3B/tcp` |"));
    // Named explicitly: B has no split folder, A's split run is used.
    generate(
        &root.join("reports/b"),
        Some(&root.join("reports/a/split")),
        None,
    )
    .unwrap();
    let page = fs::read_to_string(root.join("reports/b/lessons.md")).unwrap();
    assert!(page.contains("| fixture-split (split) |"));
    // Not named, not present.
    fs::remove_dir_all(root.join("reports/a/split")).unwrap();
    generate(&root.join("reports/a"), None, None).unwrap();
    let page = fs::read_to_string(root.join("reports/a/lessons.md")).unwrap();
    assert!(page.contains("No split-placement run was given"));
}

#[test]
fn the_report_gets_the_lessons_with_links_that_resolve() {
    let dir = checkout();
    let run = dir.path().join("reports/a");
    crate::render_run(&run).unwrap();
    let page = fs::read_to_string(run.join(crate::INDEX_FILE)).unwrap();
    well_formed(&scan(&page).unwrap()).unwrap();
    assert!(page.contains("<section class=\"lesson\" id=\"lesson-trade-offs\">"));
    assert!(page.contains("<article class=\"lesson-item\" id=\"lesson-9-placement\">"));
    assert!(page.contains("<a class=\"source\" href=\"../../crates/raw-unix/src/lib.rs#L"));
    assert!(
        page.contains("fixture-split (split)"),
        "the split folder is used by render_run"
    );
    let report = check_run_dir(&run).unwrap();
    assert!(report.is_ok(), "{:#?}", report.problems);
    // A source link to a file that is gone is a problem.
    fs::remove_file(dir.path().join("crates/raw-unix/src/lib.rs")).unwrap();
    let problems = check_run_dir(&run).unwrap().problems.join("\n");
    assert!(problems.contains("dead source link"), "{problems}");
}

#[test]
fn marker_and_anchor_problems_are_typed_errors() {
    let dir = checkout();
    let root = dir.path();
    let docs = root.join(DOCS_FILE);
    let text = fs::read_to_string(&docs).unwrap();
    let run = root.join("reports/a");

    fs::write(
        &docs,
        text.replace("<!-- END GENERATED lessons:4-inline -->\n", ""),
    )
    .unwrap();
    match generate(&run, None, None) {
        Err(Error::Marker { name, problem, .. }) => {
            assert_eq!(
                (name.as_str(), problem),
                ("4-inline", markers::MarkerProblem::MissingEnd)
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        fs::read_to_string(&docs).unwrap(),
        text.replace("<!-- END GENERATED lessons:4-inline -->\n", ""),
        "nothing written"
    );

    fs::write(&docs, format!("{text}\n{text}")).unwrap();
    assert!(matches!(
        generate(&run, None, None),
        Err(Error::Marker {
            problem: markers::MarkerProblem::Duplicated,
            ..
        })
    ));

    fs::write(&docs, &text).unwrap();
    let readme = root.join("crates/lib-fred/README.md");
    fs::write(
        &readme,
        "# no block\n<!-- lessons:measured clients: fred -->\n",
    )
    .unwrap();
    let error = generate(&run, None, None).unwrap_err();
    assert!(matches!(
        error,
        Error::Marker {
            problem: markers::MarkerProblem::MissingBegin,
            ..
        }
    ));
    assert!(
        error
            .to_string()
            .contains("lib-fred/README.md: block lessons:measured: no BEGIN marker"),
        "{error}"
    );
    // A problem in one document writes none of them.
    assert_eq!(fs::read_to_string(&docs).unwrap(), text, "nothing written");
    assert!(!run.join(LESSONS_FILE).exists(), "nothing written");

    let source = root.join("crates/raw-unix/src/lib.rs");
    let code = fs::read_to_string(&source).unwrap();
    fs::write(&source, code.replace("// ANCHOR: connect_unix\n", "")).unwrap();
    let error = generate(&run, None, None).unwrap_err();
    assert!(matches!(error, Error::Anchor { .. }), "{error}");
    assert!(error.to_string().contains("connect_unix"), "{error}");

    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("results.json"), FIXTURE_A).unwrap();
    assert!(matches!(
        generate(outside.path(), None, None),
        Err(Error::NoSourceTree { .. })
    ));
}

#[test]
fn every_measured_block_is_found_by_its_clients_comment() {
    let root = workspace();
    let found: BTreeSet<PathBuf> = client_readmes(&root)
        .unwrap()
        .into_iter()
        .map(|(readme, clients)| {
            assert!(!clients.is_empty(), "{}", readme.display());
            readme
        })
        .collect();
    assert!(found.len() >= 8, "{found:?}");
    for entry in fs::read_dir(root.join("crates")).unwrap() {
        let readme = entry.unwrap().path().join("README.md");
        let text = fs::read_to_string(&readme).unwrap_or_default();
        let has_block = text.contains("<!-- BEGIN GENERATED lessons:measured ");
        assert_eq!(has_block, found.contains(&readme), "{}", readme.display());
    }
}

/// The committed tour's links are what `make tour` renders now: every anchor it names is marked,
/// and no line number in it is stale.
#[test]
fn the_tour_links_are_current() {
    let root = workspace();
    let committed = fs::read_to_string(root.join(tour::TOUR_FILE)).unwrap();
    let rendered = tour::render(&root).unwrap();
    assert!(
        committed == rendered,
        "docs/tour.md's links are stale: run `make tour`"
    );
}

/// Every `// ANCHOR:` marker is there for a lesson or the tour.
#[test]
fn every_anchor_is_used() {
    let unused = tour::unused_anchors(&workspace()).unwrap();
    assert!(
        unused.is_empty(),
        "anchors no lesson or tour names: {unused:?}"
    );
}

/// The lessons of a run with counts: each owner table's rows and top functions are the rows'
/// `owners` and `functions`, a reading on the client's work gives each row's count as a multiple
/// of the first's, and lesson 10 says where `multiplexed`'s instructions went from one caller to
/// 256.
#[test]
fn owner_tables_and_work_readings_come_from_the_counted_rows() {
    let counted = Results::parse(FIXTURE_COUNTED, Path::new("counted.json")).unwrap();
    let runs = runs(&counted, None);
    let pages = lessons_markdown(&runs, &Code::lenient(None), "##", None);
    let page = |id: &str| &pages[LESSONS.iter().position(|l| l.id == id).unwrap()];
    let libraries = page("6-libraries");
    for line in [
        "| client | cell | instructions/op | ours | library | tokio | std | allocator | libc |",
        "| `raw-tcp` | `redis/get/3B/tcp` | 1,398 | 925 | 56 | – | 53 | 172 | 192 |",
        "| `redis-rs` | `redis/get/3B/tcp` | 8,986 (spread 38 %) | 296 | 2,081 | – | 399 | 639 | 5,571 |",
        "| `fred` | `redis/get/3B/tcp` | 18,479 | 1,350 | 5,988 | 4,012 | 1,796 | 1,630 | 3,703 |",
        "| `redis-rs` | `redis/get/3B/tcp` | `__memset_avx2_unaligned_erms` | 5,394 |",
        "| `raw-tcp` | `redis/get/3B/tcp` | `kvbench_resp::put_number_line` | 147 |",
    ] {
        assert!(libraries.contains(line), "{line}\n{libraries}");
    }
    // Three functions a row.
    assert_eq!(
        libraries
            .matches("| `fred` | `redis/get/3B/tcp` | `")
            .count(),
        3
    );
    assert!(libraries.contains("`redis-rs` (`redis/get/3B/tcp`): `libc` 5,571 of 8,986 (62 %)"));
    assert!(
        libraries
            .contains("`redis-rs` (`redis/get/3B/tcp`) 8,986 (spread 38 %), 6.43× `raw-tcp`'s"),
        "{libraries}"
    );
    let multiplexing = page("10-multiplexing");
    for words in [
        "`multiplexed`: in all 8,492 → 3,987 instructions per operation",
        "`ours` 2,459 → 1,825",
        "`tokio` 4,487 → 1,205",
    ] {
        assert!(multiplexing.contains(words), "{words}\n{multiplexing}");
    }
    // A row the counted run has but did not count: named, not filled in.
    let writes = page("2-writes");
    assert!(writes.contains("1,637, 1.17× `raw-tcp`'s"), "{writes}");
}

/// Without counts, every work reading and owner table says so, with the run's own note on
/// valgrind where it has one.
#[test]
fn lessons_say_not_counted_where_the_run_has_no_counts() {
    let mut a = parse(FIXTURE_A);
    let text = all_markdown(&runs(&a, None));
    assert!(
        text.contains("Where the instructions go, by owner and function: not counted in this run.")
    );
    assert!(
        text.contains(
            "Instructions per operation, the client's own work: not counted in this run."
        )
    );
    assert!(text.contains("| not counted |"));
    a.run.valgrind = None;
    let note = "instructions per operation not counted: valgrind not found";
    a.run.notes.push(format!("{note}."));
    let text = all_markdown(&runs(&a, None));
    assert!(
        text.contains(&format!("not counted in this run (its note: {note})")),
        "{text}"
    );
}

/// The lessons whose question is the client's own cost (all but 8, 9, 11 and 15) read at least one
/// table by its counted instructions; every owner table a lesson declares is shown once.
#[test]
fn lessons_on_the_clients_own_work_read_instructions() {
    for (number, lesson) in (1..).zip(LESSONS.iter()) {
        assert_eq!(lesson.readings.len(), lesson.tables.len(), "{}", lesson.id);
        let work = lesson.readings.contains(&Reading::Work);
        assert_eq!(work, !matches!(number, 8 | 9 | 11 | 15), "{}", lesson.id);
        for index in 0..lesson.owners.len() {
            let placeholder = format!("{{{{ owners[{index}] }}}}");
            assert_eq!(
                lesson.body.matches(&placeholder).count(),
                1,
                "{}",
                lesson.id
            );
        }
    }
    let with_owners: Vec<&str> = (LESSONS.iter())
        .filter(|l| !l.owners.is_empty())
        .map(|l| l.id)
        .collect();
    assert_eq!(with_owners, ["6-libraries", "10-multiplexing"]);
}

/// An open-loop row of `client` at `rate`: its p99 (ns), or saturated with what it achieved
/// (`None` achieved: a rate above the one it was saturated at, not run).
fn open_row(client: &str, kind: Kind, rate: u64, p99: Option<u64>, achieved: Option<f64>) -> Row {
    let key = kvbench_results::RowKey {
        backend: Backend::Redis,
        op: Op::Get,
        value_size: 3,
        pipeline: 1,
        transport: Transport::Tcp,
        concurrency: 256,
        offered_rate: Some(rate),
        client: client.to_string(),
    };
    let mut row = Row::new("redis/get/3B/tcp/c256/open".into(), key, kind);
    let latency = p99.map(|p99| kvbench_results::OpenLatency {
        p50: p99 / 3,
        p99,
        p999: p99 * 2,
        max: p99 * 3,
    });
    row.open_loop = Some(kvbench_results::OpenLoop {
        seconds: 2.0,
        offered: rate * 2,
        completed: rate * 2,
        achieved_rate: match p99 {
            Some(_) => Some(rate as f64),
            None => achieved,
        },
        saturated: p99.is_none(),
        backlog_mid: 0,
        backlog_end: 0,
        latency_ns: latency,
        repeats: 1,
        p99_range_ns: None,
        floor_ns: latency,
    });
    row
}

#[test]
fn open_loop_rows_are_curves_in_the_report_the_headline_and_lesson_15() {
    let mut results = parse(FIXTURE_A);
    let (hand, library) = (Kind::HandWritten, Kind::Library);
    results.rows.extend([
        open_row("multiplexed", hand, 4_000, Some(400_000), None),
        open_row("multiplexed", hand, 83_000, Some(900_000), None),
        open_row("multiplexed", hand, 800_000, None, Some(356_000.0)),
        open_row("fred", library, 4_000, Some(700_000), None),
        open_row("fred", library, 83_000, Some(5_000_000), None),
        open_row("fred", library, 800_000, None, Some(130_000.0)),
        open_row("raw-tcp", hand, 4_000, Some(800_000), None),
        open_row("raw-tcp", hand, 83_000, None, Some(34_000.0)),
        open_row("raw-tcp", hand, 800_000, None, None),
    ]);
    let runs = runs(&results, None);

    // The headline's new column: each client's highest rate with p99 ≤ 1 ms.
    let headline = headline_markdown(&runs);
    let line = |start: &str| {
        (headline.lines())
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no headline row {start}: {headline}"))
            .to_string()
    };
    assert!(line("| `fred` |").ends_with("| 4,000/s |"), "{headline}");
    assert!(line("| fastest hand-written |").ends_with("| `multiplexed` 83,000/s |"));
    assert!(line("| `redis-benchmark`").ends_with("| – (no open loop) |"));
    // The open rows stay out of the closed-loop columns: without them, every row but its last
    // cell reads the same.
    let closed_only = parse(FIXTURE_A);
    let before = headline_markdown(&super::tests::runs(&closed_only, None));
    let but_last = |text: &str| -> Vec<String> {
        (text.lines().filter(|l| l.starts_with("| ")))
            .map(|l| {
                l.trim_end_matches('|')
                    .rsplit_once(" | ")
                    .unwrap()
                    .0
                    .to_string()
            })
            .collect()
    };
    assert_eq!(but_last(&headline)[1..], but_last(&before)[1..]);

    // Lesson 15: the open loop's table, rendered from the rows.
    let text = all_markdown(&runs);
    assert!(
        text.contains(
            "| `multiplexed` | 400 µs | 900 µs | saturated (356,000/s) | 83,000 | 83,000 |"
        ),
        "{text}"
    );
    assert!(text.contains(
        "| `raw-tcp` | 800 µs | saturated (34,000/s) | saturated below | 4,000 | 4,000 |"
    ));
    // Kept up to: the highest rate not saturated, at any p99 (fred's p99 was 5 ms at 83,000).
    assert!(
        text.contains("| `fred` | 700 µs | 5 ms | saturated (130,000/s) | 4,000 | 83,000 |"),
        "{text}"
    );
    assert!(text.contains("`memcached/get/3B/tcp/c256/open`: not measured in this run."));

    // The report: one chart for the open cell, saturation marked, and no stray rows elsewhere.
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("results.json"),
        serde_json::to_string(&results).unwrap(),
    )
    .unwrap();
    crate::render_run(dir.path()).unwrap();
    let html = fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert_eq!(html.matches("class=\"chart open-chart\"").count(), 1);
    assert_eq!(
        html.matches("<text class=\"saturated\"").count(),
        4,
        "✗ marks"
    );
    assert!(html.contains("p99 ≤ 1 ms up to") && html.contains("kept up to"));
    let check = check_run_dir(dir.path()).unwrap();
    assert!(check.problems.is_empty(), "{:?}", check.problems);
}
