//! Draws the app icon (an RGBA PNG, as Tauri requires) before Tauri's build step reads it, so
//! the repository carries no binary icon files, and declares the app's commands so that each one
//! needs a permission granted in `capabilities/`.

use std::path::Path;

/// The commands the UI may call; `capabilities/main.json` grants them one by one.
const COMMANDS: &[&str] = &[
    "list_strategies",
    "discover_logs",
    "library",
    "stored_sessions",
    "open_stored",
    "open_path",
    "close_session",
    "session_detail",
    "session_pricing",
    "import_price_list",
    "context_at",
    "composition",
    "replay",
    "cancel",
    "follow",
    "unfollow",
    "tune",
    "explain",
    "save_profile",
    "export_config",
    "startup",
    "startup_mark",
];

fn main() {
    let icon = Path::new("icons/icon.png");
    if !icon.exists() {
        std::fs::create_dir_all("icons").expect("create src-tauri/icons");
        write_icon(icon, 256).expect("write the app icon");
    }
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri build step");
}

/// A rounded dark tile with three rising bars and a dashed red cutover line: a context chart.
fn write_icon(path: &Path, size: u32) -> std::io::Result<()> {
    let mut px = vec![0u8; (size * size * 4) as usize];
    let s = size as f32;
    let radius = s * 0.18;
    let bars = [(0.2, 0.35), (0.42, 0.55), (0.64, 0.78)];
    for y in 0..size {
        for x in 0..size {
            let (fx, fy) = (x as f32 + 0.5, y as f32 + 0.5);
            // Distance outside the rounded square, for a soft (anti-aliased) edge.
            let dx = (radius - fx).max(fx - (s - radius)).max(0.0);
            let dy = (radius - fy).max(fy - (s - radius)).max(0.0);
            let outside = (dx * dx + dy * dy).sqrt() - radius;
            let alpha = (0.5 - outside).clamp(0.0, 1.0);
            let (u, v) = (fx / s, 1.0 - fy / s);
            let mut rgb = [24u8, 28, 38];
            for (i, (left, height)) in bars.iter().enumerate() {
                if u >= *left && u < left + 0.16 && v >= 0.16 && v < 0.16 + height * 0.7 {
                    rgb = [[86, 156, 214], [78, 201, 176], [220, 170, 90]][i];
                }
            }
            let cutover = (v - 0.7).abs() < 0.018 && ((u * 20.0) as i32) % 2 == 0;
            if cutover && u > 0.12 && u < 0.88 {
                rgb = [230, 80, 80];
            }
            let i = ((y * size + x) * 4) as usize;
            px[i..i + 3].copy_from_slice(&rgb);
            px[i + 3] = (alpha * 255.0) as u8;
        }
    }
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut enc = png::Encoder::new(file, size, size);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header()?.write_image_data(&px)?;
    Ok(())
}
