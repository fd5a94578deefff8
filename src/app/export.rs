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

pub fn save_csv(
    dir: &Path,
    stem: &str,
    header: &[String],
    rows: &[Vec<String>],
) -> Result<PathBuf, String> {
    save_text(dir, stem, "csv", &crate::util::csv(header, rows))
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

#[cfg(test)]
mod tests {

    #[test]
    fn csv_quotes_only_what_needs_it() {
        let h = vec!["a".to_string(), "b,c".to_string()];
        let rows = vec![vec!["say \"hi\"".to_string(), "x".to_string()]];
        assert_eq!(
            crate::util::csv(&h, &rows),
            "a,\"b,c\"\n\"say \"\"hi\"\"\",x\n"
        );
    }
}
