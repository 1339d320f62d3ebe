//! What the charts show and in which colours, in one place for the PNG/SVG charts and the HTML
//! report (#21): colour = strategy (distinct for every strategy of a comparison), agents in
//! their top-level agent's colour family (subagents in shades of it) or, beside strategy
//! colours, by line style; one marker lane per strategy with compactions, the log's own
//! compactions and per-call pruning as ticks, thinned when closer than a few pixels; each
//! strategy's own estimate of the context (the gauge its thresholds fire on); and what fills the
//! context as stacked bands per agent.
//!
//! The constants live in `scheme.json`, which the app reads too (`ui/src/colors.ts`, `lanes.ts`,
//! `composition.ts`), and the rules here are the app's rules (`colors.ts`, `lanes.ts`,
//! `comparelanes.ts`, `composition.ts`): `tests/chart_scheme.rs` and the app's vitest
//! (`ui/src/scheme.cases.test.ts`) check both against the same cases, `scheme.cases.json`
//! (colours, families, thinning and its words, a run's lane with its labels, composition bands).

use crate::fmt::fmt_tokens;
use crate::replay::{CompactionKind, Composition, Kind, Run};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// A colour, 8 bits per channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// `#rrggbb`.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }

    fn parse(s: &str) -> Option<Rgb> {
        let h = s.strip_prefix('#')?;
        if h.len() != 6 {
            return None;
        }
        let n = u32::from_str_radix(h, 16).ok()?;
        Some(Rgb((n >> 16) as u8, (n >> 8) as u8, n as u8))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GoldenHue {
    start: f64,
    step: f64,
    saturation: f64,
    lightness: [f64; 2],
}

#[derive(Deserialize)]
struct Shade {
    first: f64,
    step: f64,
    max: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Raw {
    palette: Vec<String>,
    golden_hue: GoldenHue,
    shade: Shade,
    agent_dashes: Vec<Vec<u32>>,
    lane_min_gap_px: f64,
    small_multiples_above: usize,
    max_tools: usize,
    kind_colors: BTreeMap<String, String>,
    tool_shades: Vec<String>,
    other_tools: String,
}

/// The chart scheme (`scheme.json`), parsed.
pub struct Scheme {
    pub palette: Vec<Rgb>,
    golden: GoldenHue,
    shade: Shade,
    pub agent_dashes: Vec<Vec<u32>>,
    /// Ticks of one kind on a lane closer than this many pixels are drawn as one.
    pub lane_min_gap_px: f64,
    /// Above this many strategies a comparison draws one chart per strategy.
    pub small_multiples_above: usize,
    /// Tools whose results keep their own band in a composition; the rest are "other tools".
    pub max_tools: usize,
    kind_colors: BTreeMap<String, Rgb>,
    tool_shades: Vec<Rgb>,
    pub other_tools: Rgb,
}

/// The scheme. `scheme.json` is part of the binary and checked by the tests, so it always parses.
pub fn scheme() -> &'static Scheme {
    static S: OnceLock<Scheme> = OnceLock::new();
    S.get_or_init(|| {
        let raw: Raw = serde_json::from_str(include_str!("scheme.json"))
            .expect("src/chart/scheme.json is valid (tests/chart_scheme.rs)");
        let colour = |s: &String| Rgb::parse(s).unwrap_or(Rgb(136, 136, 136));
        Scheme {
            palette: raw.palette.iter().map(colour).collect(),
            golden: raw.golden_hue,
            shade: raw.shade,
            agent_dashes: raw.agent_dashes,
            lane_min_gap_px: raw.lane_min_gap_px,
            small_multiples_above: raw.small_multiples_above,
            max_tools: raw.max_tools,
            kind_colors: raw
                .kind_colors
                .iter()
                .map(|(k, v)| (k.clone(), colour(v)))
                .collect(),
            tool_shades: raw.tool_shades.iter().map(colour).collect(),
            other_tools: colour(&raw.other_tools),
        }
    })
}

impl Scheme {
    /// The n-th distinct colour: the palette first, then hues spread by the golden angle.
    pub fn nth(&self, n: usize) -> Rgb {
        match self.palette.get(n) {
            Some(c) => *c,
            None => self.golden_hue(n - self.palette.len()),
        }
    }

    fn golden_hue(&self, k: usize) -> Rgb {
        let g = &self.golden;
        // The app writes the hue with one decimal: the same rounding keeps the colours equal.
        let hue = ((g.start + k as f64 * g.step) % 360.0 * 10.0).round() / 10.0;
        let light = g.lightness[k % 2];
        hsl_to_rgb(hue, g.saturation / 100.0, light / 100.0)
    }

    /// The k-th shade of `c` for a subagent: lighter and darker in turn, further each pair.
    pub fn shade(&self, c: Rgb, k: usize) -> Rgb {
        let t = (self.shade.first + self.shade.step * (k / 2) as f64).min(self.shade.max);
        let mix = if k % 2 == 0 { 255.0 } else { 0.0 };
        let f = |v: u8| (v as f64 + (mix - v as f64) * t).round() as u8;
        Rgb(f(c.0), f(c.1), f(c.2))
    }

    /// The line style of the agent of rank `i` (empty: solid).
    pub fn agent_dash(&self, i: usize) -> &[u32] {
        match self.agent_dashes.len() {
            0 => &[],
            n => &self.agent_dashes[i % n],
        }
    }

    /// The colour of a composition kind (not tool results: see `agent_areas`).
    pub fn kind_color(&self, kind: Kind) -> Rgb {
        self.kind_colors
            .get(kind_key(kind))
            .copied()
            .unwrap_or(self.other_tools)
    }
}

fn hsl_to_rgb(h: f64, s: f64, l: f64) -> Rgb {
    let k = |n: f64| (n + h / 30.0) % 12.0;
    let a = s * l.min(1.0 - l);
    let f = |n: f64| {
        let v = l - a * (-1f64).max((k(n) - 3.0).min((9.0 - k(n)).min(1.0)));
        (v * 255.0).round() as u8
    };
    Rgb(f(0.0), f(8.0), f(4.0))
}

/// A distinct colour for each strategy, in the order the strategies were run (a strategy named
/// twice keeps its first colour). `out[i]` is `strategies[i]`'s.
pub fn strategy_colors(strategies: &[&str]) -> Vec<Rgb> {
    let s = scheme();
    let mut seen: Vec<(&str, Rgb)> = Vec::new();
    strategies
        .iter()
        .map(|name| match seen.iter().find(|(n, _)| n == name) {
            Some((_, c)) => *c,
            None => {
                let c = s.nth(seen.len());
                seen.push((name, c));
                c
            }
        })
        .collect()
}

/// An agent's place in the colour families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentStyle {
    pub color: Rgb,
    /// The rank of its top-level agent among top-level agents.
    pub family: usize,
    /// 0 for a top-level agent, else how deep under it.
    pub depth: usize,
}

