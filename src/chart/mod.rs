//! Charts of runs as PNG or SVG (plotters), with the app's semantics (#21; the shared rules are
//! in `scheme`): cumulative input tokens and context occupancy over calls in separate, labelled
//! panels, one line per agent; a run alone colours its agents by family (subagents in shades of
//! their top-level agent, dashed by depth), a comparison colours by strategy (no two strategies
//! alike, one legend entry each) with agents as line styles, overlaid up to
//! `small_multiples_above` strategies and one row per strategy above. Under each panel, one marker
//! lane per strategy: compactions, the log's own compactions (grey) and per-call pruning (short
//! ticks, ▼ where it starts to bite) as ticks, thinned when closer than a few pixels. The
//! strategy's warn / cutover / trigger lines (horizontal, dashed, yellow / red), and on the
//! occupancy panel its own estimate of the context (dotted) where its thresholds fire on it;
//! a legend; token axes with thousands separators.
//!
//! Every line is min-max decimated to the panel's pixel width before drawing, so the cost of a
//! chart and the size of an SVG do not grow with the series length. Text uses a font compiled
//! into the binary: no system font is needed.

pub mod decimate;
pub mod scheme;

use crate::error::{Error, Result};
use crate::fmt::fmt_tokens;
use crate::replay::Run;
use ctxlab_plugin_api::{Line as ThresholdLine, ThresholdKind};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use scheme::{Rgb, Tick, TickKind};
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
const WARN: RGBColor = RGBColor(230, 180, 0);
const CUTOVER: RGBColor = RGBColor(214, 39, 40);
const WINDOW: RGBColor = RGBColor(40, 40, 40);
/// Ticks of the log's own compactions are grey on every lane (the app's muted colour).
const RECORDED: RGBColor = RGBColor(120, 120, 120);
const MUTED: RGBColor = RGBColor(110, 110, 110);
/// Height of one marker lane, in pixels.
const LANE_H: u32 = 14;
/// The dots of a strategy's own-estimate line.
const OWN_DASH: [u32; 2] = [2, 3];

fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

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
    /// Dash and gap lengths in pixels; empty: solid.
    dash: Vec<u32>,
    width: u32,
    points: Vec<(f64, f64)>,
}

struct HLine {
    y: f64,
    label: String,
    color: RGBColor,
}

/// One strategy's marker lane under a panel (its ticks are the run's, made once for all its
/// panels).
struct Lane {
    label: String,
    color: RGBColor,
    ticks: std::rc::Rc<Vec<Tick>>,
}

struct Panel {
    title: String,
    series: Vec<Series>,
    hlines: Vec<HLine>,
    lanes: Vec<Lane>,
    y_max: f64,
}

/// One entry of the figure's legend (drawn once, under the title, never over the data).
struct LegendEntry {
    label: String,
    color: RGBColor,
    dash: Vec<u32>,
    width: u32,
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
    fn short(self) -> &'static str {
        match self {
            Quantity::Cumulative => "cumulative input tokens",
            Quantity::SinceCompaction => "cumulative since compaction",
            Quantity::Occupancy => "context occupancy",
        }
    }
    fn line(self) -> ThresholdLine {
        match self {
            Quantity::Cumulative => ThresholdLine::Cumulative,
            Quantity::SinceCompaction => ThresholdLine::CumulativeSinceCompaction,
            Quantity::Occupancy => ThresholdLine::Occupancy,
        }
    }
    fn of(self, s: &crate::replay::Sample) -> u64 {
        match self {
            Quantity::Cumulative => s.cumulative_input,
            Quantity::SinceCompaction => s.cumulative_since_compaction,
            Quantity::Occupancy => s.input_tokens,
        }
    }
}

/// The quantities a run's chart shows: the since-compaction panel only when a threshold is drawn
/// on it (fuseraft's WarnAt / CutoverAt), so no line is ever shown against the wrong series.
fn quantities(run: &Run) -> Vec<Quantity> {
    let mut q = vec![Quantity::Cumulative];
    if has_since(&[run]) {
        q.push(Quantity::SinceCompaction);
    }
    q.push(Quantity::Occupancy);
    q
}

