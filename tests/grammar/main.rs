//! Tests of the treebank grammar: charts, its estimators, and grammar runs. One test binary per layer (tests/README.md has the map).

mod grammar;
mod grammar_runs;
