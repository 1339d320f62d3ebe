//! Calibration of a counter against the usage a log recorded.
//!
//! A log holds the conversation but not the system prompt and tool schemas sent with every call,
//! and no counter matches the provider's tokenizer exactly. For each call the replay engine
//! counts the recorded context (`raw`); the provider reported what it really read (`recorded`,
//! `Usage::context_tokens`). Fitting `recorded ≈ overhead + ratio · raw` by least squares gives
//! the missing fixed overhead and the counter's scale error, as LibreChat does. Tokens the log
//! itself records (a reply's final output tokens, hidden reasoning: `tokens::message_tokens`)
//! are not estimates and are not fitted: the fit is `recorded − known ≈ overhead + ratio · raw`
//! over the counted rest only. The per-call
//! absolute percentage error of that prediction is the session's *fidelity*: how far to trust a
//! what-if replay of it.
//!
//! An agent whose calls ran on more than one model (a skill running on haiku inside an opus
//! session) gets one fit per model: the models' tokenizers differ, so one ratio through both
//! bends to neither (`ModelFit`; the rule for fewer than [`MIN_AGENT_SAMPLES`] calls is the
//! agent's, applied to each model's calls).
//!
//! The fit is in-sample (the same calls fit and score it): the figure says how well one overhead
//! and one ratio explain the session, which is what a replay of the same session relies on.

use serde::{Deserialize, Serialize};

use super::TokenCounter;
use crate::model::{AgentIdx, Session};
use crate::replay::RawContext;

/// An agent needs this many calls with recorded usage for a fit of its own; below that it uses
/// the session's fit (two points always fit a line exactly and say nothing about the error).
pub const MIN_AGENT_SAMPLES: usize = 3;

/// One call's raw estimate beside the tokens the provider recorded for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSample {
    /// Index into `Session::calls`.
    pub call: usize,
    pub agent: AgentIdx,
    /// Counted tokens of the call's recorded context, without any overhead.
    pub raw: u64,
    /// `Usage::context_tokens` of the call.
    pub recorded: u64,
    /// Tokens of the context known from the log (recorded sizes): not fitted, added as they are.
    #[serde(default)]
    pub known: u64,
    /// `raw` counts the whole request (`Session::whole_requests`): no content is missing, so
    /// the fit's overhead is the counter's bias on the fixed part and may be negative.
    #[serde(default)]
    pub whole: bool,
    /// The call's model, as the index of the first call of the session that ran on it
    /// (`Session::call_model`; `u32::MAX` when neither the call nor its agent names one). Calls
    /// of one agent with different keys get a fit per model.
    #[serde(default)]
    pub model: u32,
}

/// `predicted = overhead + ratio · raw`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// Tokens every call carries that the log does not show (system prompt, tool schemas); ≥ 0,
    /// but for whole requests (`CallSample::whole`), where it is what the ratio leaves of the
    /// fixed part's tokens and may be negative.
    pub overhead: f64,
    /// Provider tokens per counted token; > 0.
    pub ratio: f64,
}

impl Fit {
    /// The identity: no overhead, the counter taken at its word.
    pub const IDENTITY: Fit = Fit {
        overhead: 0.0,
        ratio: 1.0,
    };

    pub fn predict(&self, raw: u64) -> u64 {
        (self.overhead + self.ratio * raw as f64).round().max(0.0) as u64
    }

    /// A context of `raw` counted tokens and `known` tokens the log recorded.
    pub fn predict_known(&self, raw: u64, known: u64) -> u64 {
        (self.overhead + self.ratio * raw as f64 + known as f64)
            .round()
            .max(0.0) as u64
    }
}