fn has_since(runs: &[&Run]) -> bool {
    runs.iter().any(|r| {
        r.thresholds
            .iter()
            .any(|t| t.line == ThresholdLine::CumulativeSinceCompaction)
    })
}

/// How one run is drawn in a panel: its lines' colours and styles.
struct RunStyle<'a> {
    run: &'a Run,
    label: &'a str,
    /// The run's colour (its lane, its own-estimate lines in a comparison).
    color: RGBColor,
    /// Per agent: colour and dash.
    agents: Vec<(RGBColor, Vec<u32>)>,
    ticks: std::rc::Rc<Vec<Tick>>,
}

/// A run alone: agents in their colour families, subagents dashed by depth (as the app's
/// Session chart).
fn single_style<'a>(run: &'a Run, parents: &[Option<usize>]) -> RunStyle<'a> {
    let s = scheme::scheme();
    let mut parents: Vec<Option<usize>> = parents.to_vec();
    parents.resize(run.agents.len(), None);
    let fam = scheme::agent_families(&parents);
    RunStyle {
        run,
        label: &run.strategy,
        color: rgb(s.nth(0)),
        agents: fam
            .iter()
            .map(|f| (rgb(f.color), s.agent_dash(f.depth).to_vec()))
            .collect(),
        ticks: std::rc::Rc::new(scheme::run_ticks(run)),
    }
}

/// Runs compared: colour = strategy, agent = line style (as the app's Compare).
fn compared_styles<'a>(runs: &[(&'a str, &'a Run)]) -> Vec<RunStyle<'a>> {
    let s = scheme::scheme();
    let names: Vec<&str> = runs.iter().map(|r| r.0).collect();
    let colors = scheme::strategy_colors(&names);
    runs.iter()
        .zip(colors)
        .map(|((label, run), c)| RunStyle {
            run,
            label,
            color: rgb(c),
            agents: (0..run.agents.len())
                .map(|a| (rgb(c), s.agent_dash(a).to_vec()))
                .collect(),
            ticks: std::rc::Rc::new(scheme::run_ticks(run)),
        })
        .collect()
}

