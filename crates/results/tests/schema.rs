//! The schema is one set of types: the committed JSON Schema matches them, the committed reference
//! run validates against it, and a file with an unknown field or status is refused with a message
//! that names it.

use std::path::{Path, PathBuf};

use kvbench_results::{Error, Results, SCHEMA_VERSION};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn schema_path() -> PathBuf {
    repo().join("reports/results.schema.json")
}

/// `KVBENCH_WRITE_SCHEMA=1` (what `make schema` sets) rewrites the committed schema first.
#[test]
fn committed_schema_matches_the_types() {
    let generated = Results::json_schema();
    if std::env::var_os("KVBENCH_WRITE_SCHEMA").is_some() {
        std::fs::write(schema_path(), &generated).expect("write the schema");
    }
    let committed = std::fs::read_to_string(schema_path()).expect("reports/results.schema.json");
    assert!(
        committed == generated,
        "reports/results.schema.json is stale: run `make schema` and commit it"
    );
}

fn validator() -> jsonschema::Validator {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path()).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
}

fn reference_runs() -> Vec<PathBuf> {
    let mut runs = vec![repo().join("reports/reference")];
    let split = repo().join("reports/reference/split");
    if split.join("results.json").exists() {
        runs.push(split);
    }
    runs
}

#[test]
fn the_reference_runs_validate_against_the_schema_and_parse() {
    let validator = validator();
    for dir in reference_runs() {
        let text = std::fs::read_to_string(dir.join("results.json")).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .take(5)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", dir.display());
        let results = Results::load(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(results.schema_version, SCHEMA_VERSION);
        assert!(!results.rows.is_empty());
    }
}

/// The reference file with one change made by `edit`.
fn edited(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let text = std::fs::read_to_string(repo().join("reports/reference/results.json")).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(&mut value);
    serde_json::to_string(&value).unwrap()
}

fn refusal(text: &str) -> String {
    match Results::parse(text, Path::new("edited.json")) {
        Ok(_) => panic!("accepted a file it should refuse"),
        Err(err) => err.to_string(),
    }
}

#[test]
fn an_unknown_row_field_is_refused_by_name() {
    let text = edited(|v| v["rows"][0]["throughput_guess"] = 1.into());
    let message = refusal(&text);
    assert!(
        message.contains("unknown field `throughput_guess`"),
        "{message}"
    );
    assert!(!validator().is_valid(&serde_json::from_str(&text).unwrap()));
}

#[test]
fn an_unknown_run_field_is_refused_by_name() {
    let message = refusal(&edited(|v| v["run"]["favourite_colour"] = "blue".into()));
    assert!(
        message.contains("unknown field `favourite_colour`"),
        "{message}"
    );
}

#[test]
fn an_unknown_status_is_refused_by_name() {
    let text = edited(|v| v["rows"][0]["status"] = "probably-fine".into());
    let message = refusal(&text);
    assert!(
        message.contains("unknown variant `probably-fine`"),
        "{message}"
    );
    assert!(
        message.contains("`ok`"),
        "names what it expected: {message}"
    );
    assert!(!validator().is_valid(&serde_json::from_str(&text).unwrap()));
}

#[test]
fn an_interval_must_say_what_it_is() {
    let message = refusal(&edited(|v| {
        let rows = v["rows"].as_array_mut().unwrap();
        let row = rows
            .iter_mut()
            .find(|r| r["wall_ns_per_op"]["interval"].is_object())
            .expect("a row with an interval");
        row["wall_ns_per_op"]["interval"]["kind"] = "stddev".into();
    }));
    assert!(message.contains("unknown variant `stddev`"), "{message}");
}

#[test]
fn a_file_without_the_schema_version_is_called_old() {
    let message = refusal(&edited(|v| {
        v.as_object_mut().unwrap().remove("schema_version");
    }));
    assert!(message.contains("schema_version None"), "{message}");
    assert!(matches!(
        Results::parse(r#"{"schema_version": 1}"#, Path::new("x")),
        Err(Error::Version { found: Some(1), .. })
    ));
}
