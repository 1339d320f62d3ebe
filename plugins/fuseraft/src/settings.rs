//! fuseraft's configuration (`Compaction:`, `ContextBudget:`, per-agent `ContextWindow:`) as the
//! strategy reads it, built from the parameter values, plus fuseraft's `validate` rules.
//!
//! Per-agent settings: the flat ContextWindow parameters (`TextOnly`, `MaxTurnAge`, …) apply to
//! every agent of the replay; the `Agents` parameter (a JSON or YAML map agent name → fuseraft keys)
//! overrides individual fields for the agents it names. fuseraft itself has no all-agents
//! ContextWindow, so the export writes the merged settings under each agent's name.

use ctxlab_plugin_api::sdk::{ParamSpec, ParamType, Params};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// fuseraft's `ContextWindowFilter.DefaultMaxReplayChars`: the cap of replayed assistant text at
/// checkpoint resume when `MaxReplayChars` is 0.
pub const GLOBAL_REPLAY_CHARS: u64 = 2_000;
/// Tool results above this many chars are offloaded to the artifact store at production time.
pub const OFFLOAD_CHARS: u64 = 40_000;
/// Cap of a read whose file was later written or patched (consumed read).
pub const CONSUMED_READ_CHARS: u64 = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Llm,
    Intent,
    Lossless,
    Hybrid,
    Window,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "llm" => Mode::Llm,
            "intent" => Mode::Intent,
            "lossless" => Mode::Lossless,
            "hybrid" => Mode::Hybrid,
            "window" => Mode::Window,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Llm => "llm",
            Mode::Intent => "intent",
            Mode::Lossless => "lossless",
            Mode::Hybrid => "hybrid",
            Mode::Window => "window",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CompactionConfig {
    pub trigger_turn_count: u64,
    pub keep_recent_turns: u64,
    pub mode: Mode,
    pub token_budget: u64,
    pub include_reasoning: bool,
    pub include_symbol_graph: bool,
    pub max_chars_per_history_message: u64,
    pub anti_thrash_min_savings_ratio: f64,
    pub anti_thrash_window: u64,
    pub include_exploration: bool,
    pub pin_last_routing_signal: bool,
    /// `SummaryTemplate` ("" = the built-in four-section prompt).
    pub summary_template: String,
    /// `Model.ModelId` of the summarizer ("" = the first agent's model).
    pub model: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetConfig {
    pub warn_at: u64,
    pub cutover_at: u64,
    pub max_single_turn_input_tokens: u64,
    pub max_tool_result_tokens: u64,
    pub in_turn_tool_window: u64,
}

impl Default for BudgetConfig {
    /// `ContextBudgetConfig`'s defaults: everything off, InTurnToolWindow 20.
    fn default() -> Self {
        BudgetConfig {
            warn_at: 0,
            cutover_at: 0,
            max_single_turn_input_tokens: 0,
            max_tool_result_tokens: 0,
            in_turn_tool_window: 20,
        }
    }
}

/// One agent's `ContextWindow:` plus its in-turn window fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentWindow {
    pub text_only: bool,
    pub exclude_agents: Vec<String>,
    pub max_turn_age: u64,
    pub max_tail_messages: u64,
    pub context_cap_fraction: f64,
    pub max_tool_result_chars: u64,
    pub tool_result_char_overrides: BTreeMap<String, u64>,
    pub max_replay_chars: u64,
    pub max_in_turn_tool_pairs: u64,
    pub max_in_turn_context_tokens: u64,
}

impl AgentWindow {
    /// The view filter's cap for assistant text (`ContextWindowFilter.Apply` step 7): only when
    /// `MaxReplayChars` is set (0 = off).
    pub fn replay_chars(&self) -> u64 {
        self.max_replay_chars
    }
    /// The cap at checkpoint-resume replay (`TruncateReplayContent`): `MaxReplayChars`, or the
    /// global `DefaultMaxReplayChars` 2,000 when it is 0.
    pub fn resume_replay_chars(&self) -> u64 {
        if self.max_replay_chars == 0 {
            GLOBAL_REPLAY_CHARS
        } else {
            self.max_replay_chars
        }
    }
    /// The MaxToolResultChars cap for one tool (0: no cap). Overrides only count when
    /// MaxToolResultChars is set; an override of 0 disables truncation for that tool.
    pub fn tool_cap(&self, tool: &str) -> u64 {
        if self.max_tool_result_chars == 0 {
            return 0;
        }
        self.tool_result_char_overrides
            .get(tool)
            .copied()
            .unwrap_or(self.max_tool_result_chars)
    }
    /// Whether any filter that needs a scan of the history is configured.
    pub fn filters_history(&self) -> bool {
        self.text_only
            || !self.exclude_agents.is_empty()
            || self.max_turn_age > 0
            || self.max_tail_messages > 0
            || self.max_tool_result_chars > 0
    }
    pub fn strips_tools(&self) -> bool {
        self.text_only || !self.exclude_agents.is_empty()
    }

