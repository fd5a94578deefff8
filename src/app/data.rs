//! What the workbench has loaded: a training corpus (and optionally a test corpus), the feature
//! template, and the model family fitted on them — the same `ModelSpec::fit` a run performs, so
//! the graph the GUI draws is the graph a run trains on.

use crate::data::{synth, Corpus};
use crate::graph::Family;
use crate::run::{FamilyKind, ModelSpec};
use crate::settings::KnobValues;
use crate::util::write_atomic;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the data come from; the form the Data pane edits (persisted between sessions).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DataSource {
    /// CoNLL file or seminar folder.
    pub train: String,
    /// Optional held-out set.
    pub test: String,
    /// CRF++ template; empty = built-in chunking template.
    pub template: String,
    /// The model family and its options: the model knobs of the settings schema
    /// (`graph::registry::MODEL_KNOBS`), the same the command line takes.
    #[serde(default)]
    pub model: KnobValues,
}

impl DataSource {
    /// The bundled sample (synthetic HMM-mixture data with its template).
    pub fn sample(root: &Path) -> DataSource {
        DataSource {
            train: root
                .join("sample_data/hmm-a0.5-train.conll")
                .display()
                .to_string(),
            test: root
                .join("sample_data/hmm-a0.5-test.conll")
                .display()
                .to_string(),
            template: root.join("assets/templates/hmm.tpl").display().to_string(),
            model: KnobValues::default(),
        }
    }

    /// The model spec the form describes.
    pub fn model_spec(&self) -> crate::error::Result<ModelSpec> {
        ModelSpec::from_settings(&self.model)
    }

    /// The form's model fields from a model spec (the other families' options keep their
    /// values).
    pub fn set_model(&mut self, spec: &ModelSpec) {
        spec.to_settings(&mut self.model);
    }

    /// The family the form names.
    pub fn family(&self) -> FamilyKind {
        crate::settings::parse_choice(&crate::run::registry::FAMILY, self.model.family())
            .unwrap_or_default()
    }

    /// The data paths from the data knobs given (train, test, template).
    pub fn set_files(&mut self, s: &KnobValues) {
        use crate::run::spec::{TEMPLATE, TEST, TRAIN};
        self.train = s.get(&TRAIN).to_string();
        self.test = s.get(&TEST).to_string();
        self.template = s.get(&TEMPLATE).to_string();
    }

    /// The data knobs of the form (train, test, template).
    pub fn files(&self) -> KnobValues {
        use crate::run::spec::{TEMPLATE, TEST, TRAIN};
        let mut s = KnobValues::default();
        for (k, v) in [
            (&TRAIN, &self.train),
            (&TEST, &self.test),
            (&TEMPLATE, &self.template),
        ] {
            if !v.trim().is_empty() {
                s.set(k.name, v.trim());
            }
        }
        s
    }

    pub fn test_path(&self) -> Option<PathBuf> {
        let t = self.test.trim();
        (!t.is_empty()).then(|| PathBuf::from(t))
    }

    /// The template file, for the families that read one.
    pub fn template_path(&self) -> Option<PathBuf> {
        let t = self.template.trim();
        (!t.is_empty() && self.family().is_chain()).then(|| PathBuf::from(t))
    }

    /// A short name for titles.
    pub fn title(&self) -> String {
        let p = Path::new(self.train.trim());
        let name = p
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.train.clone());
        // A folder's name alone ("train") says little: prefix its parent.
        match (p.is_dir(), p.parent().and_then(|q| q.file_name())) {
            (true, Some(parent)) => format!("{}/{name}", parent.to_string_lossy()),
            _ => name,
        }
    }
}

/// Corpus statistics for the Data pane.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub sequences: usize,
    pub tokens: usize,
    pub longest: usize,
    /// Gold label -> token count, most frequent first.
    pub label_counts: Vec<(String, usize)>,
}

impl Stats {
    pub fn of(corpus: &Corpus) -> Stats {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for s in &corpus.sequences {
            for l in &s.labels {
                *counts.entry(l.as_str()).or_default() += 1;
            }
        }
        let mut label_counts: Vec<(String, usize)> = counts
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        label_counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        Stats {
            sequences: corpus.sequences.len(),
            tokens: corpus.tokens(),
            longest: corpus.sequences.iter().map(|s| s.len()).max().unwrap_or(0),
            label_counts,
        }
    }
}

/// A loaded data set.
pub struct LoadedData {
    pub source: DataSource,
    pub train: Corpus,
    pub test: Option<Corpus>,
    pub train_stats: Stats,
    pub test_stats: Option<Stats>,
    /// The model fitted on `train` (labels, feature dictionaries, templates).
    pub family: Arc<dyn Family>,
}

impl LoadedData {
    /// Reads and fits everything `source` names. Runs on a background thread.
    pub fn load(source: &DataSource) -> crate::error::Result<LoadedData> {
        let train_path = PathBuf::from(source.train.trim());
        if source.train.trim().is_empty() {
            return Err(crate::error::Error::invalid("no training data given"));
        }
        let spec = source.model_spec()?;
        let train = spec.read(&train_path)?;
        let (family, _) = spec.fit(&train, source.template_path().as_deref())?;
        let test = source.test_path().map(|p| family.read(&p)).transpose()?;
        if let Some(t) = &test {
            family.check(t)?;
        }
        Ok(LoadedData {
            source: source.clone(),
            train_stats: Stats::of(&train),
            test_stats: test.as_ref().map(Stats::of),
            train,
            test,
            family,
        })
    }

