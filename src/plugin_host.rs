//! Strategy plugins: discovery, loading with `libloading`, ABI checks, and the safe wrapper the
//! replay engine calls.
//!
//! Invariants:
//! - a library is never unloaded: `Library` handles are leaked on purpose (unloading Rust cdylibs
//!   is unsound in practice: thread-locals and leaked statics would dangle);
//! - nothing crosses the boundary unchecked: statuses, op kinds, ranges and strings that come back
//!   from a plugin are copied and validated here or in `replay::validate`;
//! - a plugin's failure (error status, panic turned into a status) becomes `Error::Plugin` naming
//!   the plugin; the process keeps running.

use crate::error::{Error, Result};
use ctxlab_plugin_api::abi::*;
use ctxlab_plugin_api::sdk::{
    Event, EventKind, Line, Op, OpKind, ParamSpec, Role, Scope, Threshold, ThresholdKind,
};
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A loaded plugin: its table lives as long as the process.
pub struct LoadedPlugin {
    pub name: String,
    pub version: String,
    /// Where it was loaded from (`<in-process>` for tables linked into the binary).
    pub path: PathBuf,
    pub abi_minor: u32,
    table: &'static PluginTable,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("path", &self.path)
            .finish()
    }
}

/// What a strategy is, as its plugin describes it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StrategyMeta {
    pub id: String,
    pub title: String,
    pub system: String,
    pub description: String,
    pub params: Vec<ParamSpec>,
    pub export_formats: Vec<String>,
    pub plugin: String,
    pub plugin_version: String,
    pub path: PathBuf,
}

/// One strategy of a loaded plugin.
#[derive(Debug, Clone)]
pub struct StrategyEntry {
    pub meta: StrategyMeta,
    plugin: Arc<LoadedPlugin>,
    index: usize,
}

/// A library that was found but not loaded, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Refusal {
    pub path: PathBuf,
    pub reason: String,
}

/// Text written by a plugin into host memory.
struct Buf(Vec<u8>);

unsafe extern "C" fn buf_write(ctx: *mut c_void, ptr: *const u8, len: usize) {
    if ctx.is_null() || ptr.is_null() || len == 0 {
        return;
    }
    let buf = &mut *(ctx as *mut Buf);
    buf.0.extend_from_slice(std::slice::from_raw_parts(ptr, len));
}

impl Buf {
    fn new() -> Buf {
        Buf(Vec::new())
    }
    fn writer(&mut self) -> HostWriter {
        HostWriter {
            ctx: self as *mut Buf as *mut c_void,
            write: buf_write,
        }
    }
    fn text(self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

unsafe fn str_of(s: StrRef) -> String {
    s.as_str().to_string()
}

impl LoadedPlugin {
    /// Checks a table and wraps it. `path` is what error messages name.
    ///
    /// # Safety
    /// `table` must point to a table that lives for the rest of the process.
    pub unsafe fn from_table(table: *const PluginTable, path: &Path) -> Result<LoadedPlugin, String> {
        let t = table
            .as_ref()
            .ok_or_else(|| "the entry point returned no table".to_string())?;
        if t.abi_major != ABI_MAJOR {
            return Err(format!(
                "plugin ABI {}.{} but this ctxlab speaks ABI {}.{}: rebuild the plugin against ctxlab-plugin-api {}.x",
                t.abi_major, t.abi_minor, ABI_MAJOR, ABI_MINOR, ABI_MAJOR
            ));
        }
        // A table built for ABI 1.0 is exactly this size; a shorter one lacks entry points.
        if t.size < std::mem::size_of::<PluginTable>() {
            return Err(format!(
                "plugin table is {} bytes, ABI {}.{} needs at least {}",
                t.size,
                t.abi_major,
                t.abi_minor,
                std::mem::size_of::<PluginTable>()
            ));
        }
        Ok(LoadedPlugin {
            name: str_of(t.name),
            version: str_of(t.version),
            path: path.to_path_buf(),
            abi_minor: t.abi_minor,
            table: &*table,
        })
    }

    /// Loads a shared library and checks its table.
    pub fn load(path: &Path) -> Result<LoadedPlugin, String> {
        // Safety: loading runs the library's initialisers; that is the contract of a plugin.
        let lib = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("not a loadable shared library: {e}"))?;
        let entry: EntryFn = unsafe {
            *lib.get::<EntryFn>(ENTRY_SYMBOL.as_bytes())
                .map_err(|_| format!("missing symbol {ENTRY_SYMBOL}: not a ctxlab plugin"))?
        };
        // Never unloaded, see the module docs.
        std::mem::forget(lib);
        let table = unsafe { entry() };
        unsafe { LoadedPlugin::from_table(table, path) }
    }

    pub fn strategies(self: &Arc<Self>) -> Vec<StrategyEntry> {
        let t = self.table;
        let descs: &[StrategyDesc] = if t.strategies.is_null() {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(t.strategies, t.strategies_len) }
        };
        descs
            .iter()
            .enumerate()
            .map(|(index, d)| unsafe {
                let schema = str_of(d.params_schema);
                StrategyEntry {
                    meta: StrategyMeta {
                        id: str_of(d.id),
                        title: str_of(d.title),
                        system: str_of(d.system),
                        description: str_of(d.description),
                        params: serde_json::from_str(&schema).unwrap_or_default(),
                        export_formats: str_of(d.export_formats)
                            .split(',')
                            .filter(|s| !s.is_empty())
                            .map(String::from)
                            .collect(),
                        plugin: self.name.clone(),
                        plugin_version: self.version.clone(),
                        path: self.path.clone(),
                    },
                    plugin: Arc::clone(self),
                    index,
                }
            })
            .collect()
    }
}

