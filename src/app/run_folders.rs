//! Folders of runs opened besides the workspace (`gui --runs`, *Open runs…*): every run below
//! them at any depth ([`crate::run::tree::find_runs`]), listed by its path below the folder,
//! and the background rescan that follows runs other processes start, write and finish.

use super::runs::{load_entry, RunEntry, Runs, Scanned, RESCAN};
use std::path::{Path, PathBuf};
use std::sync::mpsc::channel;
use std::time::Instant;

impl Runs {
    /// Opens a folder of runs: every run under it, at any depth, is listed (those already
    /// listed once), and it is read again with the workspace. Returns how many runs were added
    /// and what the walk left out.
    pub fn open_folder(&mut self, root: &Path) -> Result<(usize, Option<String>), String> {
        let tree = crate::run::tree::find_runs(root).map_err(|e| e.to_string())?;
        if !self.folders.iter().any(|f| f == root) {
            self.folders.push(root.to_path_buf());
        }
        self.folders_opened += 1;
        let mut added = 0;
        for dir in tree.runs {
            if self.entries.iter().any(|e| e.dir == dir) {
                continue;
            }
            let entry = load_entry(&dir).unwrap_or_else(|e| RunEntry::broken(&dir, e));
            self.add_found(entry, Some(root.to_path_buf()));
            added += 1;
        }
        Ok((added, tree.truncated))
    }

    /// The folders open at the end of the last session, opened again where they still are
    /// (without scrolling the Runs pane to them); returns what could not be.
    pub fn reopen(&mut self, folders: &[PathBuf]) -> Vec<String> {
        let errors = folders
            .iter()
            .filter(|f| f.is_dir())
            .filter_map(|f| self.open_folder(f).err())
            .map(|e| format!("cannot open runs: {e}"))
            .collect();
        self.folders_opened = 0;
        errors
    }

    /// Stops listing the runs of folder `root` (nothing on disk changes); live runs stay.
    pub fn close_folder(&mut self, root: &Path) {
        self.folders.retain(|f| f != root);
        self.entries
            .retain(|e| e.folder.as_deref() != Some(root) || e.status.is_live());
    }

    /// Lists a run found on disk, its id the path below its folder (named by the folder's own
    /// name), or its directory's name in the workspace; made unique.
    pub(super) fn add_found(&mut self, mut entry: RunEntry, folder: Option<PathBuf>) {
        let mut id = match &folder {
            Some(root) => {
                let rel = entry.dir.strip_prefix(root).unwrap_or(&entry.dir);
                let name = root
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| root.display().to_string());
                if rel.as_os_str().is_empty() {
                    name
                } else {
                    format!("{name}/{}", rel.display())
                }
            }
            None => entry.id.clone(),
        };
        let base = id.clone();
        let mut k = 2;
        while self.entries.iter().any(|e| e.id == id) {
            id = format!("{base} ({k})");
            k += 1;
        }
        entry.id = id;
        entry.folder = folder;
        self.entries.push(entry);
    }

    /// Reads the workspace and the opened folders again in the background, every
    /// [`RESCAN`]: new runs are listed, runs written by other processes re-read (their
    /// progress, how they ended). Called by [`Runs::poll`].
    pub(super) fn rescan(&mut self) {
        if let Some(rx) = &self.scan {
            match rx.try_recv() {
                Ok(found) => {
                    self.scan = None;
                    for s in found {
                        match self.entries.iter_mut().find(|e| e.dir == s.dir) {
                            Some(e) if e.live.is_none() && !e.status.is_live() => {
                                if let Ok(fresh) = s.entry {
                                    e.reread(fresh);
                                }
                            }
                            Some(_) => {}
                            None => {
                                let entry = s.entry.unwrap_or_else(|e| RunEntry::broken(&s.dir, e));
                                self.add_found(entry, s.folder);
                            }
                        }
                    }
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => return,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => self.scan = None,
            }
        }
        if self.last_scan.is_some_and(|t| t.elapsed() < RESCAN) {
            return;
        }
        self.last_scan = Some(Instant::now());
        let roots: Vec<(PathBuf, Option<PathBuf>)> = std::iter::once((self.dir.clone(), None))
            .chain(self.folders.iter().map(|f| (f.clone(), Some(f.clone()))))
            .collect();
        // Known directories, and whether to read them again.
        let known: std::collections::HashMap<PathBuf, bool> = self
            .entries
            .iter()
            .map(|e| (e.dir.clone(), e.live.is_none() && !e.settled()))
            .collect();
        let (tx, rx) = channel();
        self.scan = Some(rx);
        let spawned = std::thread::Builder::new()
            .name("run rescan".into())
            .spawn(move || {
                let mut found = vec![];
                for (root, folder) in roots {
                    let Ok(tree) = crate::run::tree::find_runs(&root) else {
                        continue;
                    };
                    for dir in tree.runs {
                        if known.get(&dir) == Some(&false) {
                            continue;
                        }
                        let entry = load_entry(&dir);
                        found.push(Scanned {
                            dir,
                            folder: folder.clone(),
                            entry,
                        });
                    }
                }
                let _ = tx.send(found);
            });
        if spawned.is_err() {
            self.scan = None;
        }
    }
}
