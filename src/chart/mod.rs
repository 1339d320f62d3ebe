//! Charts of runs as PNG or SVG (plotters): per-agent cumulative input tokens and context
//! occupancy over calls in separate, labelled panels; compaction markers (vertical, dashed,
//! labelled with their kind; the log's own compactions in another colour than simulated ones);
//! the strategy's warn / cutover / trigger lines (horizontal, dashed, yellow / red); a legend;
//! token axes with thousands separators. A comparison draws one row of panels per run on shared
//! axes (small multiples).
//!
//! Every line is min-max decimated to the panel's pixel width before drawing, so the cost of a
//! chart and the size of an SVG do not grow with the series length. Text uses a font compiled
//! into the binary: no system font is needed.

pub mod decimate;

use crate::error::{Error, Result};
use crate::fmt::fmt_tokens;
use crate::replay::{CompactionKind, Run};
use ctxlab_plugin_api::{Line as ThresholdLine, ThresholdKind};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Png,
    Svg,
}

impl Format {
    /// By the file's extension.
    pub fn of_path(path: &Path) -> Result<Format> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("png") => Ok(Format::Png),
            Some("svg") => Ok(Format::Svg),
            _ => Err(Error::Invalid(format!(
                "{}: a chart is written as .png or .svg",
                path.display()
            ))),
        }
    }
}

/// Size of a chart in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChartOptions {
    pub width: u32,
    /// Height of one row of panels.
    pub panel_height: u32,
}

impl Default for ChartOptions {
    fn default() -> Self {
        ChartOptions {
            width: 1200,
            panel_height: 340,
        }
    }
}

const FONT: &str = "sans-serif";
const TITLE_HEIGHT: u32 = 56;
/// Agents' colours, in agent order (no red or yellow: those mean thresholds).
const PALETTE: &[RGBColor] = &[
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 55, 94),
    RGBColor(127, 127, 0),
    RGBColor(100, 100, 100),
];
const SIMULATED: RGBColor = RGBColor(120, 120, 120);
const RECORDED: RGBColor = RGBColor(0, 150, 136);
const WARN: RGBColor = RGBColor(230, 180, 0);
const CUTOVER: RGBColor = RGBColor(214, 39, 40);
const WINDOW: RGBColor = RGBColor(40, 40, 40);
/// At most this many compaction markers per panel: beyond it they would merge into a grey block
/// (and bloat an SVG); a note says how many calls compacted.
const MAX_MARKERS: usize = 30;
/// Markers are labelled one by one only up to this many; past it the labels would be a wall of
/// text, and one note names the kinds instead.
const MAX_LABELLED: usize = 16;

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font shipped by the crate; failure would leave text out.
        let _ = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            epaint_default_fonts::UBUNTU_LIGHT,
        );
    });
}

struct Series {
    color: RGBColor,
    points: Vec<(f64, f64)>,
}

struct HLine {
    y: f64,
    label: String,
    color: RGBColor,
}

struct Marker {
    x: f64,
    label: String,
    recorded: bool,
}

struct Panel {
    title: String,
    series: Vec<Series>,
    hlines: Vec<HLine>,
    markers: Vec<Marker>,
    y_max: f64,
}

/// One entry of the figure's legend (drawn once, under the title, never over the data).
struct LegendEntry {
    label: String,
    color: RGBColor,
    dashed: bool,
}

struct Figure {
    title: String,
    subtitle: String,
    cols: usize,
    panels: Vec<Panel>,
    x_max: f64,
    legend: Vec<LegendEntry>,
}

#[derive(Clone, Copy, PartialEq)]
enum Quantity {
    Cumulative,
    SinceCompaction,
    Occupancy,
}

