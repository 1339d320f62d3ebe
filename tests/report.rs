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