impl StrategyEntry {
    fn err(&self, message: impl Into<String>) -> Error {
        Error::Plugin {
            plugin: format!("{} ({})", self.meta.plugin, self.meta.id),
            message: message.into(),
        }
    }

    /// Creates an instance with these parameters (a JSON object; defaults fill the rest).
    pub fn create(&self, params: &serde_json::Value) -> Result<Instance> {
        let json = params.to_string();
        let mut err = Buf::new();
        let w = err.writer();
        let inst =
            unsafe { (self.plugin.table.create)(self.index, StrRef::new(&json), &w as *const _) };
        if inst.is_null() {
            let msg = err.text();
            return Err(self.err(if msg.is_empty() {
                "create failed without a message".to_string()
            } else {
                msg
            }));
        }
        Ok(Instance {
            entry: self.clone(),
            ptr: inst,
        })
    }

    /// Parses a config file back into parameters.
    pub fn import(&self, format: &str, text: &str) -> Result<serde_json::Value> {
        let (mut out, mut err) = (Buf::new(), Buf::new());
        let (ow, ew) = (out.writer(), err.writer());
        let st = unsafe {
            (self.plugin.table.import)(
                self.index,
                StrRef::new(format),
                StrRef::new(text),
                &ow,
                &ew,
            )
        };
        if st != STATUS_OK {
            return Err(self.err(err.text()));
        }
        serde_json::from_str(&out.text())
            .map_err(|e| self.err(format!("import returned invalid JSON: {e}")))
    }
}

/// A strategy instance for one replay; destroyed on drop.
pub struct Instance {
    entry: StrategyEntry,
    ptr: *mut c_void,
}

// The instance is used from one thread at a time; plugins are told instances are Send.
unsafe impl Send for Instance {}

/// A decision copied out of plugin memory.
#[derive(Debug, Clone, Default)]
pub struct RawDecision {
    pub ops: Vec<Op>,
    pub events: Vec<Event>,
    pub gauges: Vec<(String, f64)>,
    /// Problems found while copying (unknown op kinds…): the engine rejects the decision.
    pub malformed: Vec<String>,
}

#[derive(Default)]
struct Collect {
    d: RawDecision,
    thresholds: Vec<Threshold>,
}