fn panel(styles: &[&RunStyle<'_>], q: Quantity, title: String) -> Panel {
    let overlaid = styles.len() > 1;
    let mut series = Vec::new();
    let mut hlines: Vec<HLine> = Vec::new();
    for st in styles {
        let run = st.run;
        let mut per_agent: Vec<Vec<(f64, f64)>> = vec![Vec::new(); run.agents.len()];
        for s in &run.samples {
            if let Some(a) = per_agent.get_mut(s.agent) {
                a.push((s.call as f64, q.of(s) as f64));
            }
        }
        for (i, points) in per_agent.into_iter().enumerate() {
            if points.is_empty() {
                continue;
            }
            let (color, dash) = st.agents.get(i).cloned().unwrap_or((MUTED, Vec::new()));
            series.push(Series {
                color,
                dash,
                width: 2,
                points,
            });
        }
        // Where the strategy checks its thresholds on its own estimate, that estimate is drawn
        // (dotted, thin) beside the provider's count, and its thresholds say so.
        let own = if q == Quantity::Occupancy {
            scheme::own_estimates(run)
        } else {
            Vec::new()
        };
        for o in &own {
            let color = if overlaid {
                st.color
            } else {
                st.agents.get(o.agent).map_or(MUTED, |a| a.0)
            };
            series.push(Series {
                color,
                dash: OWN_DASH.to_vec(),
                width: 1,
                points: o.points.iter().map(|&(c, v)| (c as f64, v)).collect(),
            });
        }
        for t in run.thresholds.iter().filter(|t| t.line == q.line()) {
            let (word, color) = match t.kind {
                ThresholdKind::Warn => ("warn", WARN),
                ThresholdKind::Cutover => ("cutover", CUTOVER),
                ThresholdKind::Trigger => ("trigger", CUTOVER),
            };
            let who = if overlaid {
                format!("{}: ", st.label)
            } else {
                String::new()
            };
            let space = if own.is_empty() {
                String::new()
            } else {
                " on its own estimate".to_string()
            };
            hlines.push(HLine {
                y: t.tokens as f64,
                // What and where first: a long parameter name is what a narrow panel cuts.
                label: format!("{who}{word} {}{space}: {}", fmt_tokens(t.tokens), t.label),
                color,
            });
        }
    }
    let data_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    if q == Quantity::Occupancy {
        let mut windows: Vec<u64> = styles.iter().map(|s| s.run.budget.context_window).collect();
        windows.dedup();
        for w in windows {
            hlines.push(HLine {
                y: w as f64,
                label: format!("context window {}", fmt_tokens(w)),
                color: WINDOW,
            });
        }
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
        lanes: styles
            .iter()
            .map(|st| Lane {
                label: st.label.to_string(),
                color: st.color,
                ticks: st.ticks.clone(),
            })
            .collect(),
        y_max,
    }
}

fn entry(label: impl Into<String>, color: RGBColor, dash: &[u32], width: u32) -> LegendEntry {
    LegendEntry {
        label: label.into(),
        color,
        dash: dash.to_vec(),
        width,
    }
}

/// What the lanes, own-estimate lines and thresholds of a figure need in its legend.
fn legend_tail(out: &mut Vec<LegendEntry>, panels: &[Panel]) {
    if panels.iter().any(|p| p.series.iter().any(|s| s.width == 1)) {
        out.push(entry(
            "the strategy's own estimate (where its thresholds fire)",
            MUTED,
            &OWN_DASH,
            1,
        ));
    }
    let tick = |k: TickKind| {
        panels
            .iter()
            .any(|p| p.lanes.iter().any(|l| l.ticks.iter().any(|t| t.kind == k)))
    };
    if tick(TickKind::Compaction) {
        out.push(entry("lane tick: compaction", MUTED, &[], 3));
    }
    if tick(TickKind::Recorded) {
        out.push(entry(
            "lane tick: compaction recorded in the log",
            RECORDED,
            &[],
            3,
        ));
    }
    if tick(TickKind::Pruning) {
        out.push(entry(
            "lane tick: per-call pruning (a triangle where it starts to bite)",
            MUTED,
            &[],
            1,
        ));
    }
    let lines = |c: RGBColor| {
        panels
            .iter()
            .any(|p| p.hlines.iter().any(|h| h.color == c && h.y <= p.y_max))
    };
    if lines(WARN) {
        out.push(entry("warn threshold", WARN, &[5, 3], 2));
    }
    if lines(CUTOVER) {
        out.push(entry("cutover / trigger threshold", CUTOVER, &[5, 3], 2));
    }
    if lines(WINDOW) {
        out.push(entry("context window", WINDOW, &[5, 3], 2));
    }
}

fn run_figure(run: &Run, parents: &[Option<usize>], title: &str) -> Figure {
    let st = single_style(run, parents);
    let panels: Vec<Panel> = quantities(run)
        .into_iter()
        .map(|q| panel(&[&st], q, q.title().to_string()))
        .collect();
    // One entry per agent that has calls, in its colour and style.
    let mut legend: Vec<LegendEntry> = Vec::new();
    for (i, a) in run.agents.iter().enumerate() {
        if !run.samples.iter().any(|s| s.agent == i) {
            continue;
        }
        let (color, dash) = st.agents[i].clone();
        let label = match parents
            .get(i)
            .copied()
            .flatten()
            .and_then(|p| run.agents.get(p))
        {
            Some(p) => format!("{} (subagent of {p})", agent_label(a)),
            None => agent_label(a),
        };
        legend.push(entry(label, color, &dash, 3));
    }
    legend_tail(&mut legend, &panels);
    Figure {
        title: title.to_string(),
        subtitle: subtitle(run),
        cols: 1,
        legend,
        panels,
        x_max: x_max(&[run]),
    }
}

/// `agent main`; an id that already says it is an agent (`agent-3`) as it is.
fn agent_label(id: &str) -> String {
    if id.starts_with("agent") {
        id.to_string()
    } else {
        format!("agent {id}")
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

/// Up to `small_multiples_above` runs: one row, every run overlaid (colour = strategy). More:
/// one row per run (small multiples). Either way cumulative | occupancy on shared axes, and under
/// each panel one marker lane per run.
fn comparison_figure(runs: &[(&str, &Run)], title: &str) -> Figure {
    let all: Vec<&Run> = runs.iter().map(|r| r.1).collect();
    let cumulative = if has_since(&all) {
        Quantity::SinceCompaction
    } else {
        Quantity::Cumulative
    };
    let qs = [cumulative, Quantity::Occupancy];
    let styles = compared_styles(runs);
    let per_run = runs.len() > scheme::scheme().small_multiples_above;
    let groups: Vec<Vec<&RunStyle<'_>>> = if per_run {
        styles.iter().map(|s| vec![s]).collect()
    } else {
        vec![styles.iter().collect()]
    };
    let mut panels = Vec::new();
    for g in &groups {
        for q in qs {
            let title = if per_run {
                format!("{} — {}", g[0].label, q.short())
            } else {
                q.title().to_string()
            };
            panels.push(panel(g, q, title));
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
    // One entry per strategy in its colour, then the agents' line styles.
    let mut legend: Vec<LegendEntry> = styles
        .iter()
        .map(|s| entry(s.label, s.color, &[], 3))
        .collect();
    let mut agents: Vec<(usize, &str)> = Vec::new();
    for r in &all {
        for (i, a) in r.agents.iter().enumerate() {
            if !agents.iter().any(|(j, _)| *j == i) && r.samples.iter().any(|s| s.agent == i) {
                agents.push((i, a));
            }
        }
    }
    if agents.len() > 1 {
        agents.sort();
        for (i, a) in agents {
            legend.push(entry(
                agent_label(a),
                MUTED,
                scheme::scheme().agent_dash(i),
                2,
            ));
        }
    }
    legend_tail(&mut legend, &panels);
    Figure {
        title: title.to_string(),
        subtitle: runs
            .first()
            .map(|(_, r)| {
                format!(
                    "window {} · counter {} · {} calls · {}",
                    fmt_tokens(r.budget.context_window),
                    r.counter,
                    fmt_tokens(r.metrics.calls),
                    if per_run {
                        "each row one strategy, same axes"
                    } else {
                        "colour = strategy, line style = agent"
                    }
                )
            })
            .unwrap_or_default(),
        cols: qs.len(),
        legend,
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
            let style = e.color.stroke_width(e.width);
            match e.dash.as_slice() {
                [] => head
                    .draw(&PathElement::new(vec![(x, y), (x + 28, y)], style))
                    .map_err(draw_err)?,
                d => head
                    .draw(&DashedPathElement::new(
                        vec![(x, y), (x + 28, y)],
                        d[0],
                        d.get(1).copied().unwrap_or(d[0]),
                        style,
                    ))
                    .map_err(draw_err)?,
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

/// The axes every chart over calls here shares (a run panel, the composition's areas): caption,
/// margins, tokens on both axes, the light grid. `margin_bottom` when a lane strip sits below.
fn calls_axes<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    title: &str,
    x: std::ops::Range<f64>,
    y_max: f64,
    margin_bottom: Option<u32>,
    y_desc: Option<&str>,
) -> Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>> {
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(title, (FONT, 16))
        .margin(8)
        .margin_right(18)
        .x_label_area_size(34)
        .y_label_area_size(92);
    if let Some(b) = margin_bottom {
        builder.margin_bottom(b);
    }
    let mut chart = builder
        .build_cartesian_2d(x, 0f64..y_max)
        .map_err(draw_err)?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc("call")
        .x_labels(10)
        .y_labels(6)
        .x_label_formatter(&|x| fmt_tokens(x.round().max(0.0) as u64))
        .y_label_formatter(&|y| fmt_tokens(y.round().max(0.0) as u64))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 13))
        .light_line_style(RGBColor(238, 238, 238))
        .max_light_lines(2)
        .bold_line_style(RGBColor(215, 215, 215));
    if let Some(d) = y_desc {
        mesh.y_desc(d);
    }
    mesh.draw().map_err(draw_err)?;
    Ok(chart)
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
    x_max: f64,
    format: Format,
) -> Result<()> {
    let lane_h = if p.lanes.is_empty() {
        0
    } else {
        p.lanes.len() as u32 * LANE_H + 6
    };
    let (area, lane_area) = area.split_vertically(area.dim_in_pixel().1.saturating_sub(lane_h));
    let (shown, above): (Vec<&HLine>, Vec<&HLine>) = p.hlines.iter().partition(|h| h.y <= p.y_max);
    // Panels side by side: a caption longer than its panel would run into its neighbour's.
    let fits = |text: &str, px: i32| {
        // Labels are 12 px type: about 6 px a character.
        let n = (px.max(0) as usize) / 6;
        if text.chars().count() > n {
            format!(
                "{}…",
                text.chars().take(n.saturating_sub(1)).collect::<String>()
            )
        } else {
            text.to_string()
        }
    };
    let title = fits(&p.title, area.dim_in_pixel().0 as i32 - 16);
    let mut chart = calls_axes(&area, &title, 0f64..x_max, p.y_max, Some(2), None)?;
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
        let style = s.color.stroke_width(s.width);
        match (s.dash.as_slice(), format) {
            ([], Format::Svg) => {
                chart
                    .draw_series(LineSeries::new(pts, style))
                    .map_err(draw_err)?;
            }
            ([], Format::Png) if s.width > 1 => {
                // plotters turns a wide bitmap line into a polygon whose corner at a
                // near-reversal (a decimated column's max then min) lies far off the chart: two
                // 1-pixel lines, one pixel apart, draw the same 2-pixel line without that spike.
                let dy = p.y_max / h.max(1) as f64;
                let shifted: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (x, y + dy)).collect();
                for line in [pts, shifted] {
                    chart
                        .draw_series(LineSeries::new(line, s.color.stroke_width(1)))
                        .map_err(draw_err)?;
                }
            }
            ([], Format::Png) => {
                chart
                    .draw_series(LineSeries::new(pts, style))
                    .map_err(draw_err)?;
            }
            (d, Format::Svg) => {
                chart
                    .draw_series(LineSeries::new(
                        pts,
                        svg_dash_tag(s.color, d).stroke_width(s.width),
                    ))
                    .map_err(draw_err)?;
            }
            (d, Format::Png) => {
                chart
                    .draw_series(DashedLineSeries::new(
                        pts,
                        d[0],
                        d.get(1).copied().unwrap_or(d[0]),
                        style,
                    ))
                    .map_err(draw_err)?;
            }
        }
    }

    // Lines above the drawn range are named in the plot's top-left corner, one a row.
    let mut taken: Vec<Rect> = Vec::new();
    for (i, l) in above.iter().enumerate() {
        let note = fits(&format!("above the chart: {}", l.label), w - 12);
        let y = 2 + 16 * i as i32;
        let r = Rect(4, y, 4 + text_width(&note), y + 15);
        label(&plot, &note, r, l.color)?;
        taken.push(r);
    }
    // Threshold lines, each labelled at its right end (above the line, or below when another
    // label is there).
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
    }

    // The marker lanes, under the x axis, on the plotting area's x scale.
    let base = lane_area.get_base_pixel().0;
    let left = px0 - base;
    let to_px = |call: usize| (chart.backend_coord(&(call as f64, 0.0)).0 - px0) as f64;
    let gap = scheme::scheme().lane_min_gap_px;
    for (li, lane) in p.lanes.iter().enumerate() {
        let y = li as i32 * LANE_H as i32 + 2;
        let lh = LANE_H as i32 - 2;
        lane_area
            .draw(&Rectangle::new(
                [(left, y), (left + w, y + lh)],
                RGBColor(240, 240, 240).filled(),
            ))
            .map_err(draw_err)?;
        let name = if lane.label.chars().count() > 12 {
            format!("{}…", lane.label.chars().take(11).collect::<String>())
        } else {
            lane.label.clone()
        };
        let tw = name.chars().count() as i32 * 6;
        lane_area
            .draw(&Text::new(
                name,
                (left - 6 - tw, y),
                (FONT, 11).into_font().color(&lane.color),
            ))
            .map_err(draw_err)?;
        for t in scheme::thin_ticks(&lane.ticks, to_px, 0, x_max as usize, gap) {
            let x = left + t.x.round() as i32;
            match t.kind {
                TickKind::Pruning => {
                    lane_area
                        .draw(&PathElement::new(
                            vec![(x, y + lh - 4), (x, y + lh)],
                            lane.color.mix(0.55).stroke_width(1),
                        ))
                        .map_err(draw_err)?;
                    if t.first.starts {
                        lane_area
                            .draw(&Polygon::new(
                                vec![(x - 4, y + 1), (x + 4, y + 1), (x, y + 7)],
                                lane.color.filled(),
                            ))
                            .map_err(draw_err)?;
                    }
                }
                kind => {
                    let c = if kind == TickKind::Recorded {
                        RECORDED
                    } else {
                        lane.color
                    };
                    lane_area
                        .draw(&PathElement::new(
                            vec![(x, y + 1), (x, y + lh - 1)],
                            c.stroke_width(if t.count > 1 { 3 } else { 2 }),
                        ))
                        .map_err(draw_err)?;
                }
            }
        }
    }
    Ok(())
}

fn render(fig: &Figure, format: Format, opts: &ChartOptions) -> Result<Vec<u8>> {
    register_font();
    let rows = fig.panels.len().div_ceil(fig.cols) as u32;
    // The lanes come on top of the panel's height, so many strategies do not squash the plot.
    let lanes = fig.panels.iter().map(|p| p.lanes.len()).max().unwrap_or(0) as u32;
    let (w, h) = (
        opts.width,
        header_height(fig, opts.width) + rows * (opts.panel_height + lanes * LANE_H + 6),
    );
    match format {
        Format::Svg => {
            let mut s = String::new();
            draw(
                SVGBackend::with_string(&mut s, (w, h)).into_drawing_area(),
                fig,
                format,
            )?;
            Ok(svg_dashes(s).into_bytes())
        }
        Format::Png => {
            let mut rgb = vec![0u8; (w * h * 3) as usize];
            draw(
                BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area(),
                fig,
                format,
            )?;
            encode_png(&rgb, w, h)
        }
    }
}

/// The dash patterns an SVG line can carry: the agents' and the own-estimate dots.
fn dash_patterns() -> Vec<&'static [u32]> {
    let mut out: Vec<&'static [u32]> = scheme::scheme()
        .agent_dashes
        .iter()
        .map(Vec::as_slice)
        .collect();
    out.push(&OWN_DASH);
    out
}