/// Per agent (by index, `parents[i]` is agent i's parent): its colour — a top-level agent takes
/// the next distinct colour, its subagents shades of it — and its depth.
pub fn agent_families(parents: &[Option<usize>]) -> Vec<AgentStyle> {
    let s = scheme();
    let root = |i: usize| {
        let (mut cur, mut depth) = (i, 0);
        let mut seen = vec![false; parents.len()];
        while let Some(p) = parents.get(cur).copied().flatten() {
            if p >= parents.len() || seen[cur] {
                break;
            }
            seen[cur] = true;
            cur = p;
            depth += 1;
        }
        (cur, depth)
    };
    let info: Vec<(usize, usize)> = (0..parents.len()).map(root).collect();
    let mut roots: Vec<usize> = Vec::new();
    for &(r, _) in &info {
        if !roots.contains(&r) {
            roots.push(r);
        }
    }
    let mut shades: BTreeMap<usize, usize> = BTreeMap::new();
    info.iter()
        .map(|&(r, depth)| {
            let family = roots.iter().position(|&x| x == r).unwrap_or(0);
            let base = s.nth(family);
            if depth == 0 {
                return AgentStyle {
                    color: base,
                    family,
                    depth,
                };
            }
            let k = shades.entry(r).or_insert(0);
            let color = s.shade(base, *k);
            *k += 1;
            AgentStyle {
                color,
                family,
                depth,
            }
        })
        .collect()
}

