//! The README's library snippets are excerpts of the examples that `cargo
//! test` builds and runs, so they compile and cannot drift.

use std::path::Path;

/// The ```rust blocks of the README's "Library use" section.
fn snippets(readme: &str) -> Vec<Vec<String>> {
    let start = readme.find("## Library use").expect("a Library use section");
    let section = &readme[start..];
    let section = &section[..section[2..].find("\n## ").map_or(section.len(), |e| e + 2)];
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in section.lines() {
        match (line.trim_start().starts_with("```"), current.as_mut()) {
            (true, None) if line.trim() == "```rust" => current = Some(Vec::new()),
            (true, Some(_)) => blocks.push(current.take().expect("open block")),
            (false, Some(block)) => block.push(line.trim().to_string()),
            _ => {}
        }
    }
    blocks
}

#[test]
fn readme_snippets_are_excerpts_of_the_examples() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let examples: Vec<Vec<String>> = [
        "crates/kapprox/examples/fit_predict.rs",
        "crates/kapprox/examples/stream_ridge.rs",
        "crates/features/examples/map_rows.rs",
    ]
    .iter()
    .map(|p| std::fs::read_to_string(root.join(p)).unwrap().lines().map(|l| l.trim().to_string()).collect())
    .collect();
    let blocks = snippets(&readme);
    assert_eq!(blocks.len(), 3, "three library snippets");
    for block in &blocks {
        let found = examples.iter().any(|ex| ex.windows(block.len()).any(|w| w == block.as_slice()));
        assert!(found, "this README snippet is not an excerpt of an example:\n{}", block.join("\n"));
    }
}