/// plotters' SVG backend has no dashes, and drawing each dash as its own element makes an SVG
/// grow with every dashed line's length; so a dashed line is written whole, tagged by an opacity
/// no other element uses (0.990, 0.989, … by pattern), and `svg_dashes` turns the tag into a
/// `stroke-dasharray`.
fn svg_dash_tag(c: RGBColor, dash: &[u32]) -> RGBAColor {
    let k = dash_patterns().iter().position(|d| *d == dash).unwrap_or(0);
    c.mix((990 - k) as f64 / 1000.0)
}

fn svg_dashes(mut svg: String) -> String {
    for (k, d) in dash_patterns().iter().enumerate() {
        if d.is_empty() {
            continue;
        }
        let tag = format!("opacity=\"{}\"", (990 - k) as f64 / 1000.0);
        let with: Vec<String> = d.iter().map(u32::to_string).collect();
        svg = svg.replace(
            &tag,
            &format!("opacity=\"1\" stroke-dasharray=\"{}\"", with.join(" ")),
        );
    }
    svg
}

fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let png_err = |e: png::EncodingError| Error::Invalid(format!("cannot encode the PNG: {e}"));
    let mut writer = enc.write_header().map_err(png_err)?;
    writer.write_image_data(rgb).map_err(png_err)?;
    writer.finish().map_err(png_err)?;
    Ok(out)
}