/// The fit an agent's calls are predicted with, and how well it predicts them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentFit {
    pub agent: AgentIdx,
    pub fit: Fit,
    /// False when the agent had fewer than [`MIN_AGENT_SAMPLES`] calls: it then has the
    /// within-agent ratio (one slope about each agent's own means; else the session fit's) and an
    /// overhead of its own (the mean of what the ratio leaves of its calls).
    pub own_fit: bool,
    /// Calls of this agent with both a raw estimate and recorded usage.
    pub samples: usize,
    /// Mean absolute percentage error of this agent's calls, in percent.
    pub mean_ape: f64,
    /// 95th percentile (nearest rank) absolute percentage error, in percent.
    pub p95_ape: f64,
    /// One fit per model when the agent's calls ran on several (empty otherwise); `fit` is then
    /// the line through all its calls, used for a call whose model has no entry here.
    #[serde(default)]
    pub models: Vec<ModelFit>,
}

/// The fit of one agent's calls on one model, when the agent ran on several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelFit {
    /// `CallSample::model`: the first call of the session that ran on this model (its name is
    /// `Session::call_model` of that call).
    pub model: u32,
    pub fit: Fit,
    /// As `AgentFit::own_fit`, for this model's calls of the agent.
    pub own_fit: bool,
    pub samples: usize,
    pub mean_ape: f64,
    pub p95_ape: f64,
}

/// Overhead and ratio per agent, with the error of the calibrated prediction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The fit over every call of the session; agents with too few calls use it.
    pub session: Fit,
    /// One entry per agent that has samples, in agent order.
    pub agents: Vec<AgentFit>,
    /// Mean absolute percentage error over every call, each predicted with its agent's fit.
    pub mean_ape: f64,
    pub p95_ape: f64,
    pub samples: usize,
}

impl Calibration {
    /// The fit for an agent's calls: its own, the session's when it has none.
    pub fn fit_for(&self, agent: AgentIdx) -> Fit {
        self.agent(agent).map_or(self.session, |a| a.fit)
    }

    pub fn agent(&self, agent: AgentIdx) -> Option<&AgentFit> {
        self.agents.iter().find(|a| a.agent == agent)
    }

    /// Calibrated context tokens of a call of `agent` whose recorded context counts `raw`.
    pub fn predict(&self, agent: AgentIdx, raw: u64) -> u64 {
        self.fit_for(agent).predict(raw)
    }

    /// Calibrated context tokens of a call of `agent` with this recorded context.
    pub fn predict_context(&self, agent: AgentIdx, c: RawContext) -> u64 {
        self.fit_for(agent).predict_known(c.counted, c.known)
    }

    /// The fit for call `ci` of `session` (the session this calibration was fitted on): its
    /// agent's fit for the call's model when the agent ran on several, else its agent's.
    pub fn fit_for_call(&self, session: &Session, ci: usize) -> Fit {
        let Some(call) = session.calls.get(ci) else {
            return self.session;
        };
        let Some(a) = self.agent(call.agent) else {
            return self.session;
        };
        if a.models.is_empty() {
            return a.fit;
        }
        let name = session.call_model(call);
        a.models
            .iter()
            .find(|m| {
                let first = session.calls.get(m.model as usize);
                match first {
                    Some(first) => session.call_model(first) == name,
                    None => name.is_none(),
                }
            })
            .map_or(a.fit, |m| m.fit)
    }

    /// Calibrated context tokens of call `ci` of `session` with this recorded context.
    pub fn predict_call(&self, session: &Session, ci: usize, c: RawContext) -> u64 {
        self.fit_for_call(session, ci)
            .predict_known(c.counted, c.known)
    }
}

/// Calibrates `counter` on a session: counts each call's recorded context (the replay engine's
/// reconstruction) and fits it to the recorded usage. `None` when no call has both.
pub fn calibrate_session(session: &Session, counter: &dyn TokenCounter) -> Option<Calibration> {
    let raw = crate::replay::recorded_contexts(session, counter);
    calibrate(&samples(session, &raw))
}