/// What a lane tick marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TickKind {
    /// A compaction the strategy made.
    Compaction,
    /// A compaction the log recorded.
    Recorded,
    /// A call whose view the strategy's per-call pruning cut.
    Pruning,
}

/// A mark on a strategy's lane.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    pub call: usize,
    pub kind: TickKind,
    /// What happened, in one line (the hover, or a note of the report).
    pub label: String,
    /// For pruning: tokens left out of this call's view.
    pub tokens: u64,
    /// For pruning: the first call of a stretch where pruning bites.
    pub starts: bool,
}

/// The lane of one run: its compactions (with the strategy's reason when it gave one) and its
/// per-call pruning (`Sample::pruned_tokens`), by call.
pub fn run_ticks(run: &Run) -> Vec<Tick> {
    let agent = |a: usize| run.agents.get(a).cloned().unwrap_or_else(|| a.to_string());
    let mut out: Vec<Tick> = Vec::new();
    for c in &run.compactions {
        let at = |e: &&crate::replay::RunEvent| e.call == c.call && e.agent == c.agent;
        let why = run
            .events
            .iter()
            .filter(at)
            .find(|e| e.kind != ctxlab_plugin_api::sdk::EventKind::Compaction)
            .or_else(|| run.events.iter().find(at))
            .map(|e| e.message.clone())
            .or_else(|| c.trigger.clone())
            .filter(|w| !w.is_empty());
        let kind = match c.kind {
            CompactionKind::Recorded => TickKind::Recorded,
            _ => TickKind::Compaction,
        };
        out.push(Tick {
            call: c.call,
            kind,
            label: format!(
                "{} ({}) at call {}: context {} → {}, {} messages{}",
                kind_name(c.kind),
                agent(c.agent),
                fmt_tokens(c.call as u64),
                fmt_tokens(c.context_before),
                fmt_tokens(c.context_after),
                fmt_tokens(c.messages as u64),
                why.map(|w| format!(" — {w}")).unwrap_or_default()
            ),
            tokens: 0,
            starts: false,
        });
    }
    // Per agent: whether its previous call was pruned (a stretch starts where it was not).
    let mut biting = vec![false; run.agents.len()];
    for s in &run.samples {
        let Some(b) = biting.get_mut(s.agent) else {
            continue;
        };
        if s.pruned_tokens == 0 {
            *b = false;
            continue;
        }
        let starts = !std::mem::replace(b, true);
        out.push(Tick {
            call: s.call,
            kind: TickKind::Pruning,
            label: format!(
                "{} ({}) at call {}: {} tokens left out of this call's view",
                if starts {
                    "per-call pruning starts to bite"
                } else {
                    "per-call pruning"
                },
                agent(s.agent),
                fmt_tokens(s.call as u64),
                fmt_tokens(s.pruned_tokens)
            ),
            tokens: s.pruned_tokens,
            starts,
        });
    }
    out.sort_by_key(|t| t.call);
    out
}

/// The name of a compaction kind, as the metrics and the CLI write it.
pub fn kind_name(kind: CompactionKind) -> &'static str {
    match kind {
        CompactionKind::Drop => "drop",
        CompactionKind::Summarize => "summarize",
        CompactionKind::Truncate => "truncate",
        CompactionKind::Mask => "mask",
        CompactionKind::Offload => "offload",
        CompactionKind::Recorded => "recorded",
    }
}

/// A drawn tick: one or more ticks of one kind that fall within the minimum gap.
#[derive(Debug, Clone, PartialEq)]
pub struct Thinned<'a> {
    pub x: f64,
    pub kind: TickKind,
    pub first: &'a Tick,
    pub last: &'a Tick,
    pub count: usize,
    /// Sum of `tokens` of the ticks it stands for.
    pub tokens: u64,
}

