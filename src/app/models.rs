//! The workbench's cache of trained runs: each run's model and its predictions on the loaded
//! data, loaded in the background on first use, and the lists of finished runs the panes offer.

use super::*;

impl AppState {
    /// A run's trained model, loading it in the background on first use.
    pub fn model(&mut self, ctx: &egui::Context, run: &str) -> Option<Arc<TrainedRun>> {
        if let Some(m) = self.models.get(run) {
            return Some(m.clone());
        }
        if !self.model_jobs.contains_key(run) {
            let entry = self.runs.get(run)?;
            // A grammar run has no factor graph to load: the Parse pane opens it.
            if entry.status == runs::RunStatus::Broken || !entry.spec.model.kind().is_factor_graph()
            {
                return None;
            }
            let dir = entry.dir.clone();
            self.model_jobs.insert(
                run.to_string(),
                Job::spawn(ctx, format!("loading model {run}"), move || {
                    TrainedRun::open(&dir).map_err(|e| e.to_string())
                }),
            );
        }
        None
    }

    /// A run's predicted labels for a corpus of the loaded data, computed in the background.
    pub fn predictions(
        &mut self,
        ctx: &egui::Context,
        run: &str,
        split: Split,
    ) -> Option<&Predictions> {
        if let Some(i) = self
            .predictions
            .iter()
            .position(|p| p.run == run && p.split == split)
        {
            return Some(&self.predictions[i]);
        }
        let key = (run.to_string(), split);
        if self.prediction_jobs.contains_key(&key) {
            return None;
        }
        let model = self.model(ctx, run)?;
        let corpus = self.data.as_ref()?.corpus(split).clone();
        let run_id = run.to_string();
        self.prediction_jobs.insert(
            key,
            Job::spawn(ctx, format!("predicting with {run}"), move || {
                let labels = crate::eval::predict(
                    model.family.as_ref(),
                    &model.theta,
                    &corpus,
                    &model.inference,
                )
                .map_err(|e| e.to_string())?;
                Ok(Predictions {
                    run: run_id,
                    split,
                    labels,
                })
            }),
        );
        None
    }

    /// Finished runs of the factor-graph families.
    pub fn finished_runs(&self) -> Vec<String> {
        self.finished_of(true)
    }

    /// The finished runs that can score the loaded data (the Data and Graph panes' model
    /// pickers), and how many others are hidden. A run fits when it was trained on the same
    /// training file, template and model (family and options): only then are its factors the
    /// factors drawn, so its marginals belong to the picture (issue 24, 5.1).
    pub fn runs_for_data(&self) -> (Vec<String>, usize) {
        let all = self.finished_runs();
        let Some(d) = &self.data else {
            return (vec![], all.len());
        };
        let same_file = crate::util::same_file;
        let model = d
            .source
            .model_spec()
            .ok()
            .and_then(|m| serde_json::to_value(m).ok());
        let template = d.source.template_path();
        let train = PathBuf::from(d.source.train.trim());
        let fits: Vec<String> = all
            .iter()
            .filter(|id| {
                self.runs.get(id).is_some_and(|e| {
                    same_file(&e.spec.train, &train)
                        && match (&e.spec.template, &template) {
                            (Some(a), Some(b)) => same_file(a, b),
                            (None, None) => true,
                            _ => false,
                        }
                        && model.is_some()
                        && serde_json::to_value(&e.spec.model).ok() == model
                })
            })
            .cloned()
            .collect();
        let hidden = all.len() - fits.len();
        (fits, hidden)
    }

    /// Finished grammar runs (the Parse pane's).
    pub fn finished_grammar_runs(&self) -> Vec<String> {
        self.finished_of(false)
    }

    fn finished_of(&self, factor_graph: bool) -> Vec<String> {
        self.runs
            .entries
            .iter()
            .filter(|e| {
                e.status == runs::RunStatus::Finished
                    && crate::run::RunFiles::at(&e.dir).weights_path().exists()
                    && e.spec.model.kind().is_factor_graph() == factor_graph
            })
            .map(|e| e.id.clone())
            .collect()
    }
}
