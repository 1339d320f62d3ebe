//! The chart rules of `chart::scheme` (#21): colour = strategy, agents' colour families, lane
//! thinning and composition shaping answer the cases in `src/chart/scheme.cases.json`, which the
//! app's vitest (`ui/src/scheme.cases.test.ts`) checks its own code against: the PNG/SVG charts,
//! the report and the app draw alike.

use ctxlab::chart::scheme::{self, Tick, TickKind};
use ctxlab::replay::{CallComposition, Composition, Kind, Slice};
use serde_json::{json, Value};

fn cases() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/chart/scheme.cases.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn kind(s: &str) -> TickKind {
    match s {
        "compaction" => TickKind::Compaction,
        "recorded" => TickKind::Recorded,
        "pruning" => TickKind::Pruning,
        other => panic!("tick kind {other}"),
    }
}

fn kind_name(k: TickKind) -> &'static str {
    match k {
        TickKind::Compaction => "compaction",
        TickKind::Recorded => "recorded",
        TickKind::Pruning => "pruning",
    }
}

fn comp_kind(s: &str) -> Kind {
    Kind::ALL
        .into_iter()
        .find(|k| scheme::kind_key(*k) == s)
        .unwrap_or_else(|| panic!("kind {s}"))
}

/// What the library answers to each case, in the cases file's shape.
fn answers(c: &Value) -> Value {
    let names: Vec<&str> = c["strategyColors"]["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let colors: Vec<String> = scheme::strategy_colors(&names)
        .into_iter()
        .map(|c| c.hex())
        .collect();

    let parents: Vec<Option<usize>> = c["agentFamilies"]["parents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().map(|p| p as usize))
        .collect();
    let styles: Vec<Value> = scheme::agent_families(&parents)
        .into_iter()
        .map(|s| json!({"color": s.color.hex(), "family": s.family, "depth": s.depth}))
        .collect();

    let t = &c["thinTicks"];
    let ticks: Vec<Tick> = t["ticks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| Tick {
            call: v["call"].as_u64().unwrap() as usize,
            kind: kind(v["kind"].as_str().unwrap()),
            label: format!("tick at {}", v["call"]),
            tokens: v["tokens"].as_u64().unwrap(),
            starts: false,
        })
        .collect();
    let px = t["pxPerCall"].as_f64().unwrap();
    let drawn: Vec<Value> = scheme::thin_ticks(
        &ticks,
        |call| call as f64 * px,
        t["xmin"].as_u64().unwrap() as usize,
        t["xmax"].as_u64().unwrap() as usize,
        t["minGap"].as_f64().unwrap(),
    )
    .into_iter()
    .map(|d| {
        json!({"x": d.x, "kind": kind_name(d.kind), "first": d.first.call, "last": d.last.call,
               "count": d.count, "tokens": d.tokens, "text": scheme::describe(&d)})
    })
    .collect();

    let a = &c["agentAreas"];
    let calls: Vec<Option<CallComposition>> = a["calls"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let slices: Vec<Slice> = v["slices"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| Slice {
                    kind: comp_kind(s["kind"].as_str().unwrap()),
                    tool: s["tool"].as_str().map(String::from),
                    tokens: s["tokens"].as_u64().unwrap(),
                })
                .collect();
            Some(CallComposition {
                call: i,
                agent: v["agent"].as_u64().unwrap() as usize,
                total: slices.iter().map(|s| s.tokens).sum(),
                slices,
            })
        })
        .collect();
    let comp = Composition {
        counter: "heuristic".into(),
        overhead: vec![None, None],
        whole_requests: false,
        calls,
    };
    let agent_calls = scheme::calls_of(&comp, a["agent"].as_u64().unwrap() as usize);
    let bands: Vec<Value> = scheme::agent_areas(
        &comp,
        &agent_calls,
        a["maxTools"].as_u64().unwrap() as usize,
    )
    .into_iter()
    .map(|b| json!({"label": b.label, "color": b.color.hex(), "top": b.top}))
    .collect();

    json!({"colors": colors, "styles": styles, "drawn": drawn, "bands": bands, "ticks": lane_ticks(&c["laneTicks"])})
}

/// The lane of the case's run: a real run's shape with the case's agents, compactions, events
/// and per-call pruning put in.
fn lane_ticks(l: &Value) -> Value {
    use ctxlab::replay::{Compaction, RunEvent, StrategySpec};
    let s = ctxlab::formats::load_file(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl"
    )))
    .unwrap();
    let opts = ctxlab::compare::Settings::default().options(&s).unwrap();
    let mut run = ctxlab::replay::run(&s, StrategySpec::None, &opts).unwrap();
    run.agents = serde_json::from_value(l["agents"].clone()).unwrap();
    run.compactions = l["compactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let mut c = c.clone();
            for k in [
                "tokens_before",
                "tokens_after",
                "summarizer_input",
                "summarizer_output",
            ] {
                c[k] = json!(0);
            }
            serde_json::from_value::<Compaction>(c).unwrap()
        })
        .collect();
    run.events = l["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e["tokens_before"] = json!(0);
            e["tokens_after"] = json!(0);
            serde_json::from_value::<RunEvent>(e).unwrap()
        })
        .collect();
    let template = run.samples[0].clone();
    let col = |k: &str| -> Vec<u64> {
        l["series"][k]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    let (calls, agents, pruned) = (col("call"), col("agent"), col("pruned"));
    run.samples = (0..calls.len())
        .map(|j| {
            let mut x = template.clone();
            x.call = calls[j] as usize;
            x.agent = agents[j] as usize;
            x.pruned_tokens = pruned[j];
            x
        })
        .collect();
    scheme::run_ticks(&run)
        .into_iter()
        .map(|t| json!({"call": t.call, "kind": kind_name(t.kind), "label": t.label}))
        .collect()
}

#[test]
fn the_library_answers_the_shared_chart_cases() {
    let c = cases();
    let got = answers(&c);
    let want = json!({
        "colors": c["strategyColors"]["colors"],
        "styles": c["agentFamilies"]["styles"],
        "drawn": c["thinTicks"]["drawn"],
        "bands": c["agentAreas"]["bands"],
        "ticks": c["laneTicks"]["ticks"],
    });
    assert_eq!(
        got,
        want,
        "answers (as JSON):\n{}",
        serde_json::to_string(&got).unwrap()
    );
}

#[test]
fn every_strategy_has_its_own_colour_and_bands_sum_to_the_context() {
    let c = cases();
    let colors = &c["strategyColors"]["colors"];
    let names = c["strategyColors"]["strategies"].as_array().unwrap();
    let mut distinct: Vec<(&Value, &Value)> = Vec::new();
    for (n, col) in names.iter().zip(colors.as_array().unwrap()) {
        match distinct.iter().find(|(m, _)| *m == n) {
            Some((_, k)) => assert_eq!(*k, col, "{n} keeps its colour"),
            None => {
                assert!(
                    distinct.iter().all(|(_, k)| *k != col),
                    "{n} shares a colour"
                );
                distinct.push((n, col));
            }
        }
    }
    // The last band's top is each call's context.
    let bands = c["agentAreas"]["bands"].as_array().unwrap();
    let top = bands.last().unwrap()["top"].as_array().unwrap();
    let totals: Vec<u64> = c["agentAreas"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["agent"] == 0)
        .map(|v| {
            v["slices"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["tokens"].as_u64().unwrap())
                .sum()
        })
        .collect();
    assert_eq!(
        top.iter().map(|v| v.as_u64().unwrap()).collect::<Vec<_>>(),
        totals
    );
}