/// Pairs each call's counted context (`raw[i]` for `session.calls[i]`, as
/// `replay::recorded_contexts` returns them) with its recorded context tokens; calls lacking
/// either are left out.
pub fn samples<R: Copy + Into<RawContext>>(
    session: &Session,
    raw: &[Option<R>],
) -> Vec<CallSample> {
    // The first call of each model name: the model's key.
    let mut first: Vec<(Option<&str>, u32)> = Vec::new();
    session
        .calls
        .iter()
        .zip(raw)
        .enumerate()
        .filter_map(|(call, (c, raw))| {
            let name = session.call_model(c);
            let model = match first.iter().find(|(n, _)| *n == name) {
                Some(&(_, k)) => k,
                None => {
                    let k = if name.is_some() {
                        call as u32
                    } else {
                        u32::MAX
                    };
                    first.push((name, k));
                    k
                }
            };
            let raw: RawContext = (*raw)?.into();
            Some(CallSample {
                call,
                agent: c.agent,
                raw: raw.counted,
                recorded: c.usage?.context_tokens(),
                known: raw.known,
                whole: session.whole_requests,
                model,
            })
        })
        .collect()
}

/// Fits a calibration; `None` when no sample has recorded usage. Samples with `recorded == 0`
/// are ignored: a zero context means the usage is missing, and its percentage error is undefined.
pub fn calibrate(samples: &[CallSample]) -> Option<Calibration> {
    let samples: Vec<CallSample> = samples.iter().copied().filter(|s| s.recorded > 0).collect();
    if samples.is_empty() {
        return None;
    }
    // A negative overhead only fits calls that hold their whole request.
    let signed = samples.iter().all(|s| s.whole);
    let session = least_squares(&samples, signed);
    // The groups a line is fitted to: each agent, or each (agent, model) of an agent that ran
    // on several models.
    let mut groups: Vec<(AgentIdx, u32)> = samples.iter().map(|s| (s.agent, s.model)).collect();
    groups.sort_unstable();
    groups.dedup();
    let mut agent_ids: Vec<AgentIdx> = groups.iter().map(|g| g.0).collect();
    agent_ids.dedup();
    let mut split_agents: Vec<AgentIdx> = groups
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| w[0].0)
        .collect();
    split_agents.dedup();
    let split = |a: AgentIdx| split_agents.binary_search(&a).is_ok();
    let group_of = |s: &CallSample| (s.agent, if split(s.agent) { s.model } else { 0 });
    let mut keys: Vec<(AgentIdx, u32)> = samples.iter().map(group_of).collect();
    keys.sort_unstable();
    keys.dedup();
    let small_ratio = within_group_ratio(&samples, &keys, &group_of).unwrap_or(session.ratio);
    // One group's fit: its own line with enough calls, else the within-group ratio and its own
    // overhead.
    let fit_group = |own: &[CallSample]| -> (Fit, bool) {
        if own.len() >= MIN_AGENT_SAMPLES {
            (least_squares(own, signed), true)
        } else {
            (own_overhead(own, small_ratio, signed), false)
        }
    };

    let mut all_errors = Vec::with_capacity(samples.len());
    let agents = agent_ids
        .into_iter()
        .map(|agent| {
            let own: Vec<CallSample> = samples
                .iter()
                .copied()
                .filter(|s| s.agent == agent)
                .collect();
            let (fit, own_fit) = fit_group(&own);
            let mut models = Vec::new();
            let mut errors: Vec<f64> = Vec::with_capacity(own.len());
            if split(agent) {
                let mut keys: Vec<u32> = own.iter().map(|s| s.model).collect();
                keys.sort_unstable();
                keys.dedup();
                for model in keys {
                    let mine: Vec<CallSample> =
                        own.iter().copied().filter(|s| s.model == model).collect();
                    let (mfit, mown) = fit_group(&mine);
                    let mut e: Vec<f64> = mine.iter().map(|s| ape(mfit, s)).collect();
                    errors.extend_from_slice(&e);
                    let (mean_ape, p95_ape) = mean_and_p95(&mut e);
                    models.push(ModelFit {
                        model,
                        fit: mfit,
                        own_fit: mown,
                        samples: mine.len(),
                        mean_ape,
                        p95_ape,
                    });
                }
            } else {
                errors.extend(own.iter().map(|s| ape(fit, s)));
            }
            all_errors.extend_from_slice(&errors);
            let (mean_ape, p95_ape) = mean_and_p95(&mut errors);
            AgentFit {
                agent,
                fit,
                own_fit,
                samples: own.len(),
                mean_ape,
                p95_ape,
                models,
            }
        })
        .collect();
    let (mean_ape, p95_ape) = mean_and_p95(&mut all_errors);
    Some(Calibration {
        session,
        agents,
        mean_ape,
        p95_ape,
        samples: samples.len(),
    })
}

