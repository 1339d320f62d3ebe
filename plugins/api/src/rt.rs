//! Glue between the C table and the safe SDK. `export_plugin!` expands to thin `extern "C"`
//! functions that call these; every one of them catches panics, so a bug in a strategy becomes an
//! error status the host reports instead of unwinding across the FFI boundary.

use crate::abi::*;
use crate::sdk::*;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What `export_plugin!` declares: the plugin's name, version and strategies.
pub struct PluginDef {
    pub name: &'static str,
    pub version: &'static str,
    pub factories: &'static [&'static dyn StrategyFactory],
}

/// Owns the strings the table's descriptors point to.
pub struct TableHolder {
    table: PluginTable,
    _descs: Vec<StrategyDesc>,
    _strings: Vec<String>,
}

unsafe impl Send for TableHolder {}
unsafe impl Sync for TableHolder {}

impl TableHolder {
    pub fn table(&self) -> &PluginTable {
        &self.table
    }
}

pub struct Fns {
    pub create: CreateFn,
    pub decide: DecideFn,
    pub thresholds: ThresholdsFn,
    pub export: ExportFn,
    pub import: ImportFn,
    pub destroy: DestroyFn,
}

pub fn build_table(def: &PluginDef, fns: Fns) -> TableHolder {
    // Strings are collected first and never moved afterwards (a String's heap buffer stays put when
    // the Vec holding it reallocates), so the StrRefs below stay valid for the holder's life.
    let mut strings: Vec<String> = Vec::new();
    let infos: Vec<StrategyInfo> = def.factories.iter().map(|f| f.info()).collect();
    for info in &infos {
        strings.push(info.id.to_string());
        strings.push(info.title.to_string());
        strings.push(info.system.to_string());
        strings.push(info.description.to_string());
        strings.push(serde_json::to_string(&info.params).unwrap_or_else(|_| "[]".into()));
        strings.push(info.export_formats.join(","));
    }
    let descs: Vec<StrategyDesc> = strings
        .chunks(6)
        .map(|c| StrategyDesc {
            id: StrRef::new(&c[0]),
            title: StrRef::new(&c[1]),
            system: StrRef::new(&c[2]),
            description: StrRef::new(&c[3]),
            params_schema: StrRef::new(&c[4]),
            export_formats: StrRef::new(&c[5]),
        })
        .collect();
    let table = PluginTable {
        abi_major: ABI_MAJOR,
        abi_minor: ABI_MINOR,
        size: std::mem::size_of::<PluginTable>(),
        name: StrRef::new(def.name),
        version: StrRef::new(def.version),
        strategies: descs.as_ptr(),
        strategies_len: descs.len(),
        create: fns.create,
        decide: fns.decide,
        thresholds: fns.thresholds,
        export: fns.export,
        import: fns.import,
        destroy: fns.destroy,
    };
    TableHolder {
        table,
        _descs: descs,
        _strings: strings,
    }
}

unsafe fn write(w: *const HostWriter, s: &str) {
    if let Some(w) = w.as_ref() {
        (w.write)(w.ctx, s.as_ptr(), s.len());
    }
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panic: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panic: {s}")
    } else {
        "panic".to_string()
    }
}

/// Runs `f`, turning an error or a panic into a status and a message written to `err`.
unsafe fn guarded(err: *const HostWriter, f: impl FnOnce() -> Result<(), String>) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => STATUS_OK,
        Ok(Err(e)) => {
            write(err, &e);
            STATUS_ERROR
        }
        Err(p) => {
            write(err, &panic_message(p));
            STATUS_PANIC
        }
    }
}

struct Instance {
    strategy: Box<dyn Strategy>,
    /// The decision each call fills, emptied before it: its lists keep their room from call to
    /// call instead of growing from nothing at every one.
    decision: Decision,
}

/// # Safety
/// Called by the host through the table with valid pointers.
pub unsafe fn create(
    def: &PluginDef,
    strategy: usize,
    params_json: StrRef,
    err: *const HostWriter,
) -> *mut c_void {
    let mut out: *mut c_void = std::ptr::null_mut();
    guarded(err, || {
        let f = def
            .factories
            .get(strategy)
            .ok_or_else(|| format!("no strategy number {strategy}"))?;
        let text = params_json.as_str();
        let given: serde_json::Value = if text.trim().is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_str(text).map_err(|e| format!("parameters are not valid JSON: {e}"))?
        };
        let params = Params::resolve(&f.info().params, &given)?;
        let s = f.create(params)?;
        out = Box::into_raw(Box::new(Instance {
            strategy: s,
            decision: Decision::default(),
        })) as *mut c_void;
        Ok(())
    });
    out
}

unsafe fn sink_event(sink: &Sink, e: &Event) {
    let ev = EventView {
        kind: e.kind.to_abi(),
        code: StrRef::new(&e.code),
        message: StrRef::new(&e.message),
        tokens_before: e.tokens_before,
        tokens_after: e.tokens_after,
    };
    (sink.push_event)(sink.ctx, &ev);
}