impl Quantity {
    fn title(self) -> &'static str {
        match self {
            Quantity::Cumulative => "Cumulative input tokens (billed, per agent)",
            Quantity::SinceCompaction => {
                "Cumulative input tokens since the agent's last compaction"
            }
            Quantity::Occupancy => "Context occupancy (tokens in the window at each call)",
        }
    }
    fn line(self) -> ThresholdLine {
        match self {
            Quantity::Cumulative => ThresholdLine::Cumulative,
            Quantity::SinceCompaction => ThresholdLine::CumulativeSinceCompaction,
            Quantity::Occupancy => ThresholdLine::Occupancy,
        }
    }
}

fn kind_name(kind: CompactionKind) -> &'static str {
    match kind {
        CompactionKind::Drop => "drop",
        CompactionKind::Summarize => "summarize",
        CompactionKind::Truncate => "truncate",
        CompactionKind::Mask => "mask",
        CompactionKind::Offload => "offload",
        CompactionKind::Recorded => "recorded",
    }
}

/// The quantities a run's chart shows: the since-compaction panel only when a threshold is drawn
/// on it (fuseraft's WarnAt / CutoverAt), so no line is ever shown against the wrong series.
fn quantities(run: &Run) -> Vec<Quantity> {
    let mut q = vec![Quantity::Cumulative];
    if run
        .thresholds
        .iter()
        .any(|t| t.line == ThresholdLine::CumulativeSinceCompaction)
    {
        q.push(Quantity::SinceCompaction);
    }
    q.push(Quantity::Occupancy);
    q
}

fn panel(run: &Run, q: Quantity, title: String) -> Panel {
    let mut per_agent: Vec<Vec<(f64, f64)>> = vec![Vec::new(); run.agents.len()];
    for s in &run.samples {
        let v = match q {
            Quantity::Cumulative => s.cumulative_input,
            Quantity::SinceCompaction => s.cumulative_since_compaction,
            Quantity::Occupancy => s.input_tokens,
        };
        if let Some(a) = per_agent.get_mut(s.agent) {
            a.push((s.call as f64, v as f64));
        }
    }
    let series: Vec<Series> = per_agent
        .into_iter()
        .enumerate()
        .filter(|(_, p)| !p.is_empty())
        .map(|(i, points)| Series {
            color: PALETTE[i % PALETTE.len()],
            points,
        })
        .collect();
    let data_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let mut hlines: Vec<HLine> = run
        .thresholds
        .iter()
        .filter(|t| t.line == q.line())
        .map(|t| {
            let (word, color) = match t.kind {
                ThresholdKind::Warn => ("warn", WARN),
                ThresholdKind::Cutover => ("cutover", CUTOVER),
                ThresholdKind::Trigger => ("trigger", CUTOVER),
            };
            HLine {
                y: t.tokens as f64,
                label: format!("{word}: {} {}", t.label, fmt_tokens(t.tokens)),
                color,
            }
        })
        .collect();
    if q == Quantity::Occupancy {
        hlines.push(HLine {
            y: run.budget.context_window as f64,
            label: format!("context window {}", fmt_tokens(run.budget.context_window)),
            color: WINDOW,
        });
    }
    // A line far above the data would flatten it: it is named in the title instead (at drawing
    // time, since a comparison shares its axes after the panels are built).
    let limit = (data_max * 2.0).max(1.0);
    let y_max = hlines
        .iter()
        .map(|h| h.y)
        .filter(|&y| y <= limit)
        .fold(data_max, f64::max)
        .max(1.0)
        * 1.08;
    Panel {
        title,
        series,
        hlines,
        markers: markers(run),
        y_max,
    }
}