/// Ticks in `[x_min, x_max]` placed by `to_px` and thinned: going left to right, a tick closer
/// than `min_gap` pixels to the previous drawn tick of its kind joins it. `ticks` sorted by call.
pub fn thin_ticks<'a>(
    ticks: &'a [Tick],
    to_px: impl Fn(usize) -> f64,
    x_min: usize,
    x_max: usize,
    min_gap: f64,
) -> Vec<Thinned<'a>> {
    let mut out: Vec<Thinned<'a>> = Vec::new();
    let mut last_of: BTreeMap<TickKind, usize> = BTreeMap::new();
    for t in ticks {
        if t.call < x_min || t.call > x_max {
            continue;
        }
        let x = to_px(t.call);
        if let Some(&i) = last_of.get(&t.kind) {
            let prev = &mut out[i];
            if x - prev.x < min_gap {
                prev.last = t;
                prev.count += 1;
                prev.tokens += t.tokens;
                continue;
            }
        }
        last_of.insert(t.kind, out.len());
        out.push(Thinned {
            x,
            kind: t.kind,
            first: t,
            last: t,
            count: 1,
            tokens: t.tokens,
        });
    }
    out
}

/// The text of a drawn tick.
pub fn describe(t: &Thinned<'_>) -> String {
    if t.count == 1 {
        return t.first.label.clone();
    }
    let what = match t.kind {
        TickKind::Pruning => format!(
            "{} pruned calls, {} tokens in all",
            fmt_tokens(t.count as u64),
            fmt_tokens(t.tokens)
        ),
        _ => format!("{} compactions", fmt_tokens(t.count as u64)),
    };
    let at = if t.first.call == t.last.call {
        format!("call {}", fmt_tokens(t.first.call as u64))
    } else {
        format!(
            "calls {}–{}",
            fmt_tokens(t.first.call as u64),
            fmt_tokens(t.last.call as u64)
        )
    };
    format!("{what} at {at}; the first: {}", t.first.label)
}

/// A strategy's gauge that is its own estimate of the context (phi-core's chars/4, FIM One's,
/// CodeTether's): the space its thresholds fire in.
pub fn is_own_estimate(gauge: &str) -> bool {
    gauge == "estimate" || gauge.ends_with("_estimate")
}

/// One agent's line of a strategy's own estimate, as (call, tokens).
#[derive(Debug, Clone, PartialEq)]
pub struct OwnEstimate {
    pub gauge: String,
    pub agent: usize,
    pub points: Vec<(usize, f64)>,
}

/// Each own-estimate gauge of `run`, split by agent (the agent of the call it was read at).
pub fn own_estimates(run: &Run) -> Vec<OwnEstimate> {
    let mut out = Vec::new();
    if !run.gauges.keys().any(|g| is_own_estimate(g)) {
        return out;
    }
    // Calls are session indices, so a table by call is as long as the session.
    let n = run.samples.iter().map(|s| s.call + 1).max().unwrap_or(0);
    let mut agent_at = vec![0usize; n];
    for s in &run.samples {
        agent_at[s.call] = s.agent;
    }
    for (name, points) in &run.gauges {
        if !is_own_estimate(name) {
            continue;
        }
        let mut by_agent: BTreeMap<usize, Vec<(usize, f64)>> = BTreeMap::new();
        for p in points {
            let a = agent_at.get(p.call).copied().unwrap_or(0);
            by_agent.entry(a).or_default().push((p.call, p.value));
        }
        out.extend(by_agent.into_iter().map(|(agent, points)| OwnEstimate {
            gauge: name.clone(),
            agent,
            points,
        }));
    }
    out
}

/// The key of a composition kind (`scheme.json`'s `kindColors`, the app's `CompositionKey.kind`).
pub fn kind_key(kind: Kind) -> &'static str {
    match kind {
        Kind::System => "system",
        Kind::Tools => "tools",
        Kind::User => "user",
        Kind::Assistant => "assistant",
        Kind::Reasoning => "reasoning",
        Kind::ToolCalls => "tool_calls",
        Kind::ToolResults => "tool_results",
        Kind::Injected => "injected",
        Kind::Summaries => "summaries",
    }
}