    pub fn corpus(&self, split: Split) -> &Corpus {
        match (split, &self.test) {
            (Split::Test, Some(t)) => t,
            _ => &self.train,
        }
    }
}

/// Which corpus of a loaded data set a view shows.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Split {
    #[default]
    Train,
    Test,
}

/// The "generate synthetic data" form: the HMM-mixture generator of 000 eq. 43–44.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct GenerateForm {
    pub alpha: f64,
    pub seed: u64,
    pub sequences: usize,
    pub test_sequences: usize,
    pub length: usize,
    /// The Dirichlets' concentrations (`generate hmm-mixture --transition-concentration`,
    /// `--emission-concentration`): 1 is the paper's; below 1 the data can be learnt.
    pub transition_concentration: f64,
    pub emission_concentration: f64,
    /// Hidden states (`--states`).
    pub states: usize,
}

impl Default for GenerateForm {
    fn default() -> Self {
        GenerateForm {
            alpha: 0.5,
            seed: 1,
            sequences: 300,
            test_sequences: 300,
            length: 25,
            transition_concentration: 1.0,
            emission_concentration: 1.0,
            states: synth::STATES,
        }
    }
}

impl GenerateForm {
    /// Writes train/test files under `dir` and returns the data source that loads them.
    pub fn generate(&self, dir: &Path, template: &Path) -> crate::error::Result<DataSource> {
        if !(0.0..=1.0).contains(&self.alpha) {
            return Err(crate::error::Error::invalid("alpha must be in [0, 1]"));
        }
        if self.sequences == 0 || self.length == 0 {
            return Err(crate::error::Error::invalid(
                "need at least one sequence of length at least one",
            ));
        }
        let (t, e) = (self.transition_concentration, self.emission_concentration);
        if !(0.01..=100.0).contains(&t) || !(0.01..=100.0).contains(&e) {
            return Err(crate::error::Error::invalid(
                "the concentrations must be in [0.01, 100]",
            ));
        }
        if !(2..=50).contains(&self.states) {
            return Err(crate::error::Error::invalid("states must be in [2, 50]"));
        }
        std::fs::create_dir_all(dir).map_err(|e| crate::error::Error::io(dir, e))?;
        let c = synth::Concentration {
            states: self.states,
            transitions: t,
            emissions: e,
        };
        let all = synth::hmm_mixture_with(
            self.alpha,
            c,
            self.seed,
            self.sequences + self.test_sequences,
            self.length,
        );
        let (train, test) = all.split_at(self.sequences);
        let stem = if c == synth::Concentration::default() {
            format!("hmm-a{}-s{}", self.alpha, self.seed)
        } else {
            format!(
                "hmm-a{}-s{}-k{}-t{t}-e{e}",
                self.alpha, self.seed, self.states
            )
        };
        let train_path = dir.join(format!("{stem}-train.conll"));
        write_atomic(
            &train_path,
            crate::data::conll::format_conll(train, &[]).as_bytes(),
        )?;
        let mut test_str = String::new();
        if !test.is_empty() {
            let test_path = dir.join(format!("{stem}-test.conll"));
            write_atomic(
                &test_path,
                crate::data::conll::format_conll(test, &[]).as_bytes(),
            )?;
            test_str = test_path.display().to_string();
        }
        Ok(DataSource {
            train: train_path.display().to_string(),
            test: test_str,
            template: template.display().to_string(),
            model: KnobValues::default(),
        })
    }
}

/// The word (first observation column) of token `t` — for CRFsuite data its first attribute —
/// or "" for label-only data.
pub fn word(seq: &crate::data::Sequence, t: usize) -> &str {
    seq.columns
        .get(t)
        .and_then(|c| c.first())
        .or_else(|| seq.attrs.get(t).and_then(|a| a.first()).map(|(n, _)| n))
        .map(|s| s.as_str())
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::GenerateForm;

    /// The Generate form reaches the generator's knobs: states, concentrations (what
    /// `generate hmm-mixture` takes), and refuses values out of range.
    #[test]
    fn generate_form_reaches_the_concentrations() {
        let dir = tempfile::tempdir().unwrap();
        let form = GenerateForm {
            alpha: 0.0,
            sequences: 20,
            test_sequences: 5,
            states: 7,
            transition_concentration: 0.3,
            emission_concentration: 0.15,
            ..GenerateForm::default()
        };
        let src = form
            .generate(dir.path(), std::path::Path::new("t.tpl"))
            .unwrap();
        let text = std::fs::read_to_string(&src.train).unwrap();
        let labels: std::collections::BTreeSet<&str> = text
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1))
            .collect();
        assert!(labels.iter().all(|l| {
            l.strip_prefix('S')
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| n < 7)
        }));
        assert!(src.train.contains("-k7-t0.3-e0.15"), "{}", src.train);
        // The same as the command line's data for the same knobs.
        let c = crate::data::synth::Concentration {
            states: 7,
            transitions: 0.3,
            emissions: 0.15,
        };
        let cli = crate::data::synth::hmm_mixture_with(0.0, c, 1, 25, 25);
        let first = crate::data::conll::format_conll(&cli[..20], &[]);
        assert_eq!(text, first);
        let bad = GenerateForm {
            emission_concentration: 0.0,
            ..GenerateForm::default()
        };
        assert!(bad
            .generate(dir.path(), std::path::Path::new("t.tpl"))
            .is_err());
    }
}