/// The legend of a figure: every agent, and each kind of marker and line that is drawn.
fn legend(runs: &[&Run], panels: &[Panel]) -> Vec<LegendEntry> {
    let mut out = Vec::new();
    let mut agents: Vec<(usize, &str)> = Vec::new();
    for r in runs {
        for (i, a) in r.agents.iter().enumerate() {
            if !agents.iter().any(|(_, x)| *x == a.as_str())
                && r.samples.iter().any(|s| s.agent == i)
            {
                agents.push((i, a));
            }
        }
    }
    for (i, a) in agents {
        out.push(LegendEntry {
            label: format!("agent {a}"),
            color: PALETTE[i % PALETTE.len()],
            dashed: false,
        });
    }
    let any_marker = |rec: bool| {
        panels
            .iter()
            .any(|p| p.markers.iter().any(|m| m.recorded == rec))
    };
    if any_marker(false) {
        out.push(LegendEntry {
            label: "simulated compaction".into(),
            color: SIMULATED,
            dashed: true,
        });
    }
    if any_marker(true) {
        out.push(LegendEntry {
            label: "compaction recorded in the log".into(),
            color: RECORDED,
            dashed: true,
        });
    }
    let lines = |c: RGBColor| {
        panels
            .iter()
            .any(|p| p.hlines.iter().any(|h| h.color == c && h.y <= p.y_max))
    };
    if lines(WARN) {
        out.push(LegendEntry {
            label: "warn threshold".into(),
            color: WARN,
            dashed: true,
        });
    }
    if lines(CUTOVER) {
        out.push(LegendEntry {
            label: "cutover / trigger threshold".into(),
            color: CUTOVER,
            dashed: true,
        });
    }
    if lines(WINDOW) {
        out.push(LegendEntry {
            label: "context window".into(),
            color: WINDOW,
            dashed: true,
        });
    }
    out
}

/// One marker per call that compacted (kinds joined), the log's own compactions apart.
fn markers(run: &Run) -> Vec<Marker> {
    let mut out: Vec<Marker> = Vec::new();
    for c in &run.compactions {
        let recorded = c.kind == CompactionKind::Recorded;
        let name = match (&c.trigger, recorded) {
            (Some(t), true) => format!("recorded ({t})"),
            _ => kind_name(c.kind).to_string(),
        };
        match out
            .iter_mut()
            .rev()
            .take(4)
            .find(|m| m.x == c.call as f64 && m.recorded == recorded)
        {
            Some(m) if !m.label.split('+').any(|k| k == name) => {
                m.label = format!("{}+{name}", m.label)
            }
            Some(_) => {}
            None => out.push(Marker {
                x: c.call as f64,
                label: name,
                recorded,
            }),
        }
    }
    out
}

fn run_figure(run: &Run, title: &str) -> Figure {
    let panels: Vec<Panel> = quantities(run)
        .into_iter()
        .map(|q| panel(run, q, q.title().to_string()))
        .collect();
    Figure {
        title: title.to_string(),
        subtitle: subtitle(run),
        cols: 1,
        legend: legend(&[run], &panels),
        panels,
        x_max: x_max(&[run]),
    }
}

fn subtitle(run: &Run) -> String {
    format!(
        "window {} · max output {} · counter {} · {} calls · total input {} · peak context {}",
        fmt_tokens(run.budget.context_window),
        fmt_tokens(run.budget.max_output),
        run.counter,
        fmt_tokens(run.metrics.calls),
        fmt_tokens(run.metrics.total_input_tokens),
        fmt_tokens(run.metrics.peak_context)
    )
}

fn x_max(runs: &[&Run]) -> f64 {
    runs.iter()
        .flat_map(|r| r.samples.last())
        .map(|s| s.call as f64)
        .fold(0.0, f64::max)
        .max(1.0)
}

