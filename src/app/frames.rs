//! Frame timings: the CPU time of each `ui` call, for the status bar's median and (with
//! `PIECEWISE_FRAME_LOG`) the frame-time report.

/// Measured frame timings (CPU time of `ui`), for the status bar and the frame-time report.
#[derive(Default)]
pub struct FrameStats {
    pub last_ms: f32,
    /// Recent frame CPU times in ms.
    pub recent: std::collections::VecDeque<f32>,
    pub(super) log: Option<std::fs::File>,
}

impl FrameStats {
    pub(super) fn record(&mut self, ms: f32, live_runs: usize) {
        self.last_ms = ms;
        self.recent.push_back(ms);
        if self.recent.len() > 240 {
            self.recent.pop_front();
        }
        if let Some(f) = &mut self.log {
            use std::io::Write;
            let _ = writeln!(f, "{ms:.3}\t{live_runs}");
        }
    }

    /// Median of the recent frames.
    pub fn median_ms(&self) -> f32 {
        let mut v: Vec<f32> = self.recent.iter().copied().collect();
        if v.is_empty() {
            return 0.0;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    }
}
