//! The ctxlab desktop app: a Tauri shell whose commands are thin wrappers over the `ctxlab`
//! library. Code map:
//! - `commands`: what the UI may call (each granted one by one in `capabilities/main.json`);
//! - `view`: the types the commands send, shaped for the UI (TypeScript in `ui/src/bindings`);
//! - `state`: the plugin registry, open sessions, running jobs;
//! - `error`: the one error type, `{code, message}`.

pub mod commands;
pub mod error;
pub mod startup;
pub mod state;
pub mod view;

use error::AppError;
use state::AppState;
use std::path::PathBuf;
use tauri::Manager;

/// `base` with the app's plugins, state and commands; the tests pass Tauri's mock builder.
pub fn setup<R: tauri::Runtime>(base: tauri::Builder<R>, state: AppState) -> tauri::Builder<R> {
    setup_with(base, state, startup::Startup::new(Vec::new()))
}

/// As `setup`, with the logs named on the command line.
pub fn setup_with<R: tauri::Runtime>(
    base: tauri::Builder<R>,
    state: AppState,
    startup: startup::Startup,
) -> tauri::Builder<R> {
    base.plugin(tauri_plugin_dialog::init())
        .manage(state)
        .manage(startup)
        .invoke_handler(tauri::generate_handler![
            commands::list_strategies,
            commands::discover_logs,
            commands::library,
            commands::stored_sessions,
            commands::open_stored,
            commands::open_path,
            commands::close_session,
            commands::session_detail,
            commands::session_pricing,
            commands::import_price_list,
            commands::context_at,
            commands::composition,
            commands::replay,
            commands::cancel,
            commands::follow,
            commands::unfollow,
            commands::tune,
            commands::explain,
            commands::save_profile,
            commands::export_config,
            commands::startup,
            commands::startup_mark,
        ])
}

/// Starts the app over the library file (`$CTXLAB_DB`, else the user's data folder). Logs named
/// on the command line (files or folders) are read on a thread of their own while the window
/// starts, recorded in the library, and shown when read (the UI waits for them with the `startup`
/// command): `make app` passes the samples, so even a first run (an empty library) has them ready.
pub fn run() {
    // Without a GPU render node (a virtual display, a VM, a container) WebKitGTK's DMA-BUF
    // renderer falls back slowly: the first frame came ~1.7 s later under Xvfb. Its plain renderer
    // draws the same; a user who sets the variable keeps their choice. Not under WebDriver
    // (tauri-driver sets TAURI_WEBVIEW_AUTOMATION): there its screenshot command then never
    // returns, as with WEBKIT_DISABLE_COMPOSITING_MODE.
    #[cfg(target_os = "linux")]
    if std::env::var_os("WEBKIT_DISABLE_DMABUF_RENDERER").is_none()
        && std::env::var_os("TAURI_WEBVIEW_AUTOMATION").is_none()
        && !has_render_node()
    {
        std::env::set_var("WEBKIT_DISABLE_DMABUF_RENDERER", "1");
    }
    let paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    // Reading the logs starts now, beside the window's start.
    let reading = {
        let paths = paths.clone();
        std::thread::spawn(move || {
            let loaded: Vec<_> = paths.iter().map(|p| ctxlab::formats::load_all(p)).collect();
            startup::mark("read");
            loaded
        })
    };
    let registry = ctxlab::plugin_host::Registry::discover();
    startup::mark("plugins");
    let state = AppState::new(registry, None);
    startup::mark("library");
    let builder = setup_with(
        tauri::Builder::default(),
        state,
        startup::Startup::new(paths),
    )
    .on_page_load(|_, payload| {
        if payload.event() == tauri::webview::PageLoadEvent::Finished {
            startup::mark("page-loaded");
        }
    })
    .setup(move |app| {
        startup::mark("setup");
        let app = app.handle().clone();
        std::thread::spawn(move || {
            let startup = app.state::<startup::Startup>();
            let state = app.state::<AppState>();
            let mut opened = view::OpenResult::default();
            let loaded = reading.join().unwrap_or_default();
            for read in loaded {
                match read
                    .map_err(AppError::from)
                    .and_then(|l| state.keep_loaded(l))
                {
                    Ok(r) => {
                        opened.sessions.extend(r.sessions);
                        opened.failed.extend(r.failed);
                    }
                    Err(e) => {
                        state.note_failed(e.clone());
                        opened.failed.push(e);
                    }
                }
            }
            startup::mark("session-loaded");
            startup.finish(opened);
        });
        Ok(())
    });
    if let Err(e) = builder.run(tauri::generate_context!()) {
        eprintln!("ctxlab: the window could not start: {e}");
        std::process::exit(1);
    }
}

/// True when the machine has a GPU render node (what WebKitGTK's DMA-BUF renderer draws with).
#[cfg(target_os = "linux")]
fn has_render_node() -> bool {
    std::fs::read_dir("/dev/dri").is_ok_and(|d| {
        d.flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("renderD"))
    })
}
