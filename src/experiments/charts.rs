//! SVG charts, one module for the GUI's exports and the reports: line and bar charts drawn from
//! the same series the plots show, lines with whiskers over a logarithmic axis, and the
//! primitives (escaping, round ticks, tick labels, colours). Plain SVG text: `plotters` was
//! weighed and not taken — its SVG backend needs a font backend to measure text (a font
//! dependency or a bundled TTF), while these charts emit `<text>` that any viewer lays out.

/// Text escaped for SVG. Labels are written for Markdown tables too; their code marks (`)
/// mean nothing in a figure and are dropped.
pub fn esc(s: &str) -> String {
    s.replace('`', "")
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A colour as red, green, blue.
pub type Rgb = [u8; 3];

/// A colour as SVG writes it.
pub fn hex(c: Rgb) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

/// The reports' colours, one per estimator.
pub const PALETTE: [&str; 6] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
];

/// A named series of points in plot coordinates.
pub struct Series {
    pub name: String,
    pub color: Rgb,
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

/// Round ticks (1, 2 or 5 times a power of ten) covering `lo..=hi`, about five of them.
pub fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        return vec![lo];
    }
    let step = nice_step((hi - lo) / 5.0);
    let first = (lo / step).ceil() * step;
    (0..)
        .map(|i| first + step * i as f64)
        .take_while(|&v| v <= hi + 1e-9 * step.max(1.0))
        .map(|v| (v / step).round() * step)
        .collect()
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
    for t in ticks(x0, x1) {
        s.push_str(&format!(
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"#ddd\"/><text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">{4}</text>\n",
            sx(t), mt, mt + ph, mt + ph + 16.0, fmt_tick(t)
        ));
    }
    for t in ticks(y0, y1) {
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
/// Bars rise from `base` (the Fields pane's: just below the lowest score, or 0), as on
/// screen; a value below it is drawn as no bar.
pub fn svg_bars(
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Rgb, Vec<f64>)],
    base: f64,
) -> String {
    let (w, h, ml, mr, mt, mb) = (760.0, 420.0, 60.0, 180.0, 36.0, 70.0);
    let pw = w - ml - mr;
    let ph = h - mt - mb;
    let y1 = series
        .iter()
        .flat_map(|s| s.2.iter().copied())
        .fold(base, f64::max)
        .max(base + 1e-9);
    let sy = |y: f64| mt + ph - (y.max(base) - base) / (y1 - base) * ph;
    let nc = categories.len().max(1) as f64;
    let k = series.len().max(1) as f64;
    let group = pw / nc;
    let bw = group * 0.8 / k;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"20\" font-size=\"15\" text-anchor=\"middle\">{}</text>\n",
        ml + pw / 2.0,
        esc(title)
    );
    for t in ticks(base, y1) {
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

/// A tick label: short, in scientific notation at the extremes.
pub fn fmt_tick(t: f64) -> String {
    if t == 0.0 {
        "0".into()
    } else if t.abs() >= 1e5 || t.abs() < 1e-3 {
        format!("{t:.1e}")
    } else {
        let s = format!("{t:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The opening of a white `w`×`h` chart with its title.
pub fn svg_open(w: f64, h: f64, title: &str) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
        w / 2.0,
        esc(title)
    )
}

/// Horizontal grid lines with labels at round values of `lo..=hi`, from `left` to `w − 20`;
/// `y` maps a value to its height.
pub fn y_grid(s: &mut String, (lo, hi): (f64, f64), w: f64, left: f64, y: impl Fn(f64) -> f64) {
    use std::fmt::Write;
    for v in ticks(lo, hi) {
        let _ = write!(
            s,
            r##"<line x1="{left}" x2="{}" y1="{y0:.1}" y2="{y0:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{v}</text>"##,
            w - 20.0,
            left - 6.0,
            y(v) + 4.0,
            y0 = y(v)
        );
    }
}

/// A named line of points `(value, half-width)`, one per x (`None`: no point there).
pub type WhiskerSeries = (String, Vec<Option<(f64, f64)>>);

/// Lines over a logarithmic x axis, each point `(value, half-width)` with whiskers (the reports
/// draw means ± one standard error).
pub fn svg_whisker_lines(
    title: &str,
    x_label: &str,
    y_label: &str,
    xs: &[f64],
    ys: &[WhiskerSeries],
) -> String {
    use std::fmt::Write;
    // The legend sits right of the plot, where it cannot cover a line.
    let legend_w = 7.0 * ys.iter().map(|(n, _)| n.chars().count()).max().unwrap_or(0) as f64 + 40.0;
    let (w, h, ml, mb, mt) = (640.0 + legend_w, 420.0, 60.0, 60.0, 40.0);
    let mr = legend_w;
    let vals: Vec<f64> = ys
        .iter()
        .flat_map(|(_, v)| v.iter().flatten().flat_map(|s| [s.0 - s.1, s.0 + s.1]))
        .collect();
    let (lo, hi) = (
        vals.iter().cloned().fold(f64::INFINITY, f64::min),
        vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
    );
    let (lo, hi) = if lo.is_finite() {
        (lo.floor(), hi.ceil().max(lo.floor() + 1.0))
    } else {
        (0.0, 100.0)
    };
    let (x0, x1) = (
        xs.iter().cloned().fold(f64::INFINITY, f64::min).ln(),
        xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max).ln(),
    );
    let px = |x: f64| ml + 10.0 + (w - mr - ml - 40.0) * ((x.ln() - x0) / (x1 - x0).max(1e-9));
    let py = |v: f64| mt + (h - mt - mb) * (1.0 - (v - lo) / (hi - lo));
    let mut s = svg_open(w, h, title);
    y_grid(&mut s, (lo, hi), w - mr, ml, py);
    for &x in xs {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{x}</text>"#,
            px(x),
            h - mb + 18.0
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">{}</text>"#,
        (w - mr) / 2.0,
        h - mb + 40.0,
        esc(x_label),
        h / 2.0,
        h / 2.0,
        esc(y_label)
    );
    for (i, (name, v)) in ys.iter().enumerate() {
        let col = PALETTE[i % PALETTE.len()];
        let pts: Vec<(f64, &(f64, f64))> = xs
            .iter()
            .zip(v)
            .filter_map(|(&x, s)| s.as_ref().map(|s| (x, s)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let line: Vec<String> = pts
            .iter()
            .map(|(x, s)| format!("{:.1},{:.1}", px(*x), py(s.0)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{col}" stroke-width="2"/>"#,
            line.join(" ")
        );
        for (x, st) in &pts {
            let (cx, e) = (px(*x), st.1);
            let _ = write!(
                s,
                r#"<circle cx="{cx:.1}" cy="{:.1}" r="3" fill="{col}"/><line x1="{cx:.1}" x2="{cx:.1}" y1="{:.1}" y2="{:.1}" stroke="{col}"/>"#,
                py(st.0),
                py(st.0 - e),
                py(st.0 + e)
            );
        }
        let ly = mt + 10.0 + 16.0 * i as f64;
        let _ = write!(
            s,
            r#"<rect x="{}" y="{}" width="12" height="12" fill="{col}"/><text x="{}" y="{}">{}</text>"#,
            w - mr + 4.0,
            ly - 10.0,
            w - mr + 20.0,
            ly,
            esc(name)
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::{svg_bars, ticks};

    #[test]
    fn svg_bars_rise_from_their_base() {
        let s = svg_bars(
            "t",
            "y",
            &["a".into()],
            &[
                ("r".into(), [1, 2, 3], vec![80.0]),
                ("s".into(), [1, 2, 3], vec![90.0]),
            ],
            75.0,
        );
        // The bars' heights (the legend's swatches are 10 high): 80 and 90 over a base of
        // 75 are 5 and 15 points, one third and all of the plot's height.
        let heights: Vec<f64> = s
            .lines()
            .filter(|l| l.starts_with("<rect x=") && !l.contains("width=\"14\""))
            .filter_map(|l| l.split("height=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect();
        assert_eq!(heights.len(), 2, "{s}");
        assert!((heights[1] / heights[0] - 3.0).abs() < 0.01, "{heights:?}");
        assert!(
            s.contains(">75<") && !s.contains(">0<"),
            "ticks from the base: {s}"
        );
    }

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 90.0), vec![0.0, 20.0, 40.0, 60.0, 80.0]);
        assert_eq!(ticks(60.0, 90.0), vec![60.0, 70.0, 80.0, 90.0]);
        assert_eq!(ticks(0.0, 3.0), vec![0.0, 1.0, 2.0, 3.0]);
        assert_eq!(ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = ticks(0.13, 0.91);
        assert!(t.iter().all(|x| (0.13..=0.91).contains(x)), "{t:?}");
    }
}
