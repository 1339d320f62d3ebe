//! What the app's Session view shows of a log's cost before any replay
//! (`ctxlab::models::session_pricing`): the same figures and the same "cost excludes" notice as
//! the `recorded` baseline's replay of it, the unpriced models listed, the assumed budget said
//! with where it came from — and an import of a LiteLLM price list (what the app's button runs)
//! prices what was unpriced. Real logs from ../shared/real-logs (fails loudly when missing).

use ctxlab::model::Session;
use ctxlab::models::{import_litellm, session_pricing};
use ctxlab::replay::{self, ModelTable, ReplayOptions, StrategySpec};
use std::path::PathBuf;

fn load(rel: &str) -> Session {
    let p = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/real-logs")).join(rel);
    assert!(
        p.exists(),
        "{} is missing: the real logs live in ../shared/real-logs beside the checkout",
        p.display()
    );
    let mut s = ctxlab::formats::load(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert_eq!(s.len(), 1, "{rel}: one session");
    s.remove(0)
}

/// mini-swe-agent on `x-ai/grok-4-fast`: a model the built-in table neither prices nor sizes.
const GROK: &str = "mini-swe-agent_yudai/last_mini_run.traj.json";
/// OpenCode on a priced model, with the tool's own cost of each step.
const OPENCODE: &str = "opencode_pfm-categorization/opencode-session.json";
/// Codex on gpt-5.3-codex-spark: known window, no published price.
const SPARK: &str = "codex-cli_agentv/00/34f597b72d/1/full.jsonl";

fn recorded_run(s: &Session, table: ModelTable) -> replay::Run {
    let mut opts = ReplayOptions::new(ctxlab::tokens::counter("heuristic").unwrap());
    opts.models = table;
    replay::run(s, StrategySpec::Recorded, &opts).unwrap()
}

#[test]
fn the_session_figures_are_the_recorded_baselines() {
    for rel in [GROK, OPENCODE, SPARK] {
        let s = load(rel);
        let table = ModelTable::builtin();
        let p = session_pricing(&s, &table);
        let run = recorded_run(&s, table);
        let rec = run.recorded.as_ref().expect("recorded usage");
        assert_eq!(p.unpriced, run.metrics.cost.unpriced, "{rel}");
        assert_eq!(p.notice(), run.metrics.cost.notice(), "{rel}");
        assert!(
            (p.recorded_usd - rec.cost_usd).abs() < 1e-9,
            "{rel}: {} vs {}",
            p.recorded_usd,
            rec.cost_usd
        );
        assert_eq!(p.tool_cost_calls, rec.tool_cost_calls, "{rel}");
        assert!((p.tool_cost_usd - rec.tool_cost_usd).abs() < 1e-9, "{rel}");
        assert_eq!(p.assumed, run.budget_assumed, "{rel}");
        assert_eq!(p.context_window, Some(run.budget.context_window), "{rel}");
    }
}

#[test]
fn an_unpriced_model_is_listed_noticed_and_its_window_assumed() {
    let s = load(GROK);
    let p = session_pricing(&s, &ModelTable::builtin());
    let grok = p
        .models
        .iter()
        .find(|m| m.name == "x-ai/grok-4-fast")
        .expect("the log's model listed");
    assert!(!grok.priced && !grok.window_known && grok.entry.is_none());
    assert_eq!(p.recorded_usd, 0.0);
    let calls = s.calls.len() as u64;
    assert_eq!(p.unpriced.iter().map(|u| u.calls).sum::<u64>(), calls);
    let n = p.notice().expect("a notice");
    assert!(
        n.starts_with(&format!(
            "cost excludes {} calls of x-ai/grok-4-fast: no price",
            calls
        )),
        "{n}"
    );
    assert!(
        p.assumed
            .iter()
            .any(|a| a.starts_with("context window") && a.contains("assumed")),
        "{:?}",
        p.assumed
    );
}

#[test]
fn a_priced_log_has_no_notice_and_a_cost() {
    let s = load(OPENCODE);
    let p = session_pricing(&s, &ModelTable::builtin());
    assert!(p.notice().is_none(), "{:?}", p.notice());
    assert!(p.recorded_usd > 0.0);
    assert!(p.tool_cost_calls > 0, "OpenCode records its own cost");
}

#[test]
fn importing_a_price_list_prices_what_was_unpriced() {
    let s = load(GROK);
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("prices.json");
    // LiteLLM's format: per-token prices, limits; written here for the test.
    std::fs::write(
        &list,
        r#"{"x-ai/grok-4-fast": {"litellm_provider": "xai", "mode": "chat",
            "input_cost_per_token": 2e-7, "output_cost_per_token": 5e-7,
            "cache_read_input_token_cost": 5e-8,
            "max_input_tokens": 2000000, "max_output_tokens": 30000}}"#,
    )
    .unwrap();
    let user = dir.path().join("models.toml");
    let r = import_litellm(&list, &user, false).unwrap();
    assert_eq!(r.added, vec!["x-ai/grok-4-fast".to_string()]);
    let table = ModelTable::read(&user).unwrap().over_builtin();
    let p = session_pricing(&s, &table);
    assert!(p.notice().is_none(), "{:?}", p.notice());
    assert!(p.recorded_usd > 0.0);
    assert_eq!(p.context_window, Some(2_000_000));
    assert_eq!(p.max_output, Some(30_000));
    assert!(p.assumed.is_empty(), "{:?}", p.assumed);
    // The recorded baseline prices it the same.
    let run = recorded_run(&s, table);
    let rec = run.recorded.unwrap();
    assert!((p.recorded_usd - rec.cost_usd).abs() < 1e-9);
}
