//! charts: PNGs that decode and are drawn on, SVGs whose size does not grow with the series
//! (min-max decimation), labels with thousands separators; and what #21 asks of them, read back
//! from the SVG on a real log with subagents and on a project sample: one line per agent
//! (subagents in their parent's colour family), colour = strategy with no two alike and one legend
//! entry each, one marker lane per strategy with its compaction and pruning ticks, and each
//! strategy's own estimate beside its thresholds.

mod compare_support;
use compare_support::*;

use ctxlab::chart::{self, ChartOptions, Format};
use ctxlab::replay::{self, Run, Sample, StrategySpec};
use serde_json::json;

fn decode(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let dec = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).unwrap();
    (info.width, info.height, buf)
}

fn fuseraft_run() -> Run {
    let reg = registry();
    let s = session(VR_FOREST);
    let spec = plugin(
        &reg,
        "fuseraft.compaction",
        json!({"TriggerTurnCount": 30, "WarnAt": 1500000, "CutoverAt": 2500000}),
    );
    replay::run(&s, spec, &options(&s)).unwrap()
}

#[test]
fn a_run_chart_is_a_png_with_the_data_drawn() {
    let run = fuseraft_run();
    let opts = ChartOptions::default();
    let png_bytes = chart::run_chart(&run, &[], "vr-forest", Format::Png, &opts).unwrap();
    let (w, h, px) = decode(&png_bytes);
    assert_eq!(w, opts.width);
    // Three panels: cumulative, since compaction (the thresholds live there), occupancy.
    assert!(h > 3 * opts.panel_height, "{h}");
    // The agent's colour (the scheme's first) is drawn, and so are the red and yellow thresholds.
    let has = |c: [u8; 3]| px.chunks(3).any(|p| p == c);
    let first = ctxlab::chart::scheme::scheme().nth(0);
    assert!(has([first.0, first.1, first.2]), "agent line missing");
    assert!(has([214, 39, 40]), "cutover line missing");
    assert!(has([230, 180, 0]), "warn line missing");
}

#[test]
fn the_svg_names_its_panels_and_uses_thousands_separators() {
    let run = fuseraft_run();
    let svg = String::from_utf8(
        chart::run_chart(
            &run,
            &[],
            "vr-forest",
            Format::Svg,
            &ChartOptions::default(),
        )
        .unwrap(),
    )
    .unwrap();
    for s in [
        "Cumulative input tokens",
        "Context occupancy",
        "since the agent",
        "cutover 2,500,000: CutoverAt",
        "warn 1,500,000: WarnAt",
        "agent main",
        "lane tick: compaction",
        // The lane's label, shortened to fit beside it.
        "fuseraft.co…",
    ] {
        assert!(svg.contains(s), "missing {s:?}");
    }
}

/// A run of `n` calls of one agent, made from a real run's shape.
fn synthetic(n: usize) -> Run {
    let reg = registry();
    let s = session(FUNDWISE);
    let mut run = replay::run(&s, StrategySpec::None, &options(&s)).unwrap();
    let _ = reg;
    let mut cumulative = 0;
    run.samples = (0..n)
        .map(|i| {
            let occupancy = 20_000 + (i % 5_000) as u64 * 30 + ((i * 7919) % 1_000) as u64;
            cumulative += occupancy;
            Sample {
                call: i,
                agent: 0,
                timestamp: None,
                input_tokens: occupancy,
                raw_tokens: occupancy,
                pruned_tokens: 0,
                output_tokens: 100,
                messages: 10,
                cumulative_input: cumulative,
                cumulative_since_compaction: cumulative,
                cache_read: 0,
                cache_write: 0,
                cost_usd: 0.0,
                over_window: false,
                recorded: None,
                needed_facts: 0,
                recalled_lower: 0,
                recalled_upper: 0,
            }
        })
        .collect();
    run
}

#[test]
fn a_million_point_svg_stays_under_200_kb_and_keeps_the_peaks() {
    let run = synthetic(1_000_000);
    let svg = chart::run_chart(
        &run,
        &[],
        "synthetic",
        Format::Svg,
        &ChartOptions::default(),
    )
    .unwrap();
    assert!(svg.len() <= 200 * 1024, "{} bytes", svg.len());
    let small = chart::run_chart(
        &synthetic(10_000),
        &[],
        "synthetic",
        Format::Svg,
        &ChartOptions::default(),
    )
    .unwrap();
    // Decimated to the pixel width: 100x the points, about the same file.
    assert!(
        svg.len() < small.len() * 2,
        "{} vs {}",
        svg.len(),
        small.len()
    );
    let png_bytes = chart::run_chart(
        &run,
        &[],
        "synthetic",
        Format::Png,
        &ChartOptions::default(),
    )
    .unwrap();
    assert!(decode(&png_bytes).0 == 1200);
}