    /// Sets one field from its fuseraft key; the value was checked against the field's spec.
    fn set(&mut self, key: &str, v: &Value) {
        let uint = || v.as_u64().unwrap_or(0);
        match key {
            "TextOnly" => self.text_only = v.as_bool().unwrap_or(false),
            "ExcludeAgents" => {
                self.exclude_agents = v
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default()
            }
            "MaxTurnAge" => self.max_turn_age = uint(),
            "MaxTailMessages" => self.max_tail_messages = uint(),
            "ContextCapFraction" => self.context_cap_fraction = v.as_f64().unwrap_or(0.0),
            "MaxToolResultChars" => self.max_tool_result_chars = uint(),
            "ToolResultCharOverrides" => {
                self.tool_result_char_overrides = v
                    .as_object()
                    .map(|o| {
                        o.iter()
                            .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0)))
                            .collect()
                    })
                    .unwrap_or_default()
            }
            "MaxReplayChars" => self.max_replay_chars = uint(),
            "MaxInTurnToolPairs" => self.max_in_turn_tool_pairs = uint(),
            "MaxInTurnContextTokens" => self.max_in_turn_context_tokens = uint(),
            _ => {}
        }
    }

    /// Whether setting this one field leaves fuseraft's defaults unchanged.
    pub fn is_default_field(key: &str, v: &Value) -> bool {
        let mut w = AgentWindow::default();
        w.set(key, v);
        w == AgentWindow::default()
    }

    /// The value of one field under its fuseraft key.
    pub fn get(&self, key: &str) -> Value {
        match key {
            "TextOnly" => json!(self.text_only),
            "ExcludeAgents" => json!(self.exclude_agents),
            "MaxTurnAge" => json!(self.max_turn_age),
            "MaxTailMessages" => json!(self.max_tail_messages),
            "ContextCapFraction" => json!(self.context_cap_fraction),
            "MaxToolResultChars" => json!(self.max_tool_result_chars),
            "ToolResultCharOverrides" => json!(self.tool_result_char_overrides),
            "MaxReplayChars" => json!(self.max_replay_chars),
            "MaxInTurnToolPairs" => json!(self.max_in_turn_tool_pairs),
            "MaxInTurnContextTokens" => json!(self.max_in_turn_context_tokens),
            _ => Value::Null,
        }
    }
}

/// Keys of `Agents[].ContextWindow:`.
pub const WINDOW_KEYS: &[&str] = &[
    "TextOnly",
    "ExcludeAgents",
    "MaxTurnAge",
    "MaxTailMessages",
    "ContextCapFraction",
    "MaxToolResultChars",
    "ToolResultCharOverrides",
    "MaxReplayChars",
];
/// Keys that sit directly on the agent (`Agents[].MaxInTurnToolPairs`).
pub const AGENT_KEYS: &[&str] = &["MaxInTurnToolPairs", "MaxInTurnContextTokens"];

pub const COMPACTION_KEYS: &[&str] = &[
    "TriggerTurnCount",
    "KeepRecentTurns",
    "Mode",
    "TokenBudget",
    "IncludeReasoning",
    "IncludeSymbolGraph",
    "MaxCharsPerHistoryMessage",
    "AntiThrashMinSavingsRatio",
    "AntiThrashWindow",
    "IncludeExploration",
    "PinLastRoutingSignal",
    "SummaryTemplate",
    "Model",
];
pub const BUDGET_KEYS: &[&str] = &[
    "WarnAt",
    "CutoverAt",
    "MaxSingleTurnInputTokens",
    "MaxToolResultTokens",
    "InTurnToolWindow",
];

pub const MODES: &[&str] = &["llm", "intent", "lossless", "hybrid", "window"];