/// Small multiples: one row per run (cumulative | occupancy), the same axes in every row.
fn comparison_figure(runs: &[(&str, &Run)], title: &str) -> Figure {
    let qs = [Quantity::Cumulative, Quantity::Occupancy];
    let mut panels = Vec::new();
    for (label, run) in runs {
        for q in qs {
            let short = match q {
                Quantity::Cumulative => "cumulative input tokens",
                Quantity::SinceCompaction => "cumulative since compaction",
                Quantity::Occupancy => "context occupancy",
            };
            panels.push(panel(run, q, format!("{label} — {short}")));
        }
    }
    for col in 0..qs.len() {
        let y = panels
            .iter()
            .skip(col)
            .step_by(qs.len())
            .map(|p| p.y_max)
            .fold(1.0, f64::max);
        for p in panels.iter_mut().skip(col).step_by(qs.len()) {
            p.y_max = y;
        }
    }
    let all: Vec<&Run> = runs.iter().map(|r| r.1).collect();
    Figure {
        title: title.to_string(),
        subtitle: runs
            .first()
            .map(|(_, r)| {
                format!(
                    "window {} · counter {} · {} calls · each row one strategy, same axes",
                    fmt_tokens(r.budget.context_window),
                    r.counter,
                    fmt_tokens(r.metrics.calls)
                )
            })
            .unwrap_or_default(),
        cols: qs.len(),
        legend: legend(&all, &panels),
        panels,
        x_max: x_max(&all),
    }
}

fn draw_err<E: std::fmt::Debug>(e: E) -> Error {
    Error::Invalid(format!("cannot draw the chart: {e:?}"))
}

/// Rows of legend entries that fit in `width` pixels.
fn legend_rows(fig: &Figure, width: u32) -> Vec<Vec<&LegendEntry>> {
    let mut rows: Vec<Vec<&LegendEntry>> = vec![Vec::new()];
    let mut x = 14;
    for e in &fig.legend {
        let w = legend_width(e);
        if x + w > width as i32 - 14 && !rows.last().is_some_and(|r| r.is_empty()) {
            rows.push(Vec::new());
            x = 14;
        }
        x += w;
        if let Some(r) = rows.last_mut() {
            r.push(e);
        }
    }
    rows
}

fn legend_width(e: &LegendEntry) -> i32 {
    34 + e.label.chars().count() as i32 * 7 + 22
}

fn header_height(fig: &Figure, width: u32) -> u32 {
    TITLE_HEIGHT + 22 * legend_rows(fig, width).len() as u32
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    fig: &Figure,
    format: Format,
) -> Result<()> {
    root.fill(&WHITE).map_err(draw_err)?;
    let width = root.dim_in_pixel().0;
    let (head, body) = root.split_vertically(header_height(fig, width));
    head.draw(&Text::new(
        fig.title.clone(),
        (14, 6),
        (FONT, 22).into_font().color(&BLACK),
    ))
    .map_err(draw_err)?;
    head.draw(&Text::new(
        fig.subtitle.clone(),
        (14, 32),
        (FONT, 14).into_font().color(&RGBColor(80, 80, 80)),
    ))
    .map_err(draw_err)?;
    for (row, entries) in legend_rows(fig, width).iter().enumerate() {
        let y = TITLE_HEIGHT as i32 + 8 + 22 * row as i32;
        let mut x = 14;
        for e in entries {
            let style = e.color.stroke_width(if e.dashed { 2 } else { 3 });
            if e.dashed {
                head.draw(&DashedPathElement::new(
                    vec![(x, y), (x + 28, y)],
                    5,
                    3,
                    style,
                ))
                .map_err(draw_err)?;
            } else {
                head.draw(&PathElement::new(vec![(x, y), (x + 28, y)], style))
                    .map_err(draw_err)?;
            }
            head.draw(&Text::new(
                e.label.clone(),
                (x + 34, y - 8),
                (FONT, 14).into_font().color(&BLACK),
            ))
            .map_err(draw_err)?;
            x += legend_width(e);
        }
    }
    let rows = fig.panels.len().div_ceil(fig.cols);
    let areas = body.split_evenly((rows, fig.cols));
    for (area, p) in areas.iter().zip(&fig.panels) {
        draw_panel(area, p, fig.x_max, format)?;
    }
    root.present().map_err(draw_err)?;
    Ok(())
}

/// A label's box in the plotting area's pixels, to keep labels from running into each other.
#[derive(Clone, Copy)]
struct Rect(i32, i32, i32, i32);

impl Rect {
    fn hits(&self, o: &Rect) -> bool {
        self.0 < o.2 && o.0 < self.2 && self.1 < o.3 && o.1 < self.3
    }
}