unsafe fn sink_op(sink: &Sink, op: &Op) {
    // Owns an op text the SDK encodes (`DropResults`) until the host has copied it.
    let text: String;
    let mut raw = EditOp {
        kind: OP_DROP,
        scope: match op.scope {
            Scope::Persistent => SCOPE_PERSISTENT,
            Scope::ThisCall => SCOPE_THIS_CALL,
        },
        start: op.start as u64,
        end: op.end as u64,
        head_chars: 0,
        tail_chars: 0,
        summary_max_tokens: 0,
        summarizer_input_tokens: 0,
        role: ROLE_ASSISTANT,
        text: StrRef::EMPTY,
    };
    match &op.kind {
        OpKind::Drop => {}
        OpKind::Summarize {
            role,
            max_tokens,
            summarizer_input_tokens,
            text,
        } => {
            raw.kind = OP_SUMMARIZE;
            raw.role = role.to_abi();
            raw.summary_max_tokens = *max_tokens;
            raw.summarizer_input_tokens = *summarizer_input_tokens;
            raw.text = StrRef::new(text);
        }
        OpKind::Truncate { head, tail, marker } => {
            raw.kind = OP_TRUNCATE;
            raw.head_chars = *head;
            raw.tail_chars = *tail;
            raw.text = StrRef::new(marker);
        }
        OpKind::Mask { placeholder } => {
            raw.kind = OP_MASK;
            raw.text = StrRef::new(placeholder);
        }
        OpKind::Cut { head, tail, marker } => {
            raw.kind = OP_CUT;
            raw.head_chars = *head;
            raw.tail_chars = *tail;
            raw.text = StrRef::new(marker);
        }
        OpKind::Offload { stub } => {
            raw.kind = OP_OFFLOAD;
            raw.text = StrRef::new(stub);
        }
        OpKind::Pin => raw.kind = OP_PIN,
        OpKind::Unpin => raw.kind = OP_UNPIN,
        OpKind::AllowSplit => raw.kind = OP_ALLOW_SPLIT,
        OpKind::Repeat => raw.kind = OP_REPEAT,
        OpKind::DropResults { remove, contents } => {
            raw.kind = OP_DROP_RESULTS;
            text = OpKind::drop_results_text(remove, contents);
            raw.text = StrRef::new(&text);
        }
    }
    (sink.push_op)(sink.ctx, &raw);
}

/// # Safety
/// `instance` comes from `create`; the views are valid for the call.
pub unsafe fn decide(
    instance: *mut c_void,
    call: *const CallView,
    sink: *const Sink,
    err: *const HostWriter,
) -> i32 {
    guarded(err, || {
        let inst = (instance as *mut Instance)
            .as_mut()
            .ok_or("null instance")?;
        let call = call.as_ref().ok_or("null call")?;
        let sink = sink.as_ref().ok_or("null sink")?;
        let count = |text: &str| match sink.count_text {
            Some(f) => f(sink.ctx, StrRef::new(text)),
            None => 0,
        };
        let view = Call::from_raw(call);
        // Read only when the host flags its messages FLAG_CUT (a 1.7 host's sink ends before
        // the field); a 1.8 host flags every message, so the first tells.
        let cut_counter = view.takes_cut(0).then_some(sink.count_cut).flatten();
        let count_cut = |i: usize, head: u64, marker: &str, tail: u64| match cut_counter {
            Some(f) => f(sink.ctx, i as u64, head, StrRef::new(marker), tail),
            None => u64::MAX,
        };
        let call = if sink.count_text.is_some() {
            view.with_counter(&count)
        } else {
            view
        };
        let call = if cut_counter.is_some() {
            call.with_cut_counter(&count_cut)
        } else {
            call
        };
        let d = &mut inst.decision;
        d.clear();
        inst.strategy.decide(&call, d)?;
        for op in &d.ops {
            sink_op(sink, op);
        }
        for e in &d.events {
            sink_event(sink, e);
        }
        for (name, v) in &d.gauges {
            (sink.push_gauge)(sink.ctx, StrRef::new(name), *v);
        }
        Ok(())
    })
}

/// # Safety
/// `instance` comes from `create`.
pub unsafe fn thresholds(instance: *mut c_void, sink: *const Sink) -> i32 {
    guarded(std::ptr::null(), || {
        let inst = (instance as *mut Instance)
            .as_mut()
            .ok_or("null instance")?;
        let sink = sink.as_ref().ok_or("null sink")?;
        for t in inst.strategy.thresholds() {
            let v = ThresholdView {
                kind: match t.kind {
                    ThresholdKind::Warn => THRESHOLD_WARN,
                    ThresholdKind::Cutover => THRESHOLD_CUTOVER,
                    ThresholdKind::Trigger => THRESHOLD_TRIGGER,
                },
                line: match t.line {
                    Line::Occupancy => LINE_OCCUPANCY,
                    Line::CumulativeSinceCompaction => LINE_CUMULATIVE_SINCE_COMPACTION,
                    Line::Cumulative => LINE_CUMULATIVE,
                },
                tokens: t.tokens,
                label: StrRef::new(&t.label),
            };
            (sink.push_threshold)(sink.ctx, &v);
        }
        Ok(())
    })
}

