//! Tests of scoring against the reference scorers (conlleval, EVALB). One test binary per layer (tests/README.md has the map).

mod conlleval;
mod evalb;
