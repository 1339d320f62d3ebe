//! The HTML report: self-contained, with the metrics, fidelity, parameters and exported configs.

mod compare_support;
use compare_support::*;

use ctxlab::compare::{self, StrategyRun};
use serde_json::json;

#[test]
fn the_report_is_one_self_contained_file_with_everything_a_reader_needs() {
    let reg = registry();
    let s = session(VR_FOREST);
    let runs = [
        StrategyRun::new(plugin(
            &reg,
            "fuseraft.compaction",
            json!({"TriggerTurnCount": 30}),
        )),
        StrategyRun::new(plugin(&reg, "phi-core.context", json!({}))),
    ];
    let c = compare::run(&s, &runs, &options(&s), None).unwrap();
    let html = ctxlab::report::html(&c, &reg, "vr-forest <test>", None).unwrap();
    // Nothing is fetched: no scripts, stylesheets, images or frames from elsewhere.
    for banned in [
        "<script", "<link", "<img", "<iframe", "src=", "@import", "url(",
    ] {
        assert!(!html.contains(banned), "report contains {banned}");
    }
    assert!(html.contains("vr-forest &lt;test&gt;"), "title escaped");
    assert!(html.contains("<svg"), "chart inline");
    assert!(html.contains("Fidelity of the token reconstruction"));
    let fid = c.fidelity.unwrap();
    assert!(html.contains(&format!("{:.1} %", fid.mean_ape)));
    for r in &c.runs {
        assert!(
            html.contains(&ctxlab::report::escape(&r.label)),
            "{}",
            r.label
        );
        assert!(html.contains(&ctxlab_plugin_api::fmt_tokens(
            r.run.metrics.total_input_tokens
        )));
    }
    // The exported configs, as the plugins write them.
    let fuse = entry(&reg, "fuseraft.compaction");
    let text = ctxlab::export::config(&fuse, &json!({"TriggerTurnCount": 30}), None).unwrap();
    assert!(html.contains(&ctxlab::report::escape(&text)));
    assert!(
        html.contains("&quot;TriggerTurnCount&quot;: 30"),
        "parameters with defaults filled in"
    );
    assert!(
        html.contains("&quot;KeepRecentTurns&quot;: 10"),
        "defaults filled in"
    );
    let phi = entry(&reg, "phi-core.context");
    let text = ctxlab::export::config(&phi, &json!({}), None).unwrap();
    assert!(html.contains(&ctxlab::report::escape(&text)));
}

/// Issue #21 in the report, on a real log with a subagent and on a project sample: colour =
/// strategy (distinct swatches in the metrics table), the chart with a lane per strategy, every
/// strategy's marks in words, and what fills each agent's context as stacked areas whose bands
/// add up to every call's context.
#[test]
fn the_report_shows_strategies_lanes_and_what_fills_each_agents_context() {
    use ctxlab::chart::scheme;
    use ctxlab::replay::{composition, Prepared};
    let reg = registry();
    for s in [
        session("llm-trace-proxy_wang0618/claude-code.jsonl"),
        ctxlab::formats::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/samples/claude-code/-home-maren-src-tidewater"
        )))
        .unwrap()
        .remove(0),
    ] {
        assert!(
            s.agents.iter().any(|a| a.parent.is_some()),
            "{}: a subagent",
            s.id
        );
        let runs = [
            StrategyRun::new(plugin(&reg, "phi-core.context", json!({}))),
            StrategyRun::new(plugin(&reg, "librechat.agents", json!({}))),
            StrategyRun::new(plugin(&reg, "fim-one.context-guard", json!({}))),
        ];
        let opts = options(&s);
        let c = compare::run(&s, &runs, &opts, None).unwrap();
        let prepared = Prepared::counts(&s, opts.counter.as_ref());
        let comp = composition(&s, &prepared, opts.counter.as_ref()).unwrap();
        let html = ctxlab::report::html(&c, &reg, "t", Some(&comp)).unwrap();

        // Colour = strategy: each run's row has its swatch, no two alike, and the chart's
        // legend and lanes use the same colours.
        let labels: Vec<&str> = c.runs.iter().map(|r| r.label.as_str()).collect();
        let colors = scheme::strategy_colors(&labels);
        let distinct: std::collections::BTreeSet<String> = colors.iter().map(|c| c.hex()).collect();
        assert_eq!(distinct.len(), labels.len());
        for (l, col) in labels.iter().zip(&colors) {
            let row = format!(
                "<tr data-strategy=\"{l}\"><td><span class=\"sw\" style=\"background:{}\">",
                col.hex()
            );
            assert!(html.contains(&row), "{}: {l}'s row and swatch", s.id);
            assert!(
                html.contains(&format!("stroke=\"{}\"", col.hex().to_uppercase())),
                "{}: {l}'s lines",
                s.id
            );
            // Its lane in words: as many marks as the chart draws.
            assert!(
                html.contains(&format!("<div class=\"lane\" data-strategy=\"{l}\"")),
                "{}: {l}'s lane",
                s.id
            );
        }
        // The chart's lanes: one per strategy under each of the two panels.
        assert_eq!(
            html.matches("fill=\"#F0F0F0\"").count(),
            2 * labels.len(),
            "{}",
            s.id
        );

        // What fills the context: one figure per agent with calls, bands summing to each call.
        assert!(html.contains("<h2>What fills the context</h2>"));
        for (a, agent) in s.agents.iter().enumerate() {
            let calls = scheme::calls_of(&comp, a);
            if calls.is_empty() {
                continue;
            }
            let bands = scheme::agent_areas(&comp, &calls, scheme::scheme().max_tools);
            assert!(!bands.is_empty());
            let top = &bands.last().unwrap().top;
            for (j, &i) in calls.iter().enumerate() {
                assert_eq!(
                    top[j],
                    comp.calls[i].as_ref().unwrap().total,
                    "{}: call {i}",
                    s.id
                );
            }
            let fig = format!(
                "<figure class=\"composition\" data-agent=\"{}\" data-bands=\"{}\" data-calls=\"{}\">",
                ctxlab::report::escape(&agent.id),
                bands.len(),
                calls.len()
            );
            assert!(html.contains(&fig), "{}: {fig}", s.id);
            // Each band is drawn in its colour and named beside it.
            for b in &bands {
                assert!(
                    html.contains(&format!("fill=\"{}\"", b.color.hex().to_uppercase())),
                    "{}: {}",
                    s.id,
                    b.label
                );
                assert!(html.contains(&ctxlab::report::escape(&b.label)));
            }
        }
    }
}
