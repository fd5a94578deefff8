//! Feature dictionary: feature strings ↔ row ids, with counts for a frequency cut-off.

use std::hash::BuildHasher;

/// Feature names and their ids. The index holds ids only (each name is stored once, in
/// `names`), and is rebuilt after deserialising.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct FeatureDict {
    pub names: Vec<String>,
    #[serde(skip)]
    pub counts: Vec<u64>,
    #[serde(skip)]
    index: hashbrown::HashTable<u32>,
}

impl std::fmt::Debug for FeatureDict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeatureDict")
            .field("names", &self.names.len())
            .finish()
    }
}

/// The hash the dictionary indexes `name` by (for [`FeatureDict::find_hashed`] and
/// [`FeatureDict::count_hashed`], so that it can be computed on another thread).
pub fn hash(name: &str) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(name)
}

impl FeatureDict {
    pub fn len(&self) -> usize {
        self.names.len()
    }
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
    pub fn get(&self, name: &str) -> Option<u32> {
        let names = &self.names;
        self.index
            .find(hash(name), |&id| names[id as usize] == name)
            .copied()
    }
    /// [`get`](Self::get) with `name`'s [`hash`] computed by the caller.
    pub fn find_hashed(&self, h: u64, name: &str) -> Option<u32> {
        let names = &self.names;
        self.index
            .find(h, |&id| names[id as usize] == name)
            .copied()
    }
    /// Id of `name`, added with count 0 if new; its count grows by one.
    pub fn count(&mut self, name: &str) -> u32 {
        self.count_hashed(hash(name), name)
    }
    /// [`count`](Self::count) with `name`'s [`hash`] computed by the caller.
    pub fn count_hashed(&mut self, h: u64, name: &str) -> u32 {
        let id = self.insert_hashed(h, name);
        self.counts[id as usize] += 1;
        id
    }
    /// Id of `name` (its [`hash`] is `h`), added with count 0 if new; counts are not changed.
    pub fn insert_hashed(&mut self, h: u64, name: &str) -> u32 {
        let names = &self.names;
        match self.index.find(h, |&id| names[id as usize] == name) {
            Some(&id) => id,
            None => {
                let id = self.names.len() as u32;
                self.names.push(name.to_string());
                self.counts.push(0);
                let names = &self.names;
                self.index
                    .insert_unique(h, id, |&i| hash(&names[i as usize]));
                id
            }
        }
    }
    /// Keeps features seen at least `min_freq` times; returns old id → new id, or `None` when
    /// every feature is kept (ids unchanged; nothing is rebuilt).
    pub fn prune(&mut self, min_freq: u64) -> Option<Vec<Option<u32>>> {
        if self.counts.iter().all(|&c| c >= min_freq) {
            return None;
        }
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
        Some(map)
    }
    /// Appends `name` with a new id and count 0, as pushing it and rebuilding the index would
    /// (a name already present keeps its first id in the index).
    pub fn append(&mut self, name: &str) -> u32 {
        let id = self.names.len() as u32;
        let h = hash(name);
        self.names.push(name.to_string());
        self.counts.resize(self.names.len(), 0);
        let names = &self.names;
        if self
            .index
            .find(h, |&i| names[i as usize] == name && i != id)
            .is_none()
        {
            self.index
                .insert_unique(h, id, |&i| hash(&names[i as usize]));
        }
        id
    }
    pub fn rebuild_index(&mut self) {
        let names = &self.names;
        let mut index = hashbrown::HashTable::with_capacity(names.len());
        for (i, n) in names.iter().enumerate() {
            let h = hash(n);
            // A name stored twice (a damaged model file) keeps its first id.
            if index
                .find(h, |&id: &u32| names[id as usize] == *n)
                .is_none()
            {
                index.insert_unique(h, i as u32, |&id| hash(&names[id as usize]));
            }
        }
        self.index = index;
        self.counts.resize(self.names.len(), 0);
    }
}