unsafe extern "C" fn push_op(ctx: *mut c_void, op: *const EditOp) {
    let (Some(c), Some(op)) = ((ctx as *mut Collect).as_mut(), op.as_ref()) else {
        return;
    };
    let text = op.text.as_str().to_string();
    let scope = match op.scope {
        SCOPE_PERSISTENT => Scope::Persistent,
        SCOPE_THIS_CALL => Scope::ThisCall,
        other => {
            c.d.malformed.push(format!("op with unknown scope {other}"));
            return;
        }
    };
    let kind = match op.kind {
        OP_DROP => OpKind::Drop,
        OP_SUMMARIZE => OpKind::Summarize {
            role: Role::from_abi(op.role),
            max_tokens: op.summary_max_tokens,
            summarizer_input_tokens: op.summarizer_input_tokens,
            text,
        },
        OP_TRUNCATE => OpKind::Truncate {
            head: op.head_chars,
            tail: op.tail_chars,
            marker: text,
        },
        OP_MASK => OpKind::Mask { placeholder: text },
        OP_OFFLOAD => OpKind::Offload { stub: text },
        OP_PIN => OpKind::Pin,
        OP_UNPIN => OpKind::Unpin,
        other => {
            c.d.malformed.push(format!("unknown op kind {other}"));
            return;
        }
    };
    c.d.ops.push(Op {
        kind,
        scope,
        start: op.start.min(usize::MAX as u64) as usize,
        end: op.end.min(usize::MAX as u64) as usize,
    });
}

unsafe extern "C" fn push_event(ctx: *mut c_void, ev: *const EventView) {
    let (Some(c), Some(ev)) = ((ctx as *mut Collect).as_mut(), ev.as_ref()) else {
        return;
    };
    c.d.events.push(Event {
        kind: EventKind::from_abi(ev.kind),
        code: ev.code.as_str().to_string(),
        message: ev.message.as_str().to_string(),
        tokens_before: ev.tokens_before,
        tokens_after: ev.tokens_after,
    });
}

unsafe extern "C" fn push_gauge(ctx: *mut c_void, name: StrRef, value: f64) {
    if let Some(c) = (ctx as *mut Collect).as_mut() {
        c.d.gauges.push((name.as_str().to_string(), value));
    }
}

unsafe extern "C" fn push_threshold(ctx: *mut c_void, th: *const ThresholdView) {
    let (Some(c), Some(th)) = ((ctx as *mut Collect).as_mut(), th.as_ref()) else {
        return;
    };
    c.thresholds.push(Threshold {
        kind: match th.kind {
            THRESHOLD_WARN => ThresholdKind::Warn,
            THRESHOLD_CUTOVER => ThresholdKind::Cutover,
            _ => ThresholdKind::Trigger,
        },
        line: match th.line {
            LINE_CUMULATIVE_SINCE_COMPACTION => Line::CumulativeSinceCompaction,
            LINE_CUMULATIVE => Line::Cumulative,
            _ => Line::Occupancy,
        },
        tokens: th.tokens,
        label: th.label.as_str().to_string(),
    });
}

fn sink(c: &mut Collect) -> Sink {
    Sink {
        ctx: c as *mut Collect as *mut c_void,
        push_op,
        push_event,
        push_gauge,
        push_threshold,
    }
}

impl Instance {
    pub fn meta(&self) -> &StrategyMeta {
        &self.entry.meta
    }

    /// Asks for a decision. The views in `call` must stay valid for the duration of the call.
    pub fn decide(&mut self, call: &CallView) -> Result<RawDecision> {
        let mut c = Collect::default();
        let s = sink(&mut c);
        let mut err = Buf::new();
        let ew = err.writer();
        let st = unsafe { (self.entry.plugin.table.decide)(self.ptr, call, &s, &ew) };
        match st {
            STATUS_OK => Ok(c.d),
            _ => {
                let msg = err.text();
                Err(self.entry.err(if msg.is_empty() {
                    format!("decide returned status {st} without a message")
                } else {
                    msg
                }))
            }
        }
    }

    pub fn thresholds(&mut self) -> Vec<Threshold> {
        let mut c = Collect::default();
        let s = sink(&mut c);
        let st = unsafe { (self.entry.plugin.table.thresholds)(self.ptr, &s) };
        if st == STATUS_OK {
            c.thresholds
        } else {
            Vec::new()
        }
    }

    /// The parameters as the target system's config file.
    pub fn export(&mut self, format: &str) -> Result<String> {
        let (mut out, mut err) = (Buf::new(), Buf::new());
        let (ow, ew) = (out.writer(), err.writer());
        let st =
            unsafe { (self.entry.plugin.table.export)(self.ptr, StrRef::new(format), &ow, &ew) };
        if st != STATUS_OK {
            return Err(self.entry.err(err.text()));
        }
        Ok(out.text())
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        unsafe { (self.entry.plugin.table.destroy)(self.ptr) }
    }
}