/// The chart of one run.
/// `parents[i]` is the parent of agent i (`model::Agent::parent`), for the colour families.
pub fn run_chart(
    run: &Run,
    parents: &[Option<usize>],
    title: &str,
    format: Format,
    opts: &ChartOptions,
) -> Result<Vec<u8>> {
    render(&run_figure(run, parents, title), format, opts)
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

/// At most this many calls of an agent are drawn in a composition chart (evenly spaced, the
/// last always in): bands are smooth at that density, and an SVG stays small.
const MAX_AREA_POINTS: usize = 400;

/// What filled one agent's context over its calls (`calls`, in order), as stacked areas
/// (`scheme::agent_areas`): each band drawn from 0 to its top, top band first, so each shows
/// between the one below and its own top. The legend is the caller's (the report writes it in
/// HTML, beside each band's peak).
pub fn composition_chart(
    calls: &[usize],
    bands: &[scheme::Band],
    title: &str,
    format: Format,
    opts: &ChartOptions,
) -> Result<Vec<u8>> {
    register_font();
    let (w, h) = (opts.width, opts.panel_height);
    let stride = calls.len().div_ceil(MAX_AREA_POINTS).max(1);
    let mut picks: Vec<usize> = (0..calls.len()).step_by(stride).collect();
    if let Some(last) = calls.len().checked_sub(1) {
        if picks.last() != Some(&last) {
            picks.push(last);
        }
    }
    // One call alone is drawn as a bar one call wide.
    let xs: Vec<f64> = picks.iter().map(|&j| calls[j] as f64).collect();
    let (x_lo, x_hi) = match (xs.first(), xs.last()) {
        (Some(&a), Some(&b)) if b > a => (a, b),
        (Some(&a), _) => (a - 0.5, a + 0.5),
        _ => (0.0, 1.0),
    };
    let y_max = bands
        .last()
        .map(|b| b.top.iter().copied().max().unwrap_or(0))
        .unwrap_or(0)
        .max(1) as f64
        * 1.05;
    let area = AreaPlot {
        calls,
        bands,
        picks: &picks,
        x: (x_lo, x_hi),
        y_max,
        title,
    };
    match format {
        Format::Svg => {
            let mut s = String::new();
            area.draw(SVGBackend::with_string(&mut s, (w, h)).into_drawing_area())?;
            Ok(s.into_bytes())
        }
        Format::Png => {
            let mut rgb_buf = vec![0u8; (w * h * 3) as usize];
            area.draw(BitMapBackend::with_buffer(&mut rgb_buf, (w, h)).into_drawing_area())?;
            encode_png(&rgb_buf, w, h)
        }
    }
}

struct AreaPlot<'a> {
    calls: &'a [usize],
    bands: &'a [scheme::Band],
    picks: &'a [usize],
    x: (f64, f64),
    y_max: f64,
    title: &'a str,
}

impl AreaPlot<'_> {
    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<()> {
        let AreaPlot {
            calls,
            bands,
            picks,
            x: (x_lo, x_hi),
            y_max,
            title,
        } = *self;
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = calls_axes(
            &root,
            title,
            x_lo..x_hi,
            y_max,
            None,
            Some("tokens in the context"),
        )?;
        for b in bands.iter().rev() {
            let mut pts: Vec<(f64, f64)> = picks
                .iter()
                .map(|&j| (calls[j] as f64, b.top[j] as f64))
                .collect();
            if pts.len() == 1 {
                pts = vec![(x_lo, pts[0].1), (x_hi, pts[0].1)];
            }
            let c = rgb(b.color);
            chart
                .draw_series(AreaSeries::new(pts, 0.0, c.filled()).border_style(c.stroke_width(1)))
                .map_err(draw_err)?;
        }
        root.present().map_err(draw_err)
    }
}
