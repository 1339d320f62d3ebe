//! charts: PNGs that decode and are drawn on, SVGs whose size does not grow with the series
//! (min-max decimation), labels with thousands separators.

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
    // The agent's colour (31, 119, 180) is drawn, and so are the red and yellow thresholds.
    let has = |c: [u8; 3]| px.chunks(3).any(|p| p == c);
    assert!(has([31, 119, 180]), "agent line missing");
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
        "cutover: CutoverAt 2,500,000",
        "warn: WarnAt 1,500,000",
        "summarize",
        "agent main",
        "simulated compaction",
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
fn a_comparison_is_small_multiples_on_shared_axes() {
    let run = fuseraft_run();
    let s = session(VR_FOREST);
    let none = replay::run(&s, StrategySpec::None, &options(&s)).unwrap();
    let svg = String::from_utf8(
        chart::comparison_chart(
            &[("none", &none), ("fuseraft", &run)],
            "cmp",
            Format::Svg,
            &ChartOptions::default(),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(svg.contains("none — cumulative input tokens"));
    assert!(svg.contains("fuseraft — context occupancy"));
    // Shared axes: the cumulative panels of both rows are labelled up to none's total.
    let top =
        ctxlab_plugin_api::fmt_tokens(none.metrics.total_input_tokens / 5_000_000 * 5_000_000);
    assert!(svg.matches(&format!("\n{top}\n")).count() >= 2, "{top}");
    assert!(chart::comparison_chart(&[], "x", Format::Svg, &ChartOptions::default()).is_err());
}