/// A label on a white box, so lines under it do not cross its letters.
fn label<DB: DrawingBackend>(
    plot: &DrawingArea<DB, Shift>,
    text: &str,
    r: Rect,
    color: RGBColor,
) -> Result<()> {
    plot.draw(&Rectangle::new(
        [(r.0 - 1, r.1), (r.2, r.3)],
        WHITE.mix(0.85).filled(),
    ))
    .map_err(draw_err)?;
    plot.draw(&Text::new(
        text.to_string(),
        (r.0, r.1 + 1),
        (FONT, 12).into_font().color(&color),
    ))
    .map_err(draw_err)
}

fn text_width(s: &str) -> i32 {
    s.chars().count() as i32 * 7 + 4
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
    x_max: f64,
    format: Format,
) -> Result<()> {
    let (shown, above): (Vec<&HLine>, Vec<&HLine>) = p.hlines.iter().partition(|h| h.y <= p.y_max);
    let mut title = p.title.clone();
    if !above.is_empty() {
        let names: Vec<&str> = above.iter().map(|h| h.label.as_str()).collect();
        title.push_str(&format!(" — above the chart: {}", names.join(", ")));
    }
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 16))
        .margin(8)
        .margin_right(18)
        .x_label_area_size(34)
        .y_label_area_size(92)
        .build_cartesian_2d(0f64..x_max, 0f64..p.y_max)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .x_desc("call")
        .x_labels(10)
        .y_labels(6)
        .x_label_formatter(&|x| fmt_tokens(x.round().max(0.0) as u64))
        .y_label_formatter(&|y| fmt_tokens(y.round().max(0.0) as u64))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 13))
        .light_line_style(RGBColor(238, 238, 238))
        .max_light_lines(2)
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(draw_err)?;
    // Labels are placed in pixels, relative to the plotting area.
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    let (px0, py0) = (xr.start, yr.start);
    let (w, h) = (xr.end - xr.start, yr.end - yr.start);
    let plot = chart.plotting_area().strip_coord_spec();
    let columns = w.max(1) as usize;

    for s in &p.series {
        let mut pts = decimate::min_max(&s.points, 0.0, x_max, columns);
        // Points landing on the same pixel as the one before add nothing.
        let mut last = None;
        pts.retain(|p| {
            let px = chart.backend_coord(p);
            let keep = last != Some(px);
            last = Some(px);
            keep
        });
        match format {
            Format::Svg => {
                chart
                    .draw_series(LineSeries::new(pts, s.color.stroke_width(2)))
                    .map_err(draw_err)?;
            }
            // plotters turns a wide bitmap line into a polygon whose corner at a near-reversal
            // (a decimated column's max then min) lies far off the chart: two 1-pixel lines, one
            // pixel apart, draw the same 2-pixel line without that spike.
            Format::Png => {
                let dy = p.y_max / h.max(1) as f64;
                let shifted: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (x, y + dy)).collect();
                for line in [pts, shifted] {
                    chart
                        .draw_series(LineSeries::new(line, s.color.stroke_width(1)))
                        .map_err(draw_err)?;
                }
            }
        }
    }

    // Threshold lines first, so their labels (right end, above the line, or below when another
    // label is there) are known before the compaction labels look for room.
    let mut taken: Vec<Rect> = Vec::new();
    for l in &shown {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, l.y), (x_max, l.y)],
                12,
                7,
                l.color.stroke_width(2),
            ))
            .map_err(draw_err)?;
        let py = chart.backend_coord(&(x_max, l.y)).1 - py0;
        let tw = text_width(&l.label);
        let x = w - tw - 4;
        let above = Rect(x, py - 17, x + tw, py - 2);
        let r = if taken.iter().any(|t| t.hits(&above)) || above.1 < 0 {
            Rect(x, py + 3, x + tw, py + 18)
        } else {
            above
        };
        label(&plot, &l.label, r, l.color)?;
        taken.push(r);
        // The line itself: a compaction label must not sit on it either.
        taken.push(Rect(0, py - 2, w, py + 2));
    }

    // Compaction markers, thinned to MAX_MARKERS evenly over the run; a label where it fits
    // (right of its line, or left of it at the right edge).
    let step = p.markers.len().div_ceil(MAX_MARKERS).max(1);
    let labelled = p.markers.len() <= MAX_LABELLED;
    for m in p.markers.iter().step_by(step) {
        let color = if m.recorded { RECORDED } else { SIMULATED };
        chart
            .draw_series(DashedLineSeries::new(
                vec![(m.x, 0.0), (m.x, p.y_max)],
                8,
                7,
                color.stroke_width(1),
            ))
            .map_err(draw_err)?;
        if !labelled {
            continue;
        }
        let px = chart.backend_coord(&(m.x, p.y_max)).0 - px0;
        let tw = text_width(&m.label);
        let found = [2, 20, 38].into_iter().find_map(|y| {
            [
                Rect(px + 3, y, px + 3 + tw, y + 15),
                Rect(px - 3 - tw, y, px - 3, y + 15),
            ]
            .into_iter()
            .find(|r| r.0 >= 0 && r.2 <= w && !taken.iter().any(|t| t.hits(r)))
        });
        if let Some(r) = found {
            label(&plot, &m.label, r, color)?;
            taken.push(r);
        }
    }
    if !labelled {
        let mut kinds: Vec<&str> = p.markers.iter().flat_map(|m| m.label.split('+')).collect();
        kinds.sort_unstable();
        kinds.dedup();
        let note = format!(
            "{} calls compacted ({}){}",
            fmt_tokens(p.markers.len() as u64),
            kinds.join(", "),
            if step > 1 {
                format!("; one in {step} marked")
            } else {
                String::new()
            }
        );
        let tw = text_width(&note);
        label(&plot, &note, Rect(4, 2, 4 + tw, 17), SIMULATED)?;
    }
    Ok(())
}