/// One ratio for every group (an agent, or an agent's calls on one model), each with its own
/// overhead: the least-squares slope of the calls about their group's means (agents' system
/// prompts differ, so one line through all calls mixes their overheads into the slope: 0.45 on
/// the ADK capture, whose planner alone fits 0.90). `None` when no group's calls vary or the
/// slope is not positive.
fn within_group_ratio(
    samples: &[CallSample],
    groups: &[(AgentIdx, u32)],
    group_of: &dyn Fn(&CallSample) -> (AgentIdx, u32),
) -> Option<f64> {
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for &g in groups {
        let own = samples.iter().filter(|s| group_of(s) == g);
        let n = own.clone().count() as f64;
        let mean_x = own.clone().map(|s| s.raw as f64).sum::<f64>() / n;
        let mean_y = own.clone().map(target).sum::<f64>() / n;
        for s in own {
            let x = s.raw as f64 - mean_x;
            sxx += x * x;
            sxy += x * (target(s) - mean_y);
        }
    }
    (sxx > 0.0 && sxy > 0.0).then(|| sxy / sxx)
}

/// The session's ratio with the overhead that fits `samples` best under it (their mean
/// difference, at least 0 unless `signed`): an agent with too few calls for a line of its own
/// still has its own system prompt and tools.
fn own_overhead(samples: &[CallSample], ratio: f64, signed: bool) -> Fit {
    let n = samples.len().max(1) as f64;
    let overhead = samples
        .iter()
        .map(|s| target(s) - ratio * s.raw as f64)
        .sum::<f64>()
        / n;
    Fit {
        overhead: if signed { overhead } else { overhead.max(0.0) },
        ratio,
    }
}

/// What the fit must explain of a call: its recorded context less the tokens known from the log.
fn target(s: &CallSample) -> f64 {
    s.recorded as f64 - s.known as f64
}

fn ape(fit: Fit, s: &CallSample) -> f64 {
    let predicted = fit.predict_known(s.raw, s.known) as f64;
    let recorded = s.recorded as f64;
    (predicted - recorded).abs() / recorded * 100.0
}

fn mean_and_p95(errors: &mut [f64]) -> (f64, f64) {
    if errors.is_empty() {
        return (0.0, 0.0);
    }
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    errors.sort_unstable_by(f64::total_cmp);
    let rank = (0.95 * errors.len() as f64).ceil() as usize;
    (mean, errors[rank.max(1) - 1])
}