#[test]
fn a_comparison_overlays_up_to_four_strategies_and_is_small_multiples_above() {
    let reg = registry();
    let s = session(VR_FOREST);
    let opts = options(&s);
    let none = replay::run(&s, StrategySpec::None, &opts).unwrap();
    let fuse = fuseraft_run();
    let two = svg(&chart::comparison_chart(
        &[("none", &none), ("fuseraft", &fuse)],
        "cmp",
        Format::Svg,
        &ChartOptions::default(),
    )
    .unwrap());
    // Overlaid: one cumulative and one occupancy panel (fuseraft's thresholds are on the
    // since-compaction measure, so that is the cumulative one shown), two lanes under each.
    assert!(two.contains("since the agent"));
    assert!(two.contains("colour = strategy, line style = agent"));
    assert!(!two.contains("none — cumulative"));
    assert_eq!(lane_rects(&two), 4);

    let mut runs: Vec<(String, Run)> = vec![("none".into(), none)];
    for (id, p) in [
        ("phi-core.context", json!({})),
        ("fim-one.context-guard", json!({})),
        ("librechat.agents", json!({})),
        ("codetether.compression", json!({})),
    ] {
        runs.push((
            id.into(),
            replay::run(&s, plugin(&reg, id, p), &opts).unwrap(),
        ));
    }
    let refs: Vec<(&str, &Run)> = runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
    let five =
        svg(&chart::comparison_chart(&refs, "cmp", Format::Svg, &ChartOptions::default()).unwrap());
    assert!(five.contains("none — cumulative input tokens"));
    assert!(five.contains("codetether.compression — context occupancy"));
    // One lane under each of the ten panels.
    assert_eq!(lane_rects(&five), 10);
    // Shared axes: the cumulative panels of every row are labelled up to none's total.
    let top =
        ctxlab_plugin_api::fmt_tokens(runs[0].1.metrics.total_input_tokens / 5_000_000 * 5_000_000);
    assert!(five.matches(&format!("\n{top}\n")).count() >= 5, "{top}");
    assert!(chart::comparison_chart(&[], "x", Format::Svg, &ChartOptions::default()).is_err());
}

fn svg(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// A `<polyline>` of the SVG: its stroke, dashes and points.
struct Line {
    stroke: String,
    width: String,
    dash: Option<String>,
    points: Vec<(f64, f64)>,
}

fn attr<'a>(el: &'a str, name: &str) -> Option<&'a str> {
    let at = el.find(&format!(" {name}=\""))? + name.len() + 3;
    el[at..].split('"').next()
}

fn lines(svg: &str) -> Vec<Line> {
    svg.split("<polyline")
        .skip(1)
        .map(|el| {
            let el = &el[..el.find("/>").unwrap()];
            Line {
                stroke: attr(el, "stroke").unwrap().to_ascii_lowercase(),
                width: attr(el, "stroke-width").unwrap().to_string(),
                dash: attr(el, "stroke-dasharray").map(String::from),
                points: attr(el, "points")
                    .unwrap()
                    .split_whitespace()
                    .map(|p| {
                        let (x, y) = p.split_once(',').unwrap();
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect(),
            }
        })
        .collect()
}

/// The lanes' backgrounds (one per strategy under each panel).
fn lane_rects(svg: &str) -> usize {
    svg.matches("fill=\"#F0F0F0\"").count()
}

/// Data lines: three points or more (legend swatches and ticks have two).
fn series(svg: &str) -> Vec<Line> {
    lines(svg)
        .into_iter()
        .filter(|l| l.points.len() >= 3)
        .collect()
}

/// Ticks: vertical two-point lines of `stroke` (lanes' compactions and pruning).
fn ticks(svg: &str, stroke: &str) -> usize {
    lines(svg)
        .iter()
        .filter(|l| l.stroke == stroke && l.points.len() == 2 && l.points[0].0 == l.points[1].0)
        .count()
}

/// Legend swatches: horizontal lines 28 px long.
fn swatches(svg: &str, stroke: &str) -> usize {
    lines(svg)
        .iter()
        .filter(|l| {
            l.stroke == stroke
                && l.points.len() == 2
                && l.points[0].1 == l.points[1].1
                && l.points[1].0 - l.points[0].0 == 28.0
        })
        .count()
}

/// Claude Code behind a logging proxy: 8 agents, `agent-4` a subagent of `main`.
const AGENTS_LOG: &str = "llm-trace-proxy_wang0618/claude-code.jsonl";

fn agents_with_calls(s: &ctxlab::model::Session, at_least: usize) -> Vec<usize> {
    (0..s.agents.len())
        .filter(|&a| s.calls.iter().filter(|c| c.agent == a).count() >= at_least)
        .collect()
}

#[test]
fn a_run_chart_draws_one_line_per_agent_in_its_family_colour() {
    for s in [
        session(AGENTS_LOG),
        ctxlab::formats::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/samples/claude-code/-home-maren-src-tidewater"
        )))
        .unwrap()
        .remove(0),
    ] {
        let parents: Vec<Option<usize>> = s.agents.iter().map(|a| a.parent).collect();
        assert!(
            parents.iter().any(Option::is_some),
            "{}: a log with a subagent",
            s.id
        );
        let run = replay::run(&s, StrategySpec::Recorded, &options(&s)).unwrap();
        let text = svg(&chart::run_chart(
            &run,
            &parents,
            "agents",
            Format::Svg,
            &ChartOptions::default(),
        )
        .unwrap());
        let styles = ctxlab::chart::scheme::agent_families(&parents);
        let drawn = series(&text);
        // Every agent with calls enough for a line has its own, in its colour, in both panels.
        for a in agents_with_calls(&s, 3) {
            let color = styles[a].color.hex();
            let n = drawn.iter().filter(|l| l.stroke == color).count();
            assert!(
                n >= 2,
                "{}: agent {} ({color}) has {n} lines",
                s.id,
                s.agents[a].id
            );
        }
        // A subagent is in its parent's family, in a shade of its own and dashed.
        for (a, p) in parents.iter().enumerate() {
            if let Some(p) = p {
                assert_eq!(styles[a].family, styles[*p].family);
                assert_ne!(styles[a].color, styles[*p].color);
                if agents_with_calls(&s, 3).contains(&a) {
                    let hex = styles[a].color.hex();
                    assert!(
                        drawn.iter().any(|l| l.stroke == hex && l.dash.is_some()),
                        "subagent dashed"
                    );
                }
                assert!(text.contains(&format!("(subagent of {})", s.agents[*p].id)));
            }
        }
        // The log's own compactions, as grey ticks on the run's lane (one lane per panel).
        if !run.compactions.is_empty() {
            assert!(ticks(&text, "#787878") > 0, "{}: recorded ticks", s.id);
        }
        assert_eq!(lane_rects(&text), 2, "{}: cumulative and occupancy", s.id);
    }
}

