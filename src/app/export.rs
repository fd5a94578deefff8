//! Exports: PNG of a screen region, SVG of line and bar charts drawn from the same series the
//! plots show, CSV of tables. Every file is written to a temporary name and renamed.

use crate::util::write_atomic;
use std::path::{Path, PathBuf};

fn stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("{secs}")
}

fn target(dir: &Path, stem: &str, ext: &str) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let clean: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Ok(dir.join(format!("{clean}-{}.{ext}", stamp())))
}

pub fn save_text(dir: &Path, stem: &str, ext: &str, text: &str) -> Result<PathBuf, String> {
    let p = target(dir, stem, ext)?;
    write_atomic(&p, text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(p)
}

/// Quotes a CSV field when it needs it (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn csv(header: &[String], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows.iter().map(|r| r.as_slice())) {
        let line: Vec<String> = row.iter().map(|s| csv_field(s)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

pub fn save_csv(
    dir: &Path,
    stem: &str,
    header: &[String],
    rows: &[Vec<String>],
) -> Result<PathBuf, String> {
    save_text(dir, stem, "csv", &csv(header, rows))
}

pub fn save_png(dir: &Path, stem: &str, image: &egui::ColorImage) -> Result<PathBuf, String> {
    let p = target(dir, stem, "png")?;
    let [w, h] = image.size;
    let mut bytes = Vec::with_capacity(w * h * 4);
    for c in &image.pixels {
        bytes.extend_from_slice(&c.to_array());
    }
    let img = image::RgbaImage::from_raw(w as u32, h as u32, bytes)
        .ok_or("screenshot has an inconsistent size")?;
    let mut png = std::io::Cursor::new(Vec::new());
    img.write_to(&mut png, image::ImageFormat::Png)
        .map_err(|e| format!("cannot encode PNG: {e}"))?;
    write_atomic(&p, png.get_ref()).map_err(|e| e.to_string())?;
    Ok(p)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn hex(c: egui::Color32) -> String {
    format!("#{:02x}{:02x}{:02x}", c.r(), c.g(), c.b())
}

/// A named series of points in plot coordinates.
pub struct Series {
    pub name: String,
    pub color: egui::Color32,
    pub points: Vec<[f64; 2]>,
    /// Draw the points as dots instead of a line (scatter plots).
    pub markers: bool,
}

/// The smallest 1, 2 or 5 times a power of ten that is at least `raw`.
pub fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let step = nice_step((hi - lo) / 5.0);
    let mut t = (lo / step).ceil() * step;
    let mut out = vec![];
    while t <= hi + 1e-9 * step {
        out.push(t);
        t += step;
    }
    out
}

/// An SVG line chart of `series` with axes, ticks and a legend.
pub fn svg_lines(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let (w, h, ml, mr, mt, mb) = (760.0, 460.0, 70.0, 180.0, 36.0, 50.0);
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for p in pts.filter(|p| p[0].is_finite() && p[1].is_finite()) {
        x0 = x0.min(p[0]);
        x1 = x1.max(p[0]);
        y0 = y0.min(p[1]);
        y1 = y1.max(p[1]);
    }
    if !x0.is_finite() {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    let pw = w - ml - mr;
    let ph = h - mt - mb;
    let sx = |x: f64| ml + (x - x0) / (x1 - x0) * pw;
    let sy = |y: f64| mt + ph - (y - y0) / (y1 - y0) * ph;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"20\" font-size=\"15\" text-anchor=\"middle\">{}</text>\n",
        ml + pw / 2.0,
        esc(title)
    );
    s.push_str(&format!(
        "<rect x=\"{ml}\" y=\"{mt}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#444\"/>\n"
    ));
    for t in nice_ticks(x0, x1) {
        s.push_str(&format!(
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"#ddd\"/><text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">{4}</text>\n",
            sx(t), mt, mt + ph, mt + ph + 16.0, fmt_tick(t)
        ));
    }
    for t in nice_ticks(y0, y1) {
        s.push_str(&format!(
            "<line x1=\"{1:.1}\" y1=\"{0:.1}\" x2=\"{2:.1}\" y2=\"{0:.1}\" stroke=\"#ddd\"/><text x=\"{3:.1}\" y=\"{4:.1}\" text-anchor=\"end\">{5}</text>\n",
            sy(t), ml, ml + pw, ml - 6.0, sy(t) + 4.0, fmt_tick(t)
        ));
    }
    s.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n<text transform=\"translate(16,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
        ml + pw / 2.0, h - 12.0, esc(x_label), mt + ph / 2.0, esc(y_label)
    ));
    for (i, se) in series.iter().enumerate() {
        let path: Vec<String> = se
            .points
            .iter()
            .filter(|p| p[0].is_finite() && p[1].is_finite())
            .map(|p| format!("{:.2},{:.2}", sx(p[0]), sy(p[1])))
            .collect();
        if se.markers {
            for p in se
                .points
                .iter()
                .filter(|p| p[0].is_finite() && p[1].is_finite())
            {
                s.push_str(&format!(
                    "<circle cx=\"{:.2}\" cy=\"{:.2}\" r=\"4\" fill=\"{}\"/>\n",
                    sx(p[0]),
                    sy(p[1]),
                    hex(se.color)
                ));
            }
        } else {
            s.push_str(&format!(
                "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" points=\"{}\"/>\n",
                hex(se.color),
                path.join(" ")
            ));
        }
        let ly = mt + 14.0 + 18.0 * i as f64;
        s.push_str(&format!(
            "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"3\"/><text x=\"{4}\" y=\"{5}\">{6}</text>\n",
            ml + pw + 10.0, ly, ml + pw + 30.0, hex(se.color), ml + pw + 36.0, ly + 4.0, esc(&se.name)
        ));
    }
    s.push_str("</svg>\n");
    s
}

