//! Fixture: an ABI 1 table that stops after `create`, as a plugin built against a broken header
//! would. The host must refuse it from the header alone, never reading past the table's end.

use ctxlab_plugin_api::abi::*;
use std::ffi::c_void;

/// The first fields of `PluginTable`, and nothing after `create`.
#[repr(C)]
pub struct ShortTable {
    pub abi_major: u32,
    pub abi_minor: u32,
    pub size: usize,
    pub name: StrRef,
    pub version: StrRef,
    pub strategies: *const StrategyDesc,
    pub strategies_len: usize,
    pub create: CreateFn,
}

// Read-only static data.
unsafe impl Sync for ShortTable {}

unsafe extern "C" fn create(_: usize, _: StrRef, _: *const HostWriter) -> *mut c_void {
    std::ptr::null_mut()
}

const fn s(text: &'static str) -> StrRef {
    StrRef {
        ptr: text.as_ptr(),
        len: text.len(),
    }
}

static TABLE: ShortTable = ShortTable {
    abi_major: ABI_MAJOR,
    abi_minor: ABI_MINOR,
    size: std::mem::size_of::<ShortTable>(),
    name: s("fixture-short-table"),
    version: s("0.1.0"),
    strategies: std::ptr::null(),
    strategies_len: 0,
    create,
};

/// The table as the entry point hands it out (a pointer the host must treat with care).
pub fn plugin_table() -> *const PluginTable {
    &TABLE as *const ShortTable as *const PluginTable
}

#[no_mangle]
pub extern "C" fn ctxlab_plugin_entry_v1() -> *const PluginTable {
    plugin_table()
}