#[test]
fn a_comparison_colours_by_strategy_with_a_lane_each_and_own_estimates() {
    let reg = registry();
    let s = session(AGENTS_LOG);
    let mut o = options(&s);
    // A window that makes the strategies act on this short session.
    o.budget = Some(ctxlab::replay::Budget {
        context_window: 24_000,
        max_output: 0,
        reserve: 0,
    });
    let ids = [
        "phi-core.context",
        "librechat.agents",
        "fim-one.context-guard",
    ];
    let mut runs: Vec<(&str, Run)> = vec![(
        "recorded",
        replay::run(&s, StrategySpec::Recorded, &o).unwrap(),
    )];
    for id in ids {
        runs.push((
            id,
            replay::run(&s, plugin(&reg, id, json!({})), &o).unwrap(),
        ));
    }
    let refs: Vec<(&str, &Run)> = runs.iter().map(|(l, r)| (*l, r)).collect();
    let text =
        svg(&chart::comparison_chart(&refs, "cmp", Format::Svg, &ChartOptions::default()).unwrap());
    let labels: Vec<&str> = refs.iter().map(|r| r.0).collect();
    let colors: Vec<String> = ctxlab::chart::scheme::strategy_colors(&labels)
        .iter()
        .map(|c| c.hex())
        .collect();
    let distinct: std::collections::BTreeSet<&String> = colors.iter().collect();
    assert_eq!(
        distinct.len(),
        refs.len(),
        "no two strategies share a colour"
    );
    let drawn = series(&text);
    let with_lines = agents_with_calls(&s, 3);
    for ((label, run), color) in refs.iter().zip(&colors) {
        // One legend entry per strategy, in its colour.
        assert_eq!(swatches(&text, color), 1, "{label}: one legend entry");
        // One line per agent, in the strategy's colour, agents told apart by line style.
        let styles: std::collections::BTreeSet<Option<&String>> = drawn
            .iter()
            .filter(|l| &l.stroke == color && l.width == "2")
            .map(|l| l.dash.as_ref())
            .collect();
        assert!(
            styles.len() >= with_lines.len().min(8),
            "{label}: {} line styles for {} agents",
            styles.len(),
            with_lines.len()
        );
        // Its lane carries its compactions and pruning.
        let marks =
            run.compactions.len() + run.samples.iter().filter(|x| x.pruned_tokens > 0).count();
        if marks > 0 && *label != "recorded" {
            assert!(ticks(&text, color) > 0, "{label}: {marks} marks, no tick");
        }
    }
    assert!(
        runs.iter()
            .any(|(_, r)| r.samples.iter().any(|x| x.pruned_tokens > 0)),
        "librechat prunes this session's calls at this window"
    );
    assert_eq!(
        lane_rects(&text),
        2 * refs.len(),
        "a lane per strategy under each panel"
    );
    // phi-core's own chars/4 estimate, dotted, with its threshold labelled in that space.
    assert!(
        drawn
            .iter()
            .any(|l| l.stroke == colors[1] && l.width == "1" && l.dash.as_deref() == Some("2 3")),
        "phi-core's own estimate"
    );
    assert!(
        text.contains("phi-core.context: trigger 85,000 on its own estimate"),
        "phi-core's threshold, in its space"
    );
}