/// The parameter schema, with fuseraft's own names, defaults and where each lives in its config.
pub fn schema() -> Vec<ParamSpec> {
    use ParamType::*;
    let c = |name: &str, ty, d: Value, desc: &str| {
        ParamSpec::new(name, ty, d, desc).key(&format!("Compaction.{name}"))
    };
    let b = |name: &str, d: Value, desc: &str| {
        ParamSpec::new(name, Int, d, desc)
            .min(0.0)
            .key(&format!("ContextBudget.{name}"))
    };
    let w = |name: &str, ty, d: Value, desc: &str| {
        ParamSpec::new(name, ty, d, desc).key(&format!("Agents[].ContextWindow.{name}"))
    };
    vec![
        ParamSpec::new(
            "Compaction",
            Bool,
            json!(true),
            "Whether the Compaction: section is present. Without it fuseraft never compacts \
             (and validate rejects CutoverAt / MaxSingleTurnInputTokens).",
        )
        .key("Compaction"),
        c("TriggerTurnCount", Int, json!(50),
          "Compact when the history holds this many assistant turns (one per agent turn, its tool calls folded in). fuseraft refuses ≤ 0 at startup.")
            .min(0.0),
        c("KeepRecentTurns", Int, json!(10),
          "Messages kept verbatim (clamped to [1, count − 1], the previous summary included); the rest, the previous summary too, become one summary. fuseraft refuses < 1 or ≥ TriggerTurnCount at startup.")
            .min(0.0),
        c("Mode", Enum, json!("llm"),
          "llm: simulated LLM summary; intent: deterministic operations list from the tool calls; \
           hybrid: intent text + simulated summary; window: drop oldest user+assistant messages until \
           within TokenBudget; lossless: falls back to llm (no snapshotter in a log), as fuseraft does.")
            .choices(MODES),
        c("TokenBudget", Int, json!(80000),
          "window mode: drop oldest pairs while the chars/4 estimate of the history exceeds this.")
            .min(0.0),
        c("IncludeReasoning", Bool, json!(false),
          "llm/hybrid: prepend reasoning excerpts from fuseraft's events log (exported; not in logs, so not modelled — a note says so).")
        ,
        c("IncludeSymbolGraph", Bool, json!(true),
          "llm/hybrid: prepend the EvidenceStore symbol graph (exported; not in logs, so not modelled — a note says so)."),
        c("MaxCharsPerHistoryMessage", Int, json!(8000),
          "llm/hybrid: messages longer than this are cut before they are sent to the summarizer (0 = off); changes the summarizer's input tokens.")
            .min(0.0),
        c("AntiThrashMinSavingsRatio", Float, json!(0.10),
          "Suppress compaction when each of the last AntiThrashWindow compactions saved less than this share (0 = guard off). fuseraft validate: 0..1."),
        c("AntiThrashWindow", Int, json!(10),
          "How many recent compactions the anti-thrash guard looks at (0 = guard off).")
            .min(0.0),
        c("IncludeExploration", Bool, json!(true),
          "llm/hybrid: prepend the exploration history from fuseraft's events log (exported; not in logs, so not modelled — a note says so)."),
        c("PinLastRoutingSignal", Bool, json!(true),
          "Re-inject the last handoff routing signal after a compaction (exported; ctxlab's edit ops cannot insert a message, so not modelled)."),
        c("SummaryTemplate", String, json!(""),
          "Custom summary prompt ({{$task}}, {{$turn_count}}, {{$change_log}}, {{$history}}); its size is part of the summarizer's input. Empty = the built-in prompt."),
        c("Model", String, json!(""),
          "Compaction.Model.ModelId of the summarizer (empty = the first agent's model). Exported; the replay's summarizer model stands for it."),
        b("WarnAt", json!(0),
          "context_budget_warn once per agent per compaction cycle when its cumulative input tokens since the last compaction reach this (0 = off)."),
        b("CutoverAt", json!(0),
          "Compact when an agent's cumulative input tokens since the last compaction reach this (0 = off; needs Compaction)."),
        b("MaxSingleTurnInputTokens", json!(0),
          "Compact (reason single_turn_limit) when one turn's input tokens exceed this, and before a turn whose history's chars/3 exceeds it (0 = off; needs Compaction)."),
        b("MaxToolResultTokens", json!(0),
          "Tool-result window: when the view's tool results exceed this (chars/4), all but the last InTurnToolWindow become tombstones for that call (0 = off)."),
        b("InTurnToolWindow", json!(20),
          "Tool results always kept verbatim when MaxToolResultTokens is exceeded."),
        w("TextOnly", Bool, json!(false),
          "Strip tool-call frames and tool results from the agent's view."),
        w("ExcludeAgents", StringList, json!([]),
          "Strip these agents' messages from the view (tool results are stripped too)."),
        w("MaxTurnAge", Int, json!(0),
          "Keep only messages of the last N assistant turns in the view (0 = off).")
            .min(0.0),
        w("MaxTailMessages", Int, json!(0),
          "Hard cap: keep only the last N messages of the filtered view (0 = off).")
            .min(0.0),
        w("ContextCapFraction", Float, json!(0.0),
          "context_cap_warning when the filtered view reaches this share of MaxTailMessages (0 = off). fuseraft validate: 0..1."),
        w("MaxToolResultChars", Int, json!(0),
          "Truncate replayed tool results to this many chars (0 = off); reads of files later written or patched are capped at 500.")
            .min(0.0),
        w("ToolResultCharOverrides", IntMap, json!({}),
          "Per-tool MaxToolResultChars (only with MaxToolResultChars; 0 = no truncation for that tool)."),
        w("MaxReplayChars", Int, json!(0),
          "View filter: truncate non-summary assistant text to this many chars (0 = off). At checkpoint resume after a compaction, retained assistant text is cut to this (0 = the global 2,000).")
            .min(0.0),
        ParamSpec::new("MaxInTurnToolPairs", Int, json!(0),
          "In-turn sliding window: keep only the last N tool call/result pairs of the current turn (0 = off).")
            .min(0.0)
            .key("Agents[].MaxInTurnToolPairs"),
        ParamSpec::new("MaxInTurnContextTokens", Int, json!(0),
          "In-turn budget: when the turn's tool results exceed this (chars/4), replace the oldest (0 = off).")
            .min(0.0)
            .key("Agents[].MaxInTurnContextTokens"),
        ParamSpec::new("Agents", String, json!(""),
          "Per-agent overrides of the fields above, as JSON or YAML: {\"Reviewer\": {\"TextOnly\": true, \"MaxTurnAge\": 3}}. \
           Agents not named use the flat values.")
            .key("Agents[].ContextWindow"),
    ]
}