fn render(fig: &Figure, format: Format, opts: &ChartOptions) -> Result<Vec<u8>> {
    register_font();
    let rows = fig.panels.len().div_ceil(fig.cols) as u32;
    let (w, h) = (
        opts.width,
        header_height(fig, opts.width) + rows * opts.panel_height,
    );
    match format {
        Format::Svg => {
            let mut s = String::new();
            draw(
                SVGBackend::with_string(&mut s, (w, h)).into_drawing_area(),
                fig,
                format,
            )?;
            Ok(s.into_bytes())
        }
        Format::Png => {
            let mut rgb = vec![0u8; (w * h * 3) as usize];
            draw(
                BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area(),
                fig,
                format,
            )?;
            let mut out = Vec::new();
            let mut enc = png::Encoder::new(&mut out, w, h);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            let png_err =
                |e: png::EncodingError| Error::Invalid(format!("cannot encode the PNG: {e}"));
            let mut writer = enc.write_header().map_err(png_err)?;
            writer.write_image_data(&rgb).map_err(png_err)?;
            writer.finish().map_err(png_err)?;
            Ok(out)
        }
    }
}

/// The chart of one run.
pub fn run_chart(run: &Run, title: &str, format: Format, opts: &ChartOptions) -> Result<Vec<u8>> {
    render(&run_figure(run, title), format, opts)
}

/// Small multiples of several runs of one session, labelled.
pub fn comparison_chart(
    runs: &[(&str, &Run)],
    title: &str,
    format: Format,
    opts: &ChartOptions,
) -> Result<Vec<u8>> {
    if runs.is_empty() {
        return Err(Error::Invalid("nothing to chart: no runs".into()));
    }
    let opts = ChartOptions {
        panel_height: opts.panel_height.min(300),
        ..*opts
    };
    render(&comparison_figure(runs, title), format, &opts)
}

/// Writes `bytes` to `path`.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| Error::io(path, e))
}
