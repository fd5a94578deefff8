//! How long the workbench takes to build and tessellate a frame of the Graph pane as the drawn
//! sequence grows: `cargo bench --bench gui_frames` (headless; egui_kittest drives the app).
//! Prints, per sequence length and zoom, the median CPU milliseconds of `Workbench::ui` and of
//! tessellating its shapes, and whether the two fit a 60 frames/s budget (16.7 ms).

use egui_kittest::Harness;
use piecewise_lab::app::data::GenerateForm;
use piecewise_lab::app::{Config, Pane, Settings, Workbench};
use std::path::PathBuf;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let lengths: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let lengths = if lengths.is_empty() {
        vec![60, 1_000, 10_000, 100_000]
    } else {
        lengths
    };
    println!("length\tzoom\tpieces\tterms\tui_ms\ttessellate_ms\t60fps");
    for &n in &lengths {
        let ws = tempfile::tempdir().unwrap();
        let form = GenerateForm {
            alpha: 0.5,
            seed: 7,
            sequences: 1,
            test_sequences: 0,
            length: n,
            ..GenerateForm::default()
        };
        let source = form
            .generate(
                &ws.path().join("data"),
                &root.join("assets/templates/hmm.tpl"),
            )
            .unwrap();
        let settings = Settings {
            source: Some(source),
            hide_welcome: true,
            ..Settings::default()
        };
        let wb = Workbench::new(
            Config {
                root: root.clone(),
                workspace: ws.path().to_path_buf(),
            },
            settings,
        );
        let mut h = Harness::builder()
            .with_size(egui::vec2(1600.0, 1000.0))
            .build_ui_state(|ui, wb: &mut Workbench| wb.ui(ui), wb);
        let t = Instant::now();
        while h.state().state.data.is_none() {
            h.step();
            std::thread::sleep(std::time::Duration::from_millis(5));
            assert!(t.elapsed().as_secs() < 300, "data did not load");
        }
        for (zoom, pieces) in [(1.0f32, true), (0.15, true)] {
            for (_, tile) in h.state_mut().tree.tiles.iter_mut() {
                if let egui_tiles::Tile::Pane(Pane::Graph(g)) = tile {
                    g.zoom = zoom;
                    g.show_pieces = pieces;
                    g.show_terms = true;
                    g.estimator = "pwpl".into();
                }
            }
            let mut ui_ms = vec![];
            let mut tess_ms = vec![];
            for i in 0..40 {
                let t0 = Instant::now();
                h.step();
                let dt = t0.elapsed().as_secs_f64() * 1e3;
                let shapes = h.output().shapes.clone();
                let ppp = h.output().pixels_per_point;
                let t1 = Instant::now();
                let prims = h.ctx.tessellate(shapes, ppp);
                let dt2 = t1.elapsed().as_secs_f64() * 1e3;
                std::hint::black_box(prims);
                if i >= 5 {
                    ui_ms.push(dt);
                    tess_ms.push(dt2);
                }
            }
            let (u, t) = (median(ui_ms), median(tess_ms));
            println!(
                "{n}\t{zoom}\t{pieces}\tpwpl\t{u:.2}\t{t:.2}\t{}",
                if u + t < 1000.0 / 60.0 { "yes" } else { "no" }
            );
        }
    }
}