/// # Safety
/// `instance` comes from `create`.
pub unsafe fn export(
    instance: *mut c_void,
    format: StrRef,
    out: *const HostWriter,
    err: *const HostWriter,
) -> i32 {
    guarded(err, || {
        let inst = (instance as *mut Instance)
            .as_mut()
            .ok_or("null instance")?;
        let text = inst.strategy.export(format.as_str())?;
        write(out, &text);
        Ok(())
    })
}

/// # Safety
/// Called by the host with valid pointers.
pub unsafe fn import(
    def: &PluginDef,
    strategy: usize,
    format: StrRef,
    text: StrRef,
    out: *const HostWriter,
    err: *const HostWriter,
) -> i32 {
    guarded(err, || {
        let f = def
            .factories
            .get(strategy)
            .ok_or_else(|| format!("no strategy number {strategy}"))?;
        let v = f.import(format.as_str(), text.as_str())?;
        write(out, &v.to_string());
        Ok(())
    })
}

/// # Safety
/// `instance` comes from `create` and is not used afterwards.
pub unsafe fn destroy(instance: *mut c_void) {
    if !instance.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            drop(Box::from_raw(instance as *mut Instance));
        }));
    }
}

/// Declares a plugin: builds its table, exports `ctxlab_plugin_entry_v1`, and defines
/// `pub fn plugin_table() -> &'static PluginTable` so the crate's own tests (and a host linking it
/// in-process) can use the same table without loading a shared library.
///
/// ```ignore
/// ctxlab_plugin_api::export_plugin!(name: "example", version: env!("CARGO_PKG_VERSION"),
///                                   strategies: [&MyFactory]);
/// ```
#[macro_export]
macro_rules! export_plugin {
    (name: $name:expr, version: $version:expr, strategies: [$($f:expr),* $(,)?] $(,)?) => {
        static __CTXLAB_PLUGIN: $crate::rt::PluginDef = $crate::rt::PluginDef {
            name: $name,
            version: $version,
            factories: &[$($f),*],
        };
        static __CTXLAB_TABLE: ::std::sync::OnceLock<$crate::rt::TableHolder> =
            ::std::sync::OnceLock::new();

        unsafe extern "C" fn __ctxlab_create(
            s: usize, p: $crate::abi::StrRef, e: *const $crate::abi::HostWriter,
        ) -> *mut ::std::ffi::c_void {
            $crate::rt::create(&__CTXLAB_PLUGIN, s, p, e)
        }
        unsafe extern "C" fn __ctxlab_decide(
            i: *mut ::std::ffi::c_void, c: *const $crate::abi::CallView,
            k: *const $crate::abi::Sink, e: *const $crate::abi::HostWriter,
        ) -> i32 {
            $crate::rt::decide(i, c, k, e)
        }
        unsafe extern "C" fn __ctxlab_thresholds(
            i: *mut ::std::ffi::c_void, k: *const $crate::abi::Sink,
        ) -> i32 {
            $crate::rt::thresholds(i, k)
        }
        unsafe extern "C" fn __ctxlab_export(
            i: *mut ::std::ffi::c_void, f: $crate::abi::StrRef,
            o: *const $crate::abi::HostWriter, e: *const $crate::abi::HostWriter,
        ) -> i32 {
            $crate::rt::export(i, f, o, e)
        }
        unsafe extern "C" fn __ctxlab_import(
            s: usize, f: $crate::abi::StrRef, t: $crate::abi::StrRef,
            o: *const $crate::abi::HostWriter, e: *const $crate::abi::HostWriter,
        ) -> i32 {
            $crate::rt::import(&__CTXLAB_PLUGIN, s, f, t, o, e)
        }
        unsafe extern "C" fn __ctxlab_destroy(i: *mut ::std::ffi::c_void) {
            $crate::rt::destroy(i)
        }

        /// This plugin's table, built once.
        pub fn plugin_table() -> &'static $crate::abi::PluginTable {
            __CTXLAB_TABLE
                .get_or_init(|| {
                    $crate::rt::build_table(
                        &__CTXLAB_PLUGIN,
                        $crate::rt::Fns {
                            create: __ctxlab_create,
                            decide: __ctxlab_decide,
                            thresholds: __ctxlab_thresholds,
                            export: __ctxlab_export,
                            import: __ctxlab_import,
                            destroy: __ctxlab_destroy,
                        },
                    )
                })
                .table()
        }

        #[no_mangle]
        pub unsafe extern "C" fn ctxlab_plugin_entry_v1() -> *const $crate::abi::PluginTable {
            match ::std::panic::catch_unwind(plugin_table) {
                Ok(t) => t as *const _,
                Err(_) => ::std::ptr::null(),
            }
        }
    };
}