/// What the strategy runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub compaction: Option<CompactionConfig>,
    pub budget: BudgetConfig,
    /// ContextWindow of every agent not named in `agents`.
    pub defaults: AgentWindow,
    /// Per-agent overrides: agent → fuseraft key → value (checked).
    pub agents: BTreeMap<String, Map<String, Value>>,
}

fn spec_of<'a>(schema: &'a [ParamSpec], key: &str) -> Option<&'a ParamSpec> {
    schema.iter().find(|s| s.name == key)
}

/// Parses the `Agents` parameter: a JSON or YAML map agent → {fuseraft key: value}.
pub fn parse_agents(text: &str) -> Result<BTreeMap<String, Map<String, Value>>, String> {
    let mut out = BTreeMap::new();
    if text.trim().is_empty() {
        return Ok(out);
    }
    let v: Value = serde_yaml_ng::from_str(text)
        .map_err(|e| format!("parameter Agents: not valid JSON or YAML: {e}"))?;
    let obj = match v {
        Value::Object(o) => o,
        Value::Null => return Ok(out),
        other => {
            return Err(format!(
                "parameter Agents: expected a map of agent name to settings, got {other}"
            ))
        }
    };
    let schema = schema();
    for (agent, fields) in obj {
        let fields = match fields {
            Value::Object(f) => f,
            Value::Null => Map::new(),
            other => {
                return Err(format!(
                    "parameter Agents: settings of agent {agent} must be a map, got {other}"
                ))
            }
        };
        let mut checked = Map::new();
        for (k, v) in fields {
            if !WINDOW_KEYS.contains(&k.as_str()) && !AGENT_KEYS.contains(&k.as_str()) {
                return Err(format!(
                    "parameter Agents: agent {agent}: unknown key {k}; known keys: {}, {}",
                    WINDOW_KEYS.join(", "),
                    AGENT_KEYS.join(", ")
                ));
            }
            let spec = spec_of(&schema, &k).ok_or_else(|| format!("no spec for {k}"))?;
            // Integers written as floats (YAML 8000.0) are accepted as integers, as Params does.
            let v = match (spec.ty, v.as_f64()) {
                (ParamType::Int, Some(f)) if v.is_f64() && f.fract() == 0.0 => json!(f as i64),
                _ => v,
            };
            spec.check(&v)
                .map_err(|e| format!("parameter Agents: agent {agent}: {e}"))?;
            checked.insert(k, v);
        }
        out.insert(agent, checked);
    }
    Ok(out)
}

