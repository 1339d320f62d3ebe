//! The ctxlab desktop app: a Tauri shell whose commands are thin wrappers over the `ctxlab`
//! library. Code map:
//! - `commands`: what the UI may call (each granted one by one in `capabilities/main.json`);
//! - `view`: the types the commands send, shaped for the UI (TypeScript in `ui/src/bindings`);
//! - `state`: the plugin registry, open sessions, running jobs;
//! - `error`: the one error type, `{code, message}`.

pub mod commands;
pub mod error;
pub mod state;
pub mod view;

use state::AppState;
use std::path::PathBuf;

/// `base` with the app's plugins, state and commands; the tests pass Tauri's mock builder.
pub fn setup<R: tauri::Runtime>(base: tauri::Builder<R>, state: AppState) -> tauri::Builder<R> {
    base.plugin(tauri_plugin_dialog::init())
        .manage(state)
        .invoke_handler(tauri::generate_handler![
            commands::list_strategies,
            commands::discover_logs,
            commands::library,
            commands::stored_sessions,
            commands::open_stored,
            commands::open_path,
            commands::close_session,
            commands::session_detail,
            commands::context_at,
            commands::replay,
            commands::cancel,
            commands::follow,
            commands::unfollow,
            commands::tune,
            commands::explain,
            commands::save_profile,
            commands::export_config,
        ])
}

/// Starts the app over the library file (`$CTXLAB_DB`, else the user's data folder). Logs named
/// on the command line (files or folders) are open when the window appears and recorded in the
/// library: `make app` passes the samples, so even a first run (an empty library) has them ready.
pub fn run() {
    let state = AppState::new(ctxlab::plugin_host::Registry::discover(), None);
    for arg in std::env::args_os().skip(1) {
        state.open_or_note(&PathBuf::from(arg));
    }
    if let Err(e) = setup(tauri::Builder::default(), state).run(tauri::generate_context!()) {
        eprintln!("ctxlab: the window could not start: {e}");
        std::process::exit(1);
    }
}