/// An SVG grouped bar chart: `values[series][category]`.
pub fn svg_bars(
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, egui::Color32, Vec<f64>)],
) -> String {
    let (w, h, ml, mr, mt, mb) = (760.0, 420.0, 60.0, 180.0, 36.0, 70.0);
    let pw = w - ml - mr;
    let ph = h - mt - mb;
    let y1 = series
        .iter()
        .flat_map(|s| s.2.iter().copied())
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let sy = |y: f64| mt + ph - y / y1 * ph;
    let nc = categories.len().max(1) as f64;
    let k = series.len().max(1) as f64;
    let group = pw / nc;
    let bw = group * 0.8 / k;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"20\" font-size=\"15\" text-anchor=\"middle\">{}</text>\n",
        ml + pw / 2.0,
        esc(title)
    );
    for t in nice_ticks(0.0, y1) {
        s.push_str(&format!(
            "<line x1=\"{ml}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\" stroke=\"#ddd\"/><text x=\"{2:.1}\" y=\"{3:.1}\" text-anchor=\"end\">{4}</text>\n",
            sy(t), ml + pw, ml - 6.0, sy(t) + 4.0, fmt_tick(t)
        ));
    }
    for (ci, c) in categories.iter().enumerate() {
        let gx = ml + group * ci as f64 + group * 0.1;
        for (si, (_, color, vals)) in series.iter().enumerate() {
            let v = vals.get(ci).copied().unwrap_or(0.0);
            s.push_str(&format!(
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"/>\n",
                gx + bw * si as f64,
                sy(v),
                bw,
                (mt + ph - sy(v)).max(0.0),
                hex(*color)
            ));
        }
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
            ml + group * (ci as f64 + 0.5),
            mt + ph + 16.0,
            esc(c)
        ));
    }
    s.push_str(&format!(
        "<line x1=\"{ml}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#444\"/>\n<text transform=\"translate(16,{2}) rotate(-90)\" text-anchor=\"middle\">{3}</text>\n",
        mt + ph, ml + pw, mt + ph / 2.0, esc(y_label)
    ));
    for (i, (name, color, _)) in series.iter().enumerate() {
        let ly = mt + 14.0 + 18.0 * i as f64;
        s.push_str(&format!(
            "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
            ml + pw + 10.0, ly - 8.0, hex(*color), ml + pw + 30.0, ly + 2.0, esc(name)
        ));
    }
    s.push_str("</svg>\n");
    s
}

fn fmt_tick(t: f64) -> String {
    if t == 0.0 {
        "0".into()
    } else if t.abs() >= 1e5 || t.abs() < 1e-3 {
        format!("{t:.1e}")
    } else {
        let s = format!("{t:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_only_what_needs_it() {
        let h = vec!["a".to_string(), "b,c".to_string()];
        let rows = vec![vec!["say \"hi\"".to_string(), "x".to_string()]];
        assert_eq!(csv(&h, &rows), "a,\"b,c\"\n\"say \"\"hi\"\"\",x\n");
    }

    #[test]
    fn ticks_cover_the_range_with_round_steps() {
        assert_eq!(nice_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = nice_ticks(0.13, 0.91);
        assert!(t.iter().all(|x| (0.13..=0.91).contains(x)), "{t:?}");
    }
}