/// One band of an agent's stacked composition.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    pub label: String,
    pub color: Rgb,
    /// The band's own tokens at each of the agent's calls.
    pub own: Vec<u64>,
    /// The top of the band (it and every band below) at each call; the last band's is the
    /// call's whole context.
    pub top: Vec<u64>,
}

/// The agent's calls that have a composition, in order.
pub fn calls_of(c: &Composition, agent: usize) -> Vec<usize> {
    c.calls
        .iter()
        .enumerate()
        .filter_map(|(i, x)| x.as_ref().filter(|x| x.agent == agent).map(|_| i))
        .collect()
}

/// Stacked bands of the calls `calls` (one agent's, in order): each kind but tool results in
/// `Kind::ALL` order; tool results by tool name for the `max_tools` tools with most tokens at
/// any of these calls (in name order), the rest as "tool results: other tools" on top. Empty
/// bands are left out; at every call the bands sum to its context.
pub fn agent_areas(c: &Composition, calls: &[usize], max_tools: usize) -> Vec<Band> {
    let s = scheme();
    let slices = |i: usize| c.calls.get(i).and_then(|x| x.as_ref()).map(|x| &x.slices);
    // Peak tokens per tool over the calls.
    let mut peak: BTreeMap<&str, u64> = BTreeMap::new();
    for &i in calls {
        for sl in slices(i).into_iter().flatten() {
            if sl.kind == Kind::ToolResults && sl.tokens > 0 {
                let p = peak.entry(sl.tool.as_deref().unwrap_or("?")).or_insert(0);
                *p = (*p).max(sl.tokens);
            }
        }
    }
    let mut ranked: Vec<(&str, u64)> = peak.into_iter().collect();
    // Most tokens first; a tie keeps name order (the app's key order).
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let rank: BTreeMap<&str, usize> = ranked
        .iter()
        .take(max_tools)
        .enumerate()
        .map(|(r, t)| (t.0, r))
        .collect();
    let n = calls.len();
    let mut bands: Vec<(String, Rgb, Vec<u64>)> = Vec::new();
    for kind in Kind::ALL {
        if kind == Kind::ToolResults {
            continue;
        }
        let own: Vec<u64> = calls
            .iter()
            .map(|&i| {
                slices(i)
                    .into_iter()
                    .flatten()
                    .filter(|sl| sl.kind == kind)
                    .map(|sl| sl.tokens)
                    .sum()
            })
            .collect();
        if own.iter().any(|&x| x > 0) {
            bands.push((kind.label().to_string(), s.kind_color(kind), own));
        }
    }
    let mut tools: Vec<(&str, usize)> = rank.iter().map(|(t, r)| (*t, *r)).collect();
    tools.sort();
    let mut other = vec![0u64; n];
    let mut own_of: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (j, &i) in calls.iter().enumerate() {
        for sl in slices(i).into_iter().flatten() {
            if sl.kind != Kind::ToolResults {
                continue;
            }
            let tool = sl.tool.as_deref().unwrap_or("?");
            if rank.contains_key(tool) {
                own_of.entry(tool).or_insert_with(|| vec![0; n])[j] += sl.tokens;
            } else {
                other[j] += sl.tokens;
            }
        }
    }
    for (tool, r) in tools {
        if let Some(own) = own_of.remove(tool) {
            let color = s.tool_shades[r % s.tool_shades.len().max(1)];
            bands.push((format!("{}: {tool}", Kind::ToolResults.label()), color, own));
        }
    }
    if other.iter().any(|&x| x > 0) {
        bands.push(("tool results: other tools".into(), s.other_tools, other));
    }
    let mut acc = vec![0u64; n];
    bands
        .into_iter()
        .map(|(label, color, own)| {
            for (a, x) in acc.iter_mut().zip(&own) {
                *a += x;
            }
            Band {
                label,
                color,
                top: acc.clone(),
                own,
            }
        })
        .collect()
}