/// The canonical text of an agents map (sorted keys, JSON), so equal maps give equal parameters.
pub fn agents_text(agents: &BTreeMap<String, Map<String, Value>>) -> String {
    if agents.is_empty() {
        return String::new();
    }
    let m: Map<String, Value> = agents
        .iter()
        .map(|(a, f)| {
            let sorted: BTreeMap<&String, &Value> = f.iter().collect();
            (a.clone(), json!(sorted))
        })
        .collect();
    Value::Object(m).to_string()
}

impl Settings {
    pub fn from_params(p: &Params) -> Result<Settings, String> {
        let mode_s = p.str("Mode");
        let mode = Mode::parse(mode_s).ok_or_else(|| {
            format!(
                "parameter Mode: expected one of {}, got {mode_s}",
                MODES.join(", ")
            )
        })?;
        let compaction = p.bool("Compaction").then(|| CompactionConfig {
            trigger_turn_count: p.uint("TriggerTurnCount"),
            keep_recent_turns: p.uint("KeepRecentTurns"),
            mode,
            token_budget: p.uint("TokenBudget"),
            include_reasoning: p.bool("IncludeReasoning"),
            include_symbol_graph: p.bool("IncludeSymbolGraph"),
            max_chars_per_history_message: p.uint("MaxCharsPerHistoryMessage"),
            anti_thrash_min_savings_ratio: p.float("AntiThrashMinSavingsRatio"),
            anti_thrash_window: p.uint("AntiThrashWindow"),
            include_exploration: p.bool("IncludeExploration"),
            pin_last_routing_signal: p.bool("PinLastRoutingSignal"),
            summary_template: p.str("SummaryTemplate").to_string(),
            model: p.str("Model").to_string(),
        });
        let budget = BudgetConfig {
            warn_at: p.uint("WarnAt"),
            cutover_at: p.uint("CutoverAt"),
            max_single_turn_input_tokens: p.uint("MaxSingleTurnInputTokens"),
            max_tool_result_tokens: p.uint("MaxToolResultTokens"),
            in_turn_tool_window: p.uint("InTurnToolWindow"),
        };
        let mut defaults = AgentWindow::default();
        for k in WINDOW_KEYS.iter().chain(AGENT_KEYS) {
            defaults.set(k, p.get(k));
        }
        let agents = parse_agents(p.str("Agents"))?;
        Ok(Settings {
            compaction,
            budget,
            defaults,
            agents,
        })
    }

    /// Parameter values (JSON object) that give these settings.
    pub fn to_params(&self) -> Value {
        let mut m = Map::new();
        let base = CompactionConfig::default();
        let c = self.compaction.as_ref().unwrap_or(&base);
        m.insert("Compaction".into(), json!(self.compaction.is_some()));
        m.insert("TriggerTurnCount".into(), json!(c.trigger_turn_count));
        m.insert("KeepRecentTurns".into(), json!(c.keep_recent_turns));
        m.insert("Mode".into(), json!(c.mode.as_str()));
        m.insert("TokenBudget".into(), json!(c.token_budget));
        m.insert("IncludeReasoning".into(), json!(c.include_reasoning));
        m.insert("IncludeSymbolGraph".into(), json!(c.include_symbol_graph));
        m.insert(
            "MaxCharsPerHistoryMessage".into(),
            json!(c.max_chars_per_history_message),
        );
        m.insert(
            "AntiThrashMinSavingsRatio".into(),
            json!(c.anti_thrash_min_savings_ratio),
        );
        m.insert("AntiThrashWindow".into(), json!(c.anti_thrash_window));
        m.insert("IncludeExploration".into(), json!(c.include_exploration));
        m.insert(
            "PinLastRoutingSignal".into(),
            json!(c.pin_last_routing_signal),
        );
        m.insert("SummaryTemplate".into(), json!(c.summary_template));
        m.insert("Model".into(), json!(c.model));
        m.insert("WarnAt".into(), json!(self.budget.warn_at));
        m.insert("CutoverAt".into(), json!(self.budget.cutover_at));
        m.insert(
            "MaxSingleTurnInputTokens".into(),
            json!(self.budget.max_single_turn_input_tokens),
        );
        m.insert(
            "MaxToolResultTokens".into(),
            json!(self.budget.max_tool_result_tokens),
        );
        m.insert(
            "InTurnToolWindow".into(),
            json!(self.budget.in_turn_tool_window),
        );
        for k in WINDOW_KEYS.iter().chain(AGENT_KEYS) {
            m.insert(k.to_string(), self.defaults.get(k));
        }
        m.insert("Agents".into(), json!(agents_text(&self.agents)));
        Value::Object(m)
    }

