//! Readers, feature templates, the feature dictionary and synthetic generators.

pub mod conll;
pub mod features;
pub mod synth;
pub mod template;

pub use conll::{read_conll, Corpus, Sequence};
pub use features::FeatureDict;
pub use template::FeatureTemplate;