/// Least squares under `ratio > 0` and, unless `signed` (whole requests), `overhead ≥ 0`. The
/// unconstrained line wins when it is feasible; otherwise the best of the boundary candidates: a
/// line through the origin, or ratio 1 with the mean difference as overhead (what is left when
/// the data show no positive slope, e.g. every call has the same raw count).
fn least_squares(samples: &[CallSample], signed: bool) -> Fit {
    let n = samples.len() as f64;
    let mean_x = samples.iter().map(|s| s.raw as f64).sum::<f64>() / n;
    let mean_y = samples.iter().map(target).sum::<f64>() / n;
    let (mut sxx, mut sxy, mut xx, mut xy) = (0.0, 0.0, 0.0, 0.0);
    for s in samples {
        let (x, y) = (s.raw as f64, target(s));
        sxx += (x - mean_x) * (x - mean_x);
        sxy += (x - mean_x) * (y - mean_y);
        xx += x * x;
        xy += x * y;
    }
    let mut candidates = Vec::with_capacity(3);
    if sxx > 0.0 {
        let ratio = sxy / sxx;
        let overhead = mean_y - ratio * mean_x;
        if ratio > 0.0 && (overhead >= 0.0 || signed) {
            return Fit { overhead, ratio };
        }
    }
    // First on purpose: on a tie (constant raw counts) the counter's own scale is kept.
    candidates.push(Fit {
        overhead: if signed {
            mean_y - mean_x
        } else {
            (mean_y - mean_x).max(0.0)
        },
        ratio: 1.0,
    });
    if xx > 0.0 && xy > 0.0 {
        candidates.push(Fit {
            overhead: 0.0,
            ratio: xy / xx,
        });
    }
    let sse = |f: &Fit| -> f64 {
        samples
            .iter()
            .map(|s| {
                let e = f.overhead + f.ratio * s.raw as f64 - target(s);
                e * e
            })
            .sum()
    };
    candidates
        .into_iter()
        .min_by(|a, b| sse(a).total_cmp(&sse(b)))
        .unwrap_or(Fit::IDENTITY)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(call: usize, agent: AgentIdx, raw: u64, recorded: u64) -> CallSample {
        CallSample {
            call,
            agent,
            raw,
            recorded,
            known: 0,
            whole: false,
            model: 0,
        }
    }

    #[test]
    fn exact_line_is_recovered_with_zero_error() {
        let s: Vec<_> = (0..10)
            .map(|i| sample(i, 0, 1000 * i as u64, 5000 + 1200 * i as u64))
            .collect();
        let c = calibrate(&s).unwrap();
        assert!((c.session.overhead - 5000.0).abs() < 1e-6);
        assert!((c.session.ratio - 1.2).abs() < 1e-9);
        assert_eq!(c.mean_ape, 0.0);
        assert_eq!(c.p95_ape, 0.0);
        assert_eq!(c.samples, 10);
        assert_eq!(c.predict(0, 10_000), 17_000);
    }

    #[test]
    fn negative_intercept_is_clamped_to_a_line_through_the_origin() {
        // recorded = 2·raw − 100: the unconstrained fit wants overhead −100.
        let s: Vec<_> = (1..=5)
            .map(|i| sample(i, 0, 100 * i as u64, 200 * i as u64 - 100))
            .collect();
        let c = calibrate(&s).unwrap();
        assert_eq!(c.session.overhead, 0.0);
        let xy: f64 = s.iter().map(|s| (s.raw * s.recorded) as f64).sum();
        let xx: f64 = s.iter().map(|s| (s.raw * s.raw) as f64).sum();
        assert!((c.session.ratio - xy / xx).abs() < 1e-12);
    }

    #[test]
    fn constant_raw_counts_keep_ratio_one() {
        let s: Vec<_> = (0..4)
            .map(|i| sample(i, 0, 1000, 3000 + i as u64 * 10))
            .collect();
        let c = calibrate(&s).unwrap();
        // The origin line and ratio 1 both predict the mean; the tie keeps the counter's scale.
        assert_eq!(
            c.session,
            Fit {
                overhead: 2015.0,
                ratio: 1.0
            }
        );
        assert_eq!(c.predict(0, 1000), 3015);
    }

    #[test]
    fn agents_with_few_calls_take_the_within_agent_ratio_and_their_own_overhead() {
        let mut s: Vec<_> = (0..6)
            .map(|i| sample(i, 0, 1000 * (i as u64 + 1), 2000 + 1000 * (i as u64 + 1)))
            .collect();
        // A side agent with its own, larger system prompt: 2 calls only.
        s.push(sample(6, 1, 500, 9600));
        s.push(sample(7, 1, 800, 9700));
        let c = calibrate(&s).unwrap();
        let main = c.agent(0).unwrap();
        let sub = c.agent(1).unwrap();
        assert!(main.own_fit && !sub.own_fit);
        // One slope about each agent's own means: main's (x − 3500, slope 1) and the side
        // agent's (±150 → ±50), not the slope of one line through all calls.
        let within = (17_500_000.0 + 15_000.0) / (17_500_000.0 + 45_000.0);
        assert!((sub.fit.ratio - within).abs() < 1e-9, "{}", sub.fit.ratio);
        let r = sub.fit.ratio;
        let overhead = ((9600.0 - r * 500.0) + (9700.0 - r * 800.0)) / 2.0;
        assert!((sub.fit.overhead - overhead).abs() < 1e-9);
        // The session's overhead would miss the side agent's calls by thousands of tokens.
        let with_session = ((c.session.predict(500) as f64 - 9600.0).abs() / 9600.0) * 100.0;
        assert!(
            sub.mean_ape < with_session / 4.0,
            "{} vs {with_session}",
            sub.mean_ape
        );
        assert_eq!(
            c.fit_for(7),
            c.session,
            "an agent without samples uses the session fit"
        );
        assert_eq!((main.samples, sub.samples, c.samples), (6, 2, 8));
    }

    #[test]
    fn an_agent_on_two_models_gets_a_fit_per_model() {
        // One agent, one system prompt (4,000 tokens), two tokenizers: opus reads 1.2 provider
        // tokens per counted token, haiku (a skill, calls 6..10) 0.9; and a third model with 2
        // calls only, whose own overhead goes with the within-group ratio.
        let mut s: Vec<_> = (0..6)
            .map(|i| {
                let raw = 10_000 + 3_000 * i as u64;
                sample(i, 0, raw, 4_000 + raw * 6 / 5)
            })
            .collect();
        for i in 6..11 {
            let raw = 2_000 + 1_000 * i as u64;
            s.push(CallSample {
                model: 6,
                ..sample(i, 0, raw, 3_600 + raw * 9 / 10)
            });
        }
        for (i, raw) in [(11, 30_000), (12, 31_000)] {
            s.push(CallSample {
                model: 11,
                ..sample(i, 0, raw, 50_000)
            });
        }
        let c = calibrate(&s).unwrap();
        let a = c.agent(0).unwrap();
        assert_eq!(a.models.len(), 3, "{a:?}");
        let opus = &a.models[0];
        let haiku = &a.models[1];
        let third = &a.models[2];
        assert_eq!((opus.model, haiku.model, third.model), (0, 6, 11));
        assert!(opus.own_fit && haiku.own_fit && !third.own_fit);
        assert!((opus.fit.ratio - 1.2).abs() < 1e-9, "{:?}", opus.fit);
        assert!((opus.fit.overhead - 4_000.0).abs() < 1e-6);
        assert!((haiku.fit.ratio - 0.9).abs() < 1e-9, "{:?}", haiku.fit);
        assert!((haiku.fit.overhead - 3_600.0).abs() < 1e-6);
        assert_eq!((opus.samples, haiku.samples, third.samples), (6, 5, 2));
        // The third model's two calls: its own overhead, the ratio of the lines within groups.
        let within = third.fit.ratio;
        assert!(within > 0.9 && within < 1.2, "{within}");
        assert!(third.mean_ape < 1.5, "{}", third.mean_ape);
        assert!(opus.mean_ape < 1e-9 && haiku.mean_ape < 1e-9);
        // One line through the agent's calls (what it had before) misses both models.
        let one = calibrate(
            &s.iter()
                .map(|x| CallSample { model: 0, ..*x })
                .collect::<Vec<_>>(),
        )
        .unwrap();
        assert!(one.agent(0).unwrap().models.is_empty());
        assert!(one.mean_ape > 5.0, "{}", one.mean_ape);
        assert!(
            c.mean_ape < one.mean_ape / 5.0,
            "{} vs {}",
            c.mean_ape,
            one.mean_ape
        );
        // The agent's own line (all its calls) stays, for calls of a model with no fit.
        assert!(a.own_fit && a.samples == 13);
    }

    #[test]
    fn known_tokens_are_added_as_recorded_not_fitted() {
        // recorded = 3000 overhead + 1.5 · counted + known: the fit must find 1.5, not a ratio
        // bent by the known part.
        let s: Vec<_> = (0..8)
            .map(|i| {
                let raw = 1000 * (i as u64 + 1);
                let known = 700 * (i as u64 * i as u64);
                CallSample {
                    call: i,
                    agent: 0,
                    raw,
                    recorded: 3000 + raw * 3 / 2 + known,
                    known,
                    whole: false,
                    model: 0,
                }
            })
            .collect();
        let c = calibrate(&s).unwrap();
        assert!((c.session.ratio - 1.5).abs() < 1e-9, "{:?}", c.session);
        assert!((c.session.overhead - 3000.0).abs() < 1e-6);
        assert_eq!(c.mean_ape, 0.0);
        assert_eq!(
            c.predict_context(
                0,
                RawContext {
                    counted: 2000,
                    known: 500
                }
            ),
            6500
        );
    }

    #[test]
    fn ape_mean_and_p95_use_nearest_rank() {
        // Identity data except one call: errors are 0 % on 19 calls and 50 % on one.
        let mut s: Vec<_> = (1..=19).map(|i| sample(i, 0, 0, 1000)).collect();
        s.push(sample(20, 0, 0, 2000));
        let c = calibrate(&s).unwrap();
        // raw is constant 0: overhead = mean(recorded) = 1050, ratio 1
        assert_eq!(c.session.overhead, 1050.0);
        let expected: Vec<f64> = s
            .iter()
            .map(|x| (1050.0 - x.recorded as f64).abs() / x.recorded as f64 * 100.0)
            .collect();
        let mean = expected.iter().sum::<f64>() / 20.0;
        assert!((c.mean_ape - mean).abs() < 1e-9);
        // nearest rank: ceil(0.95·20) = 19th of the sorted errors = 5 % (the 20th is 47.5 %)
        assert!((c.p95_ape - 5.0).abs() < 1e-9, "{}", c.p95_ape);
    }

    #[test]
    fn whole_requests_may_fit_a_negative_overhead() {
        // The counter over-counts a 10,000-token fixed part (tool schemas as JSON) as 12,000 and
        // counts the rest 1:1: recorded = raw − 2,000. Missing content cannot be negative, but a
        // counter's bias on content it sees can: only whole requests get the signed line.
        let mk = |whole| -> Vec<CallSample> {
            (0..6)
                .map(|i| {
                    let raw = 12_000 + 1_000 * i as u64;
                    CallSample {
                        whole,
                        ..sample(i, 0, raw, raw - 2_000)
                    }
                })
                .collect()
        };
        let c = calibrate(&mk(true)).unwrap();
        assert!(
            (c.session.overhead + 2_000.0).abs() < 1e-6,
            "{:?}",
            c.session
        );
        assert!((c.session.ratio - 1.0).abs() < 1e-9);
        assert_eq!(c.mean_ape, 0.0);
        let clamped = calibrate(&mk(false)).unwrap();
        assert_eq!(clamped.session.overhead, 0.0);
        assert!(clamped.mean_ape > 1.0, "{}", clamped.mean_ape);
        // An agent with too few calls keeps its own (negative) mean difference too.
        let mut s = mk(true);
        s.push(CallSample {
            whole: true,
            ..sample(6, 1, 5_000, 4_000)
        });
        let c = calibrate(&s).unwrap();
        let side = c.agent(1).unwrap();
        assert!(!side.own_fit);
        assert_eq!(side.fit.predict(5_000), 4_000);
    }

    #[test]
    fn no_usable_sample_gives_no_calibration() {
        assert!(calibrate(&[]).is_none());
        assert!(calibrate(&[sample(0, 0, 100, 0)]).is_none());
    }
}