    /// The ContextWindow an agent runs with: the flat values with its overrides applied.
    pub fn window_for(&self, agent: &str) -> AgentWindow {
        let mut w = self.defaults.clone();
        if let Some(o) = self.agents.get(agent) {
            for (k, v) in o {
                w.set(k, v);
            }
        }
        w
    }

    /// What `OrchestratorBuilder.BuildAsync` refuses at session startup, in its words (every
    /// mode, window included). `validate` does not check these.
    pub fn startup_errors(&self) -> Result<(), String> {
        if let Some(c) = &self.compaction {
            if c.trigger_turn_count == 0 {
                return Err(format!(
                    "Compaction.TriggerTurnCount must be a positive integer (got {}). A value of 0 or less would compact the conversation on every turn.",
                    c.trigger_turn_count
                ));
            }
            if c.keep_recent_turns < 1 {
                return Err("Compaction.KeepRecentTurns must be at least 1.".into());
            }
            if c.keep_recent_turns >= c.trigger_turn_count {
                return Err(format!(
                    "Compaction.KeepRecentTurns ({}) must be less than Compaction.TriggerTurnCount ({}).",
                    c.keep_recent_turns, c.trigger_turn_count
                ));
            }
        }
        // The context-budget guards are checked at startup too (validate mirrors them).
        match self.validate_budget().into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// `ValidateConfigCommand.ValidateCompactionConfig`'s context-budget errors, which
    /// `OrchestratorBuilder` also throws at startup.
    fn validate_budget(&self) -> Vec<String> {
        let mut errs = Vec::new();
        let b = &self.budget;
        if (b.cutover_at > 0 || b.max_single_turn_input_tokens > 0) && self.compaction.is_none() {
            errs.push(
                "ContextBudget.CutoverAt and ContextBudget.MaxSingleTurnInputTokens require a Compaction section. Add Compaction to enable automatic context trimming."
                    .into(),
            );
        }
        if b.warn_at > 0 && b.cutover_at > 0 && b.warn_at >= b.cutover_at {
            errs.push(format!(
                "ContextBudget.WarnAt ({}) must be less than CutoverAt ({}).",
                n0(b.warn_at),
                n0(b.cutover_at)
            ));
        }
        errs
    }

    /// What fuseraft's `validate` command reports as errors about these settings, in its words
    /// (`ValidateCompactionConfig`, and `ValidateAgents` for ContextCapFraction).
    pub fn validate(&self) -> Vec<String> {
        let mut errs = self.validate_budget();
        if let Some(c) = &self.compaction {
            let r = c.anti_thrash_min_savings_ratio;
            if !(0.0..=1.0).contains(&r) {
                errs.push(format!(
                    "Compaction.AntiThrashMinSavingsRatio must be 0.0–1.0 (got {r})."
                ));
            }
        }
        let f = self.defaults.context_cap_fraction;
        if !(0.0..=1.0).contains(&f) {
            errs.push(format!(
                "Agent '(every agent)': ContextCapFraction must be 0.0–1.0 (got {f})."
            ));
        }
        for (agent, o) in &self.agents {
            if let Some(f) = o.get("ContextCapFraction").and_then(|v| v.as_f64()) {
                if !(0.0..=1.0).contains(&f) {
                    errs.push(format!(
                        "Agent '{agent}': ContextCapFraction must be 0.0–1.0 (got {f})."
                    ));
                }
            }
        }
        errs
    }
}

/// .NET's `{n:N0}`: thousands separated by commas.
pub fn n0(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            trigger_turn_count: 50,
            keep_recent_turns: 10,
            mode: Mode::Llm,
            token_budget: 80_000,
            include_reasoning: false,
            include_symbol_graph: true,
            max_chars_per_history_message: 8_000,
            anti_thrash_min_savings_ratio: 0.10,
            anti_thrash_window: 10,
            include_exploration: true,
            pin_last_routing_signal: true,
            summary_template: String::new(),
            model: String::new(),
        }
    }
}
