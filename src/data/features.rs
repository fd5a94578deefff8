//! Feature dictionary: feature strings ↔ row ids, with counts for a frequency cut-off.

use rustc_hash::FxHashMap;

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FeatureDict {
    pub names: Vec<String>,
    #[serde(skip)]
    pub counts: Vec<u64>,
    #[serde(skip)]
    index: FxHashMap<String, u32>,
}

impl FeatureDict {
    pub fn len(&self) -> usize {
        self.names.len()
    }
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
    pub fn get(&self, name: &str) -> Option<u32> {
        self.index.get(name).copied()
    }
    /// Id of `name`, added with count 0 if new; its count grows by one.
    pub fn count(&mut self, name: &str) -> u32 {
        let id = match self.index.get(name) {
            Some(&id) => id,
            None => {
                let id = self.names.len() as u32;
                self.names.push(name.to_string());
                self.counts.push(0);
                self.index.insert(name.to_string(), id);
                id
            }
        };
        self.counts[id as usize] += 1;
        id
    }
    /// Keeps features seen at least `min_freq` times; returns old id → new id.
    pub fn prune(&mut self, min_freq: u64) -> Vec<Option<u32>> {
        let mut map = vec![None; self.names.len()];
        let mut names = Vec::new();
        let mut counts = Vec::new();
        for (i, (n, &c)) in self.names.iter().zip(&self.counts).enumerate() {
            if c >= min_freq {
                map[i] = Some(names.len() as u32);
                names.push(n.clone());
                counts.push(c);
            }
        }
        self.names = names;
        self.counts = counts;
        self.rebuild_index();
        map
    }
    pub fn rebuild_index(&mut self) {
        self.index = self
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i as u32))
            .collect();
        self.counts.resize(self.names.len(), 0);
    }
}
