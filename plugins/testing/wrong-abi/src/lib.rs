//! Fixture: a table that claims ABI 2.0, built by hand as a future plugin would. The host must
//! refuse it before calling anything, naming the file and both versions.

use ctxlab_plugin_api::abi::*;
use std::ffi::c_void;

unsafe extern "C" fn create(_: usize, _: StrRef, _: *const HostWriter) -> *mut c_void {
    std::ptr::null_mut()
}
unsafe extern "C" fn decide(
    _: *mut c_void,
    _: *const CallView,
    _: *const Sink,
    _: *const HostWriter,
) -> i32 {
    STATUS_ERROR
}
unsafe extern "C" fn thresholds(_: *mut c_void, _: *const Sink) -> i32 {
    STATUS_ERROR
}
unsafe extern "C" fn export(
    _: *mut c_void,
    _: StrRef,
    _: *const HostWriter,
    _: *const HostWriter,
) -> i32 {
    STATUS_ERROR
}
unsafe extern "C" fn import(
    _: usize,
    _: StrRef,
    _: StrRef,
    _: *const HostWriter,
    _: *const HostWriter,
) -> i32 {
    STATUS_ERROR
}
unsafe extern "C" fn destroy(_: *mut c_void) {}

const fn s(text: &'static str) -> StrRef {
    StrRef {
        ptr: text.as_ptr(),
        len: text.len(),
    }
}

static TABLE: PluginTable = PluginTable {
    abi_major: 2,
    abi_minor: 0,
    size: std::mem::size_of::<PluginTable>(),
    name: s("fixture-wrong-abi"),
    version: s("2.0.0"),
    strategies: std::ptr::null(),
    strategies_len: 0,
    create,
    decide,
    thresholds,
    export,
    import,
    destroy,
};

/// The table, for in-process tests.
pub fn plugin_table() -> &'static PluginTable {
    &TABLE
}

#[no_mangle]
pub extern "C" fn ctxlab_plugin_entry_v1() -> *const PluginTable {
    &TABLE
}
