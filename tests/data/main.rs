//! Tests of readers and generators: every format's errors name the file and line; the shared corpora; templates. One test binary per layer (tests/README.md has the map).

#[path = "../common/mod.rs"]
mod common;

mod crfsuite;
mod data_errors;
mod inputs;
mod seminars;
mod shared_data;
mod templates;
mod tree_limits;
mod treebank;
mod uai;
